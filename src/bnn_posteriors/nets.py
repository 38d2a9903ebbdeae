"""Neural networks as plain pytrees: initialisation, forward pass, flattening.

An MLP's parameters are a list of layers ``{"W": (d_in, d_out), "b": (d_out,)}``.
The narrow network of [SAP] §2.1 is a vector ``w`` of L scalar weights.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

ACTIVATIONS = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "sigmoid": jax.nn.sigmoid,
    "identity": lambda z: z,
}


def activation(name: str):
    """The activation function called ``name`` (one of :data:`ACTIVATIONS`)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; choose one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def check_widths(widths: Sequence[int]) -> tuple[int, ...]:
    """Validate layer widths ``(d_in, h_1, ..., h_K, d_out)``: at least two positive ints."""
    widths = tuple(widths)
    if len(widths) < 2 or not all(isinstance(w, int) and w > 0 for w in widths):
        raise ValueError(
            f"widths must be a sequence of at least two positive integers "
            f"(input, hidden..., output), got {widths!r}"
        )
    return widths


INIT_SCHEMES = ("normal", "glorot", "fan_in", "he")


def mlp_init(
    rng_key, widths: Sequence[int], scale: float = 1.0, *, bias: bool = True, scheme="normal"
) -> list[dict]:
    """Initial MLP parameters, ``[{"W": (h_l, h_{l+1}), "b": (h_{l+1},)}]``, by ``scheme``:

    - ``"normal"``: every weight and bias i.i.d. N(0, scale²) (a prior draw when
      ``scale`` is the prior's sd);
    - ``"glorot"``: Glorot-normal kernels W ~ N(0, 2/(d_in + d_out)), zero biases
      (deep-ensemble members and the MFVI means of [SAP] App. D.7);
    - ``"fan_in"``: W ~ N(0, 1/d_in), zero biases (PyTorch-like; MetricBNN's networks);
    - ``"he"``: W ~ N(0, 2/d_in), zero biases (MetricBNN's autoencoder).

    ``scale`` applies to ``"normal"`` only. ``widths = (d_in, h_1, ..., d_out)``; without the
    ``"b"`` entries if ``bias`` is false (the bias-free nets of [SAP] App. E).
    """
    widths = check_widths(widths)
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if scheme not in INIT_SCHEMES:
        raise ValueError(f"scheme must be one of {INIT_SCHEMES}, got {scheme!r}")
    pairs = list(zip(widths[:-1], widths[1:], strict=True))
    if scheme == "glorot":
        keys = jax.random.split(rng_key, len(pairs))
        return [
            {"W": math.sqrt(2.0 / (d_in + d_out)) * jax.random.normal(k, (d_in, d_out))}
            | ({"b": jnp.zeros(d_out)} if bias else {})
            for k, (d_in, d_out) in zip(keys, pairs, strict=True)
        ]
    keys = jax.random.split(rng_key, 2 * len(pairs))
    layers = []
    for i, (d_in, d_out) in enumerate(pairs):
        w = scale * jax.random.normal(keys[2 * i], (d_in, d_out))
        b = scale * jax.random.normal(keys[2 * i + 1], (d_out,))
        if scheme == "fan_in":
            w, b = w / np.sqrt(d_in), jnp.zeros(d_out)
        elif scheme == "he":
            w, b = w * jnp.sqrt(2.0 / d_in), jnp.zeros(d_out)
        layers.append({"W": w, "b": b} if bias else {"W": w})
    return layers


def sites(params: list[dict]) -> dict:
    """An MLP's parameter list as the sample sites of its NumPyro model: ``W{i}``, ``b{i}``."""
    return {f"{name}{i}": value for i, layer in enumerate(params) for name, value in layer.items()}


def _affine(h, layer: dict):
    """h W + b, or h W for a layer without a ``"b"`` entry."""
    out = h @ layer["W"]
    return out + layer["b"] if "b" in layer else out


def mlp_apply(params: list[dict], x, activation_name: str = "relu", output_scale: float = 1.0):
    """Forward pass f(x) = W_K φ(... φ(x W_1 + b_1) ...) + b_K, times ``output_scale``.

    Layers without a ``"b"`` entry have no bias.

    ``x``: (n, d_in) → (n, d_out). ``output_scale`` = 1/N gives the mean-field
    scaling of [TEMP].
    """
    phi = activation(activation_name)
    h = jnp.asarray(x)
    if h.ndim != 2 or h.shape[1] != params[0]["W"].shape[0]:
        raise ValueError(f"x must have shape (n, {params[0]['W'].shape[0]}), got {tuple(h.shape)}")
    for layer in params[:-1]:
        h = phi(_affine(h, layer))
    return output_scale * _affine(h, params[-1])


def flatten(params):
    """Flatten a parameter pytree into a vector; returns ``(vector, unflatten)``."""
    return ravel_pytree(params)


def narrow_apply(w, x):
    """Narrow network of depth L ([SAP] §2.1): f(x) = (∏_l w_l)·x.

    ``w``: (..., L), ``x``: (n,) → (..., n).
    """
    w = jnp.asarray(w)
    return jnp.prod(w, axis=-1, keepdims=True) * jnp.asarray(x)


# Symmetries of MLPs ([SAP] App. B, Defs. B.1–B.3). Pure: each returns a new parameter list.


def _index(name: str, value, size: int, what: str) -> int:
    """An integer index in [0, size); the error says what it indexes."""
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if not 0 <= value < size:
        raise ValueError(f"{name} must {what}, i.e. lie in [0, {size - 1}], got {value}")
    return value


def _hidden_index(params, layer: int, neuron: int | None = None) -> tuple[int, int | None]:
    """Validate a hidden-layer index (and optionally a neuron index in that layer)."""
    n_hidden = len(params) - 1
    if n_hidden < 1:
        raise ValueError("params has no hidden layer (it needs at least two layers)")
    layer = _index("layer", layer, n_hidden, "index a hidden layer")
    if neuron is None:
        return layer, None
    width = params[layer]["W"].shape[1]
    what = f"index a unit of hidden layer {layer} ({width} units)"
    return layer, _index("neuron", neuron, width, what)


def _scale_neuron(params, layer: int, neuron: int, c_in, c_out) -> list[dict]:
    """Multiply a unit's in-weights and bias by ``c_in`` and its out-weights by ``c_out``."""
    new = [dict(p) for p in params]
    new[layer]["W"] = jnp.asarray(params[layer]["W"]).at[:, neuron].multiply(c_in)
    if "b" in params[layer]:
        new[layer]["b"] = jnp.asarray(params[layer]["b"]).at[neuron].multiply(c_in)
    new[layer + 1]["W"] = jnp.asarray(params[layer + 1]["W"]).at[neuron, :].multiply(c_out)
    return new


def permute_hidden(params: list[dict], layer: int, perm) -> list[dict]:
    """Permute the units of hidden layer ``layer`` ([SAP] Def. B.1): f is unchanged for any φ.

    New unit j is old unit ``perm[j]``: columns of ``params[layer]["W"]`` (d_in, h) and entries
    of ``params[layer]["b"]`` (h,) are reordered, and so are the rows of
    ``params[layer + 1]["W"]`` (h, d_out). ``layer`` is 0-based over hidden layers.
    """
    layer, _ = _hidden_index(params, layer)
    width = params[layer]["W"].shape[1]
    perm = np.asarray(perm)
    if (
        perm.shape != (width,)
        or not np.issubdtype(perm.dtype, np.integer)
        or not np.array_equal(np.sort(perm), np.arange(width))
    ):
        raise ValueError(
            f"perm must be a permutation of 0..{width - 1} (hidden layer {layer} has {width} "
            f"units), got {perm.tolist()!r}"
        )
    new = [dict(p) for p in params]
    new[layer]["W"] = jnp.asarray(params[layer]["W"])[:, perm]
    if "b" in params[layer]:
        new[layer]["b"] = jnp.asarray(params[layer]["b"])[perm]
    new[layer + 1]["W"] = jnp.asarray(params[layer + 1]["W"])[perm, :]
    return new


def rescale_neuron(params: list[dict], layer: int, neuron: int, c: float) -> list[dict]:
    """Positive scaling of one hidden unit ([SAP] Def. B.2): in-weights, bias × c, out-weights / c.

    φ(c z) = c φ(z) for ReLU (c > 0), so f is unchanged for ReLU, not for tanh.
    """
    layer, neuron = _hidden_index(params, layer, neuron)
    try:
        c = float(c)
    except (TypeError, ValueError):
        raise ValueError(f"c must be a positive number, got {c!r}") from None
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"c must be a positive finite number, got {c}")
    return _scale_neuron(params, layer, neuron, c, 1.0 / c)


def flip_neuron(params: list[dict], layer: int, neuron: int) -> list[dict]:
    """Sign flip of one hidden unit ([SAP] Def. B.3): negate its in-weights, bias and out-weights.

    φ(−z) = −φ(z) for tanh, so f is unchanged for tanh; for ReLU it changes.
    """
    layer, neuron = _hidden_index(params, layer, neuron)
    return _scale_neuron(params, layer, neuron, -1.0, -1.0)


def dead_relu_start(params: list[dict], layer: int = 0, offset: float = 10.0, x=None) -> list[dict]:
    """A start where hidden layer ``layer`` is dead on all data ([SAP] §3.4).

    Sets the layer's biases to ``−offset − max_i |pre-activation_i|`` so every
    pre-activation is negative on ``x`` (or to ``−offset`` when ``x`` is None): the ReLU
    outputs are 0, the gradient of the likelihood w.r.t. every earlier weight vanishes.
    ``params``: one network (no member axis).
    """
    if not math.isfinite(offset) or offset <= 0:
        raise ValueError(f"offset must be a positive number, got {offset}")
    n_hidden = len(params) - 1
    if not 0 <= layer < n_hidden:
        raise ValueError(f"layer must index a hidden layer in [0, {n_hidden - 1}], got {layer}")
    new = [dict(p) for p in params]
    shift = 0.0
    if x is not None:
        h = jnp.asarray(x)
        for p in params[:layer]:
            h = jax.nn.relu(_affine(h, p))
        shift = jnp.max(jnp.abs(h @ params[layer]["W"]), axis=0)
    new[layer]["b"] = -offset - shift * jnp.ones_like(params[layer]["b"])
    return new
