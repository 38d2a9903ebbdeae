"""Tests of mean-field VI of an MLP model (inference.vi), as the benchmark runs it."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import mean_field, vi
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models


def _fit(x, y, **change):
    model_kwargs = dict(x=x, y=y, widths=(2, 1), noise_scale=0.5, prior_scale=1.0)
    settings = dict(num_steps=3000, learning_rate=0.01, schedule="constant", num_particles=16)
    return vi.fit_mfvi(
        jax.random.PRNGKey(0), models.mlp_regression, model_kwargs, **{**settings, **change}
    )[0]


@pytest.fixture(scope="module")
def linear_fit():
    """Bayesian linear regression (widths (2, 1)): a conjugate, Gaussian posterior."""
    rng = np.random.default_rng(0)
    n, sigma, tau = 50, 0.5, 1.0
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (x @ np.array([1.0, -0.5]) + 0.3 + sigma * rng.normal(size=n)).astype(np.float32)
    fit = _fit(
        x, y, init_loc=nets.sites(nets.mlp_init(jax.random.PRNGKey(1), (2, 1), scheme="glorot"))
    )
    design = np.c_[x, np.ones(n)]
    precision = design.T @ design / sigma**2 + np.eye(3) / tau**2
    mean = np.linalg.solve(precision, design.T @ y / sigma**2)
    return fit, x, mean, precision


@pytest.mark.slow
def test_mfvi_recovers_the_conjugate_posterior(linear_fit):
    """The mean-field optimum of a Gaussian posterior: its mean and sd_j = 1/√Λ_jj."""
    fit, _, mean, precision = linear_fit
    got_mean = np.r_[np.ravel(fit.loc["W0"]), np.ravel(fit.loc["b0"])]
    got_sd = np.r_[np.ravel(fit.scale["W0"]), np.ravel(fit.scale["b0"])]
    np.testing.assert_allclose(got_mean, mean, atol=0.03)
    np.testing.assert_allclose(got_sd, 1 / np.sqrt(np.diag(precision)), rtol=0.15)


def test_outputs_have_the_mean_field_moments(linear_fit):
    fit, x, mean, precision = linear_fit
    f = mean_field.outputs(jax.random.PRNGKey(1), fit, x[:4], num_samples=4000)[..., 0]
    assert f.shape == (4000, 4)
    design = np.c_[x[:4], np.ones(4)]
    np.testing.assert_allclose(f.mean(0), design @ mean, atol=0.05)
    sd = 1 / np.sqrt(np.diag(precision))  # mean-field variance of the linear output
    np.testing.assert_allclose(f.var(0), (design**2) @ sd**2, rtol=0.15)


def test_glorot_sites_shapes_and_scale():
    values = nets.sites(nets.mlp_init(jax.random.PRNGKey(0), (300, 200, 1), scheme="glorot"))
    assert values["W0"].shape == (300, 200) and values["b1"].shape == (1,)
    assert float(jnp.abs(values["b0"]).max()) == 0.0
    np.testing.assert_allclose(float(jnp.std(values["W0"])), math.sqrt(2 / 500), rtol=0.02)


@pytest.mark.slow
def test_tempered_fit_moves_toward_the_prior():
    """η = 100 weighs the KL heavily: the fitted sds come out closer to the prior's 1."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 2)).astype(np.float32)
    y = (x @ np.array([1.0, -0.5])).astype(np.float32)
    plain = _fit(x, y, num_steps=500)
    tempered = _fit(x, y, num_steps=500, temperature=100.0)
    assert float(tempered.scale["W0"].mean()) > 2 * float(plain.scale["W0"].mean())


def test_scale_transform_exp_is_positive_and_named():
    guide = vi.mean_field_guide(models.mlp_regression, scale_transform="exp")
    assert guide.scale_constraint is not vi.mean_field_guide(models.mlp_regression).scale_constraint
    with pytest.raises(ValueError, match="scale_transform must be one of"):
        vi.mean_field_guide(models.mlp_regression, scale_transform="square")


def test_mfvi_rejects_bad_input():
    x, y = np.zeros((5, 2), np.float32), np.zeros(5, np.float32)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="one output"):
        vi.fit_mfvi(
            key, models.mlp_regression, dict(x=x, y=y, widths=(2, 2), noise_scale=0.1), num_steps=2
        )
    with pytest.raises(ValueError, match=r"fit_mfvi: x has 2 columns \(features\), expected 3"):
        vi.fit_mfvi(key, models.mlp_regression, dict(x=x, y=y, widths=(3, 1), noise_scale=0.1))
    with pytest.raises(ValueError, match="x has 5 rows but y has 3"):
        _fit(x, y[:3])
    with pytest.raises(ValueError, match="noise_scale"):
        vi.fit_mfvi(
            key, models.mlp_regression, dict(x=x, y=y, widths=(2, 1), noise_scale=-1.0), num_steps=2
        )
    with pytest.raises(ValueError, match="num_steps"):
        _fit(x, y, num_steps=0)
    with pytest.raises(ValueError, match="schedule must be one of"):
        _fit(x, y, schedule="linear")
    with pytest.raises(ValueError, match="temperature must be a positive"):
        _fit(x, y, temperature=-1.0)
    with pytest.raises(ValueError, match="finite"):
        _fit(x, np.full(5, math.nan))
    with pytest.raises(ValueError, match="sites of an MLP"):
        mean_field.outputs(key, mean_field.MeanField({}, {}), x)
