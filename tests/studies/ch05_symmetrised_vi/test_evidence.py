"""Chapter 5's evidence (:mod:`bnn_posteriors.studies.ch05_symmetrised_vi.evidence`): each
function fed a small synthetic result, and a broken one that gives the failing value."""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims.checking import Evidence, catalogue_check
from bnn_posteriors.inference import mean_field as mf
from bnn_posteriors.site import profiles
from bnn_posteriors.studies.ch05_symmetrised_vi import evidence as ev


def passes(item: Evidence) -> bool:
    """Whether the catalogue's rule of the evidence's part holds for its value."""
    return item.verdict()[0]


def rule_of(item: Evidence) -> tuple:
    """The catalogue's rule, bound (the measured one where the evidence passes it), tol and
    finding of the evidence's check."""
    entry = catalogue_check(item.claim, item.part)
    bound = item.bound if "bound_measured" in entry else entry.get("bound")
    return entry["rule"], bound, entry.get("tol"), entry.get("finding")


def mode(widths=(2, 3, 4, 1), copies=144, change=1e-7, distance=0.5):
    return dict(widths=widths, size=144, copies=copies, joint_change=change, min_distance=distance)


def test_c5_1_evidence_reads_the_orbits_and_fails_on_a_short_group():
    out = ev.c5_1_evidence([mode(), mode(change=2e-7, distance=0.3)])
    assert [e.part for e in out] == ["group-size", "joint-change", "distinct-copies"]
    assert [rule_of(e)[:2] for e in out] == [("true", None), ("less", 1e-5), ("greater", 1e-2)]
    assert all(e.claim == "C5.1" for e in out) and all(passes(e) for e in out)
    assert out[1].value == 2e-7 and out[1].bound is None and out[2].value == 0.3
    assert "| (2, 3, 4, 1) | 144 | 144 | 1.0e-07 | 0.500 |" in out[0].table
    broken = ev.c5_1_evidence([mode(copies=143), mode(change=1e-3, distance=0.0)])
    assert not any(passes(e) for e in broken)
    with pytest.raises(ValueError, match="empty"):
        ev.c5_1_evidence([])


def reps(mi=(1.0, 1.1, 0.9), z=(0.5, -0.2, 1.0)):
    n = len(z)
    return dict(
        gap=np.array([1.01, 1.1, 0.9]),
        gap_se=np.full(n, 0.02),
        mi=np.array(mi),
        mi_se=np.full(n, 0.01),
        z=np.array(z),
        z_unpaired=np.array([2.0, -3.0, 0.1]),
        elbo_q=np.full(n, -40.0),
        elbo_q_se=np.full(n, 0.5),
        elbo_qg=np.full(n, -39.0),
        elbo_qg_se=np.full(n, 0.5),
        kurtosis=np.array([120.0, 80.0, 90.0]),
    )


def test_c5_2_identity_evidence_and_a_biased_identity():
    first, bounds = ev.c5_2_identity_evidence(reps(), width=4, num_samples=100)
    assert first.value == 0.5 and (first.part, bounds.part) == ("identity-z", "mi-range")
    assert rule_of(first)[:2] == ("less", 3.0) and first.glue["z_bar"] == 3.0
    assert rule_of(bounds)[0] == "true"
    assert passes(first) and passes(bounds) and "H=4, |G|=24, 100 draws" in first.note
    assert first.glue["id_repeats"] == 3 and first.glue["small_group"] == 24
    assert first.glue["id_zu_max"] == 3.0 and first.glue["id_z"] == 0.5
    assert "3 repeats" in first.table and "| unpaired | -0.30 | 2.52 | 3.00 |" in first.table
    bad_z, bad_mi = ev.c5_2_identity_evidence(
        reps(mi=(4.0, 1, 1), z=(-5.0, 0, 0)), width=4, num_samples=100
    )
    assert bad_z.value == 5.0 and not passes(bad_z) and not passes(bad_mi)  # 4 > log 24
    with pytest.raises(ValueError, match="lacks"):
        ev.c5_2_identity_evidence({"z": np.zeros(2)}, width=4, num_samples=10)


def curves(separation_last=None, infonce_z=(-1.0, 0.5)):
    separation_last = math.log(6) if separation_last is None else separation_last
    separation = np.array([[0.0, 0.0], [0.5, 0.05], [1.2, 0.05], [separation_last, 0.0]])
    return dict(
        separation=separation,
        step_z=np.array([7.0, 9.9]),
        unsaturated=3,
        infonce=np.array([[0.6, 0.01], [1.5, 0.02]]),
        infonce_z=np.array(infonce_z),
        mi=[1.7, 0.01],
    )


def test_c5_2_separation_evidence_and_a_bound_above_i():
    kw = dict(separations=(0.0, 0.1, 0.4, 3.0), ks=(2, 16), width=3, infonce_samples=50)
    out = ev.c5_2_separation_evidence(curves(), **kw)
    assert [e.part for e in out] == [
        "symmetric-zero",
        "separated-log-g",
        "separation-steps",
        "infonce-z",
    ]
    assert [rule_of(e) for e in (out[0], out[2], out[3])] == [
        ("less", 1e-4, None, None),
        ("greater", 3.0, None, None),
        ("less", 3.0, None, None),
    ]
    assert rule_of(out[1])[0::2] == ("approx", 0.05)  # the bound log|G| is measured
    assert all(passes(e) for e in out) and out[1].bound == pytest.approx(math.log(6))
    assert [e.bound for e in (out[0], out[2], out[3])] == [None, None, None]
    assert out[0].glue["sep_d_unsat"] == 0.4 and out[0].glue["infonce_z_max"] == 0.5
    assert "d <= 0.4)" in out[2].note and "K in (2, 16)" in out[3].note
    assert "| 3.00 | 1.792 | saturated |" in out[0].table and "exact I" in out[3].table
    broken = ev.c5_2_separation_evidence(curves(0.5, (4.0, 0.0)), **kw)
    assert not passes(broken[1]) and not passes(broken[3])
    with pytest.raises(ValueError, match="separations"):
        ev.c5_2_separation_evidence(curves(), **{**kw, "ks": (2,)})


def test_nuts_report():
    arr = dict(
        stats=dict(diverging=np.array([[0, 1], [0, 0]]), acceptance_rate=np.full(4, 0.9)),
        moved=0.75,
        chain_modes=[3, 5, 3],
        stay=0.4,
    )
    shown = ev.nuts_report(arr, 3)
    glue, table = shown.glue, shown.table
    assert glue == dict(nuts_moved=75.0, nuts_distinct=2, nuts_stay=40.0, num_chains=3)
    assert "| 1 | 0.90 | 75.0% | 3, 5, 3 | 40.0% |" in table
    with pytest.raises(ValueError, match="lacks"):
        ev.nuts_report({}, 3)


def collapse(deficit_last=2.0, slope_lo=0.1):
    per_width = {
        w: dict(
            deficit=np.full(2, d),
            pruned=np.full(2, p),
            elbo=np.full(2, e),
            test_ll=np.full(2, -0.5),
        )
        for w, d, p, e in ((2, 0.0, 0.0, -30.0), (8, deficit_last, 0.5, -35.0))
    }
    return dict(per_width=per_width, slope=0.3, slope_ci=(slope_lo, 0.5), n_fits=4)


def test_c5_3_evidence_and_no_collapse():
    out = ev.c5_3_evidence(collapse(), widths=(2, 8))
    assert [e.part for e in out] == [
        "deficit-slope",
        "deficit-largest",
        "pruning-grows",
        "elbo-below-best",
    ]
    assert [rule_of(e)[:2] for e in out] == [
        ("greater", 0.0),
        ("greater", 0.5),
        ("greater", 0.0),
        ("less", 0.0),
    ]
    assert [e.value for e in out][:2] == [0.1, 2.0] and all(passes(e) for e in out)
    assert "4 fits at H = (2, 8)" in out[0].note and out[0].glue["elbo_drop"] == 5.0
    assert out[0].glue["plain_test_lls"] == "-0.500, -0.500"
    broken = ev.c5_3_evidence(collapse(0.1, -0.2), widths=(2, 8))
    assert not passes(broken[0]) and not passes(broken[1])
    with pytest.raises(ValueError, match="widths"):
        ev.c5_3_evidence(collapse(), widths=(2, 4))


def fake_fits(ll_gain, mi_plain, *, n=4, mi_sym=None, width=4, accuracy=False):
    """Paired fits at widths 2 and ``width`` (plain runs first), as in test_repeats."""
    rng = np.random.default_rng(0)
    fits = {}
    for w, gain, mi in ((2, 0.0, math.log(2)), (width, ll_gain, mi_plain)):
        sym_mi = mi if mi_sym is None or w == 2 else mi_sym
        ll = rng.normal(-1.0, 0.1, n)
        fits[w] = dict(
            elbo=np.full(2 * n, -50.0),
            mi=np.concatenate([np.full(n, mi), np.full(n, sym_mi)]),
            test_ll=np.concatenate([ll, ll + gain + (rng.normal(0, 0.01, n) if gain else 0)]),
        )
        if accuracy:
            fits[w]["accuracy"] = np.full(2 * n, 0.8)
    return fits


def test_c5_4_toy_evidence_and_swapped_runs():
    from bnn_posteriors.studies.ch05_symmetrised_vi import fits as sx
    from bnn_posteriors.studies.ch05_symmetrised_vi import repeats as ss

    fits = fake_fits(0.2, mi_plain=math.log(24) - 2.0, mi_sym=math.log(24) - 0.5)
    better, not_worse, predictive = ev.c5_4_toy_evidence(
        ss.symmetrised_gains(fits, n_train=1), sx.gains(fits), np.array([0.3, 0.5]), n_seeds=4
    )
    assert [(e.claim, e.part) for e in (better, not_worse, predictive)] == [
        ("C5.4", "better"),
        ("C5.4", "not-worse"),
        ("C5.3", "predictive"),
    ]
    assert rule_of(better) == ("greater", 1e-6, None, None) and better.gate.passed
    assert rule_of(not_worse) == ("greater", -1e-6, None, None)
    assert rule_of(predictive) == ("greater", 1e-6, None, None) and predictive.gate.passed
    assert better.glue["c54_tie"] == "1e-06" and "> -1e-06 (at least" in not_worse.note
    assert passes(better) and passes(not_worse) and passes(predictive)
    # the ELBO half reads the gain from training (1.5 nats: the sym fits' I minus the plain
    # fits'), not the whole gain, which adds the plain fit's own I by construction
    assert better.value[0] == pytest.approx(1.5) and "training ELBO gain" in better.labels[0]
    assert predictive.value[0] == better.value[1]
    assert better.glue["toy_grad"] == pytest.approx(0.4) and better.glue["c54_level"] == "95%"
    assert "H = 4" in better.says and "Toy set, mean [95% interval] over 4" in better.table
    swapped = {
        w: {k: np.concatenate([v[4:], v[:4]]) for k, v in r.items()} for w, r in fits.items()
    }
    broken = ev.c5_4_toy_evidence(
        ss.symmetrised_gains(swapped, n_train=1), sx.gains(swapped), np.array([0.3]), n_seeds=4
    )
    assert not passes(broken[0]) and not passes(broken[1]) and not passes(broken[2])
    # plain MFVI that merges no units (its I at the ceiling): the gate fails for both claims
    flat = fake_fits(0.2, mi_plain=math.log(24), mi_sym=math.log(24))
    flat_out = ev.c5_4_toy_evidence(
        ss.symmetrised_gains(flat, n_train=1), sx.gains(flat), np.array([0.0]), n_seeds=4
    )
    assert not flat_out[0].gate.passed and not flat_out[2].gate.passed


def test_combined_status_and_mi_words():
    ok, no, gated = ({"status": s} for s in ("reproduced", "not reproduced", "inconclusive"))
    assert ev.combined_status([ok, ok]) == "reproduced"
    assert ev.combined_status([ok, gated]) == "inconclusive"
    assert ev.combined_status([gated, no]) == "not reproduced"
    with pytest.raises(ValueError, match="empty"):
        ev.combined_status([])
    assert ev.mi_words(None)["mnist_mi_short"] == "exact I"
    assert (
        ev.mi_words(64)["mnist_mi_short"] == "Î_K, K = 64"
        and "K = 64" in ev.mi_words(64)["mi_name"]
    )


@pytest.mark.slow
def test_mnist_pruning_report():
    qs = [mf.init(jax.random.key(i), (2, 3, 2), init_scale=0.1) for i in range(4)]
    q = jax.tree.map(lambda *a: np.stack(a), *qs)
    shown = ev.mnist_pruning_report({3: {"q": q}}, n_seeds=2, prior_scale=1.0)
    glue, table = shown.glue, shown.table
    assert set(glue) == {
        "mnist_pruned_pct",
        "mnist_kept",
        "mnist_kl_pruned",
        "mnist_kl_kept",
        "mnist_prune_verdict",
    }
    assert glue["mnist_pruned_pct"].endswith("%") and table.startswith("|")


def test_c5_4_mnist_evidence_saturated_and_deciding():
    from bnn_posteriors.studies.ch05_symmetrised_vi import repeats as ss

    fits = fake_fits(0.0, mi_plain=math.log(64), width=128, accuracy=True)
    reading = ss.symmetrised_gains(fits, n_train=1, num_perms=64)
    out = ev.c5_4_mnist_evidence(reading, fits, np.zeros(4), n_seeds=4, toy_width=8, toy_grad=0.5)
    assert out.part == "mnist" and not out.gate.passed
    assert rule_of(out) == ("greater", 1e-6, None, "mnist")
    assert not passes(out)  # ties: only the gate makes this inconclusive
    assert "end at the same q" in out.says and "gate failed: " in out.table
    assert "at H = (2, 128) (Î_K, K = 64)" in out.note and "(at the toy set's H = 8" in out.gate.why
    assert out.glue["mnist_mi_ceiling_name"] == "log K"
    assert out.glue["mnist_mi_plain_last"] == pytest.approx(math.log(64))
    fits = fake_fits(0.2, mi_plain=math.log(24) - 2.0, mi_sym=math.log(24) - 0.5)
    out = ev.c5_4_mnist_evidence(
        ss.symmetrised_gains(fits, n_train=1),
        fits,
        np.ones(4),
        n_seeds=4,
        toy_width=8,
        toy_grad=0.5,
    )
    assert out.gate.passed and passes(out) and "raises the ELBO by" in out.says


def test_profiles_report_reads_the_old_record(tmp_path):
    quick = dataclasses.replace(
        profiles.settings("05_symmetrised_vi", "quick"), mnist_widths=(4, 8), n_seeds=16
    )
    full = dataclasses.replace(
        profiles.settings("05_symmetrised_vi", "full"),
        n_seeds=16,
        mnist_widths=(32, 64),
        mnist_perms=64,
        mnist_n_train=4000,
        mnist_steps=4000,
        mnist_seeds=5,
    )
    out = ev.profiles_report(quick, full, None)
    assert out["quick_mnist_max"] == 8 and out["full_mnist_widths"] == "32, 64"
    assert out["full_old_elbo_gains"] == "4.159, 4.159, 4.159"
    assert out["full_log_k"] == pytest.approx(math.log(64))
    (tmp_path / "full").mkdir()
    record = dict(
        id="C5.4",
        profile="full",
        status="x",
        time="t",
        finding=None,
        value=[0.5],
        note="MNIST ELBO [+1.0]",
    )
    (tmp_path / "full" / "05.jsonl").write_text(json.dumps(record) + "\n")
    out = ev.profiles_report(quick, full, tmp_path)
    assert out["full_old_ll_gains"] == "+0.5000" and out["full_old_elbo_gains"] == "1.000"
    with pytest.raises(ValueError, match="mnist_perms"):  # log K needs the full profile's K
        ev.profiles_report(quick, dataclasses.replace(full, mnist_perms=None), None)


def test_c5_3_verdict_follows_the_catalogue_bound(catalogue_rules):
    """The rule is the catalogue's: the same evidence fails once its part's bound is raised."""
    item = ev.c5_3_evidence(collapse(), widths=(2, 8))[1]  # the deficit 2.0 at H = 8
    assert item.part == "deficit-largest" and passes(item)
    (claim,) = (c for c in checking.catalogue() if c["id"] == "C5.3")
    checks = [dict(entry) for entry in claim["check"]]
    for entry in checks:
        if entry["part"] == "deficit-largest":
            entry["bound"] = 5.0
    catalogue_rules({"C5.3": checks})
    assert catalogue_check("C5.3", "deficit-largest")["bound"] == 5.0
    assert not passes(item)
