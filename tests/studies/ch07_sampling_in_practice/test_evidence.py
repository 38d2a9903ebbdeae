"""Chapter 7's evidence (:mod:`bnn_posteriors.studies.ch07_sampling_in_practice.evidence`):
each function on a small synthetic result gives the value and the part of its check (whose
rule and bound are the claims catalogue's), and a broken input gives the failing value."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.claims.checking import Evidence, catalogue_check
from bnn_posteriors.studies.ch07_sampling_in_practice import evidence as ev
from bnn_posteriors.studies.ch07_sampling_in_practice import prior_scales

RNG = np.random.default_rng(0)


def passes(e: Evidence) -> bool:
    """Whether the catalogue's rule of the evidence's part holds for its value."""
    return e.verdict()[0]


def rule_of(e: Evidence) -> tuple:
    """The catalogue's rule, bound and finding of the evidence's check (none is measured)."""
    assert e.bound is None
    entry = catalogue_check(e.claim, e.part)
    return entry["rule"], entry.get("bound"), entry.get("finding")


SCALES = (0.1, 0.5, 1.0, 2.0, 10.0)


@pytest.fixture
def cfg(make_cfg):
    """Chapter 7's quick settings with the values the checks and the prose read set here."""
    return make_cfg(
        de_learning_rate=1e-3,
        de_weight_decay=1e-2,
        de_batch_size=32,
        de_patience=10,
        hidden=(16, 16, 16),
        tuning_steps=10,
        sampling_steps=20,
        thinning=2,
        scales=SCALES,
        prior_chains=2,
    )


@pytest.fixture
def full(make_cfg):
    """Chapter 7's full settings with the values the checks and the prose read set here."""
    return make_cfg(
        "full",
        tuning_steps=100,
        sampling_steps=200,
        thinning=10,
        n_chains_many=200,
        n_chains_many_accelerator=2000,
        tuning_steps_many=50,
        sampling_steps_many=60,
        many_seeds=(1, 2),
        many_results="ch7_many_chains",
        prior_depths=(1, 2),
        prior_chains=4,
        prior_tuning_steps=100,
        prior_sampling_steps=200,
    )


def test_show_and_values(monkeypatch, cfg):
    values = ev.method_values(cfg)
    assert values["hidden_first"] == 16 and values["ci_level"] == 95
    assert values["tuning_fractions_text"].count("/") == 2


def test_run_tables():
    log_sigma = RNG.normal(size=(5, 8))
    run = dict(
        mean=np.zeros((5, 8, 3)),
        f_gap=1e-7,
        seconds=3.0,
        bde={"step_size": np.full(5, 0.1), "samples": {"log_sigma": log_sigma}},
        regular=np.arange(2),
        groups=[np.arange(2, 4)],
    )
    assert "5 × 8" in ev.run_table(run) and "1.0e-07" in ev.run_table(run)
    table = ev.diagnostics_table(run)
    assert table.count("\n") == 4 and "regular" in table and "permuted" in table
    with pytest.raises(ValueError, match="lacks"):
        ev.run_table({"mean": 1})


def test_c7_1():
    lppds = dict(regular=0.8, permuted=np.array([0.78, 0.75]), best_permuted=np.array([0.6, 0.7]))
    beat, trail = ev.c7_1_evidence(lppds)
    assert (beat.claim, beat.part, rule_of(beat)) == (
        "C7.1",
        "beats-best-chain",
        ("greater", 0.0, None),
    )
    assert beat.value == pytest.approx(0.05) and passes(beat)
    assert (trail.part, rule_of(trail)) == ("gap-to-bde", ("less", 0.1, None))
    assert beat.glue["perm_gap_bound"] == 0.1 and "within the 0.1 nats" in trail.says
    assert trail.value == pytest.approx(0.035) and passes(trail)
    assert beat.glue["permuted_groups"] == 2 and "member 2" in beat.table
    broken = dict(lppds, permuted=np.array([0.5, 0.75]))  # worse than its best chain
    assert not passes(ev.c7_1_evidence(broken)[0]) and not passes(ev.c7_1_evidence(broken)[1])
    with pytest.raises(ValueError, match="one entry per group"):
        ev.c7_1_evidence(dict(lppds, best_permuted=np.array([0.6])))


def test_c7_2_and_reports():
    z = dict(frac_significant=0.9, frac_significant_paper=0.1, frac_by_chain=[0.8, 1.0])
    ratio = dict(
        ratio=0.4, low=0.3, high=0.5, mean_within=0.2, mean_between=0.5, within=np.array([0.2, 0.2])
    )
    sig, low, high = ev.c7_2_evidence(z, ratio)
    assert [e.part for e in (sig, low, high)] == ["z-test", "ratio-low", "ratio-high"]
    assert [rule_of(e) for e in (sig, low, high)] == [
        ("greater", 0.5, None),
        ("greater", 0.1, None),
        ("less", 1.0, None),
    ]
    assert "above the floor 0.1 of" in low.says
    assert (sig.value, low.value, high.value) == (0.9, 0.3, 0.5)
    assert all(passes(e) for e in (sig, low, high)) and "over 2 regular" in sig.note
    copies = dict(ratio, low=0.001, high=0.002)  # near copies of one sample: negligible
    broken = ev.c7_2_evidence(dict(z, frac_significant=0.2), copies)
    assert not passes(broken[0]) and not passes(broken[1])
    assert not passes(ev.c7_2_evidence(z, dict(ratio, high=1.2))[2])  # mixed chains
    shown = ev.z_test_report(z)
    glue, table = shown.glue, shown.table
    assert glue == {"frac_significant": 90.0, "frac_significant_paper": 10.0} and "chain 2" in table
    shown = ev.w2_ratio_report(ratio, num_resamples=50)
    glue, table = shown.glue, shown.table
    assert glue["n_regular"] == 2 and "0.400 [0.300, 0.500]" in table
    assert glue["w2_ratio_floor"] == 0.1
    ctrl = dict(
        copies_frac=0.95, copies_low=0.001, copies_high=0.002, mixed_low=0.9, mixed_high=1.1
    )
    shown = ev.controls_report(ctrl, noise=0.01)
    glue, table = shown.glue, shown.table
    assert glue["ctrl_copies_frac"] == 95.0 and "[0.900, 1.100]" in table
    with pytest.raises(ValueError, match="lacks"):
        ev.c7_2_evidence({}, ratio)


def test_c7_3_and_reports():
    sat = dict(
        cum=np.ones((3, 20)),
        cum_mean=np.linspace(0.5, 0.8, 20),
        lppd_1=0.5,
        lppd_10=0.7,
        lppd_max=0.8,
        gain_1_10=0.2,
        gain_10_max=0.1,
    )
    e = ev.c7_3_evidence(sat, n_orderings=3)
    assert (e.part, rule_of(e)) == ("saturation", ("decreasing", None, None))
    assert list(e.value) == [0.2, 0.1] and passes(e)
    assert "10->20 chains" in e.note
    assert not passes(ev.c7_3_evidence(dict(sat, gain_10_max=0.3), n_orderings=3))
    shown = ev.saturation_report(sat, n_orderings=3)
    glue, table = shown.glue, shown.table
    assert glue["authors_lppd_1"] == 0.614 and "gain 10 → 20" in table
    many = dict(mean=np.zeros((4, 6, 2)), seconds=1.0, ess=12.0)
    shown = ev.many_run_report(many, device="cpu")
    glue, table = shown.glue, shown.table
    assert glue == {"n_chains_many": 4} and "4 × 6" in table


def test_c7_4(full):
    ks = dict(
        ks=[0.3, 0.1, 0.1, 0.2],
        ks_bias=[0.1] * 4,
        inner=0.1,
        outer=0.2,
        gap=0.1,
        low=0.05,
        high=0.15,
    )
    shown = ev.ks_report(ks, num_resamples=10)
    glue, table = shown.glue, shown.table
    assert glue["ks_gap_low"] == 0.05 and "Δ_KS = 0.1000" in table
    e = ev.c7_4_evidence(ks, None, full, n_chains=20, n_boot=10)
    assert (e.part, rule_of(e), e.committed, e.table) == (
        "ks-gap",
        ("greater", 0.0, None),
        None,
        None,
    )
    assert list(e.value) == [0.05] and passes(e) and e.glue["c74_basis"] == "this build's 20 chains"
    runs = [
        dict(settings={"seed": s, "n_chains": 200}, ks=ks["ks"], gap=0.1, low=lo, high=0.2)
        for s, lo in ((1, 0.02), (2, -0.01))
    ]
    e = ev.c7_4_evidence(ks, runs, full, n_chains=20, n_boot=10)
    assert list(e.value) == [0.02, -0.01] and not passes(e)
    assert e.committed == "results/ch7_many_chains" and e.table.count("\n") == 4
    with pytest.raises(ValueError, match="empty"):
        ev.c7_4_evidence(ks, [], full, n_chains=20, n_boot=10)


def test_c7_5():
    dead = dict(dead=0.5, warm=0.6, active_start=0, active_first=12, active_last=14)
    e = ev.c7_5_evidence(dead, hidden_first=16)
    assert (e.part, rule_of(e)) == ("dead-gap", ("greater", 0.5, None))
    assert e.glue["dead_gap_floor"] == 0.5 and "deficit of over 0.5 nats" in e.says
    assert e.value == pytest.approx(0.1) and not passes(e)
    assert e.glue["dead_vs_warm"] == "within 0.25 nats of" and "0, 12, 14" in e.table
    stuck = ev.c7_5_evidence(dict(dead, dead=-1.0, active_first=0), hidden_first=16)
    assert passes(stuck) and stuck.glue["dead_vs_warm"] == "below"


def cells(n_cells: int = 4, one_best: bool = True):
    grid = [*SCALES, 0.25]
    out = []
    for i in range(n_cells):
        lppd = [0.1, 0.6, 1.0, 0.7, -0.5, 0.9 if i % 2 else 1.1]
        if not one_best:
            lppd[2] = -2.0
        rmse = [1.0 - v / 10 for v in lppd]
        chain = [[v + 0.01 * k for v in lppd] for k in range(3)]
        settings = {"grid": grid, "depth": 1 + i % 2, "dataset": ("airfoil", "energy")[i // 2]}
        out.append(dict(settings=settings, lppd=lppd, rmse=rmse, chain_lppd=chain, wall_s=1.0))
    return out


def _ranked(cells_, mild=(0.5, 2.0)):
    return prior_scales.rank_clauses(
        np.random.default_rng(0), cells_, 5, mild=mild, num_resamples=100
    )


def test_c7_6(cfg, full):
    basis = cells()
    rk = _ranked(basis)
    kw = dict(scales=cfg.scales, glorot=0.25, committed=True)
    shown = ev.rank_report(rk, **kw)
    glue, table = shown.glue, shown.table
    assert (glue["glorot_worse"], glue["glorot_better"]) == (2, 2) and "depth" in table
    assert glue["rank1_lppd"] == 1.0 and "rk_LPPD_glorot_low" in glue
    assert glue["rk_LPPD_mild0"] == 2.0 and glue["rk_RMSE_mild1_low"] == 1.0
    assert "mild 0.5" in table and "mild 2" in table
    broken = ev.scale_one_last(basis)
    assert all(c["lppd"][2] < min(c["lppd"][:2] + c["lppd"][3:]) for c in broken)
    rk_broken = _ranked(broken)
    clauses, no_harm, not_beneficial, worse = ev.c7_6_rank_evidence(rk, rk_broken, **kw)
    parts = [(e.part, rule_of(e), e.committed) for e in (clauses, no_harm, not_beneficial, worse)]
    assert parts == [
        ("clauses", ("greater", 0.0, None), ev.PRIOR_RESULTS),
        ("mild-no-harm", ("at-most", 0.0, None), ev.PRIOR_RESULTS),
        ("glorot-not-beneficial", ("at-least", 0.0, None), ev.PRIOR_RESULTS),
        ("glorot-worse", ("greater", 0.0, "glorot-worse"), ev.PRIOR_RESULTS),
    ]
    # scale 1 is the best in every cell, 0.1 and 10 the worst: robust and deterioration hold
    assert clauses.gate.passed and passes(clauses) and len(clauses.value) == 6
    # 0.5 and 2 rank below 1 in every cell: the cells show harm, the part fails
    assert not passes(no_harm) and "ranks clearly below scale 1" in no_harm.says
    # the Glorot scale is below 1 in 2 cells and above it in 2: no evidence of benefit ...
    assert passes(not_beneficial) and "no evidence that it is beneficial" in not_beneficial.says
    # ... nor that it is worse: the further finding is undecided
    assert not worse.gate.passed and "contain 0" in worse.gate.why
    assert clauses.glue["broken_outcome"] == "not reproduced" and "scale 1 last" in clauses.table
    assert not passes(ev.c7_6_rank_evidence(rk_broken, rk_broken, **kw)[0])
    # the Glorot scale best in every cell: evidence that it is beneficial, the part fails
    better = [dict(c, lppd=[*c["lppd"][:5], 2.0], rmse=[*c["rmse"][:5], 0.0]) for c in basis]
    assert not passes(ev.c7_6_rank_evidence(_ranked(better), rk_broken, **kw)[2])
    # 0.5 and 2 above scale 1 in half the cells: no evidence of harm, the part holds
    mixed = [
        dict(c, lppd=[c["lppd"][0], 1.2, 1.0, 1.3, *c["lppd"][4:]]) if i % 2 else c
        for i, c in enumerate(basis)
    ]
    mixed = [dict(c, rmse=[1.0 - v / 10 for v in c["lppd"]]) for c in mixed]
    assert passes(ev.c7_6_rank_evidence(_ranked(mixed), rk_broken, **kw)[1])
    missing = ev.c7_6_rank_evidence(rk, rk_broken, **dict(kw, committed=False))
    assert all(m.committed is None and "missing" in m.gate.why for m in missing)
    assert not any(m.gate.passed for m in missing)
    with pytest.raises(ValueError, match="no columns of the clauses"):
        ev.c7_6_rank_evidence(_ranked(basis, mild=()), rk_broken, **kw)
    cmp = prior_scales.scale_comparison(np.random.default_rng(0), basis, 5, num_resamples=50)
    paired = ev.c7_6_paired_evidence(cmp, cmp, basis, glorot=0.25, committed=True)
    assert (paired.part, rule_of(paired)) == ("paired-lppd", ("greater", 0.0, "paired-lppd"))
    assert np.allclose(paired.value[:2], [0.9 - 0.01, 1.5 - 0.01], atol=0.02)
    assert paired.glue["paper_verdict_small"] == "lies above 0 (worse than scale 1)"
    assert paired.glue["paper_large_worst"].startswith("airfoil")
    with pytest.raises(ValueError, match="scale 1"):
        ev.scale_one_last([dict(settings={"grid": [0.5]}, lppd=[1.0], rmse=[1.0])])
    assert "cells × 6 scales" in ev.scale_table(basis, cmp, n_chains=3)
    assert ev.prior_settings_values(cfg, full)["full_depths_text"] == "1, 2"


def test_notes_values(tmp_path, cfg, full):
    values = ev.notes_values(cfg, full, root=None)
    assert values["gpu_ks_gap_low"] == "(not run)" and values["full_chains_gpu"] == 2000
    path = tmp_path.joinpath(*ev.GPU_RECORDS)
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"id": "C7.4", "value": 0.0123, "profile": "full", "status": "reproduced", "time": "t"}\n'
    )
    assert ev.notes_values(cfg, full, root=tmp_path)["gpu_ks_gap_low"] == "0.0123"


def test_c7_5_verdict_follows_the_catalogue_bound(catalogue_rules):
    """The rule is the catalogue's: the same evidence passes once its part's bound is lowered."""
    dead = dict(dead=0.5, warm=0.6, active_start=0, active_first=12, active_last=14)
    item = ev.c7_5_evidence(dead, hidden_first=16)  # the gap 0.1, below the 0.5 of 'does not fit'
    assert not passes(item)
    catalogue_rules({"C7.5": [{"part": "dead-gap", "rule": "greater", "bound": 0.05}]})
    assert passes(item)
    assert ev.c7_5_evidence(dead, hidden_first=16).glue["dead_gap_floor"] == 0.05
