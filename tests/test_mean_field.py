"""Mean-field Gaussian families (:mod:`bnn_posteriors.inference.mean_field`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density

from bnn_posteriors import models, nets
from bnn_posteriors.inference import mean_field as mf

WIDTHS = (2, 3, 1)


def make_q(widths=WIDTHS, scale=0.5):
    return mf.init_mean_field(jax.random.key(0), widths, loc_scale=1.0, init_scale=scale)


def toy_data(n=12):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(n, WIDTHS[0]))
    return x, np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)


def test_init_mean_field_shapes_and_scales():
    q = mf.init_mean_field(jax.random.key(1), (3, 4, 2), init_scale=0.2)
    assert [layer["W"].shape for layer in q["loc"]] == [(3, 4), (4, 2)]
    assert all(float(jnp.max(jnp.abs(layer["b"]))) == 0.0 for layer in q["loc"])
    np.testing.assert_allclose(jnp.exp(q["log_scale"][1]["W"]), 0.2, rtol=1e-6)
    assert "b" not in mf.init_mean_field(jax.random.key(1), (3, 4, 2), bias=False)["loc"][0]
    with pytest.raises(ValueError, match="positive"):
        mf.init_mean_field(jax.random.key(1), (3, 4, 2), init_scale=-1.0)


def test_sample_mean_field_moments_and_validation():
    q = make_q(scale=0.3)
    draws = mf.sample_mean_field(jax.random.key(2), q, 20_000)
    np.testing.assert_allclose(draws[0]["W"].mean(0), q["loc"][0]["W"], atol=0.02)
    np.testing.assert_allclose(draws[0]["W"].std(0), 0.3, rtol=0.03)
    with pytest.raises(ValueError, match="num_samples"):
        mf.sample_mean_field(jax.random.key(2), q, 0)
    with pytest.raises(ValueError, match="'loc' and 'log_scale'"):
        mf.sample_mean_field(jax.random.key(2), {"loc": q["loc"]}, 3)


def test_predictive_outputs_are_the_nets_of_the_draws():
    q = make_q()
    x, _ = toy_data()
    f = mf.predictive_outputs(jax.random.key(3), q, x, 7, activation="tanh")
    draws = mf.sample_mean_field(jax.random.key(3), q, 7)
    one = jax.tree.map(lambda v: v[4], draws)
    assert f.shape == (7, x.shape[0], 1)
    np.testing.assert_allclose(f[4], nets.mlp_apply(one, x, "tanh"), rtol=1e-6)


def test_log_joint_matches_numpyro_model():
    x, y = toy_data()
    params = nets.mlp_init(jax.random.key(5), WIDTHS)
    ours = mf.log_joint(params, x, y, prior_scale=0.7, noise=0.3, activation="tanh")
    sites = {"W0": params[0]["W"], "b0": params[0]["b"], "W1": params[1]["W"], "b1": params[1]["b"]}
    theirs, _ = log_density(
        models.mlp_regression,
        (x, y),
        dict(widths=WIDTHS, activation="tanh", prior_scale=0.7, noise=0.3),
        sites,
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_categorical_likelihood():
    params = nets.mlp_init(jax.random.key(0), (2, 3, 4))
    x = np.random.default_rng(0).normal(size=(5, 2))
    y = np.array([0, 1, 2, 3, 0])
    logits = nets.mlp_apply(params, x)
    expected = jnp.sum(jax.nn.log_softmax(logits)[jnp.arange(5), y])
    got = mf.log_likelihood(params, x, jnp.asarray(y), likelihood="categorical")
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_kl_and_entropy_closed_forms():
    q = make_q()
    draws = mf.sample_mean_field(jax.random.key(0), q, 50_000)
    log_qs = jax.vmap(lambda w: mf.log_q(q, w))(draws)
    log_ps = jax.vmap(lambda w: mf.log_prior(w, 1.5))(draws)
    np.testing.assert_allclose(-log_qs.mean(), mf.entropy(q), rtol=2e-2)
    np.testing.assert_allclose((log_qs - log_ps).mean(), mf.kl_to_prior(q, 1.5), rtol=3e-2)


def test_unknown_likelihood():
    x, y = toy_data()
    with pytest.raises(ValueError, match="likelihood"):
        mf.log_likelihood(make_q()["loc"], x, y, likelihood="poisson")
