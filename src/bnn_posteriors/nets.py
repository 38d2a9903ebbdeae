"""Neural networks as plain pytrees: initialisation, forward pass, flattening.

An MLP's parameters are a list of layers ``{"W": (d_in, d_out), "b": (d_out,)}``.
The narrow network of [SAP] §2.1 is a vector ``w`` of L scalar weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
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


def mlp_init(rng_key, widths: Sequence[int], scale: float = 1.0) -> list[dict]:
    """Draw MLP parameters with every weight and bias i.i.d. N(0, scale²).

    ``widths = (d_in, h_1, ..., d_out)``; returns ``[{"W": (h_l, h_{l+1}), "b": (h_{l+1},)}]``.
    """
    widths = check_widths(widths)
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    keys = jax.random.split(rng_key, 2 * (len(widths) - 1))
    return [
        {
            "W": scale * jax.random.normal(keys[2 * i], (d_in, d_out)),
            "b": scale * jax.random.normal(keys[2 * i + 1], (d_out,)),
        }
        for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:], strict=True))
    ]


def mlp_apply(params: list[dict], x, activation_name: str = "relu", output_scale: float = 1.0):
    """Forward pass f(x) = W_K φ(... φ(x W_1 + b_1) ...) + b_K, times ``output_scale``.

    ``x``: (n, d_in) → (n, d_out). ``output_scale`` = 1/N gives the mean-field
    scaling of [TEMP].
    """
    phi = activation(activation_name)
    h = jnp.asarray(x)
    if h.ndim != 2 or h.shape[1] != params[0]["W"].shape[0]:
        raise ValueError(f"x must have shape (n, {params[0]['W'].shape[0]}), got {tuple(h.shape)}")
    for layer in params[:-1]:
        h = phi(h @ layer["W"] + layer["b"])
    return output_scale * (h @ params[-1]["W"] + params[-1]["b"])


def flatten(params):
    """Flatten a parameter pytree into a vector; returns ``(vector, unflatten)``."""
    return ravel_pytree(params)


def narrow_apply(w, x):
    """Narrow network of depth L ([SAP] §2.1): f(x) = (∏_l w_l)·x.

    ``w``: (..., L), ``x``: (n,) → (..., n).
    """
    w = jnp.asarray(w)
    return jnp.prod(w, axis=-1, keepdims=True) * jnp.asarray(x)
