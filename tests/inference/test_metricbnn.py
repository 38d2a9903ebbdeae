"""Tests of MetricBNN (``inference.metricbnn``) and the small CNN on tiny problems."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from bnn_posteriors.inference import map_estimate, metricbnn
from bnn_posteriors.models import cnn, nets

KEY = jax.random.PRNGKey(0)
TANH = partial(nets.mlp_apply, activation_name="tanh")


def toy_map():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(-2, 2, (40, 1)), jnp.float32)
    y = jnp.sin(2 * x) + 0.1 * jnp.asarray(rng.normal(size=(40, 1)), jnp.float32)
    params, _ = map_estimate.train_map(
        nets.mlp_init(KEY, (1, 8, 1), 0.5),
        x,
        y,
        likelihood="gaussian",
        noise_scale=0.1,
        activation="tanh",
        num_steps=3000,
        learning_rate=1e-2,
    )
    theta, unravel = ravel_pytree(params)
    return x, y, theta, unravel


def test_unit_directions():
    d = metricbnn.unit_directions(KEY, 5, 7)
    assert d.shape == (5, 7)
    np.testing.assert_allclose(jnp.linalg.norm(d, axis=1), 1.0, rtol=1e-6)


@pytest.mark.slow
def test_drift_refine_stays_near_map_loss():
    x, y, theta, unravel = toy_map()
    loss = metricbnn.refinement_loss(unravel, TANH, x, y, likelihood="gaussian", noise_scale=0.1)
    mse = metricbnn.refinement_loss(unravel, TANH, x, y, likelihood="gaussian", regularised=False)
    paths, dirs = metricbnn.sample_trajectories(
        loss,
        theta,
        KEY,
        num_particles=4,
        num_steps=50,
        num_refine=10,
        drift=1e-3,
        learning_rate=1e-2,
    )
    assert paths.shape == (4, 50, theta.size) and dirs.shape == (4, theta.size)
    losses = jax.vmap(jax.vmap(mse))(paths)
    assert float(losses.max()) < 1.1 * float(mse(theta))
    # without refinement the drift alone moves exactly T·α along d_i
    free, d = metricbnn.sample_trajectories(
        loss, theta, KEY, num_particles=2, num_steps=5, num_refine=0, drift=0.1
    )
    np.testing.assert_allclose(free[:, -1] - theta, 0.5 * d, atol=1e-5)


def test_refinement_loss_values():
    x = jnp.array([[0.0], [1.0]])
    params = [{"W": jnp.array([[2.0]]), "b": jnp.array([1.0])}]
    theta, unravel = ravel_pytree(params)
    ident = partial(nets.mlp_apply, activation_name="identity")
    y = jnp.array([[1.0], [1.0]])  # residuals 0 and 2: MSE 2
    reg = metricbnn.refinement_loss(
        unravel, ident, x, y, likelihood="gaussian", noise_scale=0.5, prior_precision=2.0
    )
    np.testing.assert_allclose(reg(theta), 2.0 + 2.0 * 0.25 / 2 * 5.0, rtol=1e-6)
    labels = jnp.array([0, 1])
    two = [{"W": jnp.zeros((1, 2)), "b": jnp.zeros(2)}]
    t2, u2 = ravel_pytree(two)
    ce = metricbnn.refinement_loss(u2, ident, x, labels, likelihood="categorical")
    np.testing.assert_allclose(ce(t2), np.log(2.0), rtol=1e-6)
    with pytest.raises(ValueError, match="refinement_loss: unknown likelihood 'poisson'"):
        metricbnn.refinement_loss(unravel, ident, x, y, likelihood="poisson")


def test_autoencoder_losses_hand_computed():
    """With φ the identity on 2-D inputs (ReLU of non-negative inputs) the terms are explicit."""
    eye = [{"W": jnp.eye(2), "b": jnp.zeros(2)}]
    ae = {"enc": eye, "dec": [{"W": 2 * jnp.eye(2), "b": jnp.zeros(2)}]}
    u = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    u_next = jnp.array([[1.0, 0.5], [0.0, 1.0]])
    u_neg = jnp.array([[4.0, 4.0], [0.0, 1.0 + np.e]])
    l_plus, l_minus, l_d = metricbnn.autoencoder_losses(ae, u, u_next, u_neg, num_steps=4)
    np.testing.assert_allclose(l_plus, ((0.5 - 0.25) ** 2 + 0.25**2) / 2, rtol=1e-6)
    np.testing.assert_allclose(l_minus, -(np.log(5.0) + 1.0) / 2, rtol=1e-5)
    np.testing.assert_allclose(l_d, 1.0, rtol=1e-6)  # ‖2u − u‖² = 1 for unit rows


@pytest.mark.slow
def test_autoencoder_and_latent_sampling():
    x, y, theta, unravel = toy_map()
    loss = metricbnn.refinement_loss(unravel, TANH, x, y, likelihood="gaussian", noise_scale=0.1)
    paths, _ = metricbnn.sample_trajectories(
        loss, theta, KEY, num_particles=3, num_steps=20, drift=1e-2, learning_rate=1e-2
    )
    model, trace = metricbnn.train_autoencoder(
        KEY,
        paths,
        theta,
        latent_dim=4,
        hidden=(16,),
        num_updates=300,
        batch_size=16,
        num_components=8,
    )
    assert trace.shape == (300, 4) and float(trace[-1, 3]) < float(trace[0, 3])
    samples = metricbnn.latent_sample(model, KEY, 7)
    assert samples.shape == (7, theta.size) and bool(jnp.all(jnp.isfinite(samples)))
    z = metricbnn.to_latent(model, paths)
    assert z.shape == (3, 20, 4)
    back = metricbnn.from_latent(model, metricbnn.to_latent(model, paths[:, -1]))
    assert back.shape == (3, theta.size)
    with pytest.raises(ValueError, match="trajectories"):
        metricbnn.train_autoencoder(KEY, paths[0], theta)


@pytest.mark.slow
def test_straightness_gaussian_and_explained_variance():
    line = jnp.linspace(0, 1, 11)[None, :, None] * jnp.array([1.0, 2.0])
    np.testing.assert_allclose(metricbnn.straightness(line), 1.0, rtol=1e-6)
    corner = jnp.array([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]])
    np.testing.assert_allclose(metricbnn.straightness(corner), np.sqrt(2) / 2, rtol=1e-6)
    rng = np.random.default_rng(1)
    samples = jnp.asarray(rng.normal(size=(4000, 3)) * np.array([3.0, 1.0, 0.5]))
    mean, factor = metricbnn.gaussian_of_samples(samples)
    np.testing.assert_allclose(factor @ factor.T, np.cov(np.asarray(samples).T), atol=1e-4)
    draws = metricbnn.gaussian_sample(mean, factor, KEY, 20000)
    np.testing.assert_allclose(np.cov(np.asarray(draws).T), factor @ factor.T, atol=0.2)
    np.testing.assert_allclose(metricbnn.explained_variance(samples, 1), 9 / 10.25, atol=0.02)


@pytest.mark.slow
def test_push_forward_and_cnn():
    params = cnn.cnn_init(
        KEY, image_size=12, channels=(2, 3), kernel=3, hidden=(5, 4), num_classes=3
    )
    x = jax.random.uniform(KEY, (6, 144))
    out = cnn.cnn_apply(params, x)
    assert out.shape == (6, 3) and cnn.cnn_features(params, x).shape == (6, 4)
    np.testing.assert_allclose(cnn.cnn_apply(params, x.reshape(6, 12, 12)), out, rtol=1e-6)
    theta, unravel = ravel_pytree(params)
    f = metricbnn.push_forward(jnp.stack([theta, theta]), unravel, cnn.cnn_apply, x)
    np.testing.assert_allclose(f[1], out, rtol=1e-6)
    with pytest.raises(ValueError, match="square"):
        cnn.cnn_apply(params, x[:, :140])
    with pytest.raises(ValueError, match="image_size"):
        cnn.cnn_init(KEY, image_size=2)


def test_bad_input():
    theta = jnp.zeros(3)
    loss = jnp.sum
    with pytest.raises(ValueError, match="num_particles"):
        metricbnn.sample_trajectories(loss, theta, KEY, num_particles=0)
    with pytest.raises(ValueError, match="drift"):
        metricbnn.sample_trajectories(loss, theta, KEY, drift=-1.0)
    with pytest.raises(ValueError, match="NaN"):
        metricbnn.sample_trajectories(loss, theta.at[0].set(jnp.nan), KEY)
    with pytest.raises(ValueError, match="flat"):
        metricbnn.sample_trajectories(loss, jnp.zeros((2, 2)), KEY)
    with pytest.raises(ValueError, match="samples"):
        metricbnn.gaussian_of_samples(jnp.zeros((1, 3)))
    with pytest.raises(ValueError, match="thetas"):
        metricbnn.push_forward(theta, None, None, None)


def test_max_curvature_and_stable_learning_rate():
    scales = jnp.array([1.0, 4.0, 250.0])
    loss = lambda t: 0.5 * jnp.sum(scales * t**2)  # Hessian diag(1, 4, 250)
    theta = jnp.ones(3)
    lam = metricbnn.max_curvature(loss, theta, jax.random.PRNGKey(0))
    assert lam == pytest.approx(250.0, rel=1e-4)
    key = jax.random.PRNGKey(1)
    assert metricbnn.stable_learning_rate(loss, theta, key, 1e-3) == 1e-3
    assert metricbnn.stable_learning_rate(loss, theta, key, 1e-2) == pytest.approx(
        1 / 250, rel=1e-4
    )
    with pytest.raises(ValueError):
        metricbnn.stable_learning_rate(loss, theta, key, -1.0)


def test_stable_learning_rate_reuses_a_measured_curvature(monkeypatch):
    loss = lambda t: 0.5 * jnp.sum(jnp.array([1.0, 250.0]) * t**2)
    theta, key = jnp.ones(2), jax.random.PRNGKey(1)
    measured = metricbnn.stable_learning_rate(loss, theta, key, 1e-2)
    lam = metricbnn.max_curvature(loss, theta, key)
    monkeypatch.setattr(metricbnn, "max_curvature", lambda *a, **k: pytest.fail("measured again"))
    assert metricbnn.stable_learning_rate(loss, theta, key, 1e-2, lam_max=lam) == measured
    assert metricbnn.stable_learning_rate(loss, theta, key, 1e-2, lam_max=10.0) == 0.01
    assert metricbnn.stable_learning_rate(loss, theta, key, 1e-2, lam_max=1000.0) == 1e-3


@pytest.mark.slow
def test_walk_and_embed_is_both_phases_with_split_keys():
    x, y, theta, unravel = toy_map()
    loss = metricbnn.refinement_loss(unravel, TANH, x, y, likelihood="gaussian", noise_scale=0.1)
    walk = dict(num_particles=2, num_steps=5, drift=1e-2, learning_rate=1e-2, num_refine=2)
    ae = dict(latent_dim=3, hidden=(8,), num_components=4)
    paths, model, trace = metricbnn.walk_and_embed(
        KEY, loss, theta, ae_updates=20, ae_batch=8, **walk, **ae
    )
    k_walk, k_ae = jax.random.split(KEY)
    expected, _ = metricbnn.sample_trajectories(loss, theta, k_walk, **walk)
    _, expected_trace = metricbnn.train_autoencoder(
        k_ae, expected, theta, num_updates=20, batch_size=8, **ae
    )
    assert paths.shape == (2, 5, theta.size) and trace.shape == (20, 4)
    np.testing.assert_array_equal(paths, expected)
    np.testing.assert_array_equal(trace, expected_trace)
    assert set(model) == {"ae", "theta_map", "basis", "scale", "z_map", "z_end"}
