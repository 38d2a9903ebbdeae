"""The permutation group of an MLP's hidden units ([SYM] §3) and the log-permanent.

G = S_{H_1} × ... × S_{H_K} permutes the units of every hidden layer: the incoming weights
and bias of layer l by P_l, its outgoing weights by P_lᵀ, so f_{g·ω} = f_ω. This module
enumerates G (:func:`permutation_group`, :func:`permutation_orbit`), draws from it
(:func:`random_permutations`), applies its elements to MLP parameter lists of
:mod:`bnn_posteriors.models.nets` (:func:`permute_params`), and sums over it in closed form:
Σ_π ∏_j exp(L[j, π(j)]) is the permanent of exp L (:func:`log_permanent`), which is what
the symmetrised family of :mod:`.symmetrised` needs.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from bnn_posteriors.models import nets
from bnn_posteriors.util.validate import positive_int

MAX_GROUP = 40_320  # 8!: the largest group enumerated explicitly
MAX_EXACT_WIDTH = 16  # the largest layer whose I is computed exactly (log-permanent)


# --------------------------------------------------------------------------- the group


def group_size(widths) -> int:
    """|G| = ∏_l H_l! for an MLP with widths ``(d_in, H_1, ..., H_K, d_out)`` ([SYM] §3)."""
    widths = nets.check_widths(widths)
    return math.prod(math.factorial(h) for h in widths[1:-1])


def permutation_group(width: int, max_size: int = MAX_GROUP) -> np.ndarray:
    """All ``width!`` permutations of ``0..width-1``, identity first: (width!, width) int32."""
    width = positive_int("width", width)
    if math.factorial(width) > max_size:
        raise ValueError(
            f"{width}! = {math.factorial(width)} permutations exceed max_size={max_size}; "
            "use sampled permutations (infonce_bound) for wide layers"
        )
    return np.array(list(itertools.permutations(range(width))), dtype=np.int32)


def random_permutations(rng_key, width: int, num: int):
    """``num`` permutations of ``0..width-1`` drawn uniformly from G: (num, width)."""
    width, num = positive_int("width", width), positive_int("num", num)
    return jax.vmap(lambda k: jax.random.permutation(k, width))(jax.random.split(rng_key, num))


def permute_params(params: list[dict], perms, layer: int = 0) -> list[dict]:
    """g·ω for a batch of permutations g of hidden layer ``layer``: leaves gain a (G,) axis.

    Same convention as :func:`bnn_posteriors.models.actions.permute_hidden` (new unit j is old unit
    ``perm[j]``), vectorised with one gather per array; ``perms``: (G, H) integers.
    """
    n_hidden = len(params) - 1
    if not (isinstance(layer, int) and 0 <= layer < n_hidden):
        raise ValueError(f"layer must index a hidden layer in [0, {n_hidden - 1}], got {layer!r}")
    width = params[layer]["W"].shape[1]
    perms = jnp.asarray(perms)
    if perms.ndim != 2 or perms.shape[1] != width or not jnp.issubdtype(perms.dtype, jnp.integer):
        raise ValueError(f"perms must be integers of shape (G, {width}), got {perms.shape}")
    out = []
    for i, p in enumerate(params):
        new = {k: jnp.broadcast_to(v, (perms.shape[0], *jnp.shape(v))) for k, v in p.items()}
        if i == layer:
            new["W"] = jnp.moveaxis(jnp.asarray(p["W"])[:, perms], 1, 0)
            if "b" in p:
                new["b"] = jnp.asarray(p["b"])[perms]
        if i == layer + 1:
            new["W"] = jnp.asarray(p["W"])[perms, :]
        out.append(new)
    return out


def permutation_orbit(params: list[dict]) -> list[dict]:
    """All |G| = ∏_l H_l! copies g·ω, permuting every hidden layer: leaves gain a (|G|,) axis.

    Built layer by layer with :func:`permute_params` (hence the convention of
    :func:`bnn_posteriors.models.actions.permute_hidden`); the identity comes first. |G| ≤
    ``MAX_GROUP``.
    """
    n_hidden = len(params) - 1
    if n_hidden < 1:
        raise ValueError("params has no hidden layer (it needs at least two layers)")
    widths = [params[layer]["W"].shape[1] for layer in range(n_hidden)]
    if math.prod(math.factorial(h) for h in widths) > MAX_GROUP:
        raise ValueError(f"|G| for hidden widths {widths} exceeds max {MAX_GROUP}")
    out = params
    for layer, width in enumerate(widths):
        group = jnp.asarray(permutation_group(width))

        def apply(p, layer=layer, group=group):
            return permute_params(p, group, layer)

        for _ in range(layer):
            apply = jax.vmap(apply)
        out = apply(out)
    return jax.tree.map(lambda v: v.reshape(-1, *v.shape[n_hidden:]), out)


# --------------------------------------------------------------------------- sums over G


@functools.cache
def _subset_tables(width: int):
    """Index tables of the subset recursion of :func:`log_permanent`, one per subset size r.

    The column subsets S of size r are listed in a fixed order; for each, ``prev`` (C(H,r), r)
    holds the positions of the subsets S∖{k} in the list of size r − 1 and ``cols`` the k ∈ S.
    """
    masks = np.arange(2**width)
    sizes = np.array([bin(m).count("1") for m in masks])
    position = np.zeros(2**width, dtype=np.int32)
    tables = []
    for r in range(width + 1):
        subsets = masks[sizes == r]
        position[subsets] = np.arange(subsets.size)
        if r:
            cols = np.array([[k for k in range(width) if m >> k & 1] for m in subsets])
            tables.append((position[subsets[:, None] ^ (1 << cols)], cols.astype(np.int32)))
    return tables


def log_permanent(L) -> jax.Array:
    """log perm(exp L) = log Σ_π ∏_j exp(L[j, π(j)]) over all H! permutations, (H, H) → ().

    Exact, by the recursion over column subsets f(S) = log Σ_{k∈S} exp(f(S∖{k}) + L[|S|−1, k])
    in O(H·2^H) instead of O(H·H!) operations; H ≤ ``MAX_EXACT_WIDTH``.
    """
    L = jnp.asarray(L)
    width = L.shape[0]
    if L.ndim != 2 or L.shape[1] != width:
        raise ValueError(f"L must be a square matrix, got shape {L.shape}")
    if width > MAX_EXACT_WIDTH:
        raise ValueError(f"exact log-permanent for H ≤ {MAX_EXACT_WIDTH}, got H = {width}")
    f = jnp.zeros(1, dtype=L.dtype)
    for r, (prev, cols) in enumerate(_subset_tables(width)):
        f = logsumexp(f[prev] + L[r][cols], axis=1)
    return f[0]
