"""Tests of bnn_posteriors.studies.ch07_sampling_in_practice.functional_diversity ([SAP] §4.2,
App. D.5; C7.2)."""

import jax
import numpy as np
import pytest

from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.studies.ch07_sampling_in_practice import functional_diversity as fd

KEY = jax.random.PRNGKey(0)


def chains(rng, n_chains=4, n_samples=6, n=30, spread_within=0.3, spread_between=1.0):
    """Predictive means whose chains sit around their own centres, and their noise sds."""
    centres = spread_between * rng.normal(size=(n_chains, 1, n))
    mean = centres + spread_within * rng.normal(size=(n_chains, n_samples, n))
    return mean, np.full((n_chains, n_samples), 0.5)


def test_within_chain_z_is_the_z_test_of_each_chain():
    mean, sigma = chains(np.random.default_rng(0))
    out = fd.within_chain_z(mean, sigma)
    z0 = metrics.w2_z_test(mean[0], sigma[0])
    np.testing.assert_array_equal(out["z_first"], z0)
    np.testing.assert_allclose(out["w2_first"], metrics.w2_squared_gaussian(mean[0], sigma[0]))
    off = ~np.eye(6, dtype=bool)
    assert out["frac_by_chain"][0] == pytest.approx(np.mean(np.abs(z0[off]) > 1.96))
    assert out["frac_significant"] == pytest.approx(out["frac_by_chain"].mean())
    # eq. (22) as printed divides by n once more: fewer pairs are significant
    assert out["frac_significant_paper"] < out["frac_significant"]


def test_identical_samples_give_no_significant_pair():
    mean = np.repeat(np.random.default_rng(1).normal(size=(3, 1, 20)), 4, axis=1)
    out = fd.within_chain_z(mean, np.ones((3, 4)))
    assert out["frac_significant"] == 0.0


def test_w2_ratio_is_the_within_chain_share():
    mean, sigma = chains(np.random.default_rng(2))
    out = fd.w2_ratio(KEY, mean, sigma, num_resamples=200)
    _, within, between, low, high = diagnostics.w2_ratio_bootstrap(
        KEY, mean, sigma, num_resamples=200
    )
    assert (out["low"], out["high"]) == (low, high)
    np.testing.assert_array_equal(out["within"], within)
    assert out["ratio"] == pytest.approx(metrics.within_between_ratio(within, between)[0])
    # v_in = 0.09, v_btw = 1: rho ~ 0.09 / 1.09
    assert 0.03 < out["ratio"] < 0.2 and out["low"] <= out["ratio"] <= out["high"]


def test_controls_separate_copies_from_mixed_chains():
    mean, sigma = chains(np.random.default_rng(3), spread_within=0.5, spread_between=0.5)
    out = fd.diversity_controls(
        np.random.default_rng(4), KEY, mean, sigma, noise=0.01, num_resamples=200
    )
    assert out["copies_high"] < 0.01  # near copies: nothing within chains
    assert out["mixed_low"] < 1.0 < out["mixed_high"] + 0.1  # shuffled: rho near 1
    assert 0.0 <= out["copies_frac"] <= 1.0
