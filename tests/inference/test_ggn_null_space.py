"""Tests of inference.ggn_null_space: GGN products, rank, projectors, samples, SLQ."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.inference import laplace
from bnn_posteriors.models import nets


@pytest.fixture
def small(x64):
    params = nets.mlp_init(jax.random.PRNGKey(0), (2, 6, 3), scheme="glorot")
    params = jax.tree.map(lambda a: a.astype(jnp.float64), params)
    theta, model_fn = ns.flat_mlp(params)
    x = jax.random.normal(jax.random.PRNGKey(1), (4, 2), dtype=jnp.float64)
    return theta, model_fn, x


def test_flat_mlp_matches_mlp_apply(small):
    theta, model_fn, x = small
    assert theta.shape == (2 * 6 + 6 + 6 * 3 + 3,)
    assert model_fn(theta, x).shape == (4, 3)
    with pytest.raises(ValueError, match="unknown activation"):
        ns.flat_mlp([], activation="swish")


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["gaussian", "categorical"])
def test_ggn_vp_equals_the_dense_ggn(small, likelihood):
    theta, model_fn, x = small
    dense = laplace.ggn_matrix(model_fn, theta, x, likelihood=likelihood, noise_scale=0.5)
    v = jax.random.normal(jax.random.PRNGKey(2), theta.shape, dtype=jnp.float64)
    got = ns.ggn_vp(model_fn, theta, x, v, likelihood=likelihood, noise_scale=0.5)
    np.testing.assert_allclose(got, dense @ v, atol=1e-12)


def test_ggn_vp_rejects_bad_input(small):
    theta, model_fn, x = small
    with pytest.raises(ValueError, match="end in the P"):
        ns.ggn_vp(model_fn, theta, x, jnp.ones(3))
    with pytest.raises(ValueError, match="noise_scale must be a positive"):
        ns.ggn_vp(model_fn, theta, x, theta, noise_scale=0.0)
    with pytest.raises(ValueError, match="flat vector"):
        ns.ggn_vp(model_fn, theta[None], x, theta)


def test_rank_is_at_most_no_and_kernel_completes_it(small):
    theta, model_fn, x = small
    jac = ns.training_jacobian(model_fn, theta, x)
    assert jac.shape == (12, theta.size)
    report = ns.rank_report(jac, num_outputs=3)
    assert report["rank_ggn"] == report["rank_J"] == 12  # generic: rank = N·O < P
    assert report["dim_ker"] == theta.size - 12


@pytest.mark.slow
def test_the_full_hessian_breaks_the_bound(small):
    """The check can fail: the Hessian of the loss (not the GGN) has rank above N·O."""
    theta, model_fn, x = small
    y = jnp.ones((4, 3))
    hess = jax.hessian(lambda t: 0.5 * jnp.sum((model_fn(t, x) - y) ** 2))(theta)
    s = np.linalg.svd(np.asarray(hess), compute_uv=False)
    assert ns.numerical_rank(s, hess.shape) > 12


def test_rank_report_and_numerical_rank_reject_bad_input():
    with pytest.raises(ValueError, match="not a multiple"):
        ns.rank_report(np.ones((5, 4)), num_outputs=2)
    with pytest.raises(ValueError, match=r"\(N·O, P\)"):
        ns.rank_report(np.ones(5), num_outputs=1)
    with pytest.raises(ValueError, match="rtol must be a positive"):
        ns.numerical_rank(np.ones(3), (3, 3), rtol=-1.0)
    assert ns.numerical_rank(np.array([1.0, 1e-20]), (2, 2)) == 1


def test_kernel_projector_is_the_orthogonal_projector_onto_ker_j(small):
    theta, model_fn, x = small
    jac = ns.training_jacobian(model_fn, theta, x)
    proj = ns.kernel_projector(jac)
    np.testing.assert_allclose(proj @ proj, proj, atol=1e-12)
    np.testing.assert_allclose(proj, proj.T, atol=1e-12)
    np.testing.assert_allclose(jac @ proj, 0.0, atol=1e-12)
    assert round(float(jnp.trace(proj))) == theta.size - 12
    with pytest.raises(ValueError, match=r"\(N·O, P\)"):
        ns.kernel_projector(jnp.ones(3))


@pytest.mark.slow
def test_alternating_projections_converge_to_the_dense_projector(small):
    theta, model_fn, x = small
    proj = ns.kernel_projector(ns.training_jacobian(model_fn, theta, x))
    v = jax.random.normal(jax.random.PRNGKey(3), (3, theta.size), dtype=jnp.float64)
    one_batch = ns.alternating_projections(model_fn, theta, [x], v, num_sweeps=1)
    np.testing.assert_allclose(one_batch[0], v @ proj, atol=1e-10)  # one batch: exact
    iterates = ns.alternating_projections(model_fn, theta, [x[:2], x[2:]], v, num_sweeps=30)
    err = jnp.linalg.norm(iterates - v @ proj, axis=-1).mean(axis=1)
    assert iterates.shape == (30, 3, theta.size)
    assert np.all(np.diff(np.asarray(err)) <= 1e-12) and err[-1] < 0.5 * err[0]
    with pytest.raises(ValueError, match="num_sweeps"):
        ns.alternating_projections(model_fn, theta, [x], v, num_sweeps=0)
    with pytest.raises(ValueError, match="empty"):
        ns.alternating_projections(model_fn, theta, [], v, num_sweeps=1)
    with pytest.raises(ValueError, match=r"\(S, P\)"):
        ns.alternating_projections(model_fn, theta, [x], v[0], num_sweeps=1)


@pytest.mark.slow
def test_projected_samples_lie_in_the_kernel_and_have_the_right_scale(small):
    theta, model_fn, x = small
    jac = ns.training_jacobian(model_fn, theta, x)
    proj = ns.kernel_projector(jac)
    samples = ns.projected_samples(jax.random.PRNGKey(4), theta, proj, 4.0, 4000)
    delta = samples - theta
    assert float(ns.relative_residual(jac, delta).max()) < 1e-12
    cov = delta.T @ delta / 4000  # ≈ P_ker / α
    assert abs(float(jnp.trace(cov)) - float(jnp.trace(proj)) / 4.0) < 0.05 * jnp.trace(proj) / 4
    as_function = ns.projected_samples(jax.random.PRNGKey(4), theta, lambda z: z @ proj, 4.0, 9)
    np.testing.assert_allclose(ns.relative_residual(jac, as_function - theta), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="prior_precision must be a positive"):
        ns.projected_samples(jax.random.PRNGKey(4), theta, proj, 0.0, 5)
    with pytest.raises(ValueError, match=r"projector must be \(P, P\)"):
        ns.projected_samples(jax.random.PRNGKey(4), theta, proj[:3], 1.0, 5)


def test_projected_linearised_predictive_is_exact_at_the_training_inputs(small):
    theta, model_fn, x = small
    proj = ns.kernel_projector(ns.training_jacobian(model_fn, theta, x))
    mean, var = ns.projected_linearised_predictive(model_fn, theta, proj, 2.0, x)
    np.testing.assert_allclose(mean, model_fn(theta, x))
    assert float(var.max()) < 1e-12
    far = 3.0 * jnp.ones((2, 2))
    _, var_far = ns.projected_linearised_predictive(model_fn, theta, proj, 2.0, far)
    assert float(var_far.min()) > 1e-3
    # the check fails with the image projector in place of the kernel's
    _, wrong = ns.projected_linearised_predictive(
        model_fn, theta, jnp.eye(theta.size) - proj, 2.0, x
    )
    assert float(wrong.max()) > 1e-3
    _, noisy = ns.projected_linearised_predictive(model_fn, theta, proj, 2.0, x, noise_scale=0.5)
    np.testing.assert_allclose(noisy, 0.25, atol=1e-12)
    with pytest.raises(ValueError, match="noise_scale"):
        ns.projected_linearised_predictive(model_fn, theta, proj, 2.0, x, noise_scale=-1.0)


def test_split_kernel_image_and_relative_residual(small):
    theta, model_fn, x = small
    jac = ns.training_jacobian(model_fn, theta, x)
    proj = ns.kernel_projector(jac)
    delta = jax.random.normal(jax.random.PRNGKey(5), (6, theta.size), dtype=jnp.float64)
    kernel, image = ns.split_kernel_image(proj, delta)
    np.testing.assert_allclose(kernel + image, delta, atol=1e-12)
    np.testing.assert_allclose(jnp.sum(kernel * image, axis=1), 0.0, atol=1e-10)
    assert float(ns.relative_residual(jac, kernel).max()) < 1e-12
    assert float(ns.relative_residual(jac, image).min()) > 1e-3
    with pytest.raises(ValueError, match=r"\(P, P\)"):
        ns.split_kernel_image(proj[:2], delta)
    with pytest.raises(ValueError, match="end in the P"):
        ns.relative_residual(jac, delta[:, :3])


@pytest.mark.slow
def test_slq_logdet_and_its_gradient_match_the_dense_values(x64):
    m = jax.random.normal(jax.random.PRNGKey(6), (40, 30), dtype=jnp.float64)
    ggn = m.T @ m / 40  # PSD (30, 30)
    lam = jnp.linalg.eigvalsh(ggn)

    def slq(alpha):
        return ns.slq_logdet(
            lambda v: ggn @ v, 30, alpha, jax.random.PRNGKey(7), num_matvecs=30, num_probes=400
        )

    np.testing.assert_allclose(slq(0.5), ns.dense_logdet(lam, 0.5), rtol=0.05)
    np.testing.assert_allclose(jax.grad(slq)(0.5), jnp.sum(1 / (lam + 0.5)), rtol=0.05)

    def through_the_iterations(alpha):
        return ns.slq_logdet(
            lambda v: ggn @ v,
            30,
            alpha,
            jax.random.PRNGKey(7),
            num_matvecs=30,
            num_probes=400,
            adjoint=False,
        )

    # the same estimate and derivative, with or without matfree's adjoint
    np.testing.assert_allclose(through_the_iterations(0.5), slq(0.5), rtol=1e-10)
    np.testing.assert_allclose(jax.grad(through_the_iterations)(0.5), jax.grad(slq)(0.5), rtol=1e-8)
    with pytest.raises(ValueError, match="exceeds the dimension"):
        ns.slq_logdet(lambda v: v, 3, 1.0, jax.random.PRNGKey(0), num_matvecs=4)
    with pytest.raises(ValueError, match="prior_precision must be a positive"):
        ns.slq_logdet(lambda v: v, 3, -1.0, jax.random.PRNGKey(0), num_matvecs=2)
    with pytest.raises(ValueError, match="prior_precision must be a positive"):
        ns.dense_logdet(lam, 0.0)


@pytest.mark.slow
def test_slq_prior_precision_agrees_with_the_dense_choice(small):
    theta, model_fn, _ = small
    x = jax.random.normal(jax.random.PRNGKey(8), (10, 2), dtype=jnp.float64)
    ggn = laplace.ggn_matrix(model_fn, theta, x, likelihood="gaussian")
    lam = np.clip(np.linalg.eigvalsh(np.asarray(ggn)), 0.0, None)
    norm2 = float(jnp.sum(theta**2))
    grid = np.exp(np.linspace(-8, 8, 4001))  # dense: the root of γ(δ) = δ‖θ‖²
    gamma = np.array([np.sum(lam / (lam + d)) for d in grid])
    dense = grid[np.argmin(np.abs(gamma - grid * norm2))]
    got = ns.slq_prior_precision(
        lambda v: ggn @ v, theta, jax.random.PRNGKey(9), num_matvecs=30, num_probes=200
    )
    assert abs(np.log(got / dense)) < 0.1
    with pytest.raises(ValueError, match="below upper"):
        ns.slq_prior_precision(lambda v: v, theta, jax.random.PRNGKey(0), lower=2.0, upper=1.0)


def test_first_order_change_is_the_jacobian_norm_by_finite_differences(small):
    theta, model_fn, x = small
    jac = ns.training_jacobian(model_fn, theta, x)
    proj = ns.kernel_projector(jac)
    delta = jax.random.normal(jax.random.PRNGKey(6), (5, theta.size), dtype=jnp.float64)
    # along any direction it is ‖J v̂‖ (the Jacobian's, computed here by autodiff) to O(h²)
    unit = delta / jnp.linalg.norm(delta, axis=1, keepdims=True)
    np.testing.assert_allclose(
        ns.first_order_change(model_fn, theta, x, 3.0 * delta),
        jnp.linalg.norm(unit @ jac.T, axis=1),
        rtol=1e-6,
    )
    # along the kernel it vanishes to O(h²); the image's does not
    kernel, image = ns.split_kernel_image(proj, delta)
    along_kernel = ns.first_order_change(model_fn, theta, x, kernel)
    along_image = ns.first_order_change(model_fn, theta, x, image)
    assert float(along_kernel.max()) < 1e-6 * float(along_image.min())
    # a kernel built at other inputs does not keep these inputs' predictions
    other = ns.kernel_projector(ns.training_jacobian(model_fn, theta, x + 1.0))
    moved = ns.first_order_change(model_fn, theta, x, delta @ other)
    assert float(moved.max()) > 1e-2 * float(along_image.min())
    with pytest.raises(ValueError, match="zero"):
        ns.first_order_change(model_fn, theta, x, jnp.zeros((1, theta.size)))
    with pytest.raises(ValueError, match="step"):
        ns.first_order_change(model_fn, theta, x, delta, step=0.0)
    with pytest.raises(ValueError, match="end in the P"):
        ns.first_order_change(model_fn, theta, x, delta[:, :3])
