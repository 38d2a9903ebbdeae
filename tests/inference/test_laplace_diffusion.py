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
