"""Tests of bnn_posteriors.studies.permuted_starts: permuted warm starts compute one function."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors import nets
from bnn_posteriors.studies import permuted_starts

KEY = jax.random.PRNGKey(0)
X = jax.random.normal(jax.random.PRNGKey(1), (7, 3))


def test_permute_all_hidden_keeps_the_function_and_moves_every_hidden_layer():
    params = nets.mlp_init(KEY, (3, 5, 4, 1))
    permuted = permuted_starts.permute_all_hidden(params, jax.random.PRNGKey(2))
    np.testing.assert_allclose(nets.mlp_apply(permuted, X), nets.mlp_apply(params, X), atol=1e-5)
    for layer in (0, 1):  # each hidden layer's units are a permutation of the original's
        a, b = np.asarray(params[layer]["b"]), np.asarray(permuted[layer]["b"])
        np.testing.assert_array_equal(np.sort(a), np.sort(b))
    # one key per hidden layer, in order: the first layer uses the first key
    k0 = jax.random.split(jax.random.PRNGKey(2), 2)[0]
    perm = jax.random.permutation(k0, 5)
    np.testing.assert_array_equal(permuted[0]["b"][:], nets.permute_hidden(params, 0, perm)[0]["b"])


def test_permuted_groups_structure():
    members = [nets.mlp_init(k, (3, 4, 1)) for k in jax.random.split(KEY, 3)]
    stacked = jax.tree.map(lambda *a: jnp.stack(a), *members)
    groups = permuted_starts.permuted_groups(KEY, stacked, num_groups=2, group_size=4)
    assert len(groups) == 2 and all(len(g) == 4 for g in groups)
    for g, group in enumerate(groups):
        np.testing.assert_array_equal(group[0][0]["W"], stacked[0]["W"][g])  # member g first
        f = nets.mlp_apply(group[0], X)
        for p in group[1:]:
            np.testing.assert_allclose(nets.mlp_apply(p, X), f, atol=1e-5)
    again = permuted_starts.permuted_groups(KEY, stacked, num_groups=2, group_size=4)
    np.testing.assert_array_equal(again[1][2][0]["W"], groups[1][2][0]["W"])
    with pytest.raises(ValueError, match="group_size"):
        permuted_starts.permuted_groups(KEY, stacked, num_groups=1, group_size=1)


def test_chain_starts_order_regular_permuted_extra():
    members = [nets.mlp_init(k, (3, 4, 1)) for k in jax.random.split(KEY, 2)]
    stacked = jax.tree.map(lambda *a: jnp.stack(a), *members)
    groups = permuted_starts.permuted_groups(KEY, stacked, num_groups=2, group_size=2)
    extra = nets.mlp_init(jax.random.PRNGKey(9), (3, 4, 1))
    starts = permuted_starts.chain_starts(stacked, groups, (extra,))
    assert set(starts) == {"W0", "b0", "W1", "b1", "log_sigma"}
    assert starts["W0"].shape == (2 + 4 + 1, 3, 4) and starts["log_sigma"].shape == (7,)
    np.testing.assert_array_equal(starts["W0"][:2], stacked[0]["W"])
    np.testing.assert_array_equal(starts["W0"][2], groups[0][0][0]["W"])
    np.testing.assert_array_equal(starts["W0"][5], groups[1][1][0]["W"])
    np.testing.assert_array_equal(starts["b1"][6], extra[1]["b"])
