"""Permuted warm starts ([SAP] §4.1, Figs. 3 and 10): chains started from random
permutations of the hidden units of one trained network, all computing the same function,
so that any functional diversity of their ensemble comes from the sampler.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bnn_posteriors import nets
from bnn_posteriors.inference import ensembles, mile
from bnn_posteriors.validate import positive_int


def permute_all_hidden(params: list[dict], rng_key) -> list[dict]:
    """g·θ for a random permutation g of every hidden layer of an MLP (same function).

    ``rng_key`` is split into one key per hidden layer; layer l is permuted with
    :func:`bnn_posteriors.nets.permute_hidden` by ``jax.random.permutation`` of its key.
    """
    for layer, k in enumerate(jax.random.split(rng_key, len(params) - 1)):
        perm = jax.random.permutation(k, params[layer]["W"].shape[1])
        params = nets.permute_hidden(params, layer, perm)
    return params


def permuted_groups(rng_key, members, num_groups: int, group_size: int) -> list[list]:
    """Groups of permuted warm starts: group g holds member g of the stacked ensemble
    ``members`` and ``group_size - 1`` random permutations of it.

    Group g uses ``fold_in(rng_key, g)``, split into one key per permutation. Returns
    ``num_groups`` lists of ``group_size`` parameter lists.
    """
    positive_int("num_groups", num_groups)
    positive_int("group_size", group_size, 2)
    groups = []
    for g in range(num_groups):
        member, k_g = ensembles.member(members, g), jax.random.fold_in(rng_key, g)
        keys = jax.random.split(k_g, group_size - 1)
        groups.append([member] + [permute_all_hidden(member, k) for k in keys])
    return groups


def chain_starts(members, groups, extra=()) -> dict:
    """MCMC start positions of one run: the stacked ensemble ``members`` (chains 1..K), then
    the starts of every group of :func:`permuted_groups` in order, then the ``extra`` starts
    (e.g. a dead-ReLU start); sites as :func:`bnn_posteriors.inference.mile.warm_start_positions`.
    """
    stack = jax.tree.map(lambda *a: jnp.stack(a), *(p for group in groups for p in group), *extra)
    return {
        k: jnp.concatenate([a, b])
        for (k, a), b in zip(
            mile.warm_start_positions(members).items(),
            mile.warm_start_positions(stack).values(),
            strict=True,
        )
    }
