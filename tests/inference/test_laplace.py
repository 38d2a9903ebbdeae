"""Tests of the GGN Laplace approximation (``inference.laplace``) on tiny networks."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy

from bnn_posteriors.inference import laplace as la
from bnn_posteriors.inference import map_estimate
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models

KEY = jax.random.PRNGKey(0)


def tiny_regression(n=12, widths=(2, 3, 1), seed=0, activation="tanh"):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(n, widths[0])))
    y = jnp.asarray(rng.normal(size=(n, widths[-1])))
    params = nets.mlp_init(jax.random.PRNGKey(seed), widths, 0.7)
    return x, y, params


@pytest.mark.slow
def test_ggn_equals_hand_jt_lambda_j(x64):
    """Classification GGN on a tiny net = Σ J_iᵀ (diag p − p pᵀ) J_i, J by finite differences."""
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(4, 2)))
    y = jnp.asarray([0, 1, 2, 1])
    params = nets.mlp_init(jax.random.PRNGKey(1), (2, 2, 3), 0.8)
    post = la.laplace(params, x, y, likelihood="categorical", activation="tanh")
    theta, unravel = ravel_pytree(params)

    def f(t):
        return np.asarray(nets.mlp_apply(unravel(jnp.asarray(t)), x, "tanh"))

    t0 = np.asarray(theta)
    eps = 1e-6
    jac = np.stack(
        [(f(t0 + eps * e) - f(t0 - eps * e)) / (2 * eps) for e in np.eye(t0.size)], axis=-1
    )  # (n, C, P)
    logits = f(t0)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    hand = sum(jac[i].T @ (np.diag(p[i]) - np.outer(p[i], p[i])) @ jac[i] for i in range(4))
    np.testing.assert_allclose(np.asarray(post.precision) - np.eye(t0.size), hand, atol=1e-6)


@pytest.mark.slow
def test_ggn_equals_hessian_when_residual_vanishes(x64):
    """Regression with targets y = f(x; θ*): the NLL Hessian has no residual term, so H = GGN."""
    x, _, params = tiny_regression()
    y = nets.mlp_apply(params, x, "tanh")
    theta, unravel = ravel_pytree(params)
    noise_scale = 0.5

    def nll(t):
        return models.neg_log_likelihood(
            nets.mlp_apply(unravel(t), x, "tanh"), y, "gaussian", noise_scale
        )

    hess = jax.hessian(nll)(theta)
    post = la.laplace(
        params, x, y, likelihood="gaussian", noise_scale=noise_scale, activation="tanh"
    )
    ggn = post.precision - post.prior_precision * jnp.eye(theta.size)
    np.testing.assert_allclose(ggn, hess, atol=1e-8)


@pytest.mark.slow
def test_linear_model_is_conjugate_bayesian_regression(x64):
    """A linear net (identity, one layer): N(μ, Σ) equals the exact conjugate posterior."""
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.normal(size=(20, 3)))
    y = jnp.asarray(x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3 + 0.2 * rng.normal(size=(20, 1)))
    noise_scale, delta = 0.3, 2.0
    design = np.hstack([np.asarray(x), np.ones((20, 1))])  # (W, b) ravel order: W rows, then b
    precision = design.T @ design / noise_scale**2 + delta * np.eye(4)
    cov = np.linalg.inv(precision)
    mean = cov @ design.T @ np.asarray(y)[:, 0] / noise_scale**2
    params = [{"W": jnp.asarray(mean[:3, None]), "b": jnp.asarray(mean[3:])}]
    post = la.laplace(
        params,
        x,
        y,
        likelihood="gaussian",
        noise_scale=noise_scale,
        prior_precision=delta,
        activation="identity",
    )
    theta, _ = ravel_pytree(params)
    assert ravel_pytree({"W": 1, "b": 2})[0].tolist() == [1, 2]  # dict keys sorted: W, b
    np.testing.assert_allclose(post.covariance, cov, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(post.mean, theta)
    # Σ is computed once per posterior; another δ is another posterior with its own Σ
    assert post.covariance is post.covariance
    other = post.with_prior_precision(2 * delta)
    cov_other = np.linalg.inv(design.T @ design / noise_scale**2 + 2 * delta * np.eye(4))
    np.testing.assert_allclose(other.covariance, cov_other, rtol=1e-8, atol=1e-12)
    # and the MAP is the minimiser of the regularised loss: its gradient vanishes there
    grad = jax.grad(
        lambda p: map_estimate.regularised_loss(
            p,
            x,
            y,
            apply_fn=functools.partial(nets.mlp_apply, activation_name="identity"),
            likelihood="gaussian",
            noise_scale=noise_scale,
            prior_precision=delta,
        )
    )(params)
    assert max(float(jnp.max(jnp.abs(g))) for g in jax.tree_util.tree_leaves(grad)) < 1e-8


@pytest.mark.slow
@pytest.mark.parametrize(
    "likelihood, widths", [("gaussian", (3, 4, 1)), ("categorical", (3, 4, 3))]
)
def test_regularised_loss_is_the_models_negative_log_joint(x64, likelihood, widths):
    """MAP's loss with δ = 1/prior_scale² is the MLP model's potential energy (its negative
    log joint) less the prior's normalising constant P·log(prior_scale·√(2π)), at every θ."""
    spec = models.MLP(widths, likelihood=likelihood, prior_scale=0.7, noise_scale=0.3)
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(size=(9, 3)))
    y = jnp.asarray(rng.normal(size=9) if likelihood == "gaussian" else rng.integers(0, 3, 9))
    y_map = y[:, None] if likelihood == "gaussian" else y  # MAP sees the outputs' shape
    for seed in range(3):
        params = nets.mlp_init(jax.random.PRNGKey(seed), widths, 2.0)
        sites = {f"{k}{i}": layer[k] for i, layer in enumerate(params) for k in layer}
        energy = potential_energy(spec.model, (), spec.kwargs(x, y), sites)
        loss = map_estimate.regularised_loss(
            params,
            x,
            y_map,
            apply_fn=nets.mlp_apply,
            likelihood=likelihood,
            noise_scale=spec.noise_scale,
            prior_precision=1 / spec.prior_scale**2,
        )
        size = ravel_pytree(params)[0].size
        constant = size * np.log(spec.prior_scale * np.sqrt(2 * np.pi))
        np.testing.assert_allclose(float(energy - loss), constant, rtol=1e-10)


@pytest.mark.slow
def test_linearised_variance_brute_force(x64):
    x, y, params = tiny_regression()
    post = la.laplace(params, x, y, likelihood="gaussian", noise_scale=0.4, activation="tanh")
    xt = jnp.linspace(-2, 2, 5)[:, None] * jnp.ones((1, 2))
    mean, var = la.linearised_predictive(post, xt)
    for i in range(5):
        jac = jax.jacrev(lambda t, i=i: post.model_fn(t, xt[i : i + 1])[0])(post.mean)
        expect = jac @ post.covariance @ jac.T + 0.4**2
        np.testing.assert_allclose(var[i], jnp.diag(expect), rtol=1e-8)
    np.testing.assert_allclose(mean, nets.mlp_apply(params, xt, "tanh"))


@pytest.mark.slow
def test_output_jacobian_matches_the_batch_jacobian(x64):
    x, _, params = tiny_regression(widths=(2, 3, 2))
    theta, unravel = ravel_pytree(params)
    model_fn = lambda t, xx: nets.mlp_apply(unravel(t), xx, "tanh")  # noqa: E731
    got = la.output_jacobian(model_fn, theta, x)
    assert got.shape == (x.shape[0], 2, theta.size)
    np.testing.assert_allclose(got, jax.jacrev(lambda t: model_fn(t, x))(theta), atol=1e-14)


def test_probit_probs_is_the_softmax_at_zero_variance_and_flattens_with_it():
    mean = jnp.array([[2.0, 0.0, -1.0]])
    np.testing.assert_allclose(la.probit_probs(mean, jnp.zeros_like(mean)), jax.nn.softmax(mean))
    wide = la.probit_probs(mean, jnp.full_like(mean, 100.0))
    assert float(wide.max()) < float(jax.nn.softmax(mean).max())  # variance flattens the softmax
    np.testing.assert_allclose(wide.sum(), 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        la.probit_probs(mean, jnp.zeros((1, 2)))


@pytest.mark.slow
def test_sampled_predictive_matches_linearised_for_linear_model(x64):
    x, y, _ = tiny_regression(widths=(2, 1))
    params = nets.mlp_init(KEY, (2, 1))
    post = la.laplace(params, x, y, likelihood="gaussian", noise_scale=0.5, activation="identity")
    m_lin, v_lin = la.linearised_predictive(post, x[:3])
    m_s, v_s = la.sampled_predictive(post, x[:3], KEY, num_samples=20000)
    np.testing.assert_allclose(m_s, m_lin, atol=0.03)
    np.testing.assert_allclose(v_s, v_lin, rtol=0.05)
    samples = post.sample(KEY, 20000)
    np.testing.assert_allclose(np.cov(np.asarray(samples).T), post.covariance, atol=0.02)


@pytest.mark.slow
def test_marginal_likelihood_gradient_zero_at_optimum(x64):
    x, y, params = tiny_regression(n=30)
    post = la.laplace(params, x, y, likelihood="gaussian", noise_scale=0.5, activation="tanh")
    best = la.optimise_prior_precision(post)
    grad = jax.grad(lambda d: la.log_marginal_likelihood(best, d))(best.prior_precision)
    assert abs(float(grad)) < 1e-6 * (1 + abs(float(la.log_marginal_likelihood(best))))
    for factor in (0.5, 2.0):
        assert la.log_marginal_likelihood(best) > la.log_marginal_likelihood(
            best, best.prior_precision * factor
        )


def test_marginal_likelihood_conjugate_evidence(x64):
    """Linear-Gaussian model: the Laplace evidence is exact, N(y; 0, σ²I + ΦΦᵀ/δ)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(15, 2))
    y = x @ np.array([[0.5], [1.0]]) + 0.1 * rng.normal(size=(15, 1))
    noise_scale, delta = 0.5, 3.0
    design = np.hstack([x, np.ones((15, 1))])
    cov = np.linalg.inv(design.T @ design / noise_scale**2 + delta * np.eye(3))
    mean = cov @ design.T @ y[:, 0] / noise_scale**2
    params = [{"W": jnp.asarray(mean[:2, None]), "b": jnp.asarray(mean[2:])}]
    post = la.laplace(
        params,
        jnp.asarray(x),
        jnp.asarray(y),
        likelihood="gaussian",
        noise_scale=noise_scale,
        prior_precision=delta,
        activation="identity",
    )
    k = noise_scale**2 * np.eye(15) + design @ design.T / delta
    sign, logdet = np.linalg.slogdet(k)
    exact = -0.5 * (y[:, 0] @ np.linalg.solve(k, y[:, 0]) + logdet + 15 * np.log(2 * np.pi))
    np.testing.assert_allclose(float(la.log_marginal_likelihood(post)), exact, rtol=1e-8)


def _linear_posterior(noise_scale):
    """A Laplace fit of a linear model y = x w + b + noise (the GGN is exact), at σ₀."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 3))
    y = x @ np.array([[0.5], [-1.0], [0.2]]) + 0.3 * rng.normal(size=(40, 1))
    params = [{"W": jnp.asarray(0.9 * np.array([[0.5], [-1.0], [0.2]])), "b": jnp.zeros(1)}]

    def fit(sigma):
        return la.laplace(
            params,
            jnp.asarray(x),
            jnp.asarray(y),
            likelihood="gaussian",
            noise_scale=sigma,
            activation="identity",
        )

    return fit(noise_scale), fit


def test_optimise_noise_scale_maximises_the_evidence_in_sigma_and_delta(x64):
    post, refit = _linear_posterior(0.5)
    best = la.optimise_noise_scale(post, num_targets=40)
    sigma, delta = best.noise_scale, best.prior_precision
    # the same posterior as a Laplace fit at the fitted σ (GGN ∝ 1/σ², log-likelihood)
    direct = refit(sigma).with_prior_precision(delta)
    np.testing.assert_allclose(best.eigvals, direct.eigvals, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(best.log_likelihood, direct.log_likelihood, rtol=1e-9)
    # MacKay's conditions at the optimum: γ = δ‖θ*‖² and σ² = SSE/(n − γ)
    lam, theta = np.asarray(best.eigvals), np.asarray(best.mean)
    gamma = np.sum(lam / (lam + delta))
    sse = -2 * sigma**2 * (best.log_likelihood + 20 * np.log(2 * np.pi * sigma**2))
    np.testing.assert_allclose(gamma, delta * theta @ theta, rtol=1e-6)
    np.testing.assert_allclose(sigma**2, sse / (40 - gamma), rtol=1e-5)
    # a maximum against independent refits at other σ and δ
    top = float(la.log_marginal_likelihood(direct))
    for s, d in ((1.2 * sigma, delta), (sigma / 1.2, delta), (sigma, 2 * delta)):
        assert float(la.log_marginal_likelihood(refit(s), d)) < top
    # the starting σ₀ does not matter: only θ* does
    again = la.optimise_noise_scale(refit(3.0), num_targets=40)
    np.testing.assert_allclose(again.noise_scale, sigma, rtol=1e-6)
    # the fitted σ is near the residual scale, not the σ₀ it started from
    assert 0.2 < sigma < 0.45


def test_optimise_noise_scale_rejects_bad_input(x64):
    post, _ = _linear_posterior(0.5)
    with pytest.raises(ValueError, match="num_targets"):
        la.optimise_noise_scale(post, num_targets=0)
    with pytest.raises(ValueError, match="increasing"):
        la.optimise_noise_scale(post, num_targets=40, lower=1.0, upper=0.1)
    with pytest.raises(ValueError, match="lower"):
        la.optimise_noise_scale(post, num_targets=40, lower=-1.0)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(10, 2)))
    params = nets.mlp_init(KEY, (2, 2), 0.5)
    classes = la.laplace(params, x, jnp.zeros(10, int), likelihood="categorical")
    with pytest.raises(ValueError, match="Gaussian likelihood"):
        la.optimise_noise_scale(classes, num_targets=10)


@pytest.mark.slow
def test_last_layer_subset_and_classification_predictives():
    rng = np.random.default_rng(4)
    x = jnp.asarray(rng.normal(size=(30, 2)), jnp.float32)
    y = jnp.asarray((x[:, 0] > 0).astype(int))
    params = nets.mlp_init(KEY, (2, 4, 2), 0.5)
    params, trace = map_estimate.train_map(
        params,
        x,
        y,
        likelihood="categorical",
        activation="tanh",
        num_steps=200,
        learning_rate=0.05,
    )
    assert trace[-1] < trace[0]
    full = la.laplace(params, x, y, likelihood="categorical", activation="tanh")
    last = la.laplace(
        params, x, y, likelihood="categorical", activation="tanh", subset="last_layer"
    )
    assert full.num_params == 2 * 4 + 4 + 4 * 2 + 2 and last.num_params == 4 * 2 + 2
    for post in (full, last):
        probit = la.linearised_predictive(post, x)
        mc = la.linearised_predictive(post, x, method="mc", rng_key=KEY, num_samples=4000)
        sampled = la.sampled_predictive(post, x, KEY, num_samples=200)
        for probs in (probit, mc, sampled):
            np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(probit, mc, atol=0.05)


@pytest.mark.slow
def test_bad_input():
    x, y, params = tiny_regression()
    with pytest.raises(ValueError, match="likelihood"):
        la.laplace(params, x, y, likelihood="poisson")
    with pytest.raises(ValueError, match="subset"):
        la.laplace(params, x, y, likelihood="gaussian", subset="middle")
    with pytest.raises(ValueError, match="noise_scale"):
        la.laplace(params, x, y, likelihood="gaussian", noise_scale=-1.0)
    with pytest.raises(ValueError, match="prior_precision"):
        la.laplace(params, x, y, likelihood="gaussian", prior_precision=0.0)
    with pytest.raises(TypeError, match="noise_scale"):
        la.laplace(params, x, y, likelihood="gaussian", noise_scale="big")
    with pytest.raises(ValueError, match="laplace: x has 12 rows but y has 3"):
        la.laplace(params, x, y[:3], likelihood="gaussian")
    with pytest.raises(ValueError, match="NaN"):
        la.laplace(params, x.at[0, 0].set(jnp.nan), y, likelihood="gaussian")
    with pytest.raises(ValueError, match="integer"):
        la.laplace(params, x, y, likelihood="categorical")
    with pytest.raises(ValueError, match="last layer|last-layer"):
        la.laplace({"W": 1.0}, x, y, likelihood="gaussian", subset="last_layer")
    post = la.laplace(params, x, y, likelihood="gaussian", activation="tanh")
    with pytest.raises(ValueError, match="num_samples"):
        post.sample(KEY, 0)
    with pytest.raises(ValueError, match="method"):
        la.linearised_predictive(
            la.laplace(params, x, jnp.zeros(12, int), likelihood="categorical", activation="tanh"),
            x,
            method="exact",
        )
    with pytest.raises(ValueError, match="lower"):
        la.optimise_prior_precision(post, lower=10.0, upper=1.0)
    with pytest.raises(ValueError, match="num_steps"):
        map_estimate.train_map(params, x, y, likelihood="gaussian", num_steps=0)
