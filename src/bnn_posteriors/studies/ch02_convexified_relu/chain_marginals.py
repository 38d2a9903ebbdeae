"""Per-chain posterior marginals: unimodality and concentration ([SAP] Cor. E.2, Figs. 8–9).

A NUTS chain started at a mode stays in one relabelled copy of it, so "unimodal up to
permutations" is a statement about each chain's own marginals. Here: Hartigan's dip test
chain by chain (C2.2, C2.4, C2.5); the shrinkage of u from H = 8 to H = 64 neurons,
A_H = mean |u| and B_H = mean_j sd_c of the chain medians (eq. shrink of the chapter, C2.3),
with percentile intervals over chains; and the effective-sample-size gate that all of them
need (:func:`mixing_gate`). Draws are shaped (chains, draws, components).
"""

from __future__ import annotations

import re

import jax
import numpy as np

from bnn_posteriors.claims.checking import Gate
from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.util.validate import positive_int


def random_components(rng: np.random.Generator, size: int, num: int) -> np.ndarray:
    """``min(num, size)`` distinct random flat indices out of ``size`` components."""
    size = positive_int("size", size)
    return rng.choice(size, size=min(num, size), replace=False)


def random_projections(rng: np.random.Generator, pair_draws, num_directions: int) -> np.ndarray:
    """Projections of bivariate draws (chains, draws, 2) on random directions of the plane.

    Angles uniform on [0, π); returns (chains, draws, num_directions). A bivariate density
    with one mode has unimodal projections, so the dip test applies to them (C2.4).
    """
    pair_draws = np.asarray(pair_draws)
    if pair_draws.shape[-1] != 2:
        raise ValueError(f"pair_draws must end in an axis of 2, got shape {pair_draws.shape}")
    angles = rng.uniform(0, np.pi, num_directions)
    directions = np.stack([np.cos(angles), np.sin(angles)])  # (2, num_directions)
    return pair_draws @ directions


def dip_pass_rate(draws, alpha: float) -> tuple[float, np.ndarray, float]:
    """Dip-test pass rate over (chain, component) pairs and the median within-chain ESS.

    ``draws`` (chains, draws, components). Returns ``(rate, p_values, ess)``: the fraction
    of pairs whose dip-test p-value exceeds ``alpha`` (:func:`metrics.dip_test`), the
    p-values (chains, components) and :func:`diagnostics.within_chain_ess`.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    _, p = metrics.dip_test(np.moveaxis(draws, 1, -1))
    return float(np.mean(p > alpha)), p, diagnostics.within_chain_ess(draws)


def mixing_gate(ess: dict[str, float], min_ess: float, num_samples: int) -> Gate:
    """The effective-sample-size gate of the per-chain checks (C2.2–C2.5).

    ``ess``: label → median within-chain ESS (:func:`diagnostics.within_chain_ess`), e.g.
    ``{"u at H = 8": 2958.2, "u at H = 64": 11.5}``. A test of the shape of a chain's
    marginal (the dip test) or a summary of it (a chain's median) needs draws that describe
    that marginal: the gate passes when every ESS is at least ``min_ess``. Its ``why`` lists
    the ESS per label (:func:`gate_ess` reads them back); its ``decide`` names the draws per
    chain each label would need at its present ESS per draw, ``min_ess · num_samples / ESS``
    (valid only if the ESS grew in proportion to the draws).
    """
    if not ess:
        raise ValueError("ess must name at least one (label, ESS) pair")
    if not (min_ess > 0 and num_samples >= 1):
        raise ValueError(f"min_ess and num_samples must be positive, got {min_ess}, {num_samples}")
    values = {label: float(e) for label, e in ess.items()}
    passed = all(e >= min_ess for e in values.values())
    listed = "; ".join(f"{label}: {e:.1f}" for label, e in values.items())
    why = (
        f"the chains {'mix' if passed else 'did not mix'}: median within-chain ESS of {listed} "
        f"(of {num_samples} draws per chain; the gate asks for at least {min_ess:g})"
    )
    needed = "; ".join(
        f"{label}: about {min_ess * num_samples / max(e, 1e-12):.3g}"
        for label, e in values.items()
        if e < min_ess
    )
    decide = f"chains with a median within-chain ESS of at least {min_ess:g} everywhere"
    if needed:
        decide += (
            f"; at their present ESS per draw that is, in draws per chain, {needed}, if the "
            "ESS grew in proportion to the draws (the chapter's table of the ESS against the "
            "budget shows whether it does), else a sampler or parametrisation whose chains mix"
        )
    return Gate(passed=bool(passed), why=why, decide=decide)


def gate_ess(why: str) -> dict[str, float]:
    """The ESS per label listed in the ``why`` of a :func:`mixing_gate` (label → ESS)."""
    match = re.search(r"median within-chain ESS of (.*) \(of \d+ draws", why)
    if match is None:
        raise ValueError(f"not the why of a mixing gate: {why!r}")
    pairs = [item.rsplit(": ", 1) for item in match.group(1).split("; ")]
    return {label: float(e) for label, e in pairs}


def committed_values(record: dict, num_measures: int, min_ess: float, bar: float = 1.0):
    """The measured values and the ESS of a committed record of C2.2–C2.5: ``(measures, ess)``.

    Records since the ESS gate became a :class:`Gate` hold the measures as their value and
    the ESS in the gate (:func:`gate_ess`, in order). Earlier ones held [measures / ``bar``
    ..., ESS / ``min_ess`` ...] in the value and no gate (``bar``: the pass-rate bar by
    which C2.2, C2.4 and C2.5 divided their rates; 1 for C2.3). Both are lists.
    """
    value = [float(v) for v in np.atleast_1d(record["value"])]
    if record.get("gate"):
        return value, list(gate_ess(record["gate"]["why"]).values())
    return [v * bar for v in value[:num_measures]], [v * min_ess for v in value[num_measures:]]


def chain_summaries(u) -> tuple[np.ndarray, np.ndarray]:
    """Per chain: mean |u| (chains,) and the median of every component (chains, components).

    ``u`` (chains, draws, ...), flattened after the draw axis.
    """
    u = np.asarray(u)
    flat = u.reshape(*u.shape[:2], -1)
    return np.mean(np.abs(flat), axis=(1, 2)), np.median(flat, axis=1)


def mean_size(abs_means):
    """A_H of eq. (shrink): the mean of the per-chain means of |u|."""
    return np.mean(abs_means)


def median_spread(medians):
    """B_H of eq. (shrink): the between-chain sd of the chain medians, averaged over components."""
    return np.mean(np.std(medians, axis=0))


STATISTICS = (("size", mean_size), ("spread", median_spread))


def _ratio(statistic):
    def ratio(a, b):
        return statistic(a) / statistic(b)

    return ratio


def shrinkage_intervals(
    rng_key, summaries: dict, small: int, large: int, *, num_resamples: int, level: float
) -> tuple[dict, dict]:
    """Bootstrap intervals over chains of A_H, B_H per width and of ρ_A, ρ_B (C2.3).

    ``summaries``: ``{width: chain_summaries(u)}``. The key is split into six, used in order
    for (size, spread) of ``small``, of ``large``, then for ρ_A = A_small / A_large and
    ρ_B = B_small / B_large, each by :func:`diagnostics.chain_bootstrap`. Returns
    ``(per_width, shrink)``: ``{width: {"size": (estimate, low, high), "spread": ...}}`` and
    ``{"size": (estimate, low, high), "spread": ...}``.
    """
    boot = {"num_resamples": num_resamples, "level": level}
    keys = iter(jax.random.split(rng_key, 6))
    per_width = {
        width: {
            name: diagnostics.chain_bootstrap(next(keys), (summaries[width][i],), stat, **boot)
            for i, (name, stat) in enumerate(STATISTICS)
        }
        for width in (small, large)
    }
    shrink = {
        name: diagnostics.chain_bootstrap(
            next(keys), (summaries[small][i], summaries[large][i]), _ratio(stat), **boot
        )
        for i, (name, stat) in enumerate(STATISTICS)
    }
    return per_width, shrink


def format_interval(estimate) -> str:
    """``(estimate, low, high)`` as the text "e [low, high]" with four decimals."""
    return f"{estimate[0]:.4f} [{estimate[1]:.4f}, {estimate[2]:.4f}]"
