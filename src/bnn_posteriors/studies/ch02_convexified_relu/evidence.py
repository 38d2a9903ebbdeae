"""The evidence of chapter 02's claims C2.1–C2.5: one :class:`Evidence` per check.

Each function takes what the chapter computed and the chapter's settings ``cfg``
(:func:`bnn_posteriors.site.profiles.settings`) and returns the value, the check's ``part``,
note, the values the prose cites and a table of the numbers behind the value, for
:func:`bnn_posteriors.claims.checking.show_and_check`; the rule and its bound are the claims
catalogue's (``claims/catalogue/02_convexified_relu.toml``), read there by ``part``. A dip
result is the triple ``(pass rate, p-values, median within-chain ESS)`` of
:func:`chain_marginals.dip_pass_rate`.
"""

from __future__ import annotations

import numpy as np

from bnn_posteriors.claims.checking import Evidence, catalogue_check
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import ConvexifiedReluSettings
from bnn_posteriors.studies.ch02_convexified_relu import chain_marginals

interval = chain_marginals.format_interval


def _bar(claim: str) -> float:
    """The pass-rate bar of a dip-test check (C2.2, C2.4, C2.5): the catalogue's bound."""
    return float(catalogue_check(claim, "pass-rate")["bound"])


def _widths(cfg: ConvexifiedReluSettings) -> tuple[int, int]:
    widths = tuple(cfg.widths_hidden)
    if len(widths) != 2:
        raise ValueError(f"cfg.widths_hidden must name two widths (small, large), got {widths}")
    return widths


def c2_1(pooled: dict, cfg: ConvexifiedReluSettings) -> tuple[Evidence, Evidence]:
    """C2.1, Lemma E.1: the gap f − g∘K equals the imbalance, and rebalancing closes it.

    ``pooled``: :func:`bnn_posteriors.theory.convexified_relu.lemma_summary` (``gap``,
    ``rel_identity``, ``rel_balanced``, ``max_change``). Two checks: the identity, then the
    rebalanced gap and the change of the outputs, each below the catalogue's bound (1e-9).
    """
    gap = np.asarray(pooled["gap"])
    if gap.size == 0:
        raise ValueError("pooled['gap'] holds no draws")
    rel_identity, rel_balanced = pooled["rel_identity"], pooled["rel_balanced"]
    max_change = pooled["max_change"]
    table = tables.markdown_table(
        ["quantity", "value"],
        [
            [
                "draws",
                f"{gap.size} over {len(cfg.lemma_datasets)} data sets ({cfg.lemma_rows} rows "
                f"each) × widths {cfg.lemma_widths}",
            ],
            ["min (f − g)", f"{gap.min():.3g}"],
            ["max |f − g − imbalance| / max(1, |f|)", f"{rel_identity:.1e}"],
            ["max |f − g| after rebalancing (relative)", f"{rel_balanced:.1e}"],
            ["max change of the outputs by rebalancing", f"{max_change:.1e}"],
        ],
        align="lr",
    )
    identity = Evidence(
        "C2.1",
        rel_identity,
        part="identity",
        note=f"max |f - g - imbalance| / max(1, |f|) over {gap.size} draws (min f - g = "
        f"{gap.min():.3g}), widths {cfg.lemma_widths}, data sets {cfg.lemma_datasets}",
        glue={"lemma_draws": gap.size, "lemma_min_gap": float(gap.min())},
        table=table,
    )
    balanced = Evidence(
        "C2.1",
        [rel_balanced, max_change],
        part="rebalanced",
        labels=["relative |f − g| after rebalancing", "largest change of the outputs"],
        note="rebalanced: relative |f - g| and largest change of the network outputs",
    )
    return identity, balanced


def c2_2(dips: dict, cfg: ConvexifiedReluSettings) -> Evidence:
    """C2.2: the dip test's pass rate on the components of u per width, ESS-gated.

    ``dips``: width → dip result (:func:`posterior_runs.u_dips`).
    """
    small, large = _widths(cfg)
    widths = cfg.widths_hidden
    rates = [dips[w][0] for w in widths]
    bar = _bar("C2.2")
    gate = chain_marginals.mixing_gate(
        {f"u at H = {w}": dips[w][2] for w in widths}, cfg.min_ess, cfg.num_samples
    )
    glue = {
        **{f"dip_u_{w}": dips[w][0] * 100 for w in widths},
        **{f"ess_u_{w}": dips[w][2] for w in widths},
        "ess_u_small": dips[small][2],
        "ess_u_large": dips[large][2],
        "dip_alpha_pct": 100 * cfg.dip_alpha,
        "dip_pass_pct": 100 * bar,
        "min_ess": cfg.min_ess,
        "num_samples": cfg.num_samples,
    }
    rows = [
        [w, f"{dips[w][0]:.1%}", np.asarray(dips[w][1]).size, f"{dips[w][2]:.1f}"] for w in widths
    ]
    header = ["H", "dip test passes", "(chain, component) pairs", "median within-chain ESS"]
    return Evidence(
        "C2.2",
        rates,
        part="pass-rate",
        labels=[f"H = {w}" for w in widths],
        gate=gate,
        note=f"fraction of (chain, component) pairs of {cfg.n_components} random components of u "
        f"whose dip-test p-value exceeds {cfg.dip_alpha}, at H = {cfg.widths_hidden}, "
        f"{cfg.num_chains} chains x {cfg.num_samples} draws; gate: {gate.why}",
        says=f"the dip test does not reject unimodality at {cfg.dip_alpha:.0%} for "
        + " and ".join(f"{r:.0%} (H = {w})" for r, w in zip(rates, widths, strict=True))
        + f" of the (chain, component) pairs of u; the claim's bar is {bar:.0%}",
        glue=glue,
        table=tables.markdown_table(header, rows, align="rrrr"),
    )


def c2_3(per_width: dict, shrink: dict, ess_all: dict, cfg: ConvexifiedReluSettings) -> Evidence:
    """C2.3: the lower ends of the bootstrap intervals of ρ_A and ρ_B above 1, ESS-gated.

    ``per_width``, ``shrink``: :func:`chain_marginals.shrinkage_intervals`; ``ess_all``:
    width → median within-chain ESS of all of u (:func:`posterior_runs.shrinkage`).
    """
    small, large = _widths(cfg)
    widths = cfg.widths_hidden
    gate = chain_marginals.mixing_gate(
        {f"u at H = {w}": ess_all[w] for w in widths}, cfg.min_ess, cfg.num_samples
    )
    below_gate = [w for w in widths if ess_all[w] < cfg.min_ess]
    points_above = min(shrink["size"][0], shrink["spread"][0]) > 1
    lows_above = min(shrink["size"][1], shrink["spread"][1]) > 1
    glue = {
        "boot_level_pct": 100 * cfg.boot_level,
        "n_boot": cfg.n_boot,
        "num_chains": cfg.num_chains,
        **{
            f"shrink_{name}{part}": value
            for name in ("size", "spread")
            for part, value in zip(("", "_low", "_high"), shrink[name], strict=True)
        },
        "ess_all_small": ess_all[small],
        "ess_all_large": ess_all[large],
        "ess_gate_verdict": f"below the {cfg.min_ess} of the gate at "
        f"{' and '.join(map(str, below_gate))} neurons"
        if below_gate
        else f"above the {cfg.min_ess} of the gate at both widths",
        "shrink_point_verdict": "The point estimates go the way of Fig. 9"
        if points_above
        else "The point estimates do not both go the way of Fig. 9",
        "shrink_interval_verdict": "the lower ends of both intervals lie above 1"
        if lows_above
        else "at least one interval reaches down to 1",
    }
    rows = [
        [
            f"H = {w}",
            interval(per_width[w]["size"]),
            interval(per_width[w]["spread"]),
            f"{ess_all[w]:.1f}",
        ]
        for w in widths
    ]
    ratios = [interval(shrink["size"]), interval(shrink["spread"])]
    rows.append([f"ratio H = {small} / H = {large}", *ratios, ""])
    header = [
        "",
        f"mean |u| (ρ_A) [{cfg.boot_level:.0%} interval]",
        "spread of chain medians (ρ_B)",
        f"median within-chain ESS (of {cfg.num_samples})",
    ]
    return Evidence(
        "C2.3",
        [shrink["size"][1], shrink["spread"][1]],
        part="ratios",
        labels=["lower end of ρ_A", "lower end of ρ_B"],
        gate=gate,
        note=f"[lower ends of the {cfg.boot_level:.0%} bootstrap intervals over chains of rho_A = "
        f"mean|u|(H={small}) / mean|u|(H={large}) and rho_B = spread of chain medians "
        f"(H={small}) / (H={large})]; rho_A {interval(shrink['size'])}, rho_B "
        f"{interval(shrink['spread'])}; "
        + "; ".join(
            f"H={w}: mean|u| {interval(per_width[w]['size'])}, spread "
            f"{interval(per_width[w]['spread'])}"
            for w in widths
        )
        + f"; {cfg.num_chains} chains x {cfg.num_samples} draws; gate: {gate.why}",
        says=f"from {small} to {large} neurons the mean |u| shrinks {shrink['size'][0]:.2f}-fold "
        f"[{shrink['size'][1]:.2f}, {shrink['size'][2]:.2f}] and the between-chain spread of the "
        f"chain medians {shrink['spread'][0]:.2f}-fold [{shrink['spread'][1]:.2f}, "
        f"{shrink['spread'][2]:.2f}] ({cfg.boot_level:.0%} intervals over chains)",
        glue=glue,
        table=tables.markdown_table(header, rows, align="lrrr"),
    )


def c2_4(dip: tuple, pair, cfg: ConvexifiedReluSettings) -> Evidence:
    """C2.4: the dip test's pass rate on random projections of a pair of u components at
    the larger width, ESS-gated. ``dip``: :func:`posterior_runs.pair_dip`; ``pair``: the
    two flat component indices."""
    large = _widths(cfg)[1]
    bar = _bar("C2.4")
    gate = chain_marginals.mixing_gate(
        {f"projections of a u pair at H = {large}": dip[2]}, cfg.min_ess, cfg.num_samples
    )
    header = ["H", "components", "dip test passes", "(chain, direction) pairs", "median ESS"]
    row = [
        large,
        f"u_{pair[0]}, u_{pair[1]}",
        f"{dip[0]:.1%}",
        np.asarray(dip[1]).size,
        f"{dip[2]:.1f}",
    ]
    return Evidence(
        "C2.4",
        dip[0],
        part="pass-rate",
        gate=gate,
        note=f"fraction of (chain, direction) pairs of {cfg.n_directions} random projections of "
        f"two u components at H = {large} whose dip-test p-value exceeds {cfg.dip_alpha}; "
        f"{cfg.num_chains} chains x {cfg.num_samples} draws; gate: {gate.why}",
        says=f"the dip test does not reject unimodality at {cfg.dip_alpha:.0%} for "
        f"{dip[0]:.0%} of the (chain, direction) projections of a pair of u "
        f"components at H = {large}; the claim's bar is {bar:.0%}",
        table=tables.markdown_table(header, [row], align="rlrrr"),
    )


def c2_5(dips: dict, cfg: ConvexifiedReluSettings) -> Evidence:
    """C2.5: the dip test's pass rate on random entries of W1 and of w2 per width, ESS-gated.

    ``dips``: ``{(width, "W1"): dip, (width, "w2"): dip}`` (:func:`posterior_runs.weight_dips`).
    """
    parts = [(w, k) for w in cfg.widths_hidden for k in ("W1", "w2")]
    missing = [p for p in parts if p not in dips]
    if missing:
        raise ValueError(f"dips lacks the dip results of {missing}")
    bar = _bar("C2.5")
    gate = chain_marginals.mixing_gate(
        {f"{k} at H = {w}": dips[w, k][2] for w, k in parts}, cfg.min_ess, cfg.num_samples
    )
    rows = [[w, k, f"{dips[w, k][0]:.1%}", f"{dips[w, k][2]:.1f}"] for w, k in parts]
    return Evidence(
        "C2.5",
        [dips[w, k][0] for w, k in parts],
        part="pass-rate",
        labels=[f"{k} at H = {w}" for w, k in parts],
        gate=gate,
        note=f"fraction of (chain, entry) pairs of up to {cfg.n_components} random entries whose "
        f"dip-test p-value exceeds {cfg.dip_alpha}, for {parts}; {cfg.num_chains} chains x "
        f"{cfg.num_samples} draws; gate: {gate.why}",
        says=f"the dip test does not reject unimodality at {cfg.dip_alpha:.0%} for "
        + ", ".join(f"{dips[w, k][0]:.0%} ({k}, H = {w})" for w, k in parts)
        + f" of the (chain, entry) pairs; the claim's bar is {bar:.0%}",
        table=tables.markdown_table(
            ["H", "weights", "dip test passes", "median within-chain ESS"], rows, align="rlrr"
        ),
    )


def notes_glue(
    cfg: ConvexifiedReluSettings,
    full_cfg: ConvexifiedReluSettings,
    quick_cfg: ConvexifiedReluSettings,
    *,
    n_rows: int,
    train_rows: dict,
    records,
) -> dict:
    """The values the reproduction notes cite: the full profile's budget and the measures
    of its committed records of C2.2 and C2.3 (NaN where a record is missing).

    ``train_rows``: ``{"full": n, "quick": n}`` training rows of each profile; ``n_rows``:
    the rows of the data set; ``records``: the committed full-profile records of chapter 02
    (the last check per claim counts; records of further findings are skipped).
    """
    if set(train_rows) != {"full", "quick"}:
        raise ValueError(f"train_rows must name 'full' and 'quick', got {sorted(train_rows)}")
    values = {
        "full_chains": full_cfg.num_chains,
        "full_warmup": full_cfg.num_warmup,
        "full_draws": full_cfg.num_samples,
        "full_tree": 2**full_cfg.max_tree_depth - 1,
        "full_chunk": full_cfg.nuts_chunk,
        "profile": cfg.profile,
        "n_rows": n_rows,
        "quick_rows": quick_cfg.n_max,
        "full_train": train_rows["full"],
        "quick_train": train_rows["quick"],
    }
    latest = {r["id"]: r for r in records if r.get("finding") is None}
    n_widths = len(cfg.widths_hidden)
    if "C2.2" in latest:  # pass rates and ESS per width, whichever layout the record has
        rates, ess = chain_marginals.committed_values(
            latest["C2.2"], n_widths, cfg.min_ess, bar=_bar("C2.2")
        )
    else:
        rates, ess = [np.nan] * n_widths, [np.nan] * n_widths
    for width, rate, e in zip(cfg.widths_hidden, rates, ess, strict=True):
        values |= {f"full_rate_{width}": 100 * rate, f"full_ess_{width}": e}
    if "C2.3" in latest:  # lower ends of rho_A, rho_B and the ESS of all of u per width
        lows, ess_all = chain_marginals.committed_values(latest["C2.3"], 2, cfg.min_ess)
    else:
        lows, ess_all = [np.nan] * 2, [np.nan] * n_widths
    values |= {
        "full_rho_a_low": lows[0],
        "full_rho_b_low": lows[1],
        "full_ess_all_large": ess_all[-1],
        "full_rho_verdict": "both above 1, the way of Fig. 9"
        if min(lows) > 1
        else "not both above 1",
    }
    return values
