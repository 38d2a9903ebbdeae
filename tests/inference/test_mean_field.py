"""The one mean-field type (:mod:`bnn_posteriors.inference.mean_field`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro.distributions.kl import kl_divergence
from scipy import stats

from bnn_posteriors.inference import mean_field as mf
from bnn_posteriors.inference import vi
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models


def _q(widths=(2, 3, 2), key=0):
    q = mf.init(jax.random.key(key), widths, loc_scale=1.0, init_scale=0.3)
    scale = jax.tree.map(
        lambda v: v * jnp.exp(0.3 * jax.random.normal(jax.random.key(9), v.shape)), q.scale
    )
    return mf.MeanField(q.loc, scale)


@pytest.mark.slow
def test_init_shapes_and_scales():
    q = mf.init(jax.random.key(1), (3, 4, 2), init_scale=0.2)
    assert [layer["W"].shape for layer in q.loc] == [(3, 4), (4, 2)]
    assert all(float(jnp.max(jnp.abs(layer["b"]))) == 0.0 for layer in q.loc)
    np.testing.assert_allclose(q.scale[1]["W"], 0.2, rtol=1e-6)
    np.testing.assert_allclose(q.log_scale[0]["b"], np.log(0.2), rtol=1e-6)
    assert "b" not in mf.init(jax.random.key(1), (3, 4, 2), bias=False).loc[0]
    with pytest.raises(ValueError, match="positive"):
        mf.init(jax.random.key(1), (3, 4, 2), init_scale=-1.0)


@pytest.mark.slow
def test_is_a_pytree():
    q = _q()
    doubled = jax.tree.map(lambda v: 2 * v, q)
    assert isinstance(doubled, mf.MeanField)
    np.testing.assert_allclose(doubled.scale[0]["W"], 2 * q.scale[0]["W"])
    batched = jax.vmap(lambda k: mf.init(k, (2, 3, 1)))(jax.random.split(jax.random.key(0), 4))
    assert batched.loc[0]["W"].shape == (4, 2, 3)


def test_check_names_mismatched_trees_and_bad_scales():
    q = _q()
    with pytest.raises(TypeError, match="must be a MeanField"):
        mf.sample(jax.random.key(0), {"loc": q.loc, "scale": q.scale}, 3)
    with pytest.raises(ValueError, match="same tree structure"):
        mf.sample(jax.random.key(0), mf.MeanField(q.loc, q.scale[:1]), 3)
    wrong_shape = [{**q.scale[0], "W": q.scale[0]["W"][:1]}, q.scale[1]]
    with pytest.raises(ValueError, match=r"loc\[0\]\['W'\] has shape \(2, 3\)"):
        mf.kl_to_prior(mf.MeanField(q.loc, wrong_shape))
    for bad in (jnp.nan, jnp.inf, 0.0, -1.0):
        scale = [{**q.scale[0], "b": q.scale[0]["b"].at[1].set(bad)}, q.scale[1]]
        with pytest.raises(ValueError, match=r"scale\[0\]\['b'\] must be finite and positive"):
            mf.check(mf.MeanField(q.loc, scale))
    assert mf.check(q) is q


@pytest.mark.slow
def test_sample_moments_and_key_order():
    q = _q()
    draws = mf.sample(jax.random.key(2), q, 40_000)
    for m, s, d in zip(
        jax.tree.leaves(q.loc), jax.tree.leaves(q.scale), jax.tree.leaves(draws), strict=True
    ):
        assert d.shape == (40_000, *m.shape)
        np.testing.assert_allclose(d.mean(0), m, atol=4 * float(jnp.max(s)) / 200)
        np.testing.assert_allclose(d.std(0), s, rtol=0.03)
    # one key per leaf, in leaf order: leaf i is loc + scale * N(0, 1) from split(key)[i]
    keys = jax.random.split(jax.random.key(2), len(jax.tree.leaves(q.loc)))
    eps = jax.random.normal(keys[2], (40_000, *q.loc[1]["W"].shape))
    np.testing.assert_array_equal(draws[1]["W"], q.loc[1]["W"] + q.scale[1]["W"] * eps)
    with pytest.raises(ValueError, match="num_samples"):
        mf.sample(jax.random.key(2), q, 0)


@pytest.mark.slow
def test_log_density_matches_scipy():
    q = _q()
    w = jax.tree.map(lambda v: v[0], mf.sample(jax.random.key(3), q, 1))
    want = sum(
        stats.norm(np.asarray(m), np.asarray(s)).logpdf(np.asarray(v)).sum()
        for v, m, s in zip(
            jax.tree.leaves(w), jax.tree.leaves(q.loc), jax.tree.leaves(q.scale), strict=True
        )
    )
    np.testing.assert_allclose(mf.log_density(q, w), want, rtol=1e-5)
    # a broken density (the sd doubled) is caught by the same comparison
    wide = mf.MeanField(q.loc, jax.tree.map(lambda s: 2 * s, q.scale))
    assert not np.isclose(float(mf.log_density(wide, w)), want, rtol=1e-5)


@pytest.mark.slow
def test_kl_to_prior_matches_numpyro_and_splits_by_unit():
    q, prior_scale = _q(), 0.7
    want = sum(
        float(jnp.sum(kl_divergence(dist.Normal(m, s), dist.Normal(0.0, prior_scale))))
        for m, s in zip(jax.tree.leaves(q.loc), jax.tree.leaves(q.scale), strict=True)
    )
    np.testing.assert_allclose(mf.kl_to_prior(q, prior_scale), want, rtol=1e-5)
    at_prior = mf.MeanField(
        jax.tree.map(jnp.zeros_like, q.loc), jax.tree.map(lambda s: jnp.full_like(s, 0.7), q.scale)
    )
    np.testing.assert_allclose(mf.kl_to_prior(at_prior, prior_scale), 0.0, atol=1e-5)
    per_unit = mf.kl_per_unit(q, prior_scale)
    assert per_unit.shape == (3,)
    output_bias = kl_divergence(dist.Normal(q.loc[1]["b"], q.scale[1]["b"]), dist.Normal(0.0, 0.7))
    np.testing.assert_allclose(float(per_unit.sum() + output_bias.sum()), want, rtol=1e-5)
    batched = jax.tree.map(lambda v: jnp.stack([v, v, v]), q)
    np.testing.assert_allclose(mf.kl_per_unit(batched, prior_scale)[2], per_unit, rtol=1e-6)
    with pytest.raises(ValueError, match="prior_scale"):
        mf.kl_to_prior(q, 0.0)
    with pytest.raises(ValueError, match="one-hidden-layer"):
        mf.kl_per_unit(mf.init(jax.random.key(0), (2, 3, 3, 1)))


@pytest.mark.slow
def test_kl_to_prior_matches_monte_carlo():
    q = _q((1, 2, 1))
    draws = mf.sample(jax.random.key(5), q, 200_000)
    log_q = jax.vmap(lambda w: mf.log_density(q, w))(draws)
    log_p = sum(
        jnp.sum(stats.norm(0, 1.3).logpdf(np.asarray(d)).reshape(len(log_q), -1), axis=1)
        for d in jax.tree.leaves(draws)
    )
    mc = float(jnp.mean(log_q - log_p))
    assert float(mf.kl_to_prior(q, 1.3)) == pytest.approx(mc, abs=0.02)


@pytest.mark.slow
def test_outputs_are_the_nets_of_the_draws():
    q = _q((2, 3, 2))
    x = jax.random.normal(jax.random.key(4), (5, 2))
    f = mf.outputs(jax.random.key(3), q, x, 7, activation="tanh", output_scale=0.5)
    draws = mf.sample(jax.random.key(3), q, 7)
    want = jnp.stack(
        [nets.mlp_apply(jax.tree.map(lambda v, i=i: v[i], draws), x, "tanh", 0.5) for i in range(7)]
    )
    assert f.shape == (7, 5, 2)
    np.testing.assert_allclose(f, want, rtol=1e-5)
    with pytest.raises(ValueError, match="outputs: x has 3 columns"):
        mf.outputs(jax.random.key(3), q, jnp.ones((5, 3)), 7)


@pytest.mark.slow
def test_auto_normal_round_trip_and_a_numpyro_fit():
    q = _q()
    params = mf.to_auto_normal(q)
    assert set(params) == {
        f"{k}{i}_auto_{p}" for i in (0, 1) for k in "Wb" for p in ("loc", "scale")
    }
    np.testing.assert_array_equal(params["W1_auto_scale"], q.scale[1]["W"])
    back = mf.from_auto_normal({**params, "other": 1.0}, mlp=True)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(q), strict=True):
        np.testing.assert_array_equal(a, b)
    sites = mf.from_auto_normal(params)
    assert set(sites.loc) == {"W0", "b0", "W1", "b1"}
    np.testing.assert_array_equal(mf.layers(sites).scale[0]["b"], q.scale[0]["b"])
    with pytest.raises(ValueError, match="no AutoNormal parameters"):
        mf.from_auto_normal({"x": 1.0})
    with pytest.raises(ValueError, match=r"lack the scales of \['W0'\]"):
        mf.from_auto_normal({"W0_auto_loc": jnp.zeros(2)})
    with pytest.raises(ValueError, match="sites of an MLP"):
        mf.layers(mf.MeanField({"w": jnp.zeros(2)}, {"w": jnp.ones(2)}))
    # a NumPyro fit: the guide's sds (softplus transform) are q.scale, its medians q.loc
    x, y = jnp.linspace(-1, 1, 6)[:, None], jnp.zeros(6)
    kwargs = dict(x=x, y=y, widths=(1, 2, 1))
    guide = vi.mean_field_guide(models.mlp_regression)
    numpyro_params, _ = vi.svi_steps(
        jax.random.key(0), models.mlp_regression, guide, kwargs, num_steps=5, learning_rate=0.01
    )
    fit = mf.from_auto_normal(numpyro_params, mlp=True)
    np.testing.assert_allclose(fit.loc[0]["W"], guide.median(numpyro_params)["W0"], rtol=1e-6)
    assert float(jnp.min(fit.scale[1]["b"])) > 0
