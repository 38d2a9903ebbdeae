"""Scores of one predictive in the UCI benchmark ([SAP] Table 2): correct and the authors'.

A method's predictive on the test split is scored, on the standardised scale, by the LPPD
of eq. (18) (:func:`bnn_posteriors.evaluation.metrics.lppd`), the RMSE of its mean and the authors'
evaluation of the same predictive (:func:`authors_lppd`, their public code, which reads a
variance as a log-scale). :func:`fit_noise` refits the observation noise of a predictive on
the validation split; :func:`gaussian_scores` scores a Gaussian predictive (Laplace, MFVI),
:func:`mixture_scores` the mixture of MILE's chains (BDE).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.evaluation import metrics

NOISE_GRID = np.exp(np.linspace(np.log(1e-3), np.log(10.0), 401))  # σ of fit_noise


# --------------------------------------------------------------------------- evaluation


def _check_y(y) -> jax.Array:
    y = jnp.asarray(y)
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"y must have shape (n,) with n ≥ 1, got {y.shape}")
    if not bool(jnp.all(jnp.isfinite(y))):
        raise ValueError("y must be finite")
    return y


def authors_lppd(y, lvals) -> float:
    """The LPPD as the authors' public code computes it (``pointwise_lppd`` + ``lppd``).

    ``lvals`` (..., n, k): the leading axes are mixture components; column 0 is the
    location and column 1 is read as a **log scale**: Normal(loc=lvals[..., 0],
    scale=clip(exp(lvals[..., 1]), 1e-6, 1e6)). With k = 1 (a mean-regression network
    that outputs only the mean) JAX clamps the index 1 to 0, so the scale is exp(mean).
    Their Laplace and MFVI scripts put the predictive *variance* into column 1. The
    mixture density is :func:`bnn_posteriors.evaluation.metrics.lppd`.
    """
    y = _check_y(y)
    lvals = jnp.asarray(lvals)
    if lvals.ndim < 2 or lvals.shape[-2] != y.shape[0]:
        raise ValueError(f"lvals must have shape (..., {y.shape[0]}, k), got {lvals.shape}")
    loc = lvals[..., 0]
    scale = jnp.clip(jnp.exp(lvals[..., 1]), 1e-6, 1e6)  # index 1 clamps to 0 when k = 1
    if bool(jnp.any(~(scale > 0))):
        raise ValueError("predictive scales must be positive")
    return float(metrics.lppd(y, loc, scale))


def authors_columns(mean, second=None) -> jax.Array:
    """The authors' prediction array: (..., n, 2) = [mean, second] or (..., n, 1) = [mean]."""
    mean = jnp.asarray(mean)
    if second is None:
        return mean[..., None]
    second = jnp.broadcast_to(jnp.asarray(second), mean.shape)
    return jnp.stack([mean, second], axis=-1)


def fit_noise(y_val, mean_val, epistemic_var=0.0, grid=NOISE_GRID) -> float:
    """Observation noise σ maximising the validation LPPD of Σ_m N(mean_m, var_m + σ²)/M.

    ``mean_val`` (..., n_val) (mixture components in front), ``epistemic_var`` broadcasts
    to it; σ is chosen on ``grid`` (default 401 log-spaced values in [0.001, 10]), the
    LPPD is :func:`bnn_posteriors.evaluation.metrics.pointwise_lppd64` (float64 NumPy).
    """
    y = np.asarray(_check_y(y_val), dtype=np.float64)
    mean = np.asarray(mean_val, dtype=np.float64)
    if mean.ndim == 0 or mean.shape[-1] != y.shape[0]:
        raise ValueError(f"mean_val must end in the {y.shape} axis of y_val, got {mean.shape}")
    var = np.broadcast_to(np.asarray(epistemic_var, dtype=np.float64), mean.shape)
    if np.any(var < 0):
        raise ValueError("epistemic_var must be non-negative")
    mean, var = mean.reshape(-1, y.shape[0]), var.reshape(-1, y.shape[0])
    scores = [
        np.mean(metrics.pointwise_lppd64(y, mean, np.sqrt(var + sigma**2)))
        for sigma in np.asarray(grid, dtype=np.float64)
    ]
    return float(np.asarray(grid)[int(np.argmax(scores))])


def gaussian_scores(y, mean, var, authors_var=None) -> dict:
    """Scores of a Gaussian predictive N(mean, var) (n,): ``lppd``, ``rmse``, ``lppd_authors``.

    ``authors_var`` is what the authors' code puts into the scale column (default ``var``).
    """
    y = _check_y(y)
    mean, var = jnp.asarray(mean), jnp.asarray(var)
    if mean.shape != y.shape or var.shape != y.shape:
        raise ValueError(f"mean {mean.shape} and var {var.shape} must have y's shape {y.shape}")
    second = var if authors_var is None else authors_var
    return {
        "lppd": float(metrics.lppd(y, mean, jnp.sqrt(var))),
        "rmse": float(metrics.rmse(y, mean)),
        "lppd_authors": authors_lppd(y, authors_columns(mean, second)),
    }


def mixture_scores(y, means, sigmas) -> dict:
    """LPPD and RMSE of the BDE mixture: ``means`` (K, S, n), ``sigmas`` (K, S).

    Each chain's mixture over its S samples, then the mixture of the K chains.
    """
    y64 = np.asarray(y, dtype=np.float64)
    m64, s64 = np.asarray(means, dtype=np.float64), np.asarray(sigmas, dtype=np.float64)
    per_chain = np.stack(
        [metrics.pointwise_lppd64(y64, m, s[:, None]) for m, s in zip(m64, s64, strict=True)]
    )  # (K, n)
    pooled = metrics.log_mean_exp(per_chain, axis=0)
    lvals = jnp.stack([means, jnp.broadcast_to(jnp.log(sigmas)[..., None], means.shape)], -1)
    return {
        "lppd": float(np.mean(pooled)),
        "lppd_val_noise": float(np.mean(pooled)),
        "lppd_authors": authors_lppd(y, lvals),
        "rmse": float(np.sqrt(np.mean((y64 - m64.mean(axis=(0, 1))) ** 2))),
        "lppd_chains": [float(v) for v in per_chain.mean(axis=1)],
    }
