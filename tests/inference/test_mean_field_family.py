"""The mean-field q of an MLP by layer (:mod:`bnn_posteriors.inference.mean_field_family`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.inference import mean_field_family as mf
from bnn_posteriors.inference import vi
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models

WIDTHS = (2, 3, 1)


def make_q(widths=WIDTHS, scale=0.5):
    return mf.init_mean_field(jax.random.key(0), widths, loc_scale=1.0, init_scale=scale)


def toy_data(n=12):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(n, WIDTHS[0])).astype(np.float32)
    return x, (np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)).astype(np.float32)


def test_init_mean_field_shapes_and_scales():
    q = mf.init_mean_field(jax.random.key(1), (3, 4, 2), init_scale=0.2)
    assert [layer["W"].shape for layer in q["loc"]] == [(3, 4), (4, 2)]
    assert all(float(jnp.max(jnp.abs(layer["b"]))) == 0.0 for layer in q["loc"])
    np.testing.assert_allclose(jnp.exp(q["log_scale"][1]["W"]), 0.2, rtol=1e-6)
    assert "b" not in mf.init_mean_field(jax.random.key(1), (3, 4, 2), bias=False)["loc"][0]
    with pytest.raises(ValueError, match="positive"):
        mf.init_mean_field(jax.random.key(1), (3, 4, 2), init_scale=-1.0)


def test_guide_params_round_trip_and_names():
    q = make_q(scale=0.3)
    params = mf.to_guide_params(q)
    assert set(params) == {
        f"{s}_auto_{k}" for s in ("W0", "b0", "W1", "b1") for k in ("loc", "scale")
    }
    np.testing.assert_allclose(params["W1_auto_scale"], 0.3, rtol=1e-6)
    back = mf.from_guide_params({**params, "other": 1.0})
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(q), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="W0_auto_loc"):
        mf.from_guide_params({"x": 1.0})


def test_from_guide_params_reads_a_numpyro_fit():
    x, y = toy_data()
    kwargs = models.MLP(WIDTHS, noise_scale=0.3).kwargs(x, y)
    fit = vi.fit_mfvi(jax.random.key(0), models.mlp_regression, kwargs, num_steps=5,
                      num_particles=1, scale_transform="exp")  # fmt: skip
    q = mf.from_guide_params(fit["params"])
    np.testing.assert_allclose(q["loc"][0]["W"], fit["loc"]["W0"], rtol=1e-6)
    np.testing.assert_allclose(jnp.exp(q["log_scale"][1]["b"]), fit["scale"]["b1"], rtol=1e-5)


def test_sample_mean_field_moments_and_validation():
    q = make_q(scale=0.3)
    draws = mf.sample_mean_field(jax.random.key(2), q, 20_000)
    np.testing.assert_allclose(draws[0]["W"].mean(0), q["loc"][0]["W"], atol=0.02)
    np.testing.assert_allclose(draws[0]["W"].std(0), 0.3, rtol=0.03)
    with pytest.raises(ValueError, match="num_samples"):
        mf.sample_mean_field(jax.random.key(2), q, 0)
    with pytest.raises(ValueError, match="'loc' and 'log_scale'"):
        mf.sample_mean_field(jax.random.key(2), {"loc": q["loc"]}, 3)


def test_log_q_is_a_sum_of_normal_log_densities():
    q = make_q(scale=0.4)
    w = jax.tree.map(lambda v: v[0], mf.sample_mean_field(jax.random.key(3), q, 1))
    want = sum(
        stats.norm.logpdf(np.asarray(v), np.asarray(m), 0.4).sum()
        for v, m in zip(jax.tree.leaves(w), jax.tree.leaves(q["loc"]), strict=True)
    )
    np.testing.assert_allclose(mf.log_q(q, w), want, rtol=1e-5)


def test_predictive_outputs_are_the_nets_of_the_draws():
    q = make_q()
    x, _ = toy_data()
    f = mf.predictive_outputs(jax.random.key(3), q, x, 7, activation="tanh")
    draws = mf.sample_mean_field(jax.random.key(3), q, 7)
    one = jax.tree.map(lambda v: v[4], draws)
    assert f.shape == (7, x.shape[0], 1)
    np.testing.assert_allclose(f[4], nets.mlp_apply(one, x, "tanh"), rtol=1e-6)


def test_log_joint_gaussian_closed_form():
    x, y = toy_data()
    params = nets.mlp_init(jax.random.key(5), WIDTHS)
    got = mf.log_joint(params, x, y, prior_scale=0.7, noise_scale=0.3, activation="tanh")
    f = np.asarray(nets.mlp_apply(params, x, "tanh"))[:, 0]
    prior = sum(stats.norm.logpdf(np.asarray(v), 0, 0.7).sum() for v in jax.tree.leaves(params))
    np.testing.assert_allclose(got, stats.norm.logpdf(y, f, 0.3).sum() + prior, rtol=1e-5)


def test_log_joint_categorical_and_deeper_nets():
    params = nets.mlp_init(jax.random.key(0), (2, 3, 2, 4))
    x = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    y = np.array([0, 1, 2, 3, 0])
    logits = nets.mlp_apply(params, x)
    lik = jnp.sum(jax.nn.log_softmax(logits)[jnp.arange(5), y])
    prior = sum(stats.norm.logpdf(np.asarray(v)).sum() for v in jax.tree.leaves(params))
    got = mf.log_joint(params, x, jnp.asarray(y), likelihood="categorical")
    np.testing.assert_allclose(got, lik + prior, rtol=1e-5)
    assert math.isfinite(float(got))


def test_unit_kl_sums_to_the_kl_of_q_to_the_prior():
    from numpyro import distributions as dist

    q = mf.init_mean_field(jax.random.key(0), (3, 4, 2), loc_scale=0.7, init_scale=0.3)
    q["log_scale"] = jax.tree.map(
        lambda v: v + 0.2 * jax.random.normal(jax.random.key(1), v.shape), q["log_scale"]
    )
    prior_scale = 1.5
    per_unit = mf.unit_kl(q, prior_scale)
    assert per_unit.shape == (4,) and bool(jnp.all(per_unit > 0))

    def kl(m, log_s):
        return jnp.sum(dist.kl_divergence(dist.Normal(m, jnp.exp(log_s)),
                                          dist.Normal(0.0, prior_scale)))  # fmt: skip

    total = sum(jax.tree.leaves(jax.tree.map(kl, q["loc"], q["log_scale"])))
    output_bias = kl(q["loc"][1]["b"], q["log_scale"][1]["b"])
    np.testing.assert_allclose(per_unit.sum() + output_bias, total, rtol=1e-5)
    at_prior = {"loc": jax.tree.map(jnp.zeros_like, q["loc"]),
                "log_scale": jax.tree.map(lambda v: jnp.full_like(v, np.log(prior_scale)),
                                          q["log_scale"])}  # fmt: skip
    np.testing.assert_allclose(mf.unit_kl(at_prior, prior_scale), 0.0, atol=1e-6)
    batched = jax.tree.map(lambda v: jnp.stack([v, v, v]), q)
    np.testing.assert_allclose(mf.unit_kl(batched, prior_scale)[2], per_unit, rtol=1e-6)
    with pytest.raises(ValueError, match="prior_scale"):
        mf.unit_kl(q, 0.0)
