"""Tests of inference.viking: the closed-form KL, the family's draws, the ELBO and the fit."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.inference import viking as vk
from bnn_posteriors.models import nets


@pytest.fixture
def small(x64):
    params = nets.mlp_init(jax.random.PRNGKey(0), (1, 6, 1), scheme="glorot")
    params = jax.tree.map(lambda a: a.astype(jnp.float64), params)
    theta, model_fn = ns.flat_mlp(params)
    x = jnp.linspace(-1.0, 1.0, 5, dtype=jnp.float64)[:, None]
    jac = ns.training_jacobian(model_fn, theta, x)
    return theta, model_fn, x, jac, ns.kernel_projector(jac)


def _dense_kl(mean, cov, alpha):
    p = mean.size
    _, logdet = np.linalg.slogdet(cov)
    return 0.5 * (alpha * np.trace(cov) + alpha * mean @ mean - p - logdet - p * math.log(alpha))


@pytest.mark.slow
@pytest.mark.parametrize("alpha, s_k, s_im", [(1.0, 1.0, 0.1), (0.3, 2.0, 0.05), (4.0, None, 1.5)])
def test_kl_divergence_equals_the_dense_kl(small, alpha, s_k, s_im):
    theta, _, _, jac, proj = small
    r = theta.size - np.linalg.matrix_rank(np.asarray(jac))
    cov = vk.covariance(proj, 1 / math.sqrt(alpha) if s_k is None else s_k, s_im)
    got = vk.kl_divergence(theta, alpha, s_im, r, scale_kernel=s_k)
    np.testing.assert_allclose(got, _dense_kl(np.asarray(theta), np.asarray(cov), alpha), rtol=1e-9)
    # the broken input: the KL with a wrong kernel dimension is not the dense one
    wrong = vk.kl_divergence(theta, alpha, s_im, r - 3, scale_kernel=s_k)
    assert not np.isclose(wrong, _dense_kl(np.asarray(theta), np.asarray(cov), alpha), rtol=1e-3)


def test_kl_divergence_is_zero_at_the_prior(small):
    theta = jnp.zeros_like(small[0])
    assert float(vk.kl_divergence(theta, 2.0, 1 / math.sqrt(2.0), 7)) == pytest.approx(0, abs=1e-12)


def test_kl_divergence_rejects_bad_input(small):
    theta = small[0]
    with pytest.raises(ValueError, match="kernel_dim"):
        vk.kl_divergence(theta, 1.0, 0.1, theta.size + 1)
    with pytest.raises(ValueError, match="prior_precision"):
        vk.kl_divergence(theta, 0.0, 0.1, 3)
    with pytest.raises(ValueError, match="flat vector"):
        vk.kl_divergence(theta[None], 1.0, 0.1, 3)


def test_covariance_has_two_eigenvalues(small):
    _, _, _, jac, proj = small
    cov = np.asarray(vk.covariance(proj, 2.0, 0.5))
    eig = np.sort(np.linalg.eigvalsh(cov))
    r = proj.shape[0] - np.linalg.matrix_rank(np.asarray(jac))
    np.testing.assert_allclose(eig[-r:], 4.0, rtol=1e-10)
    np.testing.assert_allclose(eig[:-r], 0.25, rtol=1e-10)
    with pytest.raises(ValueError, match="square"):
        vk.covariance(proj[:3], 1.0, 1.0)
    with pytest.raises(ValueError, match="scale_image"):
        vk.covariance(proj, 1.0, -1.0)


def test_sample_parts_are_orthogonal_and_have_the_family_covariance(small):
    _, _, _, jac, proj = small
    kernel, image = vk.sample_parts(jax.random.PRNGKey(3), proj, 2.0, 0.5, 4000)
    assert float(jnp.max(ns.relative_residual(jac, kernel))) < 1e-10
    np.testing.assert_allclose(image @ proj, 0.0, atol=1e-10)
    emp = np.cov(np.asarray(kernel + image).T)
    np.testing.assert_allclose(emp, vk.covariance(proj, 2.0, 0.5), atol=0.25)
    with pytest.raises(ValueError, match="num_samples"):
        vk.sample_parts(jax.random.PRNGKey(3), proj, 2.0, 0.5, 0)


@pytest.mark.slow
def test_negative_elbo_matches_the_analytic_expectation(small):
    theta, model_fn, x, jac, _ = small
    y = jnp.sin(3 * x[:, 0])[:, None]
    params = {"theta": theta, "log_precision": jnp.log(2.0), "log_scale_image": jnp.log(0.2)}
    r = theta.size - np.linalg.matrix_rank(np.asarray(jac))
    got = vk.negative_elbo(
        params,
        jax.random.PRNGKey(0),
        model_fn,
        x,
        y,
        kernel_dim=r,
        likelihood="gaussian",
        noise_scale=0.3,
        num_mc_samples=20000,
    )
    resid = np.asarray(y - model_fn(theta, x))[:, 0]
    row2 = np.sum(np.asarray(jac) ** 2, axis=1)  # E(Jε)_i² = ‖J_i‖²
    nll = np.sum(
        0.5 * (resid**2 + 0.04 * row2) / 0.09 + math.log(0.3) + 0.5 * math.log(2 * math.pi)
    )
    kl = float(vk.kl_divergence(theta, 2.0, 0.2, r))
    assert float(got) == pytest.approx(nll + kl, rel=1e-2)


def test_negative_elbo_weights_the_kl_by_beta(small):
    theta, model_fn, x, jac, _ = small
    y = jnp.sin(3 * x[:, 0])[:, None]
    params = {"theta": theta, "log_precision": jnp.log(2.0), "log_scale_image": jnp.log(0.2)}
    r = theta.size - np.linalg.matrix_rank(np.asarray(jac))
    kw = dict(kernel_dim=r, likelihood="gaussian", noise_scale=0.3, num_mc_samples=8)
    key = jax.random.PRNGKey(0)
    full = vk.negative_elbo(params, key, model_fn, x, y, **kw)
    tempered = vk.negative_elbo(params, key, model_fn, x, y, kl_weight=0.1, **kw)
    kl = float(vk.kl_divergence(theta, 2.0, 0.2, r))
    assert float(full - tempered) == pytest.approx(0.9 * kl, rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["gaussian", "categorical"])
def test_fit_viking_lowers_the_negative_elbo(small, likelihood):
    theta, model_fn, x, _, _ = small
    y = jnp.sin(3 * x[:, 0]) if likelihood == "gaussian" else jnp.array([0, 0, 0, 0, 0])
    post = vk.fit_viking(
        jax.random.PRNGKey(1),
        model_fn,
        theta,
        x,
        y,
        likelihood=likelihood,
        noise_scale=0.3,
        num_steps=300,
        num_mc_samples=4,
    )
    assert post.losses.shape == (300,)
    assert post.losses[-20:].mean() < post.losses[:20].mean()
    assert post.prior_precision > 0 and post.scale_image > 0
    assert post.scale_kernel == pytest.approx(post.prior_precision**-0.5)
    assert 0 < post.kernel_dim < theta.size
    assert post.projector.shape == (theta.size, theta.size)


def test_fit_viking_rejects_bad_input(small):
    theta, model_fn, x, _, _ = small
    y = jnp.zeros(5)
    with pytest.raises(ValueError, match="noise_scale"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, noise_scale=0.0)
    with pytest.raises(ValueError, match="rows"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y[:3], num_steps=2)
    with pytest.raises(ValueError, match="flat vector"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta[None], x, y, num_steps=2)
    with pytest.raises(ValueError, match="likelihood"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, likelihood="poisson")
    with pytest.raises(ValueError, match="kl_weight"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, kl_weight=0.0)
    with pytest.raises(ValueError, match="optimiser must be one of"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, optimiser="sgd")


def test_fit_viking_runs_the_named_optimiser(small, monkeypatch):
    """``optimiser="radam"`` steps with optax.radam (the authors' mnist.py), not Adam."""
    theta, model_fn, x, _, _ = small
    y = jnp.sin(3 * x[:, 0])
    called = []
    radam = vk.OPTIMISERS["radam"]
    monkeypatch.setitem(vk.OPTIMISERS, "radam", lambda lr: called.append(lr) or radam(lr))
    kwargs = dict(noise_scale=0.3, num_steps=3, num_mc_samples=2, learning_rate=1e-3)
    a = vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, **kwargs)
    r = vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, optimiser="radam", **kwargs)
    assert called == [1e-3]
    # RAdam's first steps are SGD-like with momentum, Adam's are sign-like: different paths
    assert not np.allclose(np.asarray(a.theta), np.asarray(r.theta))


def test_fit_viking_holds_a_declared_prior_precision_fixed(small):
    """``learn_prior_precision=False`` keeps α at exp(init_log_precision) (a declared prior)
    while θ̂ and σ_im train; the default learns α, as the authors do."""
    theta, model_fn, x, _, _ = small
    y = jnp.sin(3 * x[:, 0])
    kwargs = dict(noise_scale=0.3, num_steps=50, num_mc_samples=2, init_log_precision=math.log(2.0))
    key = jax.random.PRNGKey(1)
    held = vk.fit_viking(key, model_fn, theta, x, y, learn_prior_precision=False, **kwargs)
    learnt = vk.fit_viking(key, model_fn, theta, x, y, **kwargs)
    assert held.prior_precision == pytest.approx(2.0, rel=1e-12)
    assert learnt.prior_precision != pytest.approx(2.0, rel=1e-3)
    assert not np.allclose(np.asarray(held.theta), np.asarray(theta))  # θ̂ still trains
    assert held.scale_image != pytest.approx(math.exp(-2.0), rel=1e-3)  # and σ_im
    with pytest.raises(TypeError, match="learn_prior_precision"):
        vk.fit_viking(jax.random.PRNGKey(1), model_fn, theta, x, y, learn_prior_precision="no")


@pytest.mark.slow
def test_linearised_predictive_is_zero_in_the_kernel_at_the_training_inputs(small):
    theta, model_fn, x, jac, proj = small
    post = vk.VikingPosterior(theta, 4.0, 1e-3, 0, proj, np.zeros(1))
    mean, var = vk.linearised_predictive(post, model_fn, x)
    np.testing.assert_allclose(mean, model_fn(theta, x))
    # at the training inputs only σ_im² J Jᵀ remains, however large σ_ker
    np.testing.assert_allclose(var[:, 0], 1e-6 * np.sum(np.asarray(jac) ** 2, 1), rtol=1e-6)
    far = jnp.array([[4.0]])
    assert float(vk.linearised_predictive(post, model_fn, far)[1][0, 0]) > 1e-3
    _, var_noise = vk.linearised_predictive(post, model_fn, x, noise_scale=0.5)
    np.testing.assert_allclose(var_noise - var, 0.25)
    with pytest.raises(ValueError, match="noise_scale"):
        vk.linearised_predictive(post, model_fn, x, noise_scale=-1.0)
