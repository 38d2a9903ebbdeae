"""Tests of inference.laplace_diffusion on linear models, where the GGN is constant."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import laplace_diffusion as ld

SIGMA, ALPHA = 0.5, 2.0


def linear_model(theta, x):  # f(x; θ) = x θ: J = X at every θ, G = XᵀX/σ²
    return x @ theta[:, None]


@pytest.fixture
def linear(x64):
    x = jax.random.normal(jax.random.PRNGKey(0), (3, 6), dtype=jnp.float64)
    theta = jax.random.normal(jax.random.PRNGKey(1), (6,), dtype=jnp.float64)
    ggn = np.asarray(x.T @ x) / SIGMA**2
    lam, vecs = np.linalg.eigh(ggn)
    image = vecs[:, lam > 1e-10 * lam.max()]  # (6, 3): the row space of X
    return x, theta, ggn, image


@pytest.mark.slow
def test_lanczos_eigenpairs_on_a_low_rank_matrix(linear):
    _, _, ggn, image = linear
    lam, u = ld.lanczos_eigenpairs(lambda v: ggn @ v, ggn @ jnp.ones(6), 3)  # in the image
    np.testing.assert_allclose(np.sort(lam), np.sort(np.linalg.eigvalsh(ggn))[-3:], rtol=1e-8)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(u @ u.T, image @ image.T, atol=1e-8)  # the same subspace
    with pytest.raises(ValueError, match="P ≥ rank"):
        ld.lanczos_eigenpairs(lambda v: v, jnp.ones(2), 3)


@pytest.mark.slow
def test_increment_stays_in_the_image_unless_unprojected(linear):
    x, theta, _, image = linear
    kernel = np.eye(6) - image @ image.T
    kw = dict(prior_precision=ALPHA, noise_scale=SIGMA, rank=3, step_size=0.25)
    inc = ld.diffusion_increment(jax.random.PRNGKey(2), linear_model, theta, x, **kw)
    assert np.linalg.norm(kernel @ inc) < 1e-8 * np.linalg.norm(inc)
    broken = ld.diffusion_increment(
        jax.random.PRNGKey(2), linear_model, theta, x, project=False, **kw
    )
    assert np.linalg.norm(kernel @ broken) > 0.1 * np.linalg.norm(broken)


@pytest.mark.slow
@pytest.mark.parametrize("project", [True, False])
def test_diffusion_has_the_laplace_covariance_on_its_subspace(linear, project):
    """Linear model: T steps of variance h = 1/T add up to U(Λ + α)⁻¹Uᵀ (projected) or to
    the sampled LA's (G + αI)⁻¹ (unprojected)."""
    x, theta, ggn, image = linear
    samples = ld.laplace_diffusion(
        jax.random.PRNGKey(3),
        linear_model,
        theta,
        x,
        prior_precision=ALPHA,
        noise_scale=SIGMA,
        rank=3,
        num_steps=4,
        num_samples=4000,
        project=project,
    )
    assert samples.shape == (4000, 6)
    full = np.linalg.inv(ggn + ALPHA * np.eye(6))
    expected = image @ image.T @ full @ image @ image.T if project else full
    delta = np.asarray(samples - theta)
    np.testing.assert_allclose(delta.T @ delta / 4000, expected, atol=0.04 * np.abs(full).max())
    kernel_part = delta @ (np.eye(6) - image @ image.T)
    assert (np.abs(kernel_part).max() < 1e-8) == project


def linear_logits(theta, x):  # two classes: logits x W, W = θ as (d, 2)
    return x @ theta.reshape(x.shape[1], 2)


@pytest.mark.slow
def test_categorical_diffusion_uses_the_softmax_hessian(x64):
    """Softmax is invariant to adding one vector to every class's weights, so those directions
    are in the categorical GGN's kernel (they are not in the Gaussian one's): the categorical
    diffusion never moves along them, and its step on the image has the Laplace covariance."""
    x = jax.random.normal(jax.random.PRNGKey(0), (3, 4), dtype=jnp.float64)
    theta = jax.random.normal(jax.random.PRNGKey(1), (8,), dtype=jnp.float64)
    shared = np.kron(np.eye(4), np.ones((2, 1))) / np.sqrt(2)  # (8, 4): w added to both classes
    kw = dict(prior_precision=ALPHA, rank=3, num_steps=1, num_samples=3000)
    cat = ld.laplace_diffusion(
        jax.random.PRNGKey(2), linear_logits, theta, x, noise_scale=None,
        likelihood="categorical", **kw,
    )  # fmt: skip
    delta = np.asarray(cat - theta)
    assert np.abs(delta @ shared).max() < 1e-8
    p = np.asarray(jax.nn.softmax(linear_logits(theta, x)))
    jac = np.stack([np.kron(x[i], np.eye(2)) for i in range(3)])  # (3, 2, 8): ∂f_i/∂θ
    hess = np.stack([np.diag(q) - np.outer(q, q) for q in p])
    ggn = np.einsum("iap,iab,ibq->pq", jac, hess, jac)
    lam, vecs = np.linalg.eigh(ggn)
    u = vecs[:, -3:]  # its image: rank 3 (n = 3 points, one free logit each)
    expected = u @ np.diag(1.0 / (lam[-3:] + ALPHA)) @ u.T
    np.testing.assert_allclose(delta.T @ delta / 3000, expected, atol=0.08 * np.abs(expected).max())
    gauss = ld.laplace_diffusion(
        jax.random.PRNGKey(2), linear_logits, theta, x, noise_scale=1.0, **kw
    )
    assert np.abs(np.asarray(gauss - theta) @ shared).max() > 1e-3  # the Gaussian GGN's image
    with pytest.raises(ValueError, match="unknown likelihood"):
        ld.laplace_diffusion(
            jax.random.PRNGKey(0), linear_logits, theta, x, noise_scale=1.0, likelihood="t", **kw
        )


def test_laplace_diffusion_rejects_bad_input(linear):
    x, theta, _, _ = linear
    kw = dict(prior_precision=ALPHA, noise_scale=SIGMA, num_steps=2, num_samples=2)
    with pytest.raises(ValueError, match="rank 7 exceeds"):
        ld.laplace_diffusion(jax.random.PRNGKey(0), linear_model, theta, x, rank=7, **kw)
    with pytest.raises(ValueError, match="flat vector"):
        ld.laplace_diffusion(jax.random.PRNGKey(0), linear_model, theta[None], x, rank=2, **kw)
    with pytest.raises(ValueError, match="NaN"):
        ld.laplace_diffusion(
            jax.random.PRNGKey(0), linear_model, theta.at[0].set(jnp.nan), x, rank=2, **kw
        )
    with pytest.raises(ValueError, match="prior_precision"):
        ld.laplace_diffusion(
            jax.random.PRNGKey(0),
            linear_model,
            theta,
            x,
            rank=2,
            **{**kw, "prior_precision": -1.0},
        )


def test_image_rank_counts_eigenvalues_above_the_tolerance():
    assert ld.image_rank(np.array([1.0, 1e-3, 1e-13, 0.0]), rtol=1e-6) == 2
    with pytest.raises(ValueError, match="non-empty"):
        ld.image_rank(np.array([]), rtol=1e-6)


def test_data_rank_counts_eigenvalues_above_the_prior_precision():
    assert ld.data_rank(np.array([5.0, 2.0, 1.0, 0.5]), prior_precision=1.0) == 2
    assert ld.data_rank(np.array([0.1, 0.2]), prior_precision=1.0) == 1  # at least one
    with pytest.raises(ValueError, match="non-empty"):
        ld.data_rank(np.array([]), prior_precision=1.0)
    with pytest.raises(ValueError, match="prior_precision"):
        ld.data_rank(np.array([1.0]), prior_precision=0.0)
