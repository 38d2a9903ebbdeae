"""Per-chain posterior marginals: unimodality and concentration ([SAP] Cor. E.2, Figs. 8–9).

A NUTS chain started at a mode stays in one relabelled copy of it, so "unimodal up to
permutations" is a statement about each chain's own marginals. Here: Hartigan's dip test
chain by chain with an effective-sample-size gate (C2.2, C2.4, C2.5), and the shrinkage of
u from H = 8 to H = 64 neurons, A_H = mean |u| and B_H = mean_j sd_c of the chain medians
(eq. shrink of the chapter, C2.3), with percentile intervals over chains. Draws are shaped
(chains, draws, components).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from .. import diagnostics, metrics


def random_components(rng: np.random.Generator, size: int, num: int) -> np.ndarray:
    """``min(num, size)`` distinct random flat indices out of ``size`` components."""
    if not (isinstance(size, int | np.integer) and size >= 1):
        raise ValueError(f"size must be a positive integer, got {size!r}")
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


def unimodality_gate(
    results: Sequence[tuple], pass_rate: float, min_ess: float, num_samples: int, what: str
) -> tuple[list[float], str]:
    """The value and note of a unimodality check: pass rates and ESS both above their bars.

    ``results``: :func:`dip_pass_rate` outputs. The value is [rate / pass_rate ...,
    ESS / min_ess ...]; the claim holds when all exceed 1. Returns ``(value, note)``.
    """
    rates = [r[0] / pass_rate for r in results]
    ess = [r[2] / min_ess for r in results]
    note = (
        f"{what}: [pass rate / {pass_rate} ..., median within-chain "
        f"ESS / {min_ess} ...]; pass rates "
        f"{[round(r[0], 3) for r in results]}, ESS "
        f"{[round(r[2], 1) for r in results]} of {num_samples} draws"
    )
    return rates + ess, note


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
