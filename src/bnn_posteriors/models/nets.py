"""Neural networks as plain pytrees: initialisation, forward pass, flattening.

An MLP's parameters are a list of layers ``{"W": (d_in, d_out), "b": (d_out,)}``.
The narrow network of [SAP] §2.1 is a vector ``w`` of L scalar weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

ACTIVATIONS = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "gelu": jax.nn.gelu,  # tanh approximation, JAX's default (the MLP of [VK]'s examples/mnist.py)
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
    shift: float | jax.Array = 0.0
    if x is not None:
        h = jnp.asarray(x)
        for p in params[:layer]:
            h = jax.nn.relu(_affine(h, p))
        shift = jnp.max(jnp.abs(h @ params[layer]["W"]), axis=0)
    new[layer]["b"] = -offset - shift * jnp.ones_like(params[layer]["b"])
    return new
