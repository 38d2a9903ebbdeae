"""The mean-field Gaussian q of an MLP by layer, as the symmetrised family needs it.

q(ω) = Π_i N(ω_i; m_i, s_i²) is the guide :func:`bnn_posteriors.inference.vi.mean_field_guide`
(``scale_transform="exp"``) of :func:`bnn_posteriors.models.numpyro_models.mlp_regression` or
:func:`~bnn_posteriors.models.numpyro_models.mlp_classification`. The permutations of [SYM] act
on hidden
units, so this module holds q as ``{"loc": layers, "log_scale": layers}`` with ``layers`` an
MLP parameter list of :mod:`bnn_posteriors.models.nets` (``[{"W", "b"}, {"W", "b"}]``), converts it
to and from the guide's parameters (``W0_auto_loc``, ``W0_auto_scale``, ...), draws from it
and scores it (log q). The model's log joint at one ω comes from the
NumPyro model itself (:func:`numpyro.infer.util.log_density`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from numpyro.infer.util import log_density

from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.theory import narrow_network as theory
from bnn_posteriors.util.validate import positive_int

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


# --------------------------------------------------------------------------- the family


def init_mean_field(
    rng_key, widths, *, loc_scale: float | None = None, init_scale: float = 0.1, bias: bool = True
) -> dict:
    """Mean-field Gaussian q at a random start: sds ``init_scale``, weight means
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


def to_guide_params(q: dict) -> dict:
    """q by layer as the guide's constrained parameters: ``W0_auto_loc``, ``W0_auto_scale`` (sd)."""
    _check_q(q)
    out = {f"{site}_auto_loc": v for site, v in nets.sites(q["loc"]).items()}
    for site, v in nets.sites(q["log_scale"]).items():
        out[f"{site}_auto_scale"] = jnp.exp(v)
    return out


def from_guide_params(params: dict) -> dict:
    """Inverse of :func:`to_guide_params`: ``{"loc": layers, "log_scale": layers}``.

    ``params`` holds ``W{i}_auto_loc``/``_auto_scale`` for i = 0..L−1 and optionally the
    same for ``b{i}``; other entries are ignored.
    """
    n_layers = sum(1 for name in params if name[0] == "W" and name.endswith("_auto_loc"))
    if n_layers == 0:
        raise ValueError("params hold no guide parameters W0_auto_loc, W0_auto_scale, ...")
    q: dict[str, list[dict]] = {"loc": [], "log_scale": []}
    for i in range(n_layers):
        names = [k for k in "Wb" if f"{k}{i}_auto_loc" in params]
        q["loc"].append({k: params[f"{k}{i}_auto_loc"] for k in names})
        q["log_scale"].append({k: jnp.log(params[f"{k}{i}_auto_scale"]) for k in names})
    return q


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
    return jnp.asarray(sum(jnp.sum(t) for t in jax.tree.leaves(terms)))


def predictive_outputs(rng_key, q: dict, x, num_samples: int = 100, *, activation: str = "relu"):
    """Network outputs f_ω(x) for ω ~ q: (num_samples, n, d_out). The same law under q_G."""
    draws = sample_mean_field(rng_key, q, num_samples)
    return jax.vmap(lambda w: nets.mlp_apply(w, x, activation))(draws)


def unit_kl(q: dict, prior_scale: float = 1.0) -> jax.Array:
    """KL(q_j ‖ p) of each hidden unit's factor of a one-hidden-layer q to the prior, in nats.

    Unit j's factor is over u_j = (W₀[:, j], b₀[j], W₁[j, :]); the prior is N(0,
    ``prior_scale``²) on every parameter, so per parameter KL = log(σ/s) + (s² + μ²)/(2σ²) − ½.
    The leaves of q may carry leading batch axes (...): returns (..., H).
    """
    _check_q(q)
    if len(q["loc"]) != 2:
        raise ValueError("unit_kl needs a one-hidden-layer q (2 layers)")
    if not prior_scale > 0:
        raise ValueError(f"prior_scale must be positive, got {prior_scale}")

    def kl(m, log_s):
        return theory.gaussian_kl(m, jnp.exp(log_s), prior_scale)

    first = jax.tree.map(kl, q["loc"][0], q["log_scale"][0])
    out = jnp.sum(first["W"], axis=-2) + jnp.sum(kl(q["loc"][1]["W"], q["log_scale"][1]["W"]), -1)
    return out + first["b"] if "b" in first else out


# --------------------------------------------------------------------------- the model


def _model_trace(params, x, y, likelihood, prior_scale, noise_scale, activation):
    """log p(y, ω | x) and the model's trace at ω = ``params`` (an MLP parameter list)."""
    widths = (params[0]["W"].shape[0], *(layer["W"].shape[1] for layer in params))
    spec = models.MLP(widths, likelihood, activation, bias="b" in params[0],
                      prior_scale=prior_scale, noise_scale=noise_scale)  # fmt: skip
    return log_density(spec.model, (), spec.kwargs(x, y), nets.sites(params))


def log_joint(
    params,
    x,
    y,
    *,
    likelihood: str = "gaussian",
    prior_scale: float = 1.0,
    noise_scale: float = 1.0,
    activation: str = "relu",
) -> jax.Array:
    """log p(y, ω | x) of the model (:class:`.models.MLP`) at one ω (an MLP parameter list)."""
    return _model_trace(params, x, y, likelihood, prior_scale, noise_scale, activation)[0]


# --------------------------------------------------------------------------- helpers


def _normal_logpdf(v, m, log_s):
    return -0.5 * ((v - m) * jnp.exp(-log_s)) ** 2 - log_s - HALF_LOG_2PI


def _check_q(q) -> None:
    if not (isinstance(q, dict) and set(q) == {"loc", "log_scale"}):
        raise ValueError("q must be a dict with keys 'loc' and 'log_scale' (see init_mean_field)")
    # jaxlib 0.10 ships no type stub for its C++ PyTreeDef, so mypy cannot see its `!=`
    if jax.tree.structure(q["loc"]) != jax.tree.structure(q["log_scale"]):  # type: ignore[operator]
        raise ValueError("q['loc'] and q['log_scale'] must have the same structure")
