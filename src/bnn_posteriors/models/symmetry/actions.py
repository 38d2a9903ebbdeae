"""The symmetries of an MLP as maps on its parameter list ([SAP] App. B, Defs. B.1–B.3).

Each map leaves the network's function unchanged for the activations it names and returns a
new parameter list of :mod:`bnn_posteriors.models.nets`: :func:`permute_hidden` (any φ),
:func:`rescale_neuron` (ReLU) and :func:`flip_neuron` (tanh). The permutation group they
generate is :mod:`.permutations`; which priors keep these symmetries is :mod:`.priors`.
"""

from __future__ import annotations

import operator
from typing import overload

import jax.numpy as jnp
import numpy as np


def _index(name: str, value, size: int, what: str) -> int:
    """An integer index in [0, size); the error says what it indexes."""
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if not 0 <= value < size:
        raise ValueError(f"{name} must {what}, i.e. lie in [0, {size - 1}], got {value}")
    return value


@overload
def _hidden_index(params, layer: int, neuron: None = None) -> tuple[int, None]: ...
@overload
def _hidden_index(params, layer: int, neuron: int) -> tuple[int, int]: ...
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
