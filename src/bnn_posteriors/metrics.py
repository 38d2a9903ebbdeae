"""Predictive metrics: LPPD ([SAP] eq. 18) and RMSE, and distances to a reference law."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm
from scipy import stats


def lppd(y, mean, scale):
    """Log pointwise predictive density of a Gaussian mixture, eq. (18) of [SAP].

    LPPD = (1/n) Σ_i log( (1/(K·S)) Σ_{k,s} N(y_i | mean_{k,s,i}, scale_{k,s,i}²) ).
    ``y``: (n,); ``mean``, ``scale``: (..., n) where the leading axes (chains K,
    samples S, ...) are averaged; ``scale`` broadcasts (e.g. a scalar noise).
    """
    y = jnp.asarray(y)
    mean = jnp.asarray(mean)
    scale = jnp.broadcast_to(jnp.asarray(scale), mean.shape)
    if y.ndim != 1 or mean.ndim == 0 or mean.shape[-1] != y.shape[0]:
        raise ValueError(f"mean must end in the {y.shape} axis of y, got {mean.shape}")
    if jnp.any(scale <= 0):
        raise ValueError("predictive scales must be positive")
    logp = norm.logpdf(y, mean, scale).reshape(-1, y.shape[0])
    return jnp.mean(logsumexp(logp, axis=0) - jnp.log(logp.shape[0]))


def rmse(y, prediction):
    """Root mean squared error of a point prediction; ``y``, ``prediction``: (n,)."""
    y, prediction = jnp.asarray(y), jnp.asarray(prediction)
    if y.shape != prediction.shape:
        raise ValueError(f"y {y.shape} and prediction {prediction.shape} differ in shape")
    return jnp.sqrt(jnp.mean((y - prediction) ** 2))


def ks_distance(samples, cdf) -> float:
    """Kolmogorov–Smirnov distance sup |F_n − F| between samples (any shape) and a CDF."""
    samples = np.ravel(np.asarray(samples))
    if samples.size == 0 or not np.all(np.isfinite(samples)):
        raise ValueError("samples must be a non-empty array of finite numbers")
    return float(stats.kstest(samples, cdf).statistic)


def ks_to_normal(samples, scale: float = 1.0, *, absolute: bool = False) -> float:
    """KS distance of samples to N(0, scale²), or of |samples| to the half-normal."""
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if absolute:
        return ks_distance(np.abs(np.asarray(samples)), stats.halfnorm(scale=scale).cdf)
    return ks_distance(samples, stats.norm(scale=scale).cdf)
