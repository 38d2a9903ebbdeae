"""Tests of bnn_posteriors.studies.ch07_sampling_in_practice.permuted_starts: permuted warm
starts compute one function."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions
from bnn_posteriors.studies.ch07_sampling_in_practice import permuted_starts

KEY = jax.random.PRNGKey(0)
X = jax.random.normal(jax.random.PRNGKey(1), (7, 3))


@pytest.mark.slow
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
    np.testing.assert_array_equal(
        permuted[0]["b"][:], actions.permute_hidden(params, 0, perm)[0]["b"]
    )


@pytest.mark.slow
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


def tiny_split():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(36, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
    return SimpleNamespace(
        x_train=x[:20], y_train=y[:20], x_val=x[20:28], y_val=y[20:28], x_test=x[28:], y_test=y[28:]
    )


def test_ensemble_settings_reads_the_de_keys(make_cfg):
    cfg = make_cfg(
        de_learning_rate=0.1, de_weight_decay=0.2, de_max_epochs=3, de_batch_size=8, de_patience=2
    )
    assert permuted_starts.ensemble_settings(cfg) == dict(
        learning_rate=0.1, weight_decay=0.2, max_epochs=3, batch_size=8, patience=2
    )


@pytest.mark.slow
def test_permuted_start_run_orders_regular_permuted_and_dead_chains():
    split = tiny_split()
    run = permuted_starts.permuted_start_run(
        jax.random.split(KEY, 3),
        split,
        hidden=(4,),
        n_chains=2,
        num_groups=2,
        ensemble=dict(max_epochs=3, batch_size=8),
        tuning_steps=40,
        sampling_steps=10,
        thinning=5,
    )
    assert run["mean"].shape == (2 + 2 * 2 + 1, 2, 8) and run["sigma"].shape == (7, 2)
    np.testing.assert_array_equal(run["regular"], [0, 1])
    np.testing.assert_array_equal(run["groups"][1], [4, 5])
    assert run["dead"] == 6 and run["f_gap"] < 1e-5 and run["seconds"] > 0
    dead_start = {k: v[6] for k, v in run["starts"].items()}
    assert diagnostics.active_units(dead_start, split.x_train) == 0


def fake_run(mean, sigma, n_chains, groups):
    return {"mean": mean, "sigma": sigma, "regular": np.arange(n_chains), "groups": groups}


@pytest.mark.slow
def test_ensemble_lppds_pool_the_chains_of_each_group():
    rng = np.random.default_rng(1)
    y = rng.normal(size=5)
    mean, sigma = rng.normal(size=(4, 3, 5)), np.exp(rng.normal(size=(4, 3)))
    out = permuted_starts.ensemble_lppds(y, fake_run(mean, sigma, 2, [np.array([2, 3])]))
    single = [float(metrics.lppd(y, mean[k], sigma[k][:, None])) for k in range(4)]
    np.testing.assert_allclose(out["single"], single)
    assert out["regular"] == pytest.approx(float(metrics.lppd(y, mean[:2], sigma[:2][..., None])))
    assert out["permuted"][0] == pytest.approx(
        float(metrics.lppd(y, mean[2:], sigma[2:][..., None]))
    )
    assert out["best_permuted"][0] == max(single[2:])


def test_dead_start_summary_counts_active_units_of_the_dead_chain():
    x = np.array([[1.0], [2.0]])
    live = {"W0": np.ones((1, 3)), "b0": np.zeros(3)}  # 3 active units
    dead = {"W0": -np.ones((1, 3)), "b0": np.zeros(3)}  # none
    stack = {k: np.stack([live[k], dead[k]]) for k in live}
    samples = {k: np.stack([np.stack([live[k], dead[k]])] * 2) for k in live}  # (chains, samples)
    run = {"starts": stack, "bde": {"samples": samples}, "dead": 1, "regular": np.array([0])}
    out = permuted_starts.dead_start_summary(run, np.array([0.5, -1.0]), x)
    assert out == {
        "dead": -1.0,
        "warm": 0.5,
        "active_start": 0,
        "active_first": 3,
        "active_last": 0,
    }
