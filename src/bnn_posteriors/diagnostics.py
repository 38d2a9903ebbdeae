"""MCMC diagnostics of draws shaped (chain, draw, ...): ArviZ's rank-normalised R-hat,
bulk ESS and MCSE (Vehtari et al. 2021), as plain arrays.

The package imports ArviZ here, after ``bnn_posteriors`` has silenced ArviZ's daily
``FutureWarning`` about its 1.0 refactor, so no chapter writes it to stderr.
"""

from __future__ import annotations

import numpy as np


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
    if not (isinstance(num_resamples, int) and num_resamples >= 1):
        raise ValueError(f"num_resamples must be a positive integer, got {num_resamples!r}")
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
    initialisation), at least 2, all finite. The interval is mean ± t_{(1+level)/2, n−1} · sd/√n.
    """
    from scipy import stats

    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(
            f"values must be a 1-D array of at least 2 repeats, got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError("values contain NaN or inf")
    mean = float(values.mean())
    half = float(stats.t.ppf((1.0 + level) / 2, values.size - 1) * values.std(ddof=1))
    half /= float(np.sqrt(values.size))
    return mean, float(mean - half), float(mean + half)  # plain floats (glued in chapters)
