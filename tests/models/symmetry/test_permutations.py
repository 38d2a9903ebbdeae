"""The permutation group of an MLP's hidden units
(:mod:`bnn_posteriors.models.symmetry.permutations`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions
from bnn_posteriors.models.symmetry import permutations as perm


def test_group_enumeration():
    group = perm.permutation_group(4)
    assert group.shape == (24, 4)
    np.testing.assert_array_equal(group[0], np.arange(4))
    assert len({tuple(p) for p in group}) == 24
    assert perm.group_size((3, 4, 5, 2)) == math.factorial(4) * math.factorial(5)
    with pytest.raises(ValueError, match="exceed"):
        perm.permutation_group(9)


def test_random_permutations_are_permutations():
    draws = np.asarray(perm.random_permutations(jax.random.key(0), 5, 50))
    assert draws.shape == (50, 5)
    assert all(sorted(p) == list(range(5)) for p in draws)
    assert len({tuple(p) for p in draws}) > 10


@pytest.mark.slow
def test_permute_params_matches_nets():
    params = nets.mlp_init(jax.random.key(3), (2, 4, 3))
    perms = perm.random_permutations(jax.random.key(4), 4, 5)
    batched = perm.permute_params(params, perms)
    for i, p in enumerate(np.asarray(perms)):
        expected = actions.permute_hidden(params, 0, p)
        for got, want in zip(batched, expected, strict=True):
            for k in want:
                np.testing.assert_allclose(got[k][i], want[k])


@pytest.mark.slow
def test_permutation_orbit_matches_nets():
    params = nets.mlp_init(jax.random.key(2), (2, 3, 2, 1))
    orbit = perm.permutation_orbit(params)
    assert orbit[0]["W"].shape == (12, 2, 3)
    copies = [
        actions.permute_hidden(actions.permute_hidden(params, 0, p0), 1, p1)
        for p0 in perm.permutation_group(3)
        for p1 in perm.permutation_group(2)
    ]
    for i, want in enumerate(copies):
        for got_layer, want_layer in zip(orbit, want, strict=True):
            for k in want_layer:
                np.testing.assert_allclose(got_layer[k][i], want_layer[k])


@pytest.mark.slow
def test_log_permanent_matches_enumeration():
    L = 2.0 * jax.random.normal(jax.random.key(0), (5, 5))
    group = perm.permutation_group(5)
    brute = jax.scipy.special.logsumexp(jnp.sum(L[jnp.arange(5)[None], group], axis=1))
    np.testing.assert_allclose(perm.log_permanent(L), brute, rtol=1e-6)


def test_input_validation():
    params = nets.mlp_init(jax.random.key(0), (2, 3, 1))
    with pytest.raises(ValueError, match="width"):
        perm.permutation_group(0)
    with pytest.raises(ValueError, match="perms"):
        perm.permute_params(params, jnp.zeros((2, 5), dtype=jnp.int32))
    with pytest.raises(ValueError, match="hidden layer"):
        perm.permute_params(params, jnp.zeros((2, 3), dtype=jnp.int32), layer=1)
    with pytest.raises(ValueError, match="no hidden layer"):
        perm.permutation_orbit(params[:1])
    with pytest.raises(ValueError, match="square"):
        perm.log_permanent(jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match="H ≤"):
        perm.log_permanent(jnp.zeros((17, 17)))
