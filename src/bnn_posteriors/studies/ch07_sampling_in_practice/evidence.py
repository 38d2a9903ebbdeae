"""Chapter 7's claim checks as evidence: what each check measured, how it is read, the words
and the table the chapter shows with it (:class:`bnn_posteriors.claims.checking.Evidence`).

Each ``c7_*_evidence`` function takes a result of :mod:`.permuted_starts`,
:mod:`.functional_diversity`, :mod:`.many_chains` or :mod:`.prior_scales` and returns the
:class:`Evidence` of one claim's checks, in the chapter's order, each naming its ``part``: the
rule and its bound are the claims catalogue's ``[[claim.check]]`` of that part
(``claims/catalogue/07_sampling_in_practice.toml``), read here only for the words and the
glue. The chapter passes them to :func:`bnn_posteriors.claims.checking.show_and_check`. The
``*_report`` functions return what the chapter shows without a check, a
:class:`~bnn_posteriors.site.tables.Overview` of a Markdown table and the values its prose
cites.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from bnn_posteriors.claims.checking import Evidence, Gate, catalogue_check, read_jsonl
from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.inference import mclmc
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import SamplingInPracticeSettings
from bnn_posteriors.studies.ch07_sampling_in_practice import prior_scales

AUTHORS_LPPD = (0.614, 0.805)  # [SAP] authors' airfoil runs: 1 chain, 10 000 chains
CI_LEVEL = 95  # the level of every interval of the chapter
PRIOR_RESULTS = "results/ch7_prior_scale"  # the committed cells of C7.6
GPU_RECORDS = ("results", "gpu", "07_h100_to_c7.4.jsonl")  # the GPU run (C7.1-C7.4 only)


def _need(mapping: Mapping, keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in mapping]
    if missing:
        raise ValueError(f"{where}: the result lacks {missing}")


# --------------------------------------------------------------------------- MILE run


def method_values(cfg: SamplingInPracticeSettings) -> dict:
    """The settings of the warm starts and of MILE's tuning that the prose cites."""
    return dict(
        de_lr=cfg.de_learning_rate,
        de_wd=cfg.de_weight_decay,
        de_batch=cfg.de_batch_size,
        de_patience=cfg.de_patience,
        ev_start=mclmc.ENERGY_VAR_START,
        ev_end=mclmc.ENERGY_VAR_END,
        tuning_fractions_text="/".join(f"{100 * f:g}" for f in mclmc.TUNING_FRACTIONS),
        hidden_first=cfg.hidden[0],
        ci_level=CI_LEVEL,
    )


def run_table(run: Mapping) -> str:
    """The run of :func:`.permuted_starts.permuted_start_run` in a table: chains, samples,
    seconds, the permuted starts' function gap and the tuned step sizes."""
    _need(run, ("mean", "f_gap", "seconds", "bde"), "run_table")
    rows = [
        ("max |f(permuted start) − f(its member)| on the test set", f"{run['f_gap']:.1e}"),
        ("chains × samples per chain", f"{len(run['mean'])} × {run['mean'].shape[1]}"),
        ("sampling time", f"{run['seconds']:.0f} s"),
        ("step sizes", tables.number_list(np.asarray(run["bde"]["step_size"]), ".4f")),
    ]
    return tables.markdown_table(("run", "value"), rows)


def diagnostics_table(run: Mapping) -> str:
    """R-hat and bulk ESS of log σ across the regular chains and the first permuted group."""
    _need(run, ("bde", "regular", "groups"), "diagnostics_table")
    log_sigma = np.asarray(run["bde"]["samples"]["log_sigma"])
    rows = []
    for name, idx in {"regular": run["regular"], "permuted": run["groups"][0]}.items():
        rhat, ess = diagnostics.rhat_and_ess(log_sigma[idx])
        rows.append((name, f"{rhat:.3f}", f"{ess:.0f}"))
    return tables.markdown_table(("chains", "R-hat(log σ)", "ESS(log σ)"), rows)


# --------------------------------------------------------------------------- C7.1


def c7_1_evidence(lppds: Mapping) -> tuple[Evidence, ...]:
    """C7.1 from :func:`.permuted_starts.ensemble_lppds`: how much every permuted group's
    ensemble beats its best chain (smallest over the groups; part ``beats-best-chain``), and
    how far it trails the regular BDE on average (``gap-to-bde``, whose catalogue bound of
    'almost as good' is glued as ``perm_gap_bound``). The first carries the table of the
    ensembles' LPPDs."""
    _need(lppds, ("regular", "permuted", "best_permuted"), "c7_1_evidence")
    ens_regular = lppds["regular"]
    ens_perm, best_perm = np.asarray(lppds["permuted"]), np.asarray(lppds["best_permuted"])
    if ens_perm.size == 0 or ens_perm.shape != best_perm.shape:
        raise ValueError("c7_1_evidence: permuted and best_permuted need one entry per group")
    n = len(ens_perm)
    rows = [("regular BDE", f"{ens_regular:.3f}", "")]
    rows += [
        (f"permuted BDE of member {g + 1}", f"{e:.3f}", f"{b:.3f}")
        for g, (e, b) in enumerate(zip(ens_perm, best_perm, strict=True))
    ]
    beat, trail = ens_perm - best_perm, ens_regular - ens_perm
    gap_bound = catalogue_check("C7.1", "gap-to-bde")["bound"]
    glue = dict(
        ens_regular=ens_regular,
        ens_permuted_mean=float(ens_perm.mean()),
        permuted_groups=n,
        perm_gap_bound=gap_bound,
    )
    return (
        Evidence(
            "C7.1",
            float(np.min(beat)),
            part="beats-best-chain",
            note=f"permuted-start ensemble LPPD minus its best single chain, smallest over the "
            f"{n} groups: {np.round(beat, 4).tolist()}",
            says=f"Each of the {n} ensembles of chains from permutations of one "
            f"network beats its own best chain, by at least {np.min(beat):.3f} "
            "nats of test LPPD per point",
            glue=glue,
            table=tables.markdown_table(("ensemble", "test LPPD", "best chain"), rows),
        ),
        Evidence(
            "C7.1",
            float(np.mean(trail)),
            part="gap-to-bde",
            note=f"regular BDE LPPD minus permuted-start ensemble LPPD (within {gap_bound:g}), "
            f"mean over the {n} groups: {np.round(trail, 4).tolist()}",
            says=f"The permuted-start ensembles trail the regular BDE (test LPPD "
            f"{ens_regular:.3f}) by {np.mean(trail):.3f} nats on average over {n} "
            f"groups, within the {gap_bound:g} nats of 'almost as good'",
        ),
    )


# --------------------------------------------------------------------------- C7.2


def z_test_report(z_tests: Mapping) -> tables.Overview:
    """The Z tests of :func:`.functional_diversity.within_chain_z`: glue (in %) and a table."""
    _need(z_tests, ("frac_significant", "frac_significant_paper", "frac_by_chain"), "z_test")
    rows = [
        ("all regular chains", f"{z_tests['frac_significant']:.1%}"),
        *((f"chain {k + 1}", f"{f:.0%}") for k, f in enumerate(z_tests["frac_by_chain"])),
        ("all, eq. (22) as printed", f"{z_tests['frac_significant_paper']:.1%}"),
    ]
    glue = {k: 100 * z_tests[k] for k in ("frac_significant", "frac_significant_paper")}
    return tables.Overview(
        tables.markdown_table(("within-chain pairs", "share with |Z| > 1.96"), rows), glue
    )


def w2_ratio_report(ratio: Mapping, *, num_resamples: int) -> tables.Overview:
    """ρ_W of :func:`.functional_diversity.w2_ratio`: glue and a table with its interval; the
    glue ``w2_ratio_floor`` is the catalogue's bound of C7.2's part ``ratio-low``."""
    _need(ratio, ("ratio", "low", "high", "mean_within", "mean_between", "within"), "w2_ratio")
    rows = [
        ("mean W₂² within chains", f"{ratio['mean_within']:.4f}"),
        ("mean W₂² between chains", f"{ratio['mean_between']:.4f}"),
        (
            f"ρ_W [{CI_LEVEL} % interval over chains, {num_resamples} resamples]",
            f"{ratio['ratio']:.3f} [{ratio['low']:.3f}, {ratio['high']:.3f}]",
        ),
        ("mean W₂² within each chain", tables.number_list(ratio["within"], ".4f")),
    ]
    glue = dict(
        n_regular=len(ratio["within"]),
        w2_ratio_floor=catalogue_check("C7.2", "ratio-low")["bound"],
        ratio_w=ratio["ratio"],
        ratio_w_low=ratio["low"],
        ratio_w_high=ratio["high"],
        mean_within_w2=ratio["mean_within"],
        mean_between_w2=ratio["mean_between"],
    )
    return tables.Overview(tables.markdown_table(("statistic", "value"), rows), glue)


def controls_report(ctrl: Mapping, *, noise: float) -> tables.Overview:
    """The negative controls of :func:`.functional_diversity.diversity_controls`."""
    keys = ("copies_low", "copies_high", "mixed_low", "mixed_high")
    _need(ctrl, ("copies_frac", *keys), "controls_report")
    rows = [
        ("near copies", f"{ctrl['copies_frac']:.1%}", "[{copies_low:.4f}, {copies_high:.4f}]"),
        ("mixed chains", "", "[{mixed_low:.3f}, {mixed_high:.3f}]"),
    ]
    rows = [(a, b, c.format(**ctrl)) for a, b, c in rows]
    glue = {
        "ctrl_noise": noise,
        "ctrl_copies_frac": 100 * ctrl["copies_frac"],
        **{f"ctrl_{k}": ctrl[k] for k in keys},
    }
    return tables.Overview(
        tables.markdown_table(("control", "pairs with |Z| > 1.96", "ρ_W interval"), rows), glue
    )


def c7_2_evidence(z_tests: Mapping, ratio: Mapping) -> tuple[Evidence, ...]:
    """C7.2: the share of within-chain pairs that differ by the Z test (part ``z-test``), and
    the lower and upper ends of ρ_W's interval (``ratio-low``: above the catalogue's floor of
    'not negligible'; ``ratio-high``: within-chain distances lower than between-chain
    ones), each decided by the catalogue's rule of its part."""
    _need(z_tests, ("frac_significant",), "c7_2_evidence")
    _need(ratio, ("ratio", "low", "high", "mean_within", "mean_between", "within"), "c7_2")
    k, r = len(ratio["within"]), ratio
    floor = catalogue_check("C7.2", "ratio-low")["bound"]
    return (
        Evidence(
            "C7.2",
            z_tests["frac_significant"],
            part="z-test",
            note=f"fraction of within-chain sample pairs with |Z| > 1.96 over {k} regular "
            "chains, Z = sqrt(n) mean_D / sigma_D",
            says=f"{z_tests['frac_significant']:.0%} of the pairs of samples within a chain "
            "differ significantly by the Z-test of App. D.5 (|Z| > 1.96), more than half",
        ),
        Evidence(
            "C7.2",
            r["low"],
            part="ratio-low",
            note=f"lower end of the 95% bootstrap interval (over {k} regular chains) of "
            f"rho_W = mean within-chain W2^2 / mean between-chain W2^2 (not negligible); "
            f"rho_W = {r['ratio']:.4f}, W2^2 within {r['mean_within']:.4g}, between "
            f"{r['mean_between']:.4g}",
            says=f"The samples within a chain hold a share rho_W = {r['ratio']:.2f} of the "
            f"functional variance between chains (95% interval over chains [{r['low']:.2f}, "
            f"{r['high']:.2f}]), above the floor {floor:g} of 'not negligible'",
        ),
        Evidence(
            "C7.2",
            r["high"],
            part="ratio-high",
            note=f"upper end of the same interval of rho_W (within-chain W2^2 lower than "
            f"between-chain, [SAP] Fig. 11); rho_W = {r['ratio']:.4f}",
            says=f"Samples within a chain are closer in W2 than samples of different chains: "
            f"the upper end of rho_W's interval, {r['high']:.2f}, is below 1",
        ),
    )


# --------------------------------------------------------------------------- C7.3, C7.4


def many_run_report(many: Mapping, *, device: str) -> tables.Overview:
    """The many-chain run of :func:`.many_chains.many_chain_run` on ``device``."""
    _need(many, ("mean", "seconds", "ess"), "many_run_report")
    rows = [
        ("chains × samples per chain", f"{many['mean'].shape[0]} × {many['mean'].shape[1]}"),
        ("sampling time", f"{many['seconds']:.0f} s on {device}"),
        ("median within-chain ESS of the log density", f"{many['ess']:.0f}"),
    ]
    glue = dict(n_chains_many=many["mean"].shape[0])
    return tables.Overview(tables.markdown_table(("many-chain run", "value"), rows), glue)


def saturation_report(sat: Mapping, *, n_orderings: int) -> tables.Overview:
    """The LPPD at 1, 10 and all chains (:func:`.many_chains.chain_saturation`) beside the
    authors' airfoil runs, and the two gains."""
    keys = ("lppd_1", "lppd_10", "lppd_max", "gain_1_10", "gain_10_max")
    _need(sat, ("cum_mean", *keys), "saturation_report")
    n = len(sat["cum_mean"])
    rows = [
        ("1", f"{sat['lppd_1']:.3f}", f"{AUTHORS_LPPD[0]}"),
        ("10", f"{sat['lppd_10']:.3f}", ""),
        (f"{n} (here) / 10 000 (authors)", f"{sat['lppd_max']:.3f}", f"{AUTHORS_LPPD[1]}"),
        ("gain 1 → 10", f"{sat['gain_1_10']:.3f}", ""),
        (f"gain 10 → {n}", f"{sat['gain_10_max']:.3f}", ""),
    ]
    glue = {
        "authors_lppd_1": AUTHORS_LPPD[0],
        "authors_lppd_max": AUTHORS_LPPD[1],
        "n_orderings": n_orderings,
        **{k: sat[k] for k in keys},
    }
    return tables.Overview(
        tables.markdown_table(("chains", "test LPPD", "authors, airfoil"), rows), glue
    )


def c7_3_evidence(sat: Mapping, *, n_orderings: int) -> Evidence:
    """C7.3: the LPPD gains from 1 to 10 chains and from 10 to all chains, which the
    catalogue's rule (part ``saturation``) asks to decrease."""
    _need(sat, ("cum_mean", "lppd_1", "lppd_10", "lppd_max", "gain_1_10", "gain_10_max"), "c7_3")
    n = len(sat["cum_mean"])
    return Evidence(
        "C7.3",
        np.array([sat["gain_1_10"], sat["gain_10_max"]]),
        part="saturation",
        labels=["LPPD gain from 1 to 10 chains", f"LPPD gain from 10 to {n} chains"],
        note=f"LPPD gains 1->10 and 10->{n} chains (mean of {n_orderings} "
        f"orderings); LPPD at 1, 10, {n} chains: {sat['lppd_1']:.4f}, "
        f"{sat['lppd_10']:.4f}, {sat['lppd_max']:.4f}",
        says=f"The test LPPD gains {sat['gain_1_10']:.3f} from 1 to 10 chains and only "
        f"{sat['gain_10_max']:.3f} from 10 to {n} chains: it saturates after a few chains",
    )


def ks_report(ks: Mapping, *, num_resamples: int) -> tables.Overview:
    """KS distances of :func:`.many_chains.kernel_marginals` per layer, and Δ_KS."""
    _need(ks, ("ks", "ks_bias", "inner", "outer", "gap", "low", "high"), "ks_report")
    rows = [
        (i, f"{k:.3f}", f"{b:.3f}")
        for i, (k, b) in enumerate(zip(ks["ks"], ks["ks_bias"], strict=True))
    ]
    header = ("layer", "KS(kernel, N(0, 1))", "KS(bias, N(0, 1))")
    table = tables.markdown_table(header, rows) + (
        f"\nΔ_KS = {ks['gap']:.4f}, {CI_LEVEL} % bootstrap interval over chains "
        f"[{ks['low']:.4f}, {ks['high']:.4f}] ({num_resamples} resamples)\n"
    )
    glue = dict(
        ks_first=ks["ks"][0],
        ks_last=ks["ks"][-1],
        ks_inner=ks["inner"],
        ks_outer=ks["outer"],
        ks_gap=ks["gap"],
        ks_gap_low=ks["low"],
        ks_gap_high=ks["high"],
        n_boot=num_resamples,
        ks_grid=diagnostics.KS_GRID,
    )
    return tables.Overview(table, glue)


def c7_4_evidence(
    ks: Mapping,
    seed_runs: Sequence[Mapping] | None,
    full_cfg: SamplingInPracticeSettings,
    *,
    n_chains: int,
    n_boot: int,
) -> Evidence:
    """C7.4: the lower ends of Δ_KS's intervals (part ``ks-gap``; the catalogue asks them above
    0), on the full profile's committed runs of every seed (``seed_runs``,
    :func:`.many_chains.committed_seeds`) or, while they are missing (None), on this build's
    ``ks`` of ``n_chains`` chains. Its table lists the committed runs."""
    _need(ks, ("gap", "low", "high"), "c7_4_evidence")
    committed = seed_runs is not None
    runs: Sequence[Mapping] = [] if seed_runs is None else seed_runs
    if committed and len(runs) == 0:
        raise ValueError("c7_4_evidence: seed_runs is empty; pass None while runs are missing")
    table = None
    if committed:
        rows = [
            (
                r["settings"]["seed"],
                r["settings"]["n_chains"],
                f"{r['ks'][0]:.3f}",
                f"{np.mean(r['ks'][1:-1]):.3f}",
                f"{r['ks'][-1]:.3f}",
                f"{r['gap']:+.4f} [{r['low']:+.4f}, {r['high']:+.4f}]",
            )
            for r in runs
        ]
        header = ("seed", "chains", "KS first", "KS intermediate (mean)", "KS last", "Δ_KS [95 %]")
        table = tables.markdown_table(header, rows)
    lows = np.array([r["low"] for r in runs] if committed else [ks["low"]])
    lows_text = tables.number_list(lows, "+.4f")
    glue = dict(
        full_tuning_many=full_cfg.tuning_steps_many,
        full_sampling_many=full_cfg.sampling_steps_many,
        many_seeds_n=len(full_cfg.many_seeds),
        c74_basis=f"the {len(runs)} committed runs of the full profile: lower ends " + lows_text
        if committed
        else f"this build's {n_chains} chains",
    )
    basis = (
        f"the full profile's committed runs of seeds {list(full_cfg.many_seeds)} "
        f"({full_cfg.n_chains_many} chains each)"
        if committed
        else f"this build ({n_chains} chains, {n_boot} resamples)"
    )
    pooled = (
        f"Pooled over {full_cfg.n_chains_many} chains in each of the {len(runs)} committed runs"
        if committed
        else f"Pooled over this build's {n_chains} chains"
    )
    return Evidence(
        "C7.4",
        lows,
        part="ks-gap",
        labels=[f"seed {r['settings']['seed']}" for r in runs] if committed else ["this build"],
        note="lower ends of the 95% bootstrap intervals over chains of min KS(first, last "
        "kernel) minus mean KS(intermediate kernels) to N(0,1), "
        + basis
        + f"; this build: point estimate {ks['gap']:.4f}, interval [{ks['low']:.4f}, "
        f"{ks['high']:.4f}] over {n_chains} chains",
        committed=f"results/{full_cfg.many_results}" if committed else None,
        says=pooled
        + ", the intermediate kernels' marginals are closer to N(0,1) than both the first and "
        "the last kernel's by a KS distance whose 95% interval over chains starts at "
        + lows_text
        + (" (all above 0)" if np.all(lows > 0) else ""),
        glue=glue,
        table=table,
    )


# --------------------------------------------------------------------------- C7.5


def c7_5_evidence(dead: Mapping, *, hidden_first: int) -> Evidence:
    """C7.5 from :func:`.permuted_starts.dead_start_summary`: how far the dead-ReLU chain's
    test LPPD lies below the warm starts' mean (part ``dead-gap``, whose catalogue bound of
    'does not fit' is glued as ``dead_gap_floor``). Its table shows the LPPDs and the active
    units of the first hidden layer (of ``hidden_first``)."""
    _need(dead, ("dead", "warm", "active_start", "active_first", "active_last"), "c7_5")
    gap = dead["warm"] - dead["dead"]
    floor = catalogue_check("C7.5", "dead-gap")["bound"]
    rows = [
        ("test LPPD", f"{dead['dead']:.3f}", f"{dead['warm']:.3f} (mean)"),
        (
            f"active units of hidden layer 1 (of {hidden_first}): start, first kept sample, "
            "last sample",
            f"{dead['active_start']}, {dead['active_first']}, {dead['active_last']}",
            "",
        ),
    ]
    side = "below" if gap > 0 else "above"
    glue = dict(
        active_first=dead["active_first"],
        lppd_dead=dead["dead"],
        lppd_warm=dead["warm"],
        dead_vs_warm="within 0.25 nats of" if abs(gap) < 0.25 else side,
        dead_gap_floor=floor,
    )
    return Evidence(
        "C7.5",
        gap,
        part="dead-gap",
        note="mean regular-chain LPPD minus dead-ReLU-start chain LPPD (nats per test point); "
        f"active units of hidden layer 1: start {dead['active_start']}, first kept sample "
        f"{dead['active_first']}, last sample {dead['active_last']}",
        says=f"The chain started with all {hidden_first} first-layer units dead moves: "
        f"{dead['active_first']} units are active again by its first kept sample, and its "
        f"test LPPD {dead['dead']:.3f} is {abs(gap):.3f} nats "
        f"{side} the warm starts' {dead['warm']:.3f}, not the "
        f"deficit of over {floor:g} nats of a chain that cannot move",
        glue=glue,
        table=tables.markdown_table(("", "dead start", "warm starts"), rows),
    )


# --------------------------------------------------------------------------- C7.6


def prior_settings_values(
    cfg: SamplingInPracticeSettings, full_cfg: SamplingInPracticeSettings
) -> dict:
    """The prior study's settings that the prose cites: this build's and the full profile's."""
    return dict(
        scales_text=tables.number_list(cfg.scales, "g"),
        prior_chains=cfg.prior_chains,
        n_scales_paper=len(cfg.scales),
        full_depths_text=tables.number_list(full_cfg.prior_depths, "d"),
        full_prior_chains=full_cfg.prior_chains,
        full_prior_tuning=full_cfg.prior_tuning_steps,
        full_prior_sampling=full_cfg.prior_sampling_steps,
    )


def scale_table(cells: Sequence[Mapping], cmp: Mapping, *, n_chains: int) -> str:
    """This build's cells (:func:`.prior_scales.prior_scale_study`) by scale: mean test LPPD
    and average LPPD and RMSE ranks (:func:`.prior_scales.scale_comparison`)."""
    _need(cmp, ("grid", "lppd", "avg_rank", "rmse_ranks"), "scale_table")
    if len(cells) == 0:
        raise ValueError("scale_table: cells is empty")
    rows = [
        (f"{s:g}", f"{v:.3f}", a, b)
        for s, v, a, b in zip(
            cmp["grid"],
            cmp["lppd"].mean(axis=0),
            [*(f"{r:.2f}" for r in cmp["avg_rank"]), "—"],
            [*(f"{r:.2f}" for r in cmp["rmse_ranks"].mean(axis=0)), "—"],
            strict=True,
        )
    ]
    header = ("prior scale", "test LPPD (mean over cells)", "LPPD rank", "RMSE rank")
    caption = (
        f"This build: {len(cells)} cells × {len(cmp['grid'])} scales × {n_chains} chains, "
        f"{sum(c['wall_s'] for c in cells):.0f} s of computing, "
        f"{sum(c.get('read', False) for c in cells)} cells read from results/.\n\n"
    )
    return caption + tables.markdown_table(header, rows)


def glorot_counts(rk: Mapping, *, scales: Sequence[float]) -> tuple[int, int]:
    """Cells where the Glorot scale ranks below and above scale 1 by the LPPD (``rk`` from
    :func:`.prior_scales.rank_clauses`; its last column is the Glorot scale)."""
    one = list(scales).index(1.0)
    g_lppd = rk["glorot_ranks"]["LPPD"]
    return int((g_lppd[:, -1] > g_lppd[:, one]).sum()), int((g_lppd[:, -1] < g_lppd[:, one]).sum())


def rank_report(
    rk: Mapping, *, scales: Sequence[float], glorot: float, committed: bool
) -> tables.Overview:
    """The clauses of :func:`.prior_scales.rank_clauses` (scale 1's rank advantages, mean and
    interval per metric) and scale 1's rank per depth; ``committed``: whether ``rk`` rests on
    the committed cells."""
    _need(rk, ("mean", "low", "high", "middle", "depth_rank_1", "ranks", "glorot_ranks"), "rank")
    compares = {
        "robust": f"middle rank {rk['middle']:g} − rank of 1",
        "very small": "rank of 0.1 − rank of 1",
        "very large": "rank of 10 − rank of 1",
        "Glorot": f"rank of {glorot:g} − rank of 1 (ranked with it)",
    }
    half = len(prior_scales.RANK_CLAUSES)
    rows = [
        (
            name,
            compares[name],
            *(
                f"{rk['mean'][j]:+.2f} [{rk['low'][j]:+.2f}, {rk['high'][j]:+.2f}]"
                for j in (i, i + half)
            ),
        )
        for i, name in enumerate(prior_scales.RANK_CLAUSES)
    ]
    n_mild = (len(rk["clauses"]) - 2 * half) // 2
    for i in range(n_mild):
        j = 2 * half + i
        rows.append(
            (
                rk["clauses"][j],
                f"{rk['clauses'][j].split()[-1]}'s rank − rank of 1 (harm when above 0)",
                *(
                    f"{rk['mean'][k]:+.2f} [{rk['low'][k]:+.2f}, {rk['high'][k]:+.2f}]"
                    for k in (j, j + n_mild)
                ),
            )
        )
    header = ("clause", "scale 1's rank advantage", "LPPD: mean [95 %]", "RMSE: mean [95 %]")
    depth = rk["depth_rank_1"]
    depth_rows = [(d, f"{depth['LPPD'][d]:.2f}", f"{depth['RMSE'][d]:.2f}") for d in depth["LPPD"]]
    table = tables.markdown_table(header, rows) + "\n"
    table += tables.markdown_table(("depth", "rank of scale 1, LPPD", "RMSE"), depth_rows)
    one = list(scales).index(1.0)
    n_worse, n_better = glorot_counts(rk, scales=scales)
    glue = dict(
        c76_cells=rk["n_cells"],
        middle_rank=rk["middle"],
        c76_basis="the committed cells at the paper's budget"
        if committed
        else "this build's own cells (the committed cells are missing)",
        rank1_lppd=rk["ranks"]["LPPD"][:, one].mean(),
        rank1_rmse=rk["ranks"]["RMSE"][:, one].mean(),
        **{
            f"rk_{m}_{c.split()[-1].lower()}{s}": rk[k][j]
            for j, (m, c) in enumerate(zip(rk["metrics"], rk["clauses"], strict=True))
            if j < 2 * half
            for k, s in (("mean", ""), ("low", "_low"), ("high", "_high"))
        },
        **{
            f"rk_{m}_mild{i}{s}": rk[k][2 * half + n_mild * (m == "RMSE") + i]
            for m in ("LPPD", "RMSE")
            for i in range(n_mild)
            for k, s in (("mean", ""), ("low", "_low"), ("high", "_high"))
        },
        glorot_worse=n_worse,
        glorot_better=n_better,
        depth_rank1_max=max(max(v.values()) for v in depth.values()),
    )
    return tables.Overview(table, glue)


def scale_one_last(cells: Sequence[Mapping]) -> list[dict]:
    """The negative control of C7.6: each cell with scale 1 made last (its LPPD 1 below the
    lowest, its RMSE 1 above the highest of the cell)."""
    out = []
    for c in cells:
        _need(c, ("settings", "lppd", "rmse"), "scale_one_last")
        if 1.0 not in c["settings"]["grid"]:
            raise ValueError(f"scale_one_last: scale 1 is not in the grid {c['settings']['grid']}")
        changed = {
            k: [
                (min(c[k]) - 1.0 if k == "lppd" else max(c[k]) + 1.0) if s == 1.0 else v
                for s, v in zip(c["settings"]["grid"], c[k], strict=True)
            ]
            for k in ("lppd", "rmse")
        }
        out.append({**c, **changed})
    return out


def _columns(rk: Mapping, clauses: Sequence[str]) -> list[int]:
    """The columns of :func:`.prior_scales.rank_clauses` of the named clauses, LPPD then RMSE."""
    missing = [c for c in clauses if c not in rk["clauses"]]
    if missing:
        raise ValueError(f"rank_clauses gave no columns of the clauses {missing}")
    return [
        j
        for metric in ("LPPD", "RMSE")
        for c in clauses
        for j, (m, name) in enumerate(zip(rk["metrics"], rk["clauses"], strict=True))
        if m == metric and name == c
    ]


def c7_6_rank_evidence(
    rk: Mapping,
    rk_broken: Mapping,
    *,
    scales: Sequence[float],
    glorot: float,
    committed: bool,
    mild: Sequence[float] = (0.5, 2.0),
) -> tuple[Evidence, Evidence, Evidence, Evidence]:
    """C7.6 on Fig. 12's ranks, each clause of App. D.6 on its own sentence (``rk`` from
    :func:`.prior_scales.rank_clauses` with ``mild``):

    - ``clauses``: "robust", "clear deterioration" at 0.1 and 10: the lower ends of scale 1's
      rank advantages, above 0 (gated on the committed cells deciding them);
    - ``mild-no-harm``: "small deviations do not seem to harm": the lower ends of
      rank(s) − rank(1) for the ``mild`` scales, at most 0 (no evidence of harm);
    - ``glorot-not-beneficial``: "we can not find evidence that deviating … in the spirit of
      network initializations is beneficial": the upper ends of rank(Glorot) − rank(1), at
      least 0 (no evidence that Glorot ranks better);
    - further finding ``glorot-worse``: the garbled "not suboptimal, as the scale is too
      small" read as "the Glorot scale ranks worse": its lower ends above 0, gated on the cells
      deciding it.

    ``rk_broken``: the same on :func:`scale_one_last`'s cells (the negative control, shown in
    the table of the first check).
    """
    _need(rk, ("low", "high", "mean", "supported", "contradicted", "clauses", "metrics"), "c7_6")
    _need(rk_broken, ("outcome", "mean", "low", "high"), "c7_6_rank_evidence (control)")
    n_grid, one = len(scales), list(scales).index(1.0)
    n_worse, n_better = glorot_counts(rk, scales=scales)
    low, high, mean = (np.asarray(rk[k], dtype=float) for k in ("low", "high", "mean"))
    labels = [f"{c} ({m})" for c, m in zip(rk["clauses"], rk["metrics"], strict=True)]
    main = _columns(rk, ("robust", "very small", "very large"))
    mild_cols = _columns(rk, [f"mild {s:g}" for s in mild])
    glorot_cols = _columns(rk, ("Glorot",))
    supported, contradicted = low > 0, high < 0
    missing = f"the committed cells of {PRIOR_RESULTS}/ are missing"

    def intervals(cols: Sequence[int]) -> str:
        return "; ".join(
            f"{labels[j]} {mean[j]:+.2f} [{low[j]:+.2f}, {high[j]:+.2f}]" for j in cols
        )

    undecided = [j for j in main if not (supported[j] or contradicted[j])]
    decided_main = not undecided or any(contradicted[j] for j in main)
    control = tables.markdown_table(
        ("negative control", "outcome", "robust: mean [95 %]"),
        [
            (
                "scale 1 last in every cell",
                rk_broken["outcome"],
                f"{rk_broken['mean'][0]:+.2f} [{rk_broken['low'][0]:+.2f}, "
                f"{rk_broken['high'][0]:+.2f}]",
            )
        ],
    )
    basis = PRIOR_RESULTS if committed else None
    read_cells = Gate(  # the parts that need only the committed cells to decide
        passed=bool(committed), why=missing, decide=f"the committed cells of {PRIOR_RESULTS}/"
    )
    based = f"over {rk['n_cells']} cells (Fig. 12's ranks)"
    clauses = Evidence(
        "C7.6",
        low[main],
        part="clauses",
        labels=[labels[j] for j in main],
        gate=Gate(
            passed=bool(committed and decided_main),
            why=(
                "the intervals of " + intervals(undecided) + " contain 0" if committed else missing
            ),
            decide="more cells of Fig. 12 at the paper's budget (bikesharing and the paper's "
            "three splits: 36 cells), enough for every interval to leave 0",
        ),
        committed=basis,
        note="lower ends of the 95% bootstrap intervals (over cells) of scale 1's mean rank "
        "advantage (eq. ch7-rank-advantage; ranks of the LPPD and the RMSE of each cell's "
        f"sampled predictive among the paper's {n_grid} scales): " + intervals(main),
        says=f"{based[0].upper()}{based[1:]}, scale 1 has average rank "
        f"{rk['ranks']['LPPD'][:, one].mean():.2f} (LPPD) and "
        f"{rk['ranks']['RMSE'][:, one].mean():.2f} (RMSE) of {n_grid}, better than the middle "
        f"{rk['middle']:g}, and 0.1 and 10 rank {mean[main[1]]:.2f} and {mean[main[2]]:.2f} "
        f"places below it (lower ends {low[main[1]]:.2f}, {low[main[2]]:.2f})",
        glue=dict(broken_outcome=rk_broken["outcome"], broken_robust=rk_broken["mean"][0]),
        table=control,
    )
    harmed = [j for j in mild_cols if low[j] > 0]
    no_harm_says = (
        f"{based}, the small deviations "
        + " and ".join(f"{s:g}" for s in mild)
        + " are "
        + " and ".join(f"{mean[j]:+.2f}" for j in mild_cols[: len(mild)])
        + " places from scale 1's rank by the LPPD (positive: worse); no interval lies above 0, "
        "so the cells show no harm"
        if not harmed
        else f"{based}, a small deviation ranks clearly below scale 1: " + intervals(harmed)
    )
    no_harm = Evidence(
        "C7.6",
        low[mild_cols],
        part="mild-no-harm",
        labels=[labels[j] for j in mild_cols],
        gate=read_cells,
        committed=basis,
        note="lower ends of the 95% bootstrap intervals (over cells) of rank(s) - rank(1) for "
        "the small deviations s = "
        + ", ".join(f"{s:g}" for s in mild)
        + ": "
        + intervals(mild_cols),
        says=no_harm_says,
    )
    g_low, g_high = low[glorot_cols], high[glorot_cols]
    not_beneficial = Evidence(
        "C7.6",
        g_high,
        part="glorot-not-beneficial",
        labels=[labels[j] for j in glorot_cols],
        gate=read_cells,
        committed=basis,
        note="upper ends of the 95% bootstrap intervals (over cells) of rank(Glorot) - rank(1) "
        f"among the paper's {n_grid} scales and the Glorot scale {glorot:g}: "
        + intervals(glorot_cols),
        says=f"{based}, the Glorot scale {glorot:g} ranks {mean[glorot_cols[0]]:.2f} places "
        f"below scale 1 on average (below it in {n_worse} cells, above it in {n_better}); its "
        f"interval [{g_low[0]:.2f}, {g_high[0]:.2f}] (LPPD) does not lie below 0, so the cells "
        "give no evidence that it is beneficial"
        if np.all(g_high >= 0)
        else f"{based}, the Glorot scale {glorot:g} ranks clearly better than scale 1: "
        + intervals(glorot_cols),
    )
    decided_glorot = bool(np.all(supported[glorot_cols] | contradicted[glorot_cols]))
    worse = Evidence(
        "C7.6",
        g_low,
        part="glorot-worse",
        labels=[labels[j] for j in glorot_cols],
        gate=Gate(
            passed=bool(committed and decided_glorot),
            why=(
                "the intervals of " + intervals(glorot_cols) + f" contain 0: the Glorot scale "
                f"ranks below scale 1 in {n_worse} cells and above it in {n_better} (LPPD)"
                if committed
                else missing
            ),
            decide="more cells of Fig. 12 at the paper's budget (bikesharing and the paper's "
            "three splits: 36 cells)",
        ),
        committed=basis,
        note="lower ends of the 95% bootstrap intervals of rank(Glorot) - rank(1): "
        + intervals(glorot_cols),
        says=f"whether the Glorot scale ranks below scale 1 ('too small') is not decided by "
        f"{rk['n_cells']} cells: the interval [{g_low[0]:.2f}, {g_high[0]:.2f}] (LPPD) "
        "contains 0"
        if not decided_glorot
        else f"the Glorot scale ranks {'below' if g_low[0] > 0 else 'above'} scale 1 over "
        f"{rk['n_cells']} cells: " + intervals(glorot_cols),
    )
    return clauses, no_harm, not_beneficial, worse


def _verdict(low: float, high: float) -> str:
    if low > 0:
        return "lies above 0 (worse than scale 1)"
    if high < 0:
        return "lies below 0 (better than scale 1)"
    return "includes 0 (not shown worse than scale 1)"


def c7_6_paired_evidence(
    cmp: Mapping, decided: Mapping, basis: Sequence[Mapping], *, glorot: float, committed: bool
) -> Evidence:
    """C7.6's further finding ``paired-lppd``: single-chain LPPD(1) − LPPD(s) for s = 0.1, 10
    and ``glorot``, on this build's cells (``cmp``) and on the deciding cells (``decided``,
    :func:`.prior_scales.scale_comparison` of ``basis``); the lower ends of the deciding
    intervals (part ``paired-lppd``; the catalogue asks them above 0), gated on the committed
    cells deciding all three."""
    for c in (cmp, decided):
        _need(c, ("grid", "delta", "low", "high", "lppd", "n_pairs"), "c7_6_paired_evidence")
    parts = {"very small (0.1)": 0.1, "very large (10)": 10.0, f"Glorot ({glorot:g})": glorot}
    missing = [s for s in (*parts.values(), 1.0, 0.5) if s not in cmp["grid"]]
    if missing:
        raise ValueError(f"c7_6_paired_evidence: scales {missing} are not in {cmp['grid']}")
    at = {s: cmp["grid"].index(s) for s in (*parts.values(), 1.0, 0.5)}
    columns = {"this build": cmp, "deciding cells": decided}
    rows = [
        (
            name,
            *(
                f"{c['delta'][at[s]]:+.3f} [{c['low'][at[s]]:+.3f}, {c['high'][at[s]]:+.3f}]"
                for c in columns.values()
            ),
        )
        for name, s in parts.items()
    ]
    header = ("scale s", *(f"Δ_s, {k} ({len(c['lppd'])} cells)" for k, c in columns.items()))
    glue = {}
    named = {"small": 0.1, "large": 10.0, "glorot": glorot, "half": 0.5}
    for prefix, c in (("", cmp), ("paper_", decided)):
        for key, s in named.items():
            low, high = float(c["low"][at[s]]), float(c["high"][at[s]])
            glue.update(
                {
                    f"{prefix}delta_{key}": c["delta"][at[s]],
                    f"{prefix}delta_{key}_low": low,
                    f"{prefix}delta_{key}_high": high,
                    f"{prefix}verdict_{key}": _verdict(low, high),
                }
            )
    j10 = at[10.0]
    worst = basis[decided["worst_cell"][j10]]["settings"]
    glue.update(
        n_pairs=cmp["n_pairs"],
        paper_n_pairs=decided["n_pairs"],
        paper_delta_large_median=decided["median"][j10],
        paper_large_worst=f"{worst['dataset']}, {worst['depth']} hidden layers",
        paper_large_worst_lppd=f"{decided['worst_lppd'][j10]:.3g}",
    )
    idx = [at[s] for s in parts.values()]
    pv = prior_scales.three_way(decided["low"][idx], decided["high"][idx])
    d = decided
    return Evidence(
        "C7.6",
        d["low"][idx],
        part="paired-lppd",
        labels=list(parts),
        committed=PRIOR_RESULTS if committed else None,
        gate=Gate(
            passed=bool(committed and pv["decided"]),
            why="an interval of the paired differences contains 0 and none lies below it"
            if committed
            else "the committed cells are missing",
            decide="the committed cells, or more (cell, warm start) pairs",
        ),
        note="lower ends of the 95% bootstrap intervals (over (cell, warm start) pairs) of "
        "single-chain LPPD(1) - LPPD(s) for s = 0.1, 10, Glorot on "
        f"{len(d['lppd'])} cells; means "
        + tables.number_list(d["delta"][idx], ".4f")
        + ", upper ends "
        + tables.number_list(d["high"][idx], ".4f")
        + "; this build: "
        + tables.number_list(cmp["delta"][idx], ".4f"),
        says=f"Chain by chain over {d['n_pairs']} paired chains, scale 1 beats 0.1 and 10 "
        f"(mean LPPD gains {d['delta'][idx[0]]:.3f} and "
        f"{d['delta'][idx[1]]:.3f} nats, "
        f"the latter from one exploded chain; median {d['median'][j10]:.3f}) but loses to "
        f"the Glorot scale by {-d['delta'][idx[2]]:.3f} nats "
        f"[{-d['high'][idx[2]]:.3f}, {-d['low'][idx[2]]:.3f}]",
        glue=glue,
        table=tables.markdown_table(header, rows),
    )


# --------------------------------------------------------------------------- notes


def notes_values(
    cfg: SamplingInPracticeSettings, full_cfg: SamplingInPracticeSettings, *, root: Path | None
) -> dict:
    """The budgets the reproduction notes cite: the full profile's, this build's, and the
    lower end of C7.4 in the GPU run committed under ``root`` (``"(not run)"`` without it)."""
    gpu_file = None if root is None else Path(root).joinpath(*GPU_RECORDS)
    gpu = {r["id"]: r for r in read_jsonl(gpu_file)} if gpu_file and gpu_file.exists() else {}
    return dict(
        full_tuning=full_cfg.tuning_steps,
        full_sampling=full_cfg.sampling_steps,
        full_thinning=full_cfg.thinning,
        full_chains_cpu=full_cfg.n_chains_many,
        full_chains_gpu=full_cfg.n_chains_many_accelerator,
        gpu_ks_gap_low=f"{gpu['C7.4']['value']:.4f}" if "C7.4" in gpu else "(not run)",
        tuning_steps=cfg.tuning_steps,
        sampling_steps=cfg.sampling_steps,
        thinning=cfg.thinning,
    )
