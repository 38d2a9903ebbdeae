"""Tests of chapter 4's MNIST temperature sweep and cross-fitting ([TEMP]) on a tiny problem."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.inference import tempering
from bnn_posteriors.studies.ch04_elbo_tempering import mnist

KEY = jax.random.PRNGKey(0)
FIT = dict(width=4, prior_scale=0.5, batch=8, num_steps=10, learning_rate=0.01, num_samples=4)


def tiny_images(n=30, d=5, seed=0):
    """``n`` random 'images' with ``d`` pixels (+ the constant) and labels 0..9."""
    rng = np.random.default_rng(seed)
    x = tempering.augment(jnp.asarray(rng.normal(size=(n, d)), jnp.float32))
    return x, rng.integers(0, 10, n)


def test_mnist_inputs_append_the_constant(monkeypatch):
    rng = np.random.default_rng(0)
    subset = (rng.random((8, 4)), np.arange(8), rng.random((2, 4)), np.arange(2))
    monkeypatch.setattr(mnist.data, "load_mnist_subset", lambda seed, n_test: subset)
    x_tr, y_tr, x_te, y_te = mnist.mnist_inputs(0, 2)
    assert x_tr.shape == (8, 5) and x_te.shape == (2, 5) and x_tr.dtype == jnp.float32
    np.testing.assert_array_equal(x_te[:, -1], 1.0)
    np.testing.assert_array_equal(y_tr, np.arange(8))


def test_n_weights_counts_both_layers():
    assert mnist.n_weights(785, 100) == 785 * 100 + 100 * 10
    assert mnist.n_weights(3, 2, n_out=4) == 14
    assert mnist.n_weights(785, 100, depth=3) == 785 * 100 + 2 * 100 * 100 + 100 * 10


def test_folds_are_disjoint_blocks_from_the_end():
    test_rows = mnist.folds(10, 3, 3)
    np.testing.assert_array_equal(test_rows[0], [7, 8, 9])
    np.testing.assert_array_equal(test_rows[2], [1, 2, 3])
    with pytest.raises(ValueError, match="folds"):
        mnist.folds(10, 3, 4)


def test_paired_differences_by_hand():
    a = np.array([[0.9, 0.1], [0.4, 0.6], [0.5, 0.5]])
    b = np.array([[0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    d_acc, d_nll = mnist.paired_differences(a, b, np.array([0, 1, 0]))
    np.testing.assert_array_equal(d_acc, [1.0, 0.0, 0.0])
    np.testing.assert_allclose(d_nll, np.log([0.9 / 0.2, 0.6 / 0.7, 0.5 / 0.6]))
    with pytest.raises(ValueError, match="labels"):
        mnist.paired_differences(a, b[:2], np.array([0, 1, 0]))


def test_fold_means_average_blocks():
    assert mnist.fold_means(np.arange(6.0), 2) == [0.5, 2.5, 4.5]


@pytest.mark.slow
def test_predictive_probs_are_float64_and_normalised():
    x, _ = tiny_images(n=6)
    q = tempering.init_params(KEY, x.shape[1], 4, 10, prior_scale=0.5, init_scale=0.1)
    probs = mnist.predictive_probs(KEY, q, x, num_samples=3)
    assert probs.dtype == np.float64 and probs.shape == (6, 10)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-12)


@pytest.mark.slow
def test_temperature_sweep_and_cross_fit_pool_every_image():
    x, y = tiny_images(n=30)
    x_tr, y_tr, x_te, y_te = x[:20], y[:20], x[20:], y[20:]
    etas = np.array([0.1, 1.0])
    table, init = mnist.temperature_sweep(
        KEY, KEY, x_tr, y_tr, x_te, y_te, etas, init_scale=0.1, ece_bins=5, **FIT
    )
    assert [r["eta"] for r in table] == [0.1, 1.0] and table[0]["probs"].shape == (10, 10)
    assert all(0.0 <= r["accuracy"] <= 1.0 and r["nll"] > 0 for r in table)
    assert init.loc[0]["W"].shape == (6, 4)
    first = {eta: r["probs"] for eta, r in zip((0.1, 1.0), table, strict=True)}
    pooled, labels = mnist.cross_fit(
        KEY, KEY, x, y, init, (0.1, 1.0), first, n_test=10, num_folds=3, **FIT
    )
    assert pooled[0.1].shape == (30, 10)
    np.testing.assert_array_equal(pooled[1.0][:10], table[1]["probs"])  # fold 0: the sweep's split
    np.testing.assert_array_equal(labels, np.concatenate([y[20:], y[10:20], y[:10]]))
    np.testing.assert_allclose(pooled[0.1].sum(1), 1.0, rtol=1e-12)


def test_balanced_against_one_pairs_the_images_of_each_fold():
    labels = np.array([0, 1, 0, 1])
    a = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])  # right, right, right, wrong
    b = np.array([[0.4, 0.6], [0.3, 0.7], [0.6, 0.4], [0.7, 0.3]])  # wrong, right, right, wrong
    out = mnist.balanced_against_one(a, b, labels, n_test=2, seed=0, num_resamples=500)
    assert out["d_acc"] == pytest.approx(0.25)
    assert out["d_nll"] == pytest.approx((np.log(0.9 / 0.4) + np.log(0.8 / 0.7)) / 4)
    assert out["per_fold"] == [pytest.approx((0.5, out["d_nll"] * 2)), (0.0, 0.0)]
    assert out["ci_acc"][0] <= out["d_acc"] <= out["ci_acc"][1]
    # each interval is a paired bootstrap from the same seed: the same resampled images
    same = diagnostics.paired_interval([1.0, 0, 0, 0], method="percentile", n_resamples=500, rng=0)
    assert out["ci_acc"] == (float(same[1]), float(same[2]))


@pytest.mark.slow
def test_deeper_against_one_compares_the_two_temperatures_on_every_image():
    x, y = tiny_images(n=30)
    out = mnist.deeper_against_one(
        KEY,
        KEY,
        x[:20],
        y[:20],
        x[20:],
        y[20:],
        depth=2,
        init_scale=0.1,
        ece_bins=5,
        num_folds=3,
        seed=0,
        num_resamples=200,
        **FIT,
    )
    weights = mnist.n_weights(x.shape[1], FIT["width"], depth=2)
    assert out["n_weights"] == weights and out["eta_bal"] == pytest.approx(20 / weights)
    assert [r["eta"] for r in out["sweep"]] == [out["eta_bal"], 1.0] and out["depth"] == 2
    assert len(out["per_fold"]) == 3 and out["ci_acc"][0] <= out["d_acc"] <= out["ci_acc"][1]
