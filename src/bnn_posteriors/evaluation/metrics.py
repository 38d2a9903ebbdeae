"""Predictive metrics: LPPD ([SAP] eq. 18) and RMSE, distances to a reference law, dip test,
cumulative LPPD over chains and Wasserstein-2 distances between sample predictives (App. D.5)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm
from scipy import special, stats

from bnn_posteriors.util.validate import positive_int


def pointwise_lppd(y, mean, scale):
    """log((1/M) Σ_m N(y_i | mean_{m,i}, scale_{m,i}²)) per point: eq. (18) of [SAP] per i.

    ``y``: (n,); ``mean``, ``scale``: (..., n) where the leading axes are the M mixture
    components (members, chains × samples); ``scale`` broadcasts (e.g. a scalar noise) and
    must be positive. JAX, in the dtype of the inputs. Returns (n,).
    """
    y = jnp.asarray(y)
    mean = jnp.asarray(mean)
    scale = jnp.broadcast_to(jnp.asarray(scale), mean.shape)
    if y.ndim != 1 or mean.ndim == 0 or mean.shape[-1] != y.shape[0]:
        raise ValueError(f"mean must end in the {y.shape} axis of y, got {mean.shape}")
    if jnp.any(scale <= 0):
        raise ValueError("predictive scales must be positive")
    logp = norm.logpdf(y, mean, scale).reshape(-1, y.shape[0])
    return logsumexp(logp, axis=0) - jnp.log(logp.shape[0])


def lppd(y, mean, scale):
    """Log pointwise predictive density of a Gaussian mixture, eq. (18) of [SAP].

    LPPD = (1/n) Σ_i log( (1/(K·S)) Σ_{k,s} N(y_i | mean_{k,s,i}, scale_{k,s,i}²) ).
    ``y``: (n,); ``mean``, ``scale``: (..., n) where the leading axes (chains K,
    samples S, ...) are averaged; ``scale`` broadcasts (e.g. a scalar noise). JAX; the
    float64 NumPy twin is :func:`pointwise_lppd64`.
    """
    return jnp.mean(pointwise_lppd(y, mean, scale))


def log_mean_exp(logp, axis: int = 0) -> np.ndarray:
    """log((1/M) Σ_m exp(logp_m)) along ``axis`` (M its length), in float64 NumPy."""
    logp = np.asarray(logp, dtype=np.float64)
    return special.logsumexp(logp, axis=axis) - np.log(logp.shape[axis])


def pointwise_lppd64(y, mean, scale) -> np.ndarray:
    """:func:`pointwise_lppd` in float64 NumPy: (n,) log mixture densities of eq. (18).

    ``mean`` (..., n), leading axes the M components; ``scale`` broadcasts to it
    (e.g. (M, 1) for one noise σ per component) and must be positive. The log density
    is −½ log 2π − log s − ½ ((y − μ)/s)². No compilation per shape.
    """
    y = np.asarray(y, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    if y.ndim != 1 or mean.ndim == 0 or mean.shape[-1] != y.shape[0]:
        raise ValueError(f"mean must end in the {y.shape} axis of y, got {mean.shape}")
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), mean.shape)
    if np.any(~(scale > 0)):
        raise ValueError("predictive scales must be positive")
    logp = -0.5 * np.log(2 * np.pi) - np.log(scale) - 0.5 * ((y - mean) / scale) ** 2
    return log_mean_exp(logp.reshape(-1, y.shape[0]), axis=0)


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


def dip_test(samples) -> tuple[np.ndarray, np.ndarray]:
    """Hartigan's dip test of unimodality (``diptest`` package) along the last axis.

    ``samples``: (..., n) with n ≥ 4. Returns ``(dip, p_value)``, each of shape (...);
    a small p-value rejects unimodality ([SAP] App. D.2, claim C2.2 uses p > 0.05).
    """
    import diptest

    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim == 0 or samples.shape[-1] < 4:
        raise ValueError(f"samples need a last axis of at least 4 draws, got {samples.shape}")
    if not np.all(np.isfinite(samples)):
        raise ValueError("samples must be finite")
    flat = samples.reshape(-1, samples.shape[-1])
    out = np.array([diptest.diptest(row) for row in flat]).reshape(*samples.shape[:-1], 2)
    return out[..., 0], out[..., 1]


def _check_probs(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validate class probabilities (n, C) (rows sum to 1) and integer labels (n,) in 0..C−1."""
    probs, labels = np.asarray(probs, dtype=np.float64), np.asarray(labels)
    if probs.ndim != 2 or probs.shape[1] < 2:
        raise ValueError(f"probs must have shape (n, C) with C >= 2, got {probs.shape}")
    if labels.shape != (probs.shape[0],):
        raise ValueError(f"labels must have shape ({probs.shape[0]},), got {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() >= probs.shape[1]):
        raise ValueError(f"labels must lie in 0..{probs.shape[1] - 1}")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError("probs must be finite and non-negative")
    if not np.allclose(probs.sum(axis=1), 1.0, atol=1e-4):
        raise ValueError("every row of probs must sum to 1")
    return probs, labels


def accuracy(probs, labels) -> float:
    """Fraction of inputs whose most probable class is the label; probs (n, C), labels (n,)."""
    probs, labels = _check_probs(probs, labels)
    return float(np.mean(np.argmax(probs, axis=1) == labels))


def categorical_nll(probs, labels) -> float:
    """Mean negative log predictive probability of the labels, −(1/n) Σ_i log p(y_i | x_i)."""
    probs, labels = _check_probs(probs, labels)
    picked = probs[np.arange(labels.size), labels]
    return float(-np.mean(np.log(np.maximum(picked, np.finfo(np.float64).tiny))))


def mean_confidence(probs) -> float:
    """Mean over inputs of the largest class probability, conf(x) = max_c p_c(x) ([TEMP])."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2:
        raise ValueError(f"probs must have shape (n, C), got {probs.shape}")
    return float(np.mean(np.max(probs, axis=1)))


def ece(probs, labels, n_bins: int = 15) -> float:
    """Expected calibration error with ``n_bins`` equal-width confidence bins (Guo et al. 2017).

    ECE = Σ_b (n_b / n) |acc_b − conf_b|, where bin b holds the inputs whose confidence
    max_c p_c(x) lies in ((b−1)/B, b/B] (the first bin includes 0), acc_b is their accuracy
    and conf_b their mean confidence. probs (n, C), labels (n,).
    """
    probs, labels = _check_probs(probs, labels)
    n_bins = positive_int("n_bins", n_bins)
    confidence = np.max(probs, axis=1)
    correct = (np.argmax(probs, axis=1) == labels).astype(np.float64)
    bins = np.clip(np.ceil(confidence * n_bins).astype(int) - 1, 0, n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        members = bins == b
        if members.any():
            gap = abs(correct[members].mean() - confidence[members].mean())
            total += members.sum() / labels.size * gap
    return float(total)


def _gaussian_predictive(mean, scale, lead: int):
    """Validate Gaussian predictives: ``mean`` (..., n) with ``lead`` leading axes, scale ≥ 0."""
    mean = np.asarray(mean, dtype=np.float64)
    if mean.ndim != lead + 1:
        raise ValueError(f"mean must have {lead + 1} axes (..., n), got shape {mean.shape}")
    scale = np.asarray(scale, dtype=np.float64)
    if scale.ndim == mean.ndim - 1:
        scale = scale[..., None]
    scale = np.broadcast_to(scale, mean.shape)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale))) or np.any(scale <= 0):
        raise ValueError("predictive means must be finite and scales finite and positive")
    return mean, scale


def cumulative_lppd(rng, y, mean, scale, n_orderings: int = 5) -> np.ndarray:
    """LPPD (eq. 18 of [SAP]) of the first k chains, k = 1..K, for random chain orderings.

    ``mean`` (K chains, S samples, n); ``scale`` (K, S) or (K, S, n) (the noise σ of
    each sample); ``rng`` a ``numpy.random.Generator`` or seed. Returns
    (n_orderings, K): row r, column k−1 is the LPPD of the mixture of the first k chains
    of ordering r (all S samples each) — Fig. 5 of [SAP].
    """
    y = np.asarray(y, dtype=np.float64)
    mean, scale = _gaussian_predictive(mean, scale, 2)
    if y.shape != mean.shape[-1:]:
        raise ValueError(f"mean must end in the {y.shape} axis of y, got {mean.shape}")
    n_orderings = positive_int("n_orderings", n_orderings)
    rng = np.random.default_rng(rng)
    logp = stats.norm.logpdf(y, mean, scale)  # (K, S, n)
    per_chain = np.logaddexp.reduce(logp, axis=1)  # log Σ_s p, (K, n)
    n_chains, n_samples = mean.shape[:2]
    out = np.empty((n_orderings, n_chains))
    for r in range(n_orderings):
        order = rng.permutation(n_chains)
        cum = np.logaddexp.accumulate(per_chain[order], axis=0)  # (K, n)
        counts = np.arange(1, n_chains + 1)[:, None] * n_samples
        out[r] = np.mean(cum - np.log(counts), axis=1)
    return out


def w2_squared_gaussian(mean, scale) -> np.ndarray:
    """Pairwise squared 2-Wasserstein distances between Gaussian sample predictives ([SAP] §4.2).

    Sample s predicts N(μ^(s), diag(σ^(s)²)) on n inputs; W2² between two such laws is
    Σ_i (μ_i^(s) − μ_i^(t))² + (σ_i^(s) − σ_i^(t))², reported per input (divided by n).
    ``mean`` (S, n), ``scale`` (S,) or (S, n). Returns (S, S). Memory O(S² + S·n): the
    squared differences come from Gram matrices, so thousands of samples fit.
    """
    mean, scale = _gaussian_predictive(mean, scale, 1)
    return _mean_squared_differences(mean) + _mean_squared_differences(scale)


def _mean_squared_differences(rows) -> np.ndarray:
    """(S, n) → (S, S): mean over the n columns of (row_s − row_t)², via the Gram matrix."""
    rows = rows - rows.mean(axis=0)  # same differences, less cancellation
    norms = np.einsum("sn,sn->s", rows, rows)
    out = (norms[:, None] + norms[None] - 2.0 * rows @ rows.T) / rows.shape[1]
    np.maximum(out, 0.0, out=out)
    np.fill_diagonal(out, 0.0)
    return out


def w2_z_test(mean, scale, *, paper_formula: bool = False) -> np.ndarray:
    """Z statistics of [SAP] App. D.5 for every pair of sample predictives; (S, S).

    ρ̂ = Cor(μ^(s), μ^(t)) over inputs (eq. 19 context), μ̄_D = (1/n) Σ_i (μ_i^(s) − μ_i^(t))
    (eqs. 19–20), σ_D² = σ_s² + σ_t² − 2ρ̂ σ_s σ_t (eq. 21, homoscedastic σ per sample).
    Under H0 μ̄_D ~ N(0, σ_D²/n), so Z = √n μ̄_D / σ_D (default). ``paper_formula=True``
    gives eq. (22) as printed, Z = μ̄_D / (√n σ_D), which divides by n once more.
    Pairs with |Z| > 1.96 differ significantly (5 % level). ``mean`` (S, n), ``scale`` (S,).
    """
    mean, scale = _gaussian_predictive(mean, scale, 1)
    sigma = scale[:, 0]
    if not np.allclose(scale, sigma[:, None]):
        raise ValueError("w2_z_test assumes one noise scale per sample (homoscedastic)")
    n = mean.shape[1]
    rho = np.corrcoef(mean)
    var_d = sigma[:, None] ** 2 + sigma[None] ** 2 - 2 * rho * sigma[:, None] * sigma[None]
    mean_d = mean.mean(axis=1)[:, None] - mean.mean(axis=1)[None]
    sd = np.sqrt(np.maximum(var_d, 1e-300))
    z = mean_d / (np.sqrt(n) * sd) if paper_formula else np.sqrt(n) * mean_d / sd
    np.fill_diagonal(z, 0.0)
    return z


def w2_chain_blocks(w2, n_chains: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean within-chain and between-chain W2² of a pooled distance matrix ([SAP] Fig. 11).

    ``w2`` (K·S, K·S): :func:`w2_squared_gaussian` of the samples of K chains stacked chain
    by chain, S samples each. Returns ``within`` (K,), the mean over the S(S − 1) pairs
    s ≠ t of chain k, and ``between`` (K, K), the mean over the S² pairs of chains k ≠ l
    (NaN on the diagonal, which holds within-chain pairs).
    """
    w2 = np.asarray(w2, dtype=np.float64)
    if isinstance(n_chains, bool) or not isinstance(n_chains, int) or n_chains < 2:
        raise ValueError(f"n_chains must be an integer of at least 2, got {n_chains!r}")
    if w2.ndim != 2 or w2.shape[0] != w2.shape[1] or w2.shape[0] % n_chains:
        raise ValueError(
            f"w2 must be a square (K*S, K*S) matrix with K = {n_chains}, got shape {w2.shape}"
        )
    n_samples = w2.shape[0] // n_chains
    if n_samples < 2:
        raise ValueError("each chain needs at least 2 samples for a within-chain pair")
    blocks = w2.reshape(n_chains, n_samples, n_chains, n_samples).transpose(0, 2, 1, 3)
    between = blocks.mean(axis=(2, 3))
    diagonal = np.diagonal(blocks, axis1=0, axis2=1).transpose(2, 0, 1)  # (K, S, S)
    within = (diagonal.sum(axis=(1, 2)) - np.trace(diagonal, axis1=1, axis2=2)) / (
        n_samples * (n_samples - 1)
    )
    np.fill_diagonal(between, np.nan)
    return within, between


def within_between_ratio(within, between, chains=None) -> tuple[float, float, float]:
    """ρ = mean within-chain W2² / mean between-chain W2² of a set of chains ([SAP] Fig. 11).

    ``within`` (K,) and ``between`` (K, K) from :func:`w2_chain_blocks`; ``chains`` the
    indices of the chains to use, repeats allowed (a bootstrap resample; default all K).
    Between-chain pairs are the positions i ≠ j whose chains differ: a chain drawn twice
    forms no between-chain pair with itself (that pair would be a within-chain block).
    For samples with functional variance v_w inside each chain and v_b across the chains'
    centres, E ρ ≈ v_w / (v_w + v_b): the within-chain share of the functional variance.
    Returns ``(ρ, mean within, mean between)``; ρ is NaN when no two chains differ.
    """
    within = np.asarray(within, dtype=np.float64)
    between = np.asarray(between, dtype=np.float64)
    if within.ndim != 1 or between.shape != (within.size, within.size):
        raise ValueError(
            f"within must be (K,) and between (K, K), got {within.shape} and {between.shape}"
        )
    chains = np.arange(within.size) if chains is None else np.asarray(chains)
    if chains.ndim != 1 or chains.size < 1 or not np.issubdtype(chains.dtype, np.integer):
        raise ValueError(f"chains must be a non-empty 1-d array of indices, got {chains!r}")
    if chains.min() < 0 or chains.max() >= within.size:
        raise ValueError(f"chain indices must lie in [0, {within.size}), got {chains}")
    mean_within = float(within[chains].mean())
    differ = chains[:, None] != chains[None, :]
    if not differ.any():
        return float("nan"), mean_within, float("nan")
    mean_between = float(between[np.ix_(chains, chains)][differ].mean())
    return mean_within / mean_between, mean_within, mean_between


def running_lppd(y, mean, scale) -> np.ndarray:
    """LPPD (eq. 18 of [SAP]) of the first s samples of one chain, s = 1..S (Fig. 3).

    ``mean`` (S, n), ``scale`` (S,) or (S, n). Returns (S,).
    """
    y = np.asarray(y, dtype=np.float64)
    mean, scale = _gaussian_predictive(mean, scale, 1)
    if y.shape != mean.shape[-1:]:
        raise ValueError(f"mean must end in the {y.shape} axis of y, got {mean.shape}")
    cum = np.logaddexp.accumulate(stats.norm.logpdf(y, mean, scale), axis=0)
    return np.mean(cum - np.log(np.arange(1, mean.shape[0] + 1))[:, None], axis=1)
