"""Chapter 5's claim checks as evidence: what each check measured, how it is read, the words
and the table the chapter shows with it (:class:`bnn_posteriors.claims.checking.Evidence`).

Each ``c5_*`` function takes a result of :mod:`.fits`, :mod:`.pruning` or :mod:`.repeats` and
returns the :class:`Evidence` of one claim's checks, in the chapter's order, each naming its
``part``: the rule and its bound are the claims catalogue's ``[[claim.check]]`` of that part
(``claims/catalogue/05_symmetrised_vi.toml``), read here only for the words and the glue. The
chapter passes them to :func:`bnn_posteriors.claims.checking.show_and_check`. The ``*_report``
functions return what the chapter shows without a check, a
:class:`~bnn_posteriors.site.tables.Overview`: the values its prose cites and a Markdown table.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from bnn_posteriors.claims.checking import Evidence, catalogue_check, read_jsonl
from bnn_posteriors.models.symmetry import permutations
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import SymmetrisedVISettings
from bnn_posteriors.studies.ch05_symmetrised_vi import pruning
from bnn_posteriors.studies.ch05_symmetrised_vi import repeats as ss

NEAR_ZERO = 0.01  # nats per test point: a seed on which symmetrised training changed little
# the old C5.4 check's full-profile record (commit 6317ce4), kept here once a new full run
# replaces it
OLD_RECORD = {"value": [0.0, 0.0, 0.0], "note": "MNIST ELBO [+4.159, +4.159, +4.159]"}


def _nonempty(name: str, values, where: str) -> None:
    if len(values) == 0:
        raise ValueError(f"{where}: {name} is empty; it needs at least one entry")


def _need(mapping: Mapping, keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in mapping]
    if missing:
        raise ValueError(f"{where}: the result lacks {missing}")


# --------------------------------------------------------------------------- C5.1


def c5_1_evidence(modes: Sequence[Mapping]) -> tuple[Evidence, Evidence, Evidence]:
    """C5.1 from :func:`.fits.orbit_summary`'s rows (one per random net): the enumerated
    group has ∏ H_l! elements (part ``group-size``), the largest relative change of the log
    joint over it (``joint-change``) and the smallest distance between two permuted copies
    (``distinct-copies``), each decided by the catalogue's rule of its part. The first carries
    the table."""
    _nonempty("modes", modes, "c5_1_evidence")
    for m in modes:
        _need(m, ("widths", "size", "copies", "joint_change", "min_distance"), "c5_1_evidence")
    header = (
        "widths",
        "|G|",
        "copies",
        "max rel. change of log p(y, w)",
        "min distance between copies",
    )
    rows = [
        (
            m["widths"],
            m["size"],
            m["copies"],
            f"{m['joint_change']:.1e}",
            f"{m['min_distance']:.3f}",
        )
        for m in modes
    ]
    sizes = np.array(
        [
            m["copies"] == m["size"] == math.prod(math.factorial(h) for h in m["widths"][1:-1])
            for m in modes
        ]
    )
    return (
        Evidence(
            "C5.1",
            sizes,
            part="group-size",
            labels=[f"widths {m['widths']}" for m in modes],
            note="the enumerated group has prod_l H_l! elements for (2,3,4,1) and (3,5,2)",
            table=tables.markdown_table(header, rows),
        ),
        Evidence(
            "C5.1",
            max(m["joint_change"] for m in modes),
            part="joint-change",
            note="max relative change of the log joint over all g in G, 5 random nets per "
            "architecture (float32)",
        ),
        Evidence(
            "C5.1",
            min(m["min_distance"] for m in modes),
            part="distinct-copies",
            note="min Euclidean distance between two permuted copies: all |G| copies are "
            "distinct points",
        ),
    )


# --------------------------------------------------------------------------- C5.2


def identity_table(reps: Mapping, width: int) -> str:
    """The first repeat of :func:`.repeats.identity_repeats` (the two ELBOs, their paired
    difference, I, log|G| and z) and the paired and unpaired z over all repeats, as Markdown."""
    r = {k: v[0] for k, v in reps.items()}
    first = tables.markdown_table(
        (
            "ELBO(q)",
            "excess kurtosis",
            "ELBO(q_G)",
            "ELBO(q_G) − ELBO(q), paired",
            "I(g; w)",
            "log|G|",
            "z",
        ),
        [
            (
                f"{r['elbo_q']:.3f} ± {r['elbo_q_se']:.3f}",
                f"{r['kurtosis']:.0f}",
                f"{r['elbo_qg']:.3f} ± {r['elbo_qg_se']:.3f}",
                f"{r['gap']:.4f} ± {r['gap_se']:.4f}",
                f"{r['mi']:.4f} ± {r['mi_se']:.4f}",
                f"{math.lgamma(width + 1):.3f}",
                f"{r['z']:.2f}",
            )
        ],
    )
    rows = [
        (label, f"{z.mean():+.2f}", f"{z.std(ddof=1):.2f}", f"{np.abs(z).max():.2f}")
        for label, z in (("paired", reps["z"]), ("unpaired", reps["z_unpaired"]))
    ]
    spread = tables.markdown_table(("ELBOs", "mean z", "sd z", "max |z|"), rows)
    return (
        f"Repeat 1:\n\n{first}\n{len(reps['z'])} repeats, "
        f"z = (ELBO(q_G) − ELBO(q) − I) / combined s.e.:\n\n{spread}"
    )


def c5_2_identity_evidence(
    reps: Mapping, *, width: int, num_samples: int
) -> tuple[Evidence, Evidence]:
    """C5.2's identity ELBO(q_G) − ELBO(q) = I from :func:`.repeats.identity_repeats` (its
    first repeat decides): |z| (part ``identity-z``, below the catalogue's bound, glued as
    ``z_bar``), and whether I of the plain fit lies in (0, log|G|] (up to 1e-4 of round-off;
    ``mi-range``). ``width``: H of the fit, ``num_samples``: draws per term."""
    _need(reps, ("gap", "gap_se", "mi", "mi_se", "z", "z_unpaired", "kurtosis"), "c5_2_identity")
    _nonempty("reps['z']", reps["z"], "c5_2_identity_evidence")
    H, n_id = width, num_samples
    gap, mi_small, z_id = (reps[k][0] for k in ("gap", "mi", "z"))
    log_g = math.lgamma(H + 1)
    z_bar = catalogue_check("C5.2", "identity-z")["bound"]
    glue = dict(
        id_kurtosis=reps["kurtosis"][0],
        id_repeats=len(reps["z"]),
        id_z_sd=reps["z"].std(ddof=1),
        id_z_mean=reps["z"].mean(),
        id_zu_sd=reps["z_unpaired"].std(ddof=1),
        id_zu_max=np.abs(reps["z_unpaired"]).max(),
        small_width=H,
        small_group=math.factorial(H),
        identity_samples=n_id,
        id_gap=gap,
        id_mi=mi_small,
        id_z=abs(z_id),
        z_bar=z_bar,
        max_exact_width=permutations.MAX_EXACT_WIDTH,
        group_max_exact=float(math.factorial(permutations.MAX_EXACT_WIDTH)),
    )
    return (
        Evidence(
            "C5.2",
            abs(z_id),
            part="identity-z",
            note="|ELBO(q_G) - ELBO(q) - I| in units of the combined Monte-Carlo s.e. (floor "
            f"1e-4 for round-off), H={H}, |G|={math.factorial(H)}, "
            f"{n_id} draws per term; the two ELBOs paired (same w0), I from independent draws",
            glue=glue,
            table=identity_table(reps, H),
        ),
        Evidence(
            "C5.2",
            np.array([0.0 < float(mi_small) <= log_g + 1e-4]),
            part="mi-range",
            note="I(g; w) of the plain MFVI fit lies in (0, log|G|] (up to 1e-4 of float32 "
            "round-off)",
        ),
    )


def c5_2_separation_evidence(
    curves: Mapping,
    *,
    separations: Sequence[float],
    ks: Sequence[int],
    width: int,
    infonce_samples: int,
) -> tuple[Evidence, Evidence, Evidence, Evidence]:
    """C5.2's ends and trend of I from :func:`.repeats.mi_curves`: I for a symmetric q (d = 0;
    part ``symmetric-zero``), I at the largest separation against the measured log|G| (passed
    as the bound of ``separated-log-g``), every unsaturated step of I in s.e.
    (``separation-steps``), and the paired z of the InfoNCE bound Î_K against I for every K in
    ``ks`` (``infonce-z``); the catalogue's rule of each part decides."""
    _need(curves, ("separation", "step_z", "unsaturated", "infonce", "infonce_z", "mi"), "c5_2")
    separation, infonce, infonce_z = (curves[k] for k in ("separation", "infonce", "infonce_z"))
    sep_step_z, unsaturated = curves["step_z"], curves["unsaturated"]
    if len(separations) != len(separation) or len(ks) != len(infonce):
        raise ValueError(
            f"c5_2_separation_evidence: {len(separations)} separations and {len(ks)} K for "
            f"curves of {len(separation)} and {len(infonce)} points"
        )
    _nonempty("curves['step_z']", sep_step_z, "c5_2_separation_evidence")
    log_g = math.lgamma(width + 1)
    steps = [""] + [f"{v:.0f}" for v in sep_step_z]
    rows = [
        (f"{d:.2f}", f"{v:.3f}", steps[i] if i < len(steps) else "saturated")
        for i, (d, v) in enumerate(zip(separations, separation[:, 0], strict=True))
    ]
    sep_table = f"log|G| = {log_g:.3f}\n\n" + tables.markdown_table(
        ("d", "I(g; w)", "step of I / s.e."), rows
    )
    k_rows: list[tuple] = [
        (k, f"{v:.3f}", f"{z:.1f}") for k, v, z in zip(ks, infonce[:, 0], infonce_z, strict=True)
    ]
    k_rows.append(("exact I", f"{curves['mi'][0]:.3f}", ""))
    k_table = tables.markdown_table(("K", "Î_K of the fit q", "(Î_K − I) / s.e."), k_rows)
    glue = dict(
        sep_step_z_min=float(sep_step_z.min()),
        sep_d_unsat=separations[unsaturated - 1],
        infonce_z_max=float(infonce_z.max()),
        mi_symmetric=float(abs(separation[0, 0])),
        mi_far=float(separation[-1, 0]),
        log_g_small=float(log_g),
        infonce_samples=infonce_samples,
    )
    return (
        Evidence(
            "C5.2",
            abs(separation[0, 0]),
            part="symmetric-zero",
            note="I = 0 when q is itself symmetric (all units share one factor, d = 0)",
            glue=glue,
            table=sep_table,
        ),
        Evidence(
            "C5.2",
            separation[-1, 0],
            part="separated-log-g",
            bound=log_g,
            note=f"I -> log|G| = {log_g:.3f} when the permuted copies of q do not overlap "
            "(largest d)",
        ),
        Evidence(
            "C5.2",
            sep_step_z,
            part="separation-steps",
            labels=[
                f"d = {a:.2f} → {b:.2f}"
                for a, b in list(zip(separations, separations[1:], strict=False))[: len(sep_step_z)]
            ],
            note="I grows with the separation d: every step of I over the unsaturated part "
            f"(log|G| - I > 1% of log|G|, d <= {separations[len(sep_step_z)]}) is positive "
            "by > 3 s.e.",
        ),
        Evidence(
            "C5.2",
            infonce_z,
            part="infonce-z",
            labels=[f"K = {k}" for k in ks],
            note="InfoNCE bound hat I_K <= I: (hat I_K - I) / s.e., paired on the same draws, "
            f"< 3 for every K in {tuple(ks)}",
            table=k_table,
        ),
    )


def nuts_report(arr: Mapping, num_chains: int) -> tables.Overview:
    """What :func:`.repeats.nuts_arrangements` found: the values the prose cites and a table
    (divergences, acceptance, share of draws best matched by g ≠ e, each chain's most frequent
    arrangement and the share of its draws in it)."""
    _need(arr, ("stats", "moved", "chain_modes", "stay"), "nuts_report")
    stats = arr["stats"]
    header = (
        "divergences",
        "acceptance",
        "draws best matched by g ≠ e",
        "most frequent arrangement per chain (index into G, 0 = identity)",
        "share of a chain's draws in its own arrangement",
    )
    row = (
        int(stats["diverging"].sum()),
        f"{float(stats['acceptance_rate'].mean()):.2f}",
        f"{100 * arr['moved']:.1f}%",
        ", ".join(map(str, arr["chain_modes"])),
        f"{100 * arr['stay']:.1f}%",
    )
    glue = dict(
        nuts_moved=float(100 * arr["moved"]),
        nuts_distinct=len(set(arr["chain_modes"])),
        nuts_stay=float(100 * arr["stay"]),
        num_chains=num_chains,
    )
    return tables.Overview(tables.markdown_table(header, [row]), glue)


# --------------------------------------------------------------------------- C5.3


def c5_3_evidence(
    collapse: Mapping, *, widths: Sequence[int]
) -> tuple[Evidence, Evidence, Evidence, Evidence]:
    """C5.3 from :func:`.pruning.collapse_by_width`: the lower end of the interval of the
    symmetry deficit's slope on the width (part ``deficit-slope``), the deficit at the largest
    width (``deficit-largest``), the pruned fraction there minus at the smallest width
    (``pruning-grows``) and the ELBO there minus its best (``elbo-below-best``), each decided
    by the catalogue's rule of its part."""
    _need(collapse, ("per_width", "slope", "slope_ci", "n_fits"), "c5_3_evidence")
    bias, slope_ci = collapse["per_width"], collapse["slope_ci"]
    if list(bias) != list(widths):
        raise ValueError(f"c5_3_evidence: widths {widths} differ from the results' {list(bias)}")
    header = ("H", "deficit log|G| − I", "pruned units", "ELBO(q)", "test log-lik")
    keys = ("deficit", "pruned", "elbo", "test_ll")
    rows = [(w, *(f"{b[k].mean():.2f} ± {b[k].std():.2f}" for k in keys)) for w, b in bias.items()]
    table = "Plain MFVI, mean ± sd over seeds:\n\n" + tables.markdown_table(header, rows)
    deficit, pruned, elbo_plain = (
        np.array([b[k].mean() for b in bias.values()]) for k in ("deficit", "pruned", "elbo")
    )
    glue = dict(
        deficit_slope=collapse["slope"],
        deficit_slope_lo=float(slope_ci[0]),
        deficit_slope_hi=float(slope_ci[1]),
        deficit_last=float(deficit[-1]),
        slope_level="95%",  # collapse_by_width's t-interval
        pruned_last=float(100 * pruned[-1]),
        width_last=widths[-1],
        elbo_drop=float(elbo_plain.max() - elbo_plain[-1]),
        plain_test_lls=", ".join(f"{b['test_ll'].mean():.3f}" for b in bias.values()),
    )
    return (
        Evidence(
            "C5.3",
            slope_ci[0],
            part="deficit-slope",
            note="symmetry deficit log|G| - I of plain MFVI grows with width (units collapse "
            "onto each other): lower end of the 95% t-interval of its least-squares slope on H, "
            f"{collapse['n_fits']} fits at H = {widths}",
            glue=glue,
            table=table,
        ),
        Evidence(
            "C5.3",
            deficit[-1],
            part="deficit-largest",
            note="at the largest width the collapsed units cost more than 0.5 nats of I",
        ),
        Evidence(
            "C5.3",
            pruned[-1] - pruned[0],
            part="pruning-grows",
            note="fraction of pruned units (|mu_out| < 2 s_out) larger at the largest width than "
            "at the smallest",
        ),
        Evidence(
            "C5.3",
            elbo_plain[-1] - elbo_plain.max(),
            part="elbo-below-best",
            note="ELBO(q) of plain MFVI at the largest width is below its best over widths",
        ),
    )


# --------------------------------------------------------------------------- C5.4


def c5_4_toy_evidence(
    reading: Mapping, gain: Mapping, grad_norm, *, n_seeds: int
) -> tuple[Evidence, Evidence, Evidence]:
    """C5.4 on the toy set from :func:`.repeats.symmetrised_gains` (``reading``), the paired
    gains of :func:`.fits.gains` and the gradient norm of the symmetrisation term at the plain
    fits of the largest width: strictly better at the largest width (part ``better``) and not
    worse at any (``not-worse``), on the ELBO gain from training with I and the test
    log-likelihood gain, gated on :func:`.repeats.decidability_gate`; and C5.3's part
    ``predictive`` ("biases ... which degrade predictive performance ... if not explicitly
    accounted for"), the test log-likelihood gain at the largest width under the same gate.
    The catalogue's rule of each part decides; its bound, the tie of float32 round-off, is
    glued as ``c54_tie``."""
    _need(
        reading,
        ("widths", "elbo", "training", "test_ll", "better", "not_worse", "level", "deficit"),
        "c5_4_toy_evidence",
    )
    widths, last = reading["widths"], reading["widths"][-1]
    tie, worse = (catalogue_check("C5.4", part)["bound"] for part in ("better", "not-worse"))
    gate = ss.decidability_gate(reading, grad_norm)
    (elbo_m, elbo_lo, elbo_hi), (tr_m, tr_lo, tr_hi), (ll_m, ll_lo, ll_hi) = (
        reading[k][-1] for k in ("elbo", "training", "test_ll")
    )
    ll_seeds = gain[last]["test_ll"]
    pct = f"{100 * reading['level']:.0f}%"
    glue = dict(
        c54_level=pct,
        c54_tie=f"{tie:.0e}",
        toy_deficit_last=reading["deficit"][-1],
        toy_elbo_gain_last=elbo_m,
        toy_elbo_lo=elbo_lo,
        toy_elbo_hi=elbo_hi,
        toy_training_gain_last=tr_m,
        toy_training_lo=tr_lo,
        toy_training_hi=tr_hi,
        toy_ll_gain_last=ll_m,
        toy_ll_lo=ll_lo,
        toy_ll_hi=ll_hi,
        toy_ll_seed_min=ll_seeds.min(),
        toy_ll_seed_max=ll_seeds.max(),
        near_zero_band=NEAR_ZERO,
        toy_ll_near_zero=100 * np.mean(np.abs(ll_seeds) < NEAR_ZERO),
        toy_ll_hi_min=reading["test_ll"][:, 2].min(),
        toy_grad=np.mean(grad_norm),
    )
    table = (
        f"Toy set, mean [{pct} interval] over {n_seeds} paired seeds:\n\n"
        + ss.gains_interval_table(reading)
    )
    return (
        Evidence(
            "C5.4",
            reading["better"],
            part="better",
            gate=gate,
            labels=[
                f"training ELBO gain per training point at H = {last}",
                f"test log-lik gain per test point at H = {last}",
            ],
            says=f"On the toy set at H = {last}, where plain MFVI merges units (its I is "
            f"{reading['deficit'][-1]:.2f} nats below log|G|), training with the symmetrised "
            f"objective raises the ELBO by {tr_m:.2f} nats [{tr_lo:.2f}, {tr_hi:.2f}] beyond "
            f"symmetrising the plain fit (with that, by {elbo_m:.2f} [{elbo_lo:.2f}, "
            f"{elbo_hi:.2f}]), and the test log-likelihood by {ll_m:.3f} nats per point "
            f"[{ll_lo:.3f}, {ll_hi:.3f}] ({pct} intervals over {n_seeds} paired seeds).",
            note=f"lower ends of the {pct} BCa bootstrap intervals over {n_seeds} paired seeds "
            f"of ELBO(q_G^sym) - ELBO(q_G^plain) (the gain from training) per training point "
            f"(n = {reading['n_train']}) and of the test log-lik gain per test point at the "
            f"largest toy width H = {last}, > {tie:g} (strictly better); gate: ceiling - I of "
            "the plain fits >= log 2 there",
            glue=glue,
            table=table,
        ),
        Evidence(
            "C5.4",
            reading["not_worse"],
            part="not-worse",
            labels=[
                f"{what} gain at H = {w}"
                for what in ("training ELBO", "test log-lik")
                for w in widths
            ],
            says=f"At no toy width (H = {', '.join(map(str, widths))}) is the symmetrised method "
            f"worse: the upper ends of the {pct} intervals of its training ELBO and "
            f"test-log-likelihood gains are at least {reading['not_worse'].min():+.4f}.",
            note=f"upper ends of the {pct} BCa bootstrap intervals over {n_seeds} paired seeds "
            f"of the training ELBO gains per training point (first {len(widths)}) and test "
            f"log-lik gains per test point (last {len(widths)}) per width, > {worse:g} (at least "
            "as good; a tie within float32 round-off counts)",
        ),
        Evidence(
            "C5.3",
            np.array([ll_lo]),
            part="predictive",
            gate=gate,
            says=f"Where plain MFVI merges units (the toy set at H = {last}), its test "
            f"log-likelihood is below the symmetrised method's by {ll_m:.3f} nats per point "
            f"[{ll_lo:.3f}, {ll_hi:.3f}] ({pct} interval over {n_seeds} paired seeds): the "
            "biases degrade its predictions.",
            note=f"lower end of the {pct} BCa bootstrap interval over {n_seeds} paired seeds of "
            f"the test log-lik gain per point of the symmetrised fit over plain MFVI at "
            f"H = {last}; gate: ceiling - I of the plain fits >= log 2 there",
        ),
    )


def combined_status(records: Sequence[Mapping]) -> str:
    """One status for several checks of a claim: not reproduced if any is, else inconclusive
    if any is, else reproduced."""
    _nonempty("records", records, "combined_status")
    statuses = [r["status"] for r in records]
    if "not reproduced" in statuses:
        return "not reproduced"
    return "inconclusive" if "inconclusive" in statuses else "reproduced"


def mi_words(num_perms: int | None) -> dict:
    """How the MNIST objective estimates I, in words: ``mnist_mi_text`` (for the prose),
    ``mnist_mi_short`` and ``mi_name`` (for the table's caption); exact I if ``num_perms`` is
    None, else [SYM]'s bound Î_K with K = ``num_perms``."""
    if num_perms is None:
        return dict(
            mnist_mi_text=f"the exact I as well (H ≤ {permutations.MAX_EXACT_WIDTH})",
            mnist_mi_short="exact I",
            mi_name="the exact I",
        )
    return dict(
        mnist_mi_text=f"[SYM]'s bound Î_K with K = {num_perms} sampled permutations (the exact I "
        f"needs H ≤ {permutations.MAX_EXACT_WIDTH})",
        mnist_mi_short=f"Î_K, K = {num_perms}",
        mi_name=f"Î_K in the column I, K = {num_perms}",
    )


def mnist_pruning_report(fits: Mapping, *, n_seeds: int, prior_scale: float) -> tables.Overview:
    """Units pruned by the plain MNIST fits (the first ``n_seeds`` runs of each width of
    :func:`.fits.fit_width`): the values the prose cites and :func:`.pruning.pruning_table`."""
    plain = slice(0, n_seeds)
    by_width = {
        w: pruning.unit_pruning(
            jax.tree.map(operator.itemgetter(plain), r["q"]), prior_scale=prior_scale
        )
        for w, r in fits.items()
    }
    prune = pruning.pruning_summary(by_width)
    glue = dict(
        mnist_pruned_pct=", ".join(f"{100 * p:.0f}%" for p in prune["pruned"]),
        mnist_kept=", ".join(f"{p['kept'].mean():.1f}" for p in by_width.values()),
        mnist_kl_pruned=", ".join(
            "none pruned" if math.isnan(k) else f"{k:.3f}" for k in prune["kl_pruned"]
        ),
        mnist_kl_kept=", ".join(f"{k:.3f}" for k in prune["kl_kept"]),
        mnist_prune_verdict=prune["verdict"],
    )
    return tables.Overview(pruning.pruning_table(by_width), glue)


def c5_4_mnist_evidence(
    reading: Mapping,
    fits: Mapping,
    grad_norm,
    *,
    n_seeds: int,
    toy_width: int,
    toy_grad: float,
) -> Evidence:
    """The further finding ``mnist`` of C5.4: the toy set's reading on MNIST
    (:func:`.repeats.symmetrised_gains` of the MNIST ``fits``), gated on whether the objective
    can see merged units there (``grad_norm`` at the plain fits of the largest width, against
    ``toy_grad`` at the toy set's largest width ``toy_width``). Its glue holds the values the
    prose cites; its table the gains and the gate's reason. The catalogue's rule of part
    ``mnist`` decides."""
    _need(
        reading,
        (
            "widths",
            "num_perms",
            "elbo",
            "training",
            "test_ll",
            "better",
            "level",
            "ceiling",
            "deficit",
            "saturation",
            "elbo_minus_ceiling",
            "largest_tie",
        ),
        "c5_4_mnist_evidence",
    )
    widths, num_perms = reading["widths"], reading["num_perms"]
    tie = catalogue_check("C5.4", "mnist")["bound"]
    mi_short = mi_words(num_perms)["mnist_mi_short"]
    pct = f"{100 * reading['level']:.0f}%"
    m_last = widths[-1]
    gate = ss.decidability_gate(
        reading,
        grad_norm,
        reference=f" (at the toy set's H = {toy_width}, where plain MFVI merges units: "
        f"{toy_grad:.2f})",
    )
    m_elbo, m_train, m_ll = (reading[k][-1] for k in ("elbo", "training", "test_ll"))
    mi_plain, mi_sym = (
        np.array([r["mi"][part].mean() for r in fits.values()])
        for part in (slice(0, n_seeds), slice(n_seeds, None))
    )
    if num_perms is None:
        saturation_text = (
            "with the exact I this says that plain MFVI merges no units at these "
            "widths: its q is already as far from symmetric as it can be, and there "
            "is nothing for the symmetrised objective to correct"
        )
    else:
        saturation_text = (
            "Î_K cannot exceed log K, and it reaches log K as soon as a random "
            "permutation moves one of the distinct units, whatever the pruned units "
            "do: the estimator is blind to the collapse the objective should correct"
        )
    glue = dict(
        mnist_mi_plain_last=float(mi_plain[-1]),
        mnist_mi_sym_last=float(mi_sym[-1]),
        mnist_mi_ceiling=float(reading["ceiling"][-1]),
        mnist_mi_ceiling_name="log|G|" if num_perms is None else "log K",
        mnist_deficit_last=float(reading["deficit"][-1]),
        mnist_saturation=reading["saturation"],
        mnist_grad=float(np.mean(grad_norm)),
        mnist_elbo_minus_ceiling=reading["elbo_minus_ceiling"],
        mnist_largest_tie=reading["largest_tie"],
        mnist_ll_gains=tables.number_list(reading["test_ll"][:, 0], "+.1e"),
        mnist_elbo_gains=tables.number_list(reading["elbo"][:, 0], ".3f"),
        mnist_saturation_text=saturation_text,
    )
    table = (
        f"MNIST, mean [{pct} interval] over {n_seeds} paired seeds:\n\n"
        + ss.gains_interval_table(reading)
        + ("\ngate passed: " if gate.passed else "\ngate failed: ")
        + gate.why
        + "\n"
    )
    if reading["saturation"] < 1e-3:
        says = (
            f"On MNIST at H = {m_last} ({mi_short}) the symmetrised and plain runs end at the "
            f"same q: the ELBO gain, {m_elbo[0]:.3f} nats, is the ceiling of I itself (from "
            f"training {m_train[0]:+.1e}) and the test log-likelihood gain is {m_ll[0]:+.1e} "
            f"nats per point ({n_seeds} paired seeds)."
        )
    else:
        says = (
            f"On MNIST at H = {m_last} ({mi_short}) training with the symmetrised objective "
            f"raises the ELBO by {m_train[0]:.3f} nats [{m_train[1]:.3f}, {m_train[2]:.3f}] "
            f"(with the plain fit's own I, by {m_elbo[0]:.3f}) and its test "
            f"log-likelihood by {m_ll[0]:+.4f} nats per point [{m_ll[1]:+.4f}, {m_ll[2]:+.4f}] "
            f"({pct} intervals over {n_seeds} paired seeds)."
        )
    return Evidence(
        "C5.4",
        reading["better"],
        part="mnist",
        gate=gate,
        labels=[
            f"training ELBO gain per training point at H = {m_last}",
            f"test log-lik gain per test point at H = {m_last}",
        ],
        says=says,
        note=f"the reading of C5.4 on MNIST at H = {widths} ({mi_short}): lower ends of the "
        f"{pct} BCa bootstrap intervals of the training ELBO gain per training point and the "
        f"test log-lik gain per test point at the largest width, > {tie:g}; gate: ceiling - I "
        "of the plain fits >= log 2 there. Test log-lik gains per "
        f"width [{tables.number_list(reading['test_ll'][:, 0], '+.1e')}], ELBO gains "
        f"[{tables.number_list(reading['elbo'][:, 0], '.4f')}]",
        glue=glue,
        table=table,
    )


# --------------------------------------------------------------------------- the profiles


def profiles_report(
    quick: SymmetrisedVISettings, full: SymmetrisedVISettings, committed: Path | None
) -> dict:
    """The values the reproduction notes cite from the quick and full profiles' settings, and
    the MNIST gains of the old C5.4 check's full-profile record (the last such record in
    ``committed``/full/05.jsonl if there is one, else :data:`OLD_RECORD`)."""
    path = None if committed is None else Path(committed) / "full" / "05.jsonl"
    old = [
        r
        for r in (read_jsonl(path) if path is not None and path.exists() else [])
        if r["id"] == "C5.4" and r.get("finding") is None and "MNIST ELBO [" in r.get("note", "")
    ]
    old_gains = ss.committed_gains(old[-1] if old else OLD_RECORD)
    if full.mnist_perms is None:
        raise ValueError(
            "full.mnist_perms is None: the notes cite log K of the full profile's sampled "
            "permutations, so the full profile must set mnist_perms to K"
        )
    return dict(
        quick_mnist_max=max(quick.mnist_widths),
        quick_n_seeds=quick.n_seeds,
        full_n_seeds=full.n_seeds,
        full_mnist_widths=", ".join(map(str, full.mnist_widths)),
        full_mnist_perms=full.mnist_perms,
        full_mnist_n_train=full.mnist_n_train,
        full_mnist_steps=full.mnist_steps,
        full_mnist_seeds=full.mnist_seeds,
        full_log_k=math.log(full.mnist_perms),
        full_old_ll_gains=tables.number_list(old_gains["test_ll"], "+.4f"),
        full_old_elbo_gains=tables.number_list(old_gains["elbo"], ".3f"),
    )
