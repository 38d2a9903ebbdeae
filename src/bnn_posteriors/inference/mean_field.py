"""The mean-field Gaussian q of every VI method: one pytree type and the functions on it.

q(θ) = Π_j N(θ_j; m_j, s_j²) is :class:`MeanField` ``(loc, scale)``: two pytrees of the same
structure, the means m and the standard deviations s (> 0). The pytree is either an MLP
parameter list of :mod:`bnn_posteriors.models.nets` (``[{"W", "b"}, ...]``, as the
symmetrised family of [SYM] and the tempered networks of [TEMP] hold it) or a dict of a
NumPyro model's latent sites (``{"w": ...}``, as :func:`.vi.fit_mfvi` returns it for any
model); :func:`layers` turns the sites ``W0, b0, W1, ...`` of an MLP into its layer list.
Leaves may carry leading batch axes (fits vectorised over runs or temperatures).

The functions are named after the math: :func:`sample` (θ ~ q by reparameterisation),
:func:`log_density` (log q(θ)), :func:`kl_to_prior` (KL(q‖p) for p = N(0, σ²) on every
parameter) and :func:`kl_per_unit` (the same per hidden unit), :func:`outputs` (the network
outputs f_θ(x) under draws θ ~ q), :func:`to_auto_normal` / :func:`from_auto_normal`
(NumPyro ``AutoNormal``'s ``<site>_auto_loc`` / ``<site>_auto_scale`` parameters).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.models import nets
from bnn_posteriors.theory import narrow_network as theory
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class MeanField:
    """q(θ) = Π_j N(θ_j; ``loc``_j, ``scale``_j²): means and sds as pytrees of one structure.

    A JAX pytree (``jax.vmap``, ``jax.jit``, ``jax.tree.map`` see the two trees as leaves);
    :func:`check` validates one at a public boundary.
    """

    loc: Any
    scale: Any

    @property
    def log_scale(self):
        """log s, leaf by leaf (the parametrisation in which log q is written)."""
        return jax.tree.map(jnp.log, self.scale)


def check(q, *, where: str = "MeanField") -> MeanField:
    """``q`` if it is a :class:`MeanField` whose ``loc`` and ``scale`` trees match in
    structure and shapes and whose (concrete) sds are finite and positive; else an error."""
    if not isinstance(q, MeanField):
        raise TypeError(f"{where}: q must be a MeanField(loc, scale), got {type(q).__name__}")
    # jaxlib ships no type stub for its C++ PyTreeDef, so mypy cannot see its `!=`
    if jax.tree.structure(q.loc) != jax.tree.structure(q.scale):  # type: ignore[operator]
        raise ValueError(
            f"{where}: q.loc and q.scale must have the same tree structure, got "
            f"{jax.tree.structure(q.loc)} and {jax.tree.structure(q.scale)}"
        )
    for path, m, s in zip(
        jax.tree_util.tree_leaves_with_path(q.loc),
        jax.tree.leaves(q.loc),
        jax.tree.leaves(q.scale),
        strict=True,
    ):
        name = jax.tree_util.keystr(path[0])
        if jnp.shape(m) != jnp.shape(s):
            raise ValueError(
                f"{where}: loc{name} has shape {jnp.shape(m)} but scale{name} {jnp.shape(s)}"
            )
        if not isinstance(s, jax.core.Tracer):
            values = np.asarray(s)
            if not (np.all(np.isfinite(values)) and np.all(values > 0)):
                raise ValueError(f"{where}: scale{name} must be finite and positive")
    return q


# --------------------------------------------------------------------------- building q


def init(
    rng_key, widths, *, loc_scale: float | None = None, init_scale: float = 0.1, bias: bool = True
) -> MeanField:
    """q of an MLP (layer list) at a random start: weight means ~ N(0, ``loc_scale``²), or
    N(0, 1/d_in) per layer if ``loc_scale`` is None; bias means 0; every sd ``init_scale``
    (as exp of its log, the exp parametrisation of the guide that fits it).
    """
    widths = nets.check_widths(widths)
    if not ((loc_scale is None or loc_scale > 0) and init_scale > 0):
        raise ValueError("loc_scale and init_scale must be positive")
    loc = nets.mlp_init(rng_key, widths, 1.0, bias=bias)
    for layer, d_in in zip(loc, widths[:-1], strict=True):
        layer["W"] = layer["W"] * (loc_scale if loc_scale is not None else d_in**-0.5)
        if "b" in layer:
            layer["b"] = jnp.zeros_like(layer["b"])
    scale = jax.tree.map(lambda v: jnp.exp(jnp.full_like(v, math.log(init_scale))), loc)
    return MeanField(loc, scale)


def layers(q: MeanField) -> MeanField:
    """q over the sites ``W0, b0, W1, ...`` of an MLP model as q over its layer list
    (``[{"W", "b"}, ...]``; :func:`bnn_posteriors.models.nets.sites` is the inverse)."""
    check(q, where="layers")
    if isinstance(q.loc, list):
        return q
    sites = q.loc if isinstance(q.loc, dict) else {}
    n_layers = sum(1 for name in sites if name[:1] == "W" and name[1:].isdigit())
    if n_layers == 0 or any(f"W{i}" not in sites for i in range(n_layers)):
        raise ValueError("layers: q must be over the sites of an MLP model (W0, b0, W1, ...)")

    def by_layer(tree):
        return [{k: tree[f"{k}{i}"] for k in "Wb" if f"{k}{i}" in tree} for i in range(n_layers)]

    return MeanField(by_layer(q.loc), by_layer(q.scale))


# --------------------------------------------------------------------------- draws and densities


def sample(rng_key, q: MeanField, num_samples: int):
    """θ = m + s ⊙ ε, ε ~ N(0, I): the tree of ``q.loc`` with a leading (num_samples,) axis.

    One key per leaf, split from ``rng_key`` in the tree's leaf order (a dict's sorted keys,
    a layer list's ``W0, b0, W1, ...``).
    """
    check(q, where="sample")
    num_samples = positive_int("num_samples", num_samples, where="sample")
    leaves, treedef = jax.tree.flatten(q.loc)
    keys = jax.random.split(rng_key, len(leaves))
    draws = [
        m + s * jax.random.normal(k, (num_samples, *jnp.shape(m)))
        for m, s, k in zip(leaves, jax.tree.leaves(q.scale), keys, strict=True)
    ]
    return jax.tree.unflatten(treedef, draws)


def log_density(q: MeanField, params) -> jax.Array:
    """log q(θ) = Σ_j [−½((θ_j − m_j)/s_j)² − log s_j − ½ log 2π] at one θ (``params``, the
    tree of ``q.loc``)."""
    terms = jax.tree.map(_normal_logpdf, params, q.loc, q.log_scale)
    return jnp.asarray(sum(jnp.sum(t) for t in jax.tree.leaves(terms)))


def kl_to_prior(q: MeanField, prior_scale: float = 1.0):
    """KL(q‖p) = Σ_j [log(σ/s_j) + (s_j² + m_j²)/(2σ²) − ½] for p = N(0, σ²), σ = ``prior_scale``,
    on every parameter (nats, a scalar)."""
    check(q, where="kl_to_prior")
    positive("prior_scale", prior_scale, where="kl_to_prior")
    total: float | jax.Array = 0.0
    for m, s in zip(jax.tree.leaves(q.loc), jax.tree.leaves(q.scale), strict=True):
        total = total + jnp.sum(theory.gaussian_kl(m, s, prior_scale))
    return total


def kl_per_unit(q: MeanField, prior_scale: float = 1.0) -> jax.Array:
    """KL(q_j‖p) of each hidden unit's factor of a one-hidden-layer q (layer list), in nats.

    Unit j's factor is over u_j = (W₀[:, j], b₀[j], W₁[j, :]) (the output bias belongs to no
    unit); p = N(0, ``prior_scale``²) on every parameter. Leaves may carry leading batch axes
    (...): returns (..., H).
    """
    check(q, where="kl_per_unit")
    if not (isinstance(q.loc, list) and len(q.loc) == 2):
        raise ValueError("kl_per_unit needs a one-hidden-layer q as a layer list (2 layers)")
    positive("prior_scale", prior_scale, where="kl_per_unit")
    first = jax.tree.map(lambda m, s: theory.gaussian_kl(m, s, prior_scale), q.loc[0], q.scale[0])
    second = theory.gaussian_kl(q.loc[1]["W"], q.scale[1]["W"], prior_scale)
    out = jnp.sum(first["W"], axis=-2) + jnp.sum(second, axis=-1)
    return out + first["b"] if "b" in first else out


def outputs(
    rng_key,
    q: MeanField,
    x,
    num_samples: int = 100,
    *,
    activation: str = "relu",
    output_scale: float = 1.0,
):
    """Network outputs f_θ(x) of an MLP for θ_s ~ q (:func:`sample`), s = 1..``num_samples``.

    ``q`` over the MLP's layer list or its sites (:func:`layers`); ``x`` (n, d_in) →
    (num_samples, n, d_out). ``output_scale`` multiplies the last layer (1/N in [TEMP]).
    """
    q = layers(q)
    x = validate.check_x(
        x, where="outputs", n_features=jnp.shape(q.loc[0]["W"])[0], ndim=(2,), dtype=np.float32
    )
    draws = sample(rng_key, q, num_samples)
    x = jnp.asarray(x)
    return jax.vmap(lambda w: nets.mlp_apply(w, x, activation, output_scale))(draws)


# --------------------------------------------------------------------------- NumPyro AutoNormal


def to_auto_normal(q: MeanField) -> dict:
    """q as NumPyro ``AutoNormal``'s parameters: ``<site>_auto_loc`` (m) and ``<site>_auto_scale``
    (s, the constrained sd, whatever the guide's scale transform).

    ``SVI.get_params`` returns and ``SVI.init(init_params=...)`` takes these constrained values
    for both transforms of :func:`.vi.mean_field_guide` (softplus, exp). A layer list is named
    by its sites (``W0``, ``b0``, ...; :func:`bnn_posteriors.models.nets.sites`).
    """
    check(q, where="to_auto_normal")
    loc, scale = (nets.sites(t) if isinstance(t, list) else t for t in (q.loc, q.scale))
    if not isinstance(loc, dict):
        raise ValueError("to_auto_normal: q must be over a dict of sites or an MLP layer list")
    out = {f"{site}_auto_loc": v for site, v in loc.items()}
    out.update({f"{site}_auto_scale": v for site, v in scale.items()})
    return out


def from_auto_normal(params: dict, *, mlp: bool = False) -> MeanField:
    """Inverse of :func:`to_auto_normal`: q over the sites of ``params`` (every
    ``<site>_auto_loc`` with its ``<site>_auto_scale``; other entries are ignored), or over
    the MLP's layer list if ``mlp`` (:func:`layers`).
    """
    suffix = "_auto_loc"
    sites = sorted(name[: -len(suffix)] for name in params if name.endswith(suffix))
    if not sites:
        raise ValueError("from_auto_normal: params hold no AutoNormal parameters <site>_auto_loc")
    missing = [s for s in sites if f"{s}_auto_scale" not in params]
    if missing:
        raise ValueError(f"from_auto_normal: params lack the scales of {missing}")
    q = MeanField(
        {s: params[f"{s}_auto_loc"] for s in sites},
        {s: params[f"{s}_auto_scale"] for s in sites},
    )
    return layers(q) if mlp else q


# --------------------------------------------------------------------------- helpers


def _normal_logpdf(v, m, log_s):
    return -0.5 * ((v - m) * jnp.exp(-log_s)) ** 2 - log_s - HALF_LOG_2PI
