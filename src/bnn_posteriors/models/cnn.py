"""A small tanh CNN (2 conv + 3 fully connected layers, [MBNN] §5) with pytree parameters.

Parameters are a list like :mod:`bnn_posteriors.models.nets`: two conv layers
``{"W": (kh, kw, c_in, c_out), "b": (c_out,)}`` then three dense layers ``{"W", "b"}``,
so the last entry is the output layer (last-layer Laplace works as for MLPs).
Images are (n, H, W) or (n, H·W) with square H = W; convolutions are "VALID" with stride 2.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def _out_size(size: int, kernel: int, stride: int) -> int:
    return (size - kernel) // stride + 1


def cnn_init(
    rng_key, image_size=28, channels=(6, 12), kernel=5, stride=2, hidden=(32, 32), num_classes=10
):
    """Draw CNN parameters with N(0, 1/fan_in) weights and zero biases."""
    if image_size < kernel or any(c < 1 for c in (*channels, *hidden, num_classes)):
        raise ValueError("image_size must be at least kernel and all widths positive")
    keys = jax.random.split(rng_key, 5)
    layers, c_in, size = [], 1, image_size
    for key, c_out in zip(keys[:2], channels, strict=True):
        fan_in = kernel * kernel * c_in
        w = jax.random.normal(key, (kernel, kernel, c_in, c_out)) / math.sqrt(fan_in)
        layers.append({"W": w, "b": jnp.zeros(c_out)})
        c_in, size = c_out, _out_size(size, kernel, stride)
        if size < 1:
            raise ValueError("image too small for two convolutions")
    widths = (size * size * c_in, *hidden, num_classes)
    for key, d_in, d_out in zip(keys[2:], widths[:-1], widths[1:], strict=True):
        w = jax.random.normal(key, (d_in, d_out)) / math.sqrt(d_in)
        layers.append({"W": w, "b": jnp.zeros(d_out)})
    return layers


def cnn_features(params, x, stride: int = 2):
    """Activations before the output layer: tanh(conv) ×2, flatten, tanh(dense) ×2."""
    x = jnp.asarray(x)
    if x.ndim == 2:
        side = math.isqrt(x.shape[1])
        if side * side != x.shape[1]:
            raise ValueError(f"flat images must have a square number of pixels, got {x.shape}")
        x = x.reshape(-1, side, side)
    if x.ndim != 3:
        raise ValueError(f"images must have shape (n, H, W) or (n, H*W), got {x.shape}")
    h = x[..., None]  # NHWC
    for layer in params[:2]:
        h = jax.lax.conv_general_dilated(
            h, layer["W"], (stride, stride), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        h = jnp.tanh(h + layer["b"])
    h = h.reshape(h.shape[0], -1)
    for layer in params[2:-1]:
        h = jnp.tanh(h @ layer["W"] + layer["b"])
    return h


def cnn_apply(params, x, stride: int = 2):
    """Logits (n, num_classes) of the CNN."""
    return cnn_features(params, x, stride) @ params[-1]["W"] + params[-1]["b"]
