"""Mean-field Gaussian variational families over MLP parameter pytrees.

A variational family is ``{"loc": params, "log_scale": params}`` where ``params``
is an MLP pytree of :mod:`bnn_posteriors.nets`: q(ω) = Π_i N(ω_i; m_i, s_i²). This
module draws from q, scores it (log q, entropy, closed-form KL to the N(0, τ²)
prior) and gives the log joint of the factorised-prior MLP models (Gaussian or
categorical likelihood) that :mod:`.symmetrised` trains q on.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .. import nets
from ..validate import positive_int

LIKELIHOODS = ("gaussian", "categorical")
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def init_mean_field(
    rng_key, widths, *, loc_scale: float | None = None, init_scale: float = 0.1, bias: bool = True
) -> dict:
    """Mean-field Gaussian q at a random start: scales ``init_scale``, weight means
    ~ N(0, loc_scale²), or N(0, 1/d_in) per layer if ``loc_scale`` is None; bias means 0.
    """
    widths = nets.check_widths(widths)
    if not ((loc_scale is None or loc_scale > 0) and init_scale > 0):
        raise ValueError("loc_scale and init_scale must be positive")
    loc = nets.mlp_init(rng_key, widths, 1.0, bias=bias)
    for layer, d_in in zip(loc, widths[:-1], strict=True):
        layer["W"] = layer["W"] * (loc_scale if loc_scale is not None else d_in**-0.5)
        if "b" in layer:
            layer["b"] = jnp.zeros_like(layer["b"])
    log_scale = jax.tree.map(lambda v: jnp.full_like(v, math.log(init_scale)), loc)
    return {"loc": loc, "log_scale": log_scale}


def sample_mean_field(rng_key, q: dict, num_samples: int):
    """ω ~ q by reparameterisation: every leaf gets a leading (num_samples,) axis."""
    _check_q(q)
    num_samples = positive_int("num_samples", num_samples)
    leaves, treedef = jax.tree.flatten(q["loc"])
    keys = jax.random.split(rng_key, len(leaves))
    scales = jax.tree.leaves(q["log_scale"])
    draws = [
        m + jnp.exp(s) * jax.random.normal(k, (num_samples, *m.shape))
        for m, s, k in zip(leaves, scales, keys, strict=True)
    ]
    return jax.tree.unflatten(treedef, draws)


def log_q(q: dict, params) -> jax.Array:
    """log q(ω) of a mean-field Gaussian, summed over every parameter; ``params`` one ω."""
    terms = jax.tree.map(_normal_logpdf, params, q["loc"], q["log_scale"])
    return sum(jnp.sum(t) for t in jax.tree.leaves(terms))


def entropy(q: dict) -> jax.Array:
    """Entropy H(q) = Σ_i (log s_i + ½ log 2πe) of a mean-field Gaussian."""
    _check_q(q)
    return sum(jnp.sum(s + _HALF_LOG_2PI + 0.5) for s in jax.tree.leaves(q["log_scale"]))


def kl_to_prior(q: dict, prior_scale: float = 1.0) -> jax.Array:
    """KL(q ‖ N(0, prior_scale² I)) in closed form, summed over all parameters."""
    _check_q(q)

    def kl(m, s):
        var = jnp.exp(2 * s) / prior_scale**2
        return 0.5 * jnp.sum(var + m**2 / prior_scale**2 - 1.0 - jnp.log(var))

    return sum(jax.tree.leaves(jax.tree.map(kl, q["loc"], q["log_scale"])))


def log_likelihood(
    params, x, y, *, likelihood: str = "gaussian", noise: float = 1.0, activation: str = "relu"
) -> jax.Array:
    """log p(y | x, ω), summed over the data: Gaussian (y (n,), σ = ``noise``) or categorical.

    Categorical: y (n,) integer labels, logits f(x) (n, classes) from :func:`nets.mlp_apply`.
    """
    f = nets.mlp_apply(params, x, activation)
    if likelihood == "gaussian":
        z = (y - f[:, 0]) / noise
        return jnp.sum(-0.5 * z**2) - y.shape[0] * (math.log(noise) + _HALF_LOG_2PI)
    if likelihood == "categorical":
        logp = jax.nn.log_softmax(f, axis=-1)
        return jnp.sum(jnp.take_along_axis(logp, y[:, None], axis=1))
    raise ValueError(f"unknown likelihood {likelihood!r}; choose one of {', '.join(LIKELIHOODS)}")


def log_prior(params, prior_scale: float = 1.0) -> jax.Array:
    """log p(ω) of the factorised N(0, prior_scale²) prior (G-invariant)."""
    return sum(
        jnp.sum(-0.5 * (v / prior_scale) ** 2 - math.log(prior_scale) - _HALF_LOG_2PI)
        for v in jax.tree.leaves(params)
    )


def log_joint(params, x, y, *, prior_scale: float = 1.0, **likelihood_kwargs) -> jax.Array:
    """log p(y, ω | x) = log p(y | x, ω) + log p(ω)."""
    return log_likelihood(params, x, y, **likelihood_kwargs) + log_prior(params, prior_scale)


def predictive_outputs(rng_key, q: dict, x, num_samples: int = 100, *, activation: str = "relu"):
    """Network outputs f_ω(x) for ω ~ q: (num_samples, n, d_out). The same law under q_G."""
    draws = sample_mean_field(rng_key, q, num_samples)
    return jax.vmap(lambda w: nets.mlp_apply(w, x, activation))(draws)


def _normal_logpdf(v, m, log_s):
    return -0.5 * ((v - m) * jnp.exp(-log_s)) ** 2 - log_s - _HALF_LOG_2PI


def _check_q(q) -> None:
    if not (isinstance(q, dict) and set(q) == {"loc", "log_scale"}):
        raise ValueError("q must be a dict with keys 'loc' and 'log_scale' (see init_mean_field)")
    if jax.tree.structure(q["loc"]) != jax.tree.structure(q["log_scale"]):
        raise ValueError("q['loc'] and q['log_scale'] must have the same structure")
