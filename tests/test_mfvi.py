"""Tests of the mean-field VI baseline of the benchmark (bnn_posteriors.inference.mfvi)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from bnn_posteriors.inference import mfvi


@pytest.fixture(scope="module")
def linear_fit():
    """Bayesian linear regression (widths (2, 1)): a conjugate, Gaussian posterior."""
    rng = np.random.default_rng(0)
    n, sigma, tau = 50, 0.5, 1.0
    x = rng.normal(size=(n, 2))
    y = x @ np.array([1.0, -0.5]) + 0.3 + sigma * rng.normal(size=n)
    fit = mfvi.fit_mfvi_regression(
        jax.random.PRNGKey(0), x, y, widths=(2, 1), noise=sigma, prior_scale=tau,
        num_steps=3000, learning_rate=0.01, num_particles=16,
    )  # fmt: skip
    design = np.c_[x, np.ones(n)]
    precision = design.T @ design / sigma**2 + np.eye(3) / tau**2
    mean = np.linalg.solve(precision, design.T @ y / sigma**2)
    return fit, x, mean, precision


def test_mfvi_recovers_the_conjugate_posterior(linear_fit):
    """The mean-field optimum of a Gaussian posterior: its mean and sd_j = 1/√Λ_jj."""
    fit, _, mean, precision = linear_fit
    got_mean = np.r_[np.ravel(fit["loc"]["W0"]), np.ravel(fit["loc"]["b0"])]
    got_sd = np.r_[np.ravel(fit["scale"]["W0"]), np.ravel(fit["scale"]["b0"])]
    np.testing.assert_allclose(got_mean, mean, atol=0.03)
    np.testing.assert_allclose(got_sd, 1 / np.sqrt(np.diag(precision)), rtol=0.15)


def test_predictive_adds_the_noise(linear_fit):
    fit, x, mean, precision = linear_fit
    m, v = mfvi.mfvi_predictive(jax.random.PRNGKey(1), fit, x[:4], num_samples=2000)
    design = np.c_[x[:4], np.ones(4)]
    np.testing.assert_allclose(m, design @ mean, atol=0.05)
    # mean-field variance of the linear output + σ²
    sd = 1 / np.sqrt(np.diag(precision))
    expected = (design**2) @ sd**2 + 0.25
    np.testing.assert_allclose(v, expected, rtol=0.1)
    f = mfvi.mfvi_output_samples(jax.random.PRNGKey(2), fit, x[:4], num_samples=7)
    assert f.shape == (7, 4)
    _, v2 = mfvi.mfvi_predictive(jax.random.PRNGKey(1), fit, x[:4], num_samples=2000, noise=1.0)
    np.testing.assert_allclose(v2 - v, 0.75, atol=1e-5)


def test_glorot_means_shapes():
    values = mfvi.glorot_means(jax.random.PRNGKey(0), (3, 4, 1))
    assert values["W0"].shape == (3, 4) and values["b1"].shape == (1,)
    assert float(np.abs(values["b0"]).max()) == 0.0


def test_mfvi_rejects_bad_input():
    x, y = np.zeros((5, 2)), np.zeros(5)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="one output"):
        mfvi.fit_mfvi_regression(key, x, y, widths=(2, 2))
    with pytest.raises(ValueError, match="columns"):
        mfvi.fit_mfvi_regression(key, x, y, widths=(3, 1))
    with pytest.raises(ValueError, match="x has 5 rows but y has 3"):
        mfvi.fit_mfvi_regression(key, x, y[:3], widths=(2, 1))
    with pytest.raises(ValueError, match="noise"):
        mfvi.fit_mfvi_regression(key, x, y, widths=(2, 1), noise=-1.0)
    with pytest.raises(ValueError, match="num_steps"):
        mfvi.fit_mfvi_regression(key, x, y, widths=(2, 1), num_steps=0)
    with pytest.raises(ValueError, match="finite"):
        mfvi.fit_mfvi_regression(key, x, np.full(5, math.nan), widths=(2, 1))
    with pytest.raises(TypeError, match="fit must be"):
        mfvi.mfvi_output_samples(key, {"loc": {}}, x)
