"""MCMC diagnostics of draws shaped (chain, draw, ...): ArviZ's rank-normalised R-hat,
bulk ESS and MCSE (Vehtari et al. 2021), as plain arrays; intervals over independent
units (chains, repeats, pairs) by bootstrap or Student t; and the chain-level statistics
of [SAP] that are bootstrapped over chains (ρ_W of §4.2, the KS gap of §4.3).

The package imports ArviZ here, after ``bnn_posteriors`` has silenced ArviZ's daily
``FutureWarning`` about its 1.0 refactor, so no chapter writes it to stderr.
"""

from __future__ import annotations

import functools
from functools import partial

import numpy as np
from scipy import stats

from bnn_posteriors.evaluation import metrics
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive_int


def _dataset(draws):
    import arviz as az

    array = np.asarray(draws)
    if array.ndim < 2:
        raise ValueError(f"draws must be shaped (chain, draw, ...), got shape {array.shape}")
    if array.shape[1] < 4:
        raise ValueError(f"diagnostics need at least 4 draws per chain, got {array.shape[1]}")
    if not np.isfinite(array).all():
        raise ValueError("draws contain NaN or inf")
    return az, az.convert_to_dataset(array)


def rhat(draws) -> np.ndarray:
    """Rank-normalised split R-hat per component: draws (chain, draw, *event) → (*event)."""
    az, data = _dataset(draws)
    return np.asarray(az.rhat(data)["x"].values)


def ess(draws) -> np.ndarray:
    """Bulk effective sample size per component: draws (chain, draw, *event) → (*event)."""
    az, data = _dataset(draws)
    return np.asarray(az.ess(data)["x"].values)


def mcse(draws) -> np.ndarray:
    """Monte-Carlo standard error of the mean per component: (chain, draw, *event) → (*event)."""
    az, data = _dataset(draws)
    return np.asarray(az.mcse(data)["x"].values)


def within_chain_ess(draws) -> float:
    """Median over chains and components of each chain's own bulk ESS: (chain, draw, ...) → float.

    Each chain is diagnosed alone (ArviZ's bulk ESS of a one-chain data set, which splits
    the chain in two halves), so relabelled modes across chains do not lower it; it says
    how many effectively independent draws a chain has of its *own* marginal.
    """
    array = np.asarray(draws)
    _dataset(array)  # validates the shape and the values
    return float(np.median([ess(array[c : c + 1]) for c in range(array.shape[0])]))


def ess_growth(draws, counts) -> list[float]:
    """:func:`within_chain_ess` of the first ``n`` draws of every chain, for each ``n`` in
    ``counts``: how the effective sample size grows with the sampling budget. A chain that
    mixes gains ESS in proportion to its draws; one stuck in its start gains little.
    """
    array = np.asarray(draws)
    counts = [int(n) for n in counts]
    if array.ndim < 2 or any(not 4 <= n <= array.shape[1] for n in counts):
        raise ValueError(
            f"counts must lie in [4, draws per chain = {array.shape[1] if array.ndim > 1 else 0}], "
            f"got {counts}"
        )
    return [within_chain_ess(array[:, :n]) for n in counts]


def chain_bootstrap(rng_key, per_chain, statistic, *, num_resamples=1000, level=0.95):
    """Percentile bootstrap over chains: ``(estimate, low, high)`` of ``statistic(*per_chain)``.

    rng_key: a JAX PRNG key. per_chain: a tuple of arrays, each shaped (chains_k, ...), the
    per-chain summaries of one group (e.g. one network width); every group is resampled over
    its own chains, with replacement and independently of the others. statistic maps arrays
    of those shapes to a number. The interval holds the (1 − level)/2 and (1 + level)/2
    quantiles of the resampled statistic, taken without interpolation (a statistic may be
    ±inf on a resample that repeats one chain); resamples where it is NaN are dropped. When
    chains are the independent units (each started apart, each in its own mode), this is the
    uncertainty that the draws within a chain cannot show.
    """
    import jax

    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    num_resamples = positive_int("num_resamples", num_resamples)
    groups = [np.asarray(group) for group in per_chain]
    if not groups or any(group.ndim < 1 or group.shape[0] < 2 for group in groups):
        raise ValueError(
            "per_chain must be a non-empty tuple of arrays with at least 2 chains each"
        )
    keys = jax.random.split(rng_key, len(groups))
    indices = [
        np.asarray(jax.random.randint(key, (num_resamples, group.shape[0]), 0, group.shape[0]))
        for key, group in zip(keys, groups, strict=True)
    ]

    def resampled(b):
        return statistic(*(group[index[b]] for group, index in zip(groups, indices, strict=True)))

    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = float(statistic(*groups))
        values = np.array([float(resampled(b)) for b in range(num_resamples)])
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise ValueError("the statistic is NaN on every resample")
    low = float(np.quantile(values, (1.0 - level) / 2, method="inverted_cdf"))
    high = float(np.quantile(values, (1.0 + level) / 2, method="inverted_cdf"))
    return estimate, low, high


def mean_interval(values, *, level=0.95) -> tuple[float, float, float]:
    """Student-t interval of the mean of independent replicates: ``(mean, low, high)``.

    values: one number per independent repeat (e.g. one per MAP, each with its own
    initialisation), at least 2, all finite. The interval is mean ± t_{(1+level)/2, n−1} · sd/√n,
    the confidence interval of ``scipy.stats.ttest_1samp``.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(
            f"values must be a 1-D array of at least 2 repeats, got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError("values contain NaN or inf")
    interval = stats.ttest_1samp(values, 0.0).confidence_interval(confidence_level=level)
    # plain floats (glued in chapters)
    return float(values.mean()), float(interval.low), float(interval.high)


def replicate_summary(values, *, level=0.95) -> dict:
    """:func:`mean_interval` of independent replicates with their sd and the values.

    Returns ``{"mean", "low", "high", "sd", "n", "per MAP"}`` (one value per MAP in
    [MBNN]'s repeats of C6.3/C6.4; ``sd`` with ddof=1, ``per MAP`` as a list).
    """
    mean, low, high = mean_interval(values, level=level)
    return {
        "mean": mean,
        "low": low,
        "high": high,
        "sd": float(np.std(values, ddof=1)),
        "n": int(np.size(values)),
        "per MAP": np.asarray(values).tolist(),
    }


def rhat_and_ess(draws) -> tuple[float, float]:
    """R-hat and bulk ESS of one scalar quantity (e.g. log σ): draws (chain, draw) → floats."""
    draws = np.asarray(draws)
    if draws.ndim != 2:
        raise ValueError(f"draws of a scalar must be shaped (chain, draw), got {draws.shape}")
    return float(rhat(draws)), float(ess(draws))


def active_units(position: dict, x) -> int:
    """Units of the first hidden layer active (ReLU input > 0) on at least one row of x.

    position: a sample with ``"W0"`` (d, H) and ``"b0"`` (H,); x: (n, d). A dead-ReLU start
    ([SAP] §3.4) has 0.
    """
    return int((np.asarray(x @ position["W0"] + position["b0"]) > 0).any(axis=0).sum())


# ----------------------------------------------------------------------------- [SAP] statistics


def w2_ratio_bootstrap(rng_key, means, sigmas, *, num_resamples: int = 1000):
    """ρ_W = mean within-chain / mean between-chain W₂² ([SAP] §4.2, Fig. 11) over chains.

    means: (K, S, n) predictive means of S samples of K chains; sigmas: their noise sds,
    (K, S) or flat (K·S,). Returns ``(w2 (KS, KS), within (K,), between (K, K), low, high)``:
    the pairwise W₂² (:func:`metrics.w2_squared_gaussian`), its chain blocks
    (:func:`metrics.w2_chain_blocks`) and the 95 % :func:`chain_bootstrap` interval of ρ_W.
    """
    means = np.asarray(means)
    if means.ndim != 3 or means.shape[0] < 2:
        raise ValueError(f"means must be shaped (chains >= 2, samples, n), got {means.shape}")
    w2 = metrics.w2_squared_gaussian(means.reshape(-1, means.shape[2]), np.reshape(sigmas, -1))
    within, between = metrics.w2_chain_blocks(w2, len(means))
    _, low, high = chain_bootstrap(
        rng_key,
        (np.arange(len(means)),),
        partial(_ratio_of_chains, within, between),
        num_resamples=num_resamples,
    )
    return w2, within, between, low, high


def _ratio_of_chains(within, between, chains):
    return metrics.within_between_ratio(within, between, chains)[0]


KS_GRID = 10_000  # G: chain CDFs on the grid Φ⁻¹(j/G), KS distances within 1/G of exact


@functools.cache
def _ks_grid(grid_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The points Φ⁻¹(j/G), j = 1..G−1 (float32, as the draws), and Φ at each (float64)."""
    points = stats.norm.ppf(np.arange(1, grid_size) / grid_size).astype(np.float32)
    return points, stats.norm.cdf(points.astype(np.float64))


def chain_ecdf(draws, grid_size: int = KS_GRID) -> np.ndarray:
    """Each chain's empirical CDF on a grid of N(0, 1) quantiles: the input of :func:`ks_weighted`.

    ``draws`` (chains, samples, ...). Returns (chains, G − 1): the fraction of chain c's
    draws at or below Φ⁻¹(j/G), j = 1..G−1. Its size does not grow with the draws, so
    thousands of chains fit; the counts are found with JAX, on the accelerator when there
    is one.
    """
    import jax.numpy as jnp

    grid_size = validate.positive_int("grid_size", grid_size, 2, where="chain_ecdf")
    draws = jnp.asarray(draws)
    if draws.ndim < 2:
        raise ValueError(f"draws must be shaped (chains, samples, ...), got {draws.shape}")
    flat = draws.reshape(draws.shape[0], -1)
    points, _ = _ks_grid(grid_size)
    # bin b: the first grid point at or above the draw (b = G − 1: above them all)
    bins = jnp.searchsorted(jnp.asarray(points), flat, side="left")
    chains = jnp.arange(flat.shape[0])[:, None]
    counts = jnp.bincount((chains * grid_size + bins).ravel(), length=flat.shape[0] * grid_size)
    at_or_below = jnp.cumsum(counts.reshape(flat.shape[0], grid_size), axis=1)[:, :-1]
    return np.asarray(at_or_below, dtype=np.float64) / flat.shape[1]


def ks_weighted(ecdf, counts):
    """KS distance to N(0, 1) of the pooled draws when chain c is taken counts[c] times.

    ``ecdf``: from :func:`chain_ecdf`; ``counts``: (chains,) non-negative integers (all ones
    give the pooled draws), or (resamples, chains) for one distance per row. The supremum is
    taken over the grid, so the result is at most the exact distance and at least the exact
    distance minus 1/G (Φ rises by 1/G between grid points and the pooled CDF is monotone).
    """
    ecdf = np.asarray(ecdf)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape[-1] != ecdf.shape[0]:
        raise ValueError(f"counts has {counts.shape[-1]} chains, the ecdf {ecdf.shape[0]}")
    _, cdf = _ks_grid(ecdf.shape[1] + 1)
    pooled = counts @ ecdf / counts.sum(axis=-1, keepdims=True)
    distance = np.max(np.abs(pooled - cdf), axis=-1)
    return float(distance) if distance.ndim == 0 else distance


def ks_gap(ks_layers):
    """Δ_KS = min(KS(W⁽¹⁾), KS(W⁽ᴸ⁾)) − mean_{1<l<L} KS(W⁽ˡ⁾) of per-kernel KS distances.

    Positive when the intermediate kernels are closer to the prior than both outer ones
    ([SAP] §4.3, Fig. 7); needs at least 3 kernels. Each entry may be an array (one
    distance per resample): the gap is then taken elementwise.
    """
    if len(ks_layers) < 3:
        raise ValueError(f"ks_gap needs at least 3 kernels, got {len(ks_layers)}")
    layers = [np.asarray(k, dtype=np.float64) for k in ks_layers]
    gap = np.minimum(layers[0], layers[-1]) - np.mean(layers[1:-1], axis=0)
    return float(gap) if gap.ndim == 0 else gap


def ks_gap_bootstrap(rng, ecdfs, num_chains: int, *, num_resamples: int = 1000):
    """95 % percentile interval ``(low, high)`` of :func:`ks_gap` by resampling chains.

    rng: a NumPy Generator; ecdfs: one :func:`chain_ecdf` per kernel. Each resample draws
    chain counts from Multinomial(K, 1/K) and reweights the pooled draws.
    """
    ones = np.ones(num_chains, dtype=int)
    counts = rng.multinomial(num_chains, ones / num_chains, size=num_resamples)
    boot = ks_gap([ks_weighted(ecdf, counts) for ecdf in ecdfs])
    low, high = np.quantile(boot, [0.025, 0.975])
    return float(low), float(high)


def paired_interval(
    differences, level: float = 0.95, *, method: str = "BCa", n_resamples: int = 9999, rng=0
) -> np.ndarray:
    """Mean paired difference and its two-sided ``level`` bootstrap interval, by
    ``scipy.stats.bootstrap`` over the rows (the pairs) of ``differences``.

    differences: (pairs,) or (pairs, m), e.g. Δ_s = LPPD(1) − LPPD(s) per (cell, warm start)
    pair and scale s ([SAP] App. D.6): every column is resampled with the same rows, so the
    columns stay paired. ``method``: ``"BCa"`` (bias-corrected and accelerated) or
    ``"percentile"``; ``rng``: a seed or a NumPy Generator (deterministic).

    BCa suits skewed differences (chapter 5's paired gains are bimodal: ties near 0 where
    symmetrised training leaves the merged units alone, a cluster of large gains where it
    separates them); where BCa is undefined (e.g. one value differs) a column falls back to
    the percentile interval. A constant column has an interval of zero width. Returns
    ``[mean, low, high]``: shape (3,) or (3, m).
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim not in (1, 2) or len(d) < 2:
        raise ValueError(
            f"differences must be shaped (pairs >= 2,) or (pairs >= 2, m), got {d.shape}"
        )
    if method not in ("BCa", "percentile"):
        raise ValueError(f"method must be 'BCa' or 'percentile', got {method!r}")
    n_resamples = positive_int("n_resamples", n_resamples)
    columns = d.reshape(len(d), -1)
    mean = columns.mean(axis=0)
    low, high = mean.copy(), mean.copy()
    varied = np.ptp(columns, axis=0) > 0
    if varied.any():
        ci = stats.bootstrap(
            (columns[:, varied],),
            np.mean,
            axis=0,
            confidence_level=level,
            n_resamples=n_resamples,
            method=method,
            random_state=np.random.default_rng(rng),
        )
        lo, hi = ci.confidence_interval
        undefined = ~(np.isfinite(lo) & np.isfinite(hi))
        if undefined.any():
            q = np.quantile(ci.bootstrap_distribution, [(1 - level) / 2, (1 + level) / 2], -1)
            lo, hi = np.where(undefined, q[0], lo), np.where(undefined, q[1], hi)
        low[varied], high[varied] = lo, hi
    out = np.stack([mean, low, high])
    return out[:, 0] if d.ndim == 1 else out
