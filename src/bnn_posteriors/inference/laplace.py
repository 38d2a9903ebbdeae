"""Laplace approximation with the generalised Gauss-Newton (GGN) Hessian.

A Gaussian q(θ) = N(θ*, (GGN + δ I)⁻¹) around the MAP θ* of the regularised loss
L(θ) = −log p(D | θ) + (δ/2)‖θ‖² ([MBNN] eq. 1 with a N(0, 1/δ) prior per parameter;
trained by :func:`bnn_posteriors.inference.map_estimate.train_map`).
Two likelihoods: Gaussian regression with fixed noise σ and categorical
classification (softmax of the logits). Two parameter subsets: the full network
and the last layer (its ``W`` and ``b``, with the penultimate activations as
fixed features). The prior precision δ can be set by the Laplace marginal
likelihood (MacKay, 1992; Immer et al., 2021), post hoc at the MAP.

Parameters are the project's MLP pytrees (a list of ``{"W", "b"}`` layers,
:func:`bnn_posteriors.models.nets.mlp_apply`) or any pytree with an ``apply_fn``; the
last-layer variant needs a list whose last entry is ``{"W", "b"}``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import optimize

from bnn_posteriors.models import nets
from bnn_posteriors.models.numpyro_models import neg_log_likelihood
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int

SUBSETS = ("full", "last_layer")


def check_data(x, y, likelihood: str, where: str):
    """x (n, d); y (n, d_out) targets (regression) or (n,) class labels, as JAX arrays."""
    y_ndim = 2 if likelihood == "gaussian" else 1
    xy = validate.check_xy(x, y, where=where, likelihood=likelihood, ndim=(2,), y_ndim=y_ndim)
    return tuple(map(jnp.asarray, xy))


def mlp_features(params: list[dict], x, activation_name: str = "relu"):
    """Penultimate activations φ(… φ(x W₁ + b₁) …) of an MLP: the last layer's inputs."""
    phi = nets.activation(activation_name)
    h = jnp.asarray(x)
    for layer in params[:-1]:
        h = phi(h @ layer["W"] + layer["b"] if "b" in layer else h @ layer["W"])
    return h


def _output_hessian(outputs, likelihood: str, noise_scale: float):
    """Hessian Λ of −log p(y | f) in f per point: I/σ² or diag(p) − p pᵀ; shape (n, C, C)."""
    n, c = outputs.shape
    if likelihood == "gaussian":
        return jnp.broadcast_to(jnp.eye(c) / noise_scale**2, (n, c, c))
    p = jax.nn.softmax(outputs, axis=-1)
    return jax.vmap(jnp.diag)(p) - p[:, :, None] * p[:, None, :]


def output_jacobian(model_fn, theta, x):
    """Per-point Jacobian J of ``model_fn(θ, x)`` (n, C) in θ: shape (n, C, P)."""
    return jax.vmap(lambda xi: jax.jacrev(lambda t: model_fn(t, xi[None])[0])(theta))(x)


@functools.partial(jax.jit, static_argnames=("model_fn", "likelihood"))
def _ggn_chunk(model_fn, theta, x, noise_scale, likelihood):
    jac = output_jacobian(model_fn, theta, x)
    lam = _output_hessian(model_fn(theta, x), likelihood, noise_scale)
    return jnp.einsum("nap,nab,nbq->pq", jac, lam, jac)


def ggn_matrix(model_fn, theta, x, *, likelihood: str, noise_scale: float = 1.0, chunk: int = 256):
    """GGN Σ_i J_iᵀ Λ_i J_i of the negative log likelihood at the flat parameters ``theta``.

    ``model_fn(theta, x)`` → (n, C); Λ_i is the Hessian of −log p(y_i | f) in the outputs
    (:func:`_output_hessian`). Equals the Hessian of the NLL where the network is linear in θ
    (regression). Computed in chunks of ``chunk`` points. Returns (P, P).
    """
    validate.check_likelihood(likelihood)
    noise_scale = positive("noise_scale", noise_scale)
    theta = jnp.asarray(theta)
    x = jnp.asarray(x)
    total = jnp.zeros((theta.size, theta.size))
    for start in range(0, x.shape[0], chunk):
        total = total + _ggn_chunk(
            model_fn, theta, x[start : start + chunk], noise_scale, likelihood
        )
    return total


@dataclasses.dataclass(frozen=True)
class LaplacePosterior:
    """q(θ) = N(mean, (GGN + δ I)⁻¹) over the flat parameters of one subset.

    ``eigvals``/``eigvecs``: eigendecomposition of the GGN (clipped at 0), so that changing
    δ is free. ``model_fn(theta, x)`` evaluates the network with the subset ``theta``;
    ``unravel`` maps ``theta`` back to a parameter pytree (the subset's).
    """

    mean: jnp.ndarray
    eigvals: jnp.ndarray
    eigvecs: jnp.ndarray
    prior_precision: float
    model_fn: Callable
    unravel: Callable
    likelihood: str
    noise_scale: float
    subset: str
    log_likelihood: float  # log p(D | θ*)
    n_features: int | None = None  # columns of the training x; None: not checked

    @property
    def num_params(self) -> int:
        return int(self.mean.size)

    @property
    def precision(self):
        """GGN + δ I, (P, P)."""
        return (self.eigvecs * (self.eigvals + self.prior_precision)) @ self.eigvecs.T

    @functools.cached_property
    def covariance(self):
        """(GGN + δ I)⁻¹, (P, P); computed once per posterior (a new δ is a new posterior)."""
        return (self.eigvecs / (self.eigvals + self.prior_precision)) @ self.eigvecs.T

    def with_prior_precision(self, prior_precision: float) -> LaplacePosterior:
        """The same posterior with another δ."""
        delta = positive("prior_precision", prior_precision)
        return dataclasses.replace(self, prior_precision=delta)

    def sample(self, rng_key, num_samples: int):
        """θ ~ N(mean, Σ) via Σ^{1/2} = V diag(λ + δ)^{-1/2}; (S, P)."""
        num_samples = positive_int("num_samples", num_samples)
        z = jax.random.normal(rng_key, (num_samples, self.num_params))
        scale = 1.0 / jnp.sqrt(self.eigvals + self.prior_precision)
        return self.mean + (z * scale) @ self.eigvecs.T


def log_marginal_likelihood(posterior: LaplacePosterior, prior_precision=None):
    """Laplace evidence log p(D | δ) ≈ log p(D|θ*) + log N(θ*; 0, I/δ) + (P/2) log 2π − ½ log|H+δI|.

    With GGN eigenvalues λ_i this is log p(D|θ*) − δ‖θ*‖²/2 + (P/2) log δ − ½ Σ log(λ_i + δ)
    (Immer et al., 2021, eq. 3, post hoc at θ*).
    """
    delta = posterior.prior_precision if prior_precision is None else prior_precision
    delta = jnp.asarray(delta)
    p = posterior.num_params
    return (
        posterior.log_likelihood
        - 0.5 * delta * jnp.sum(posterior.mean**2)
        + 0.5 * p * jnp.log(delta)
        - 0.5 * jnp.sum(jnp.log(posterior.eigvals + delta))
    )


def optimise_prior_precision(
    posterior: LaplacePosterior, lower: float = 1e-8, upper: float = 1e8
) -> LaplacePosterior:
    """Maximise :func:`log_marginal_likelihood` over log δ; returns the posterior with that δ.

    The stationarity condition is MacKay's γ(δ) = Σ λ_i/(λ_i + δ) = δ‖θ*‖², whose left side
    decreases and right side increases in δ: the root is unique and found by bisection in
    log δ (clipped to [lower, upper]).
    """
    lower = positive("lower", lower)
    upper = positive("upper", upper)
    if not lower < upper:
        raise ValueError(f"lower must be below upper, got {lower} and {upper}")
    lam = np.asarray(posterior.eigvals, dtype=np.float64)
    norm2 = float(np.sum(np.asarray(posterior.mean, dtype=np.float64) ** 2))
    return posterior.with_prior_precision(_profile_prior_precision(lam, norm2, lower, upper))


def _profile_prior_precision(lam, norm2: float, lower: float, upper: float) -> float:
    """The δ that maximises the evidence for GGN eigenvalues ``lam`` and ‖θ*‖² ``norm2``:
    the root of MacKay's γ(δ) = δ‖θ*‖² by bisection in log δ, clipped to [lower, upper]."""

    def excess(log_delta):  # 2δ · d logZ/dδ, decreasing in δ
        d = math.exp(log_delta)
        return float(np.sum(lam / (lam + d))) - d * norm2

    lo, hi = math.log(lower), math.log(upper)
    if excess(lo) <= 0:
        return lower
    if excess(hi) >= 0:
        return upper
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def optimise_noise_scale(
    posterior: LaplacePosterior,
    num_targets: int,
    *,
    lower: float = 1e-4,
    upper: float = 1e2,
    delta_bounds: tuple[float, float] = (1e-8, 1e8),
) -> LaplacePosterior:
    """Fit the Gaussian noise σ jointly with δ by :func:`log_marginal_likelihood` at the MAP.

    The GGN scales as 1/σ² and log p(D | θ*, σ) = −(n/2) log 2πσ² − SSE/(2σ²), so with the
    unit-noise eigenvalues μ_i = σ₀²λ_i of ``posterior`` (fitted at σ₀) the evidence is
    −(n/2) log 2πσ² − SSE/(2σ²) − δ‖θ*‖²/2 + (P/2) log δ − ½ Σ log(μ_i/σ² + δ)
    (MacKay, 1992; Immer et al., 2021, post hoc as laplace-torch's marginal-likelihood
    tuning). δ is profiled out (MacKay's γ = δ‖θ*‖², :func:`optimise_prior_precision`) and σ
    maximised in log σ on [lower, upper]; at the optimum σ² = SSE/(n − γ), γ = Σ λ_i/(λ_i + δ).
    ``num_targets`` n is the number of scalar training targets (points × outputs); θ* stays.
    Returns the posterior with σ, its GGN eigenvalues and log-likelihood, and δ.
    """
    if posterior.likelihood != "gaussian":
        raise ValueError(
            f"optimise_noise_scale: a noise scale belongs to the Gaussian likelihood, got "
            f"{posterior.likelihood!r}"
        )
    n = positive_int("num_targets", num_targets, where="optimise_noise_scale")
    lower = positive("lower", lower, where="optimise_noise_scale")
    upper = positive("upper", upper, where="optimise_noise_scale")
    d_lo, d_hi = (positive("delta_bounds", d, where="optimise_noise_scale") for d in delta_bounds)
    if not (lower < upper and d_lo < d_hi):
        raise ValueError(
            f"optimise_noise_scale: bounds must be increasing, got σ in [{lower}, {upper}] "
            f"and δ in [{d_lo}, {d_hi}]"
        )
    s0 = float(posterior.noise_scale)
    mu = np.asarray(posterior.eigvals, dtype=np.float64) * s0**2
    norm2 = float(np.sum(np.asarray(posterior.mean, dtype=np.float64) ** 2))
    sse = -2.0 * s0**2 * (float(posterior.log_likelihood) + 0.5 * n * math.log(2 * math.pi * s0**2))
    sse = max(sse, 0.0)
    p = posterior.num_params

    def neg_evidence(log_sigma):  # −log Z(σ, δ*(σ))
        s2 = math.exp(2 * log_sigma)
        lam = mu / s2
        d = _profile_prior_precision(lam, norm2, d_lo, d_hi)
        log_lik = -0.5 * n * math.log(2 * math.pi * s2) - 0.5 * sse / s2
        z = log_lik - 0.5 * d * norm2 + 0.5 * p * math.log(d) - 0.5 * np.sum(np.log(lam + d))
        return -float(z)

    grid = np.linspace(math.log(lower), math.log(upper), 121)
    values = [neg_evidence(g) for g in grid]
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    best = optimize.minimize_scalar(
        neg_evidence, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
    )
    log_sigma = float(best.x) if best.fun <= values[i] else float(grid[i])
    sigma = math.exp(log_sigma)
    lam = mu / sigma**2
    fitted = dataclasses.replace(
        posterior,
        eigvals=jnp.asarray(lam, dtype=posterior.eigvals.dtype),
        noise_scale=sigma,
        log_likelihood=-0.5 * n * math.log(2 * math.pi * sigma**2) - 0.5 * sse / sigma**2,
    )
    return fitted.with_prior_precision(_profile_prior_precision(lam, norm2, d_lo, d_hi))


def laplace(
    params,
    x,
    y,
    *,
    likelihood: str,
    noise_scale: float = 1.0,
    prior_precision: float = 1.0,
    subset: str = "full",
    activation: str = "relu",
    apply_fn: Callable | None = None,
    features_fn: Callable | None = None,
    chunk: int = 256,
) -> LaplacePosterior:
    """Fit the GGN Laplace approximation around the MAP ``params``.

    ``apply_fn(params, x)`` defaults to :func:`nets.mlp_apply` with ``activation``;
    for ``subset="last_layer"``, ``features_fn(params, x)`` (default :func:`mlp_features`)
    gives the last layer's inputs and only ``params[-1]`` (W, b) is random.
    ``prior_precision`` is δ of N(0, I/δ).
    """
    validate.check_likelihood(likelihood)
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    noise_scale = positive("noise_scale", noise_scale, where="laplace")
    delta = positive("prior_precision", prior_precision, where="laplace")
    x, y = check_data(x, y, likelihood, "laplace")
    if apply_fn is None:
        apply_fn = functools.partial(nets.mlp_apply, activation_name=activation)
    model_fn: _FullModel | _LastLayerModel
    if subset == "full":
        theta, unravel = ravel_pytree(params)
        model_fn = _FullModel(apply_fn, unravel)
    else:
        if not (isinstance(params, list | tuple) and set(params[-1]) == {"W", "b"}):
            raise ValueError("last-layer Laplace needs a list of layers ending in {'W', 'b'}")
        if features_fn is None:
            features_fn = functools.partial(mlp_features, activation_name=activation)
        theta, unravel = ravel_pytree(params[-1])
        model_fn = _LastLayerModel(features_fn, params, unravel)
    validate.finite("params", theta, where="laplace")
    ggn = ggn_matrix(
        model_fn, theta, x, likelihood=likelihood, noise_scale=noise_scale, chunk=chunk
    )
    eigvals, eigvecs = jnp.linalg.eigh(0.5 * (ggn + ggn.T))
    log_lik = -float(neg_log_likelihood(model_fn(theta, x), y, likelihood, noise_scale))
    return LaplacePosterior(
        mean=theta,
        eigvals=jnp.clip(eigvals, 0.0),
        eigvecs=eigvecs,
        prior_precision=delta,
        model_fn=model_fn,
        unravel=unravel,
        likelihood=likelihood,
        noise_scale=noise_scale,
        subset=subset,
        log_likelihood=log_lik,
        n_features=int(x.shape[1]),
    )


class _FullModel:
    """θ ↦ apply_fn(unravel(θ), x); hashable by identity so it can be a static jit argument."""

    def __init__(self, apply_fn, unravel):
        self.apply_fn, self.unravel = apply_fn, unravel

    def __call__(self, theta, x):
        return self.apply_fn(self.unravel(theta), x)


class _LastLayerModel:
    """θ ↦ features(x) W + b with (W, b) = unravel(θ) and the other layers fixed."""

    def __init__(self, features_fn, params, unravel):
        self.features_fn, self.params, self.unravel = features_fn, params, unravel

    def __call__(self, theta, x):
        last = self.unravel(theta)
        return self.features_fn(self.params, x) @ last["W"] + last["b"]


def _check_x(posterior: LaplacePosterior, x, where: str):
    """x (n, d) with the posterior's feature count d, as a JAX array."""
    return jnp.asarray(validate.check_x(x, where=where, n_features=posterior.n_features, ndim=(2,)))


def predictive_samples(posterior: LaplacePosterior, x, rng_key, num_samples: int = 100):
    """Sampled predictive: outputs f(x; θ_s) for θ_s ~ q, shape (S, n, C)."""
    x = _check_x(posterior, x, "predictive_samples")
    thetas = posterior.sample(rng_key, num_samples)
    return jax.lax.map(lambda t: posterior.model_fn(t, x), thetas)


def sampled_predictive(posterior: LaplacePosterior, x, rng_key, num_samples: int = 100):
    """Sampled (non-linearised) predictive.

    Regression: ``(mean (n, C), var (n, C))`` of y, var = Var_s f + σ².
    Classification: class probabilities E_s softmax(f(x; θ_s)), (n, C).
    """
    f = predictive_samples(posterior, x, rng_key, num_samples)
    if posterior.likelihood == "gaussian":
        return f.mean(0), f.var(0) + posterior.noise_scale**2
    return jax.nn.softmax(f, axis=-1).mean(0)


def linearised_variance(posterior: LaplacePosterior, x, chunk: int = 256):
    """Covariance of the linearised outputs J Σ Jᵀ per point, (n, C, C)."""
    x = _check_x(posterior, x, "linearised_variance")
    cov = posterior.covariance
    out = []
    for start in range(0, x.shape[0], chunk):
        jac = output_jacobian(posterior.model_fn, posterior.mean, x[start : start + chunk])
        out.append(jnp.einsum("nap,pq,nbq->nab", jac, cov, jac))
    return jnp.concatenate(out, axis=0)


def probit_probs(mean, var):
    """The multiclass probit approximation of E softmax(f), f ~ N(mean, diag var):
    softmax(mean / √(1 + π/8 · var)); mean, var (n, C) → probabilities (n, C)."""
    mean, var = jnp.asarray(mean), jnp.asarray(var)
    if mean.shape != var.shape:
        raise ValueError(f"probit_probs: mean {mean.shape} and var {var.shape} differ in shape")
    return jax.nn.softmax(mean / jnp.sqrt(1.0 + jnp.pi / 8.0 * var), axis=-1)


def linearised_predictive(
    posterior: LaplacePosterior, x, *, method: str = "probit", rng_key=None, num_samples: int = 100
):
    """Linearised (GLM) predictive f_lin(x; θ) = f(x; θ*) + J(θ − θ*) (Immer et al., 2021).

    Regression (closed form): ``(mean, var)`` with mean f(x; θ*), var diag(J Σ Jᵀ) + σ².
    Classification: ``method="probit"`` uses softmax(f / √(1 + π/8 · diag J Σ Jᵀ)) (the
    multiclass probit approximation); ``method="mc"`` averages softmax over ``num_samples``
    draws of the Gaussian linearised logits (needs ``rng_key``). Returns probabilities (n, C).
    """
    x = _check_x(posterior, x, "linearised_predictive")
    mean = posterior.model_fn(posterior.mean, x)
    cov = linearised_variance(posterior, x)
    var = jnp.diagonal(cov, axis1=1, axis2=2)
    if posterior.likelihood == "gaussian":
        return mean, var + posterior.noise_scale**2
    if method == "probit":
        return probit_probs(mean, var)
    if method == "mc":
        if rng_key is None:
            raise ValueError("method='mc' needs an rng_key")
        chol = jnp.linalg.cholesky(cov + 1e-9 * jnp.eye(cov.shape[-1]))
        z = jax.random.normal(rng_key, (num_samples, *mean.shape))
        logits = mean + jnp.einsum("nab,snb->sna", chol, z)
        return jax.nn.softmax(logits, axis=-1).mean(0)
    raise ValueError(f"method must be 'probit' or 'mc', got {method!r}")
