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
