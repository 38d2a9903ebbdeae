"""Tests of bnn_posteriors.studies.many_chains ([SAP] §4.3, Figs. 1, 5, 7; C7.3, C7.4)."""

from types import SimpleNamespace

import jax
import numpy as np
import pytest

from bnn_posteriors import diagnostics, metrics
from bnn_posteriors.studies import many_chains


def test_many_chain_run_samples_the_two_output_network():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(36, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
    split = SimpleNamespace(x_train=x[:20], y_train=y[:20], x_val=x[20:28], y_val=y[20:28],
                            x_test=x[28:], y_test=y[28:])  # fmt: skip
    out = many_chains.many_chain_run(
        jax.random.split(jax.random.PRNGKey(0)), split, hidden=(3, 3), n_chains=3,
        ensemble=dict(max_epochs=3, batch_size=8), tuning_steps=40, sampling_steps=20,
        thinning=5,
    )  # fmt: skip
    assert out["widths"] == (2, 3, 3, 2) and "log_sigma" not in out["many"]["samples"]
    assert out["mean"].shape == out["sigma"].shape == (3, 4, 8)
    assert np.all(out["sigma"] > 0) and np.isfinite(out["ess"]) and out["seconds"] > 0


def test_chain_saturation_reads_the_cumulative_lppd():
    rng = np.random.default_rng(1)
    y, mean, sigma = rng.normal(size=4), rng.normal(size=(12, 3, 4)), np.ones((12, 3))
    out = many_chains.chain_saturation(np.random.default_rng(5), y, mean, sigma, n_orderings=7)
    cum = metrics.cumulative_lppd(np.random.default_rng(5), y, mean, sigma, n_orderings=7)
    np.testing.assert_array_equal(out["cum"], cum)
    assert out["lppd_10"] == pytest.approx(cum.mean(axis=0)[9])
    assert out["gain_10_max"] == pytest.approx(cum.mean(axis=0)[-1] - out["lppd_10"])


def test_kernel_marginals_gap_is_positive_when_inner_kernels_follow_the_prior():
    rng = np.random.default_rng(2)
    shape = (40, 50)  # chains, samples
    samples = {
        "W0": 0.5 + rng.normal(size=(*shape, 2, 2)),  # shifted: far from N(0, 1)
        "W1": rng.normal(size=(*shape, 2, 2)),  # the prior
        "W2": 0.5 + rng.normal(size=(*shape, 2, 1)),
        **{f"b{i}": rng.normal(size=(*shape, 2)) for i in range(3)},
    }
    out = many_chains.kernel_marginals(np.random.default_rng(3), samples, num_resamples=100)
    assert out["ks"][1] < 0.02 < out["ks"][0]
    assert out["ks_bias"][0] == pytest.approx(metrics.ks_to_normal(samples["b0"]))
    assert out["gap"] == pytest.approx(out["outer"] - out["inner"])
    assert 0 < out["low"] <= out["gap"] <= out["high"]
    assert abs(out["ks"][2] - metrics.ks_to_normal(samples["W2"])) <= 1 / diagnostics.KS_GRID
    samples["W0"], samples["W2"] = samples["W1"], samples["W1"][..., :1]  # all the prior
    null = many_chains.kernel_marginals(np.random.default_rng(3), samples, num_resamples=100)
    assert null["low"] < 0
