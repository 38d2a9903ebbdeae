"""Tests of the closed forms of the narrow network ([SAP] §2.1, App. F.1).

Known answers: scipy log densities, the AM-GM inequality and its equality case,
brute-force minimisation, conjugate Gaussian posteriors and evidences (depth 1),
moments of products of Gaussians, Monte-Carlo averages. All in float64 (``x64``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, stats

from bnn_posteriors.theory import narrow_network as theory

pytestmark = pytest.mark.usefixtures("x64")

X = np.array([-1.0, 0.5, 2.0, 1.5])
Y = np.array([-0.4, 0.3, 1.1, 0.7])
SXY, SXX = float(X @ Y), float(X @ X)  # 3.8, 7.5
RNG = np.random.default_rng(0)


def conjugate_posterior(sigma, tau):
    """Mean and variance of w | y for depth 1 (β = w): a Gaussian."""
    precision = SXX / sigma**2 + 1 / tau**2
    return SXY / sigma**2 / precision, 1 / precision


def folded_normal_mean(m, v):
    """E|β| for β ~ N(m, v)."""
    sd = np.sqrt(v)
    folded = sd * np.sqrt(2 / np.pi) * np.exp(-(m**2) / (2 * v))
    return folded + m * (1 - 2 * stats.norm.cdf(-m / sd))


def numpy_g(beta, sigma, tau, depth):
    beta = np.asarray(beta)[..., None]
    rss = np.sum((Y - beta * X) ** 2, axis=-1)
    return rss / (2 * sigma**2) + depth * np.abs(beta[..., 0]) ** (2 / depth) / (2 * tau**2)


def equal_magnitude_point(beta, depth):
    """w with |w_l| = |β|^{1/L} and ∏ w = β (the first weight carries the sign)."""
    w = np.full(depth, np.abs(beta) ** (1 / depth))
    w[0] *= np.sign(beta)
    return w


# --- likelihood, posterior, g = g1 + g2 -----------------------------------------------------


def test_ls_slope():
    assert float(theory.ls_slope(X, Y)) == pytest.approx(SXY / SXX)
    assert float(theory.ls_slope([1.0, 2.0], [3.0, 6.0])) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("x", "y"), [(X, Y[:3]), (X[:, None], Y[:, None]), (np.float64(1.0), np.float64(1.0))]
)
def test_bad_data_shapes_are_rejected(x, y):
    with pytest.raises(ValueError, match="x and y must be 1-D of equal length"):
        theory.ls_slope(x, y)


def test_neg_log_likelihood_matches_scipy_batched():
    betas = np.array([[-1.0, 0.0], [0.5, 2.0]])
    got = theory.neg_log_likelihood(betas, X, Y, 0.7)
    assert got.shape == (2, 2)
    expected = -stats.norm.logpdf(Y, betas[..., None] * X, 0.7).sum(-1)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12)


def test_neg_log_posterior_is_negative_log_joint_up_to_constants():
    sigma, tau = 0.5, 1.5
    w = RNG.normal(size=(5, 3))
    beta = w.prod(-1)
    log_joint = stats.norm.logpdf(Y, beta[:, None] * X, sigma).sum(-1) + stats.norm.logpdf(
        w, 0, tau
    ).sum(-1)
    constants = 0.5 * X.size * np.log(2 * np.pi * sigma**2) + 1.5 * np.log(2 * np.pi * tau**2)
    got = theory.neg_log_posterior(w, X, Y, sigma, tau)
    np.testing.assert_allclose(np.asarray(got), -log_joint - constants, rtol=1e-12)


def test_g1_g2_and_g():
    beta, sigma, tau, depth = np.array([-0.8, 0.0, 0.3, 1.7]), 0.6, 1.3, 3
    g1 = theory.g1(beta, X, Y, sigma)
    np.testing.assert_allclose(
        np.asarray(g1), ((Y - beta[:, None] * X) ** 2).sum(-1) / (2 * sigma**2), rtol=1e-12
    )
    g2 = theory.g2(beta, depth, tau)
    np.testing.assert_allclose(np.asarray(g2), 3 * np.abs(beta) ** (2 / 3) / (2 * tau**2))
    g = theory.g(beta, X, Y, sigma, tau, depth)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g1 + g2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), numpy_g(beta, sigma, tau, depth), rtol=1e-12)


@pytest.mark.parametrize("depth", [2, 3, 5])
def test_amgm_neg_log_posterior_bounded_below_by_g(depth):
    sigma, tau = 0.5, 1.2
    w = 1.5 * RNG.normal(size=(200, depth))
    nlp = np.asarray(theory.neg_log_posterior(w, X, Y, sigma, tau))
    g = np.asarray(theory.g(w.prod(-1), X, Y, sigma, tau, depth))
    assert np.all(nlp >= g - 1e-12)
    assert np.mean(nlp - g) > 0.1  # strict for generic w


@pytest.mark.parametrize("depth", [2, 3, 4])
@pytest.mark.parametrize("beta", [0.45, -1.3])
def test_amgm_equality_at_equal_magnitudes(depth, beta):
    sigma, tau = 0.5, 0.8
    w = equal_magnitude_point(beta, depth)
    # Flip an even number of signs: the product, hence g, is unchanged.
    w_flipped = w * np.array([-1.0, -1.0] + [1.0] * (depth - 2))
    g = float(theory.g(beta, X, Y, sigma, tau, depth))
    for point in (w, w_flipped):
        assert np.prod(point) == pytest.approx(beta)
        assert float(theory.neg_log_posterior(point, X, Y, sigma, tau)) == pytest.approx(g)


@pytest.mark.parametrize("depth", [0, -1, 2.0, "3"])
def test_g2_rejects_bad_depth(depth):
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        theory.g2(1.0, depth, 1.0)


def test_depth_accepts_numpy_integers():
    assert float(theory.g2(8.0, np.int64(3), 1.0)) == pytest.approx(6.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: theory.neg_log_likelihood(0.0, X, Y, 0.0),
        lambda: theory.g1(0.0, X, Y, -1.0),
        lambda: theory.lasso_mode(X, Y, -1.0, 1.0),
    ],
)
def test_non_positive_sigma_is_rejected(call):
    with pytest.raises(ValueError, match="sigma must be a positive number"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: theory.neg_log_posterior(np.ones(2), X, Y, 1.0, 0.0),
        lambda: theory.g2(1.0, 2, -1.0),
        lambda: theory.lasso_mode(X, Y, 1.0, 0.0),
        lambda: theory.mfvi_kl(np.zeros(2), np.ones(2), -2.0),
        lambda: theory.log_abs_product_density(2, 0.0, np.linspace(-5, 2, 50)),
    ],
)
def test_non_positive_tau_is_rejected(call):
    with pytest.raises(ValueError, match="tau must be a positive number"):
        call()


# --- penalised objectives and their 1-D minimisation ----------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3, 6])
def test_penalised_w_equals_penalised_beta_at_equal_magnitudes(depth):
    sigma, psi, beta = 0.5, 0.7, -0.6
    w = equal_magnitude_point(beta, depth)
    pw = float(theory.penalised_w(w, X, Y, sigma, psi))
    pb = float(theory.penalised_beta(beta, X, Y, sigma, psi, depth))
    assert pw == pytest.approx(pb)
    expected = -stats.norm.logpdf(Y, beta * X, sigma).sum() + psi * np.sum(w**2)
    assert pw == pytest.approx(expected)


def test_penalised_w_is_bounded_below_by_penalised_beta():
    sigma, psi, depth = 0.5, 0.3, 3
    w = RNG.normal(size=(100, depth))
    pw = np.asarray(theory.penalised_w(w, X, Y, sigma, psi))
    pb = np.asarray(theory.penalised_beta(w.prod(-1), X, Y, sigma, psi, depth))
    assert np.all(pw >= pb - 1e-12)


def test_penalised_beta_rejects_bad_depth():
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        theory.penalised_beta(1.0, X, Y, 1.0, 0.1, 0)


@pytest.mark.parametrize("center", [0.1, 0.3, 0.9])
def test_minimise_1d_finds_minimiser_of_a_quadratic(center):
    # The search segment is [0, 2 β̂] ≈ [0, 1.013].
    beta, value = theory.minimise_1d(lambda b: (b - center) ** 2 + 2.0, X, Y)
    assert beta == pytest.approx(center, abs=1e-6)
    assert value == pytest.approx(2.0, abs=1e-10)


def test_minimise_1d_for_negative_slope_searches_negative_side():
    beta, _ = theory.minimise_1d(lambda b: (b + 0.2) ** 2, X, -Y)
    assert beta == pytest.approx(-0.2, abs=1e-6)


def test_minimise_1d_picks_global_basin():
    # Two wells, the deeper one at 0.8.
    fn = lambda b: -jnp.exp(-(((b - 0.2) / 0.05) ** 2)) - 2 * jnp.exp(-(((b - 0.8) / 0.05) ** 2))
    beta, value = theory.minimise_1d(fn, X, Y)
    assert beta == pytest.approx(0.8, abs=1e-6)
    assert value == pytest.approx(-2.0, abs=1e-8)


def brute_force_lasso(sigma, tau, y=Y):
    objective = lambda b: np.sum((y - b * X) ** 2) / (2 * sigma**2) + abs(b) / tau**2
    grid = np.linspace(-3, 3, 60001)
    start = grid[np.argmin([objective(b) for b in grid[::100]]) * 100]
    res = optimize.minimize_scalar(
        objective, bounds=(start - 0.02, start + 0.02), method="bounded", options={"xatol": 1e-10}
    )
    return res.x


@pytest.mark.parametrize(
    ("sigma", "tau", "sign"),
    [(0.5, 1.0, 1.0), (0.5, 1.0, -1.0), (1.0, 0.8, 1.0), (2.0, 1.0, 1.0), (1.0, 0.5, -1.0)],
)
def test_lasso_mode_equals_brute_force_minimum_of_g(sigma, tau, sign):
    y = sign * Y
    mode = float(theory.lasso_mode(X, y, sigma, tau))
    assert mode == pytest.approx(brute_force_lasso(sigma, tau, y), abs=1e-6)
    # And it is the minimiser of theory.g for L = 2.
    at_mode = float(theory.g(mode, X, y, sigma, tau, 2))
    for delta in (-1e-3, 1e-3):
        assert at_mode < float(theory.g(mode + delta, X, y, sigma, tau, 2))


@pytest.mark.parametrize(("sigma", "tau"), [(2.0, 1.0), (1.0, 0.5), (1.0, 1 / np.sqrt(3.8))])
def test_lasso_mode_is_thresholded_to_zero(sigma, tau):
    # |Σxy| = 3.8 ≤ σ²/τ².
    assert sigma**2 / tau**2 >= SXY - 1e-12
    assert float(theory.lasso_mode(X, Y, sigma, tau)) == pytest.approx(0.0, abs=1e-12)


def test_lasso_mode_interior_closed_form():
    # s = 3.8, σ²/τ² = 0.25, Σx² = 7.5.
    assert float(theory.lasso_mode(X, Y, 0.5, 1.0)) == pytest.approx(3.55 / 7.5)


# --- mean-field VI: KL, AM-GM bound, expected log-likelihood, ELBO --------------------------


def gaussian_kl(mu, s, tau):
    """KL(N(μ, s²) ‖ N(0, τ²)) for scalars."""
    return np.log(tau / s) + (s**2 + mu**2) / (2 * tau**2) - 0.5


def test_mfvi_kl_is_sum_of_gaussian_kls():
    mu, s, tau = np.array([0.3, -1.2, 2.0]), np.array([0.5, 1.0, 0.1]), 1.5
    expected = sum(gaussian_kl(m, v, tau) for m, v in zip(mu, s, strict=True))
    assert float(theory.mfvi_kl(mu, s, tau)) == pytest.approx(expected, rel=1e-12)


def test_mfvi_kl_is_zero_at_the_prior_and_batches():
    mu = np.zeros((4, 3))
    s = np.full((4, 3), 0.7)
    np.testing.assert_allclose(np.asarray(theory.mfvi_kl(mu, s, 0.7)), np.zeros(4), atol=1e-12)


@pytest.mark.slow
def test_mfvi_kl_matches_monte_carlo():
    mu, s, tau = jnp.array([0.3, -1.2]), jnp.array([0.5, 1.0]), 1.5
    estimate, se = theory.mfvi_kl_monte_carlo(jax.random.key(0), mu, s, tau, 50_000)
    assert 0 < se < 0.01
    assert estimate == pytest.approx(float(theory.mfvi_kl(mu, s, tau)), abs=4 * se)


def test_gaussian_kl_is_elementwise_closed_form():
    mu, sd = np.array([[0.3, -1.2], [0.0, 2.0]]), np.array([[0.5, 1.0], [1.5, 0.1]])
    expected = np.vectorize(gaussian_kl)(mu, sd, 1.5)
    np.testing.assert_allclose(np.asarray(theory.gaussian_kl(mu, sd, 1.5)), expected, rtol=1e-12)
    assert float(theory.gaussian_kl(0.0, 1.5, 1.5)) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("s", [np.array([0.5, 0.0]), np.array([-0.1, 1.0])])
def test_mfvi_kl_rejects_non_positive_s(s):
    with pytest.raises(ValueError, match="standard deviations s of q must be positive"):
        theory.mfvi_kl(np.zeros(2), s, 1.0)


def test_amgm_bound():
    mu = np.array([[1.0, 4.0], [-2.0, 2.0], [0.5, 0.0]])
    np.testing.assert_allclose(np.asarray(theory.amgm_bound(mu)), [8.0, 8.0, 0.0])
    assert float(theory.amgm_bound(np.array([2.0, -4.0, 1.0]))) == pytest.approx(12.0)
    random = RNG.normal(size=(100, 4))
    assert np.all(np.asarray(theory.amgm_bound(random)) <= np.sum(random**2, -1) + 1e-12)


def test_mfvi_expected_log_likelihood_matches_monte_carlo():
    mu, s, sigma = np.array([0.9, -0.6, 1.1]), np.array([0.3, 0.2, 0.4]), 0.5
    w = mu + s * RNG.normal(size=(400_000, 3))
    loglik = -np.asarray(theory.neg_log_likelihood(w.prod(-1), X, Y, sigma))
    se = loglik.std() / np.sqrt(loglik.size)
    got = float(theory.mfvi_expected_log_likelihood(mu, s, X, Y, sigma))
    assert got == pytest.approx(loglik.mean(), abs=4 * se)


def test_mfvi_expected_log_likelihood_at_zero_variance_is_log_likelihood():
    mu = np.array([0.5, -1.5])
    got = float(theory.mfvi_expected_log_likelihood(mu, np.zeros(2), X, Y, 0.8))
    assert got == pytest.approx(stats.norm.logpdf(Y, -0.75 * X, 0.8).sum())


def test_mfvi_elbo_at_exact_posterior_is_log_evidence():
    # Depth 1: q = exact posterior makes KL(q ‖ posterior) = 0, so ELBO = log p(y).
    sigma, tau = 0.5, 1.3
    m, v = conjugate_posterior(sigma, tau)
    cov = sigma**2 * np.eye(X.size) + tau**2 * np.outer(X, X)
    log_evidence = stats.multivariate_normal(np.zeros(X.size), cov).logpdf(Y)
    elbo = float(theory.mfvi_elbo(np.array([m]), np.array([np.sqrt(v)]), X, Y, sigma, tau))
    assert elbo == pytest.approx(log_evidence, rel=1e-10)
    # Any other q has a lower ELBO.
    worse = theory.mfvi_elbo(np.array([m + 0.1]), np.array([np.sqrt(v)]), X, Y, sigma, tau)
    assert float(worse) < elbo


def _best_numerical_elbo(sigma, tau, y=Y):
    """Maximise the L = 2 ELBO over (μ1, μ2, log s1, log s2) from many starts (scipy)."""

    def negative(p):
        return -float(theory.mfvi_elbo(p[:2], np.exp(p[2:]), X, y, sigma, tau))

    starts = np.column_stack([RNG.normal(0, 1.0, (24, 2)), np.log(tau) + RNG.normal(0, 1, (24, 2))])
    options = {"gtol": 1e-10}
    fits = [optimize.minimize(negative, p0, method="BFGS", options=options) for p0 in starts]
    best = min(fits, key=lambda f: f.fun)
    return best.x, -best.fun


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "tau"), [(0.5, 0.2), (0.5, 0.5), (0.5, 1.0), (1.0, 2.0)])
def test_mfvi_two_layer_optimum_matches_numerical_optimum(sigma, tau):
    opt = theory.mfvi_two_layer_optimum(X, Y, sigma, tau)
    p, best = _best_numerical_elbo(sigma, tau)
    assert opt["nu"] == pytest.approx(p[0] * p[1], abs=1e-6)
    mu = np.full(2, np.sqrt(abs(opt["nu"]))) * np.array([1.0, np.sign(SXY)])
    closed = float(theory.mfvi_elbo(mu, np.full(2, opt["s"]), X, Y, sigma, tau))
    assert closed == pytest.approx(best, abs=1e-8)
    # A stationary point of the ELBO in (μ, s).
    grad = jax.grad(lambda m, s: theory.mfvi_elbo(m, s, X, Y, sigma, tau), argnums=(0, 1))(
        jnp.asarray(mu), jnp.full(2, opt["s"])
    )
    np.testing.assert_allclose(np.concatenate(grad), 0.0, atol=1e-9)


@pytest.mark.slow
def test_mfvi_two_layer_optimum_threshold_and_stability():
    sigma = 0.5
    tau2_c = sigma**2 / (SXY - sigma**2 * SXX / SXY)
    for tau2 in (0.5 * tau2_c, 0.99 * tau2_c, 1.01 * tau2_c, 2 * tau2_c, 10 * tau2_c):
        opt = theory.mfvi_two_layer_optimum(X, Y, sigma, np.sqrt(tau2))
        assert opt["tau2_critical"] == pytest.approx(tau2_c, rel=1e-12)
        # μ = 0 is a stable fixed point exactly where it is the optimum.
        assert (opt["nu"] == 0.0) == (opt["zero_curvature"] < 0) == (tau2 < tau2_c)
        lasso = float(theory.lasso_mode(X, Y, sigma, np.sqrt(tau2)))
        assert opt["nu"] == pytest.approx(max(lasso - sigma**2 / SXY, 0.0), abs=1e-14)
    at_c = theory.mfvi_two_layer_optimum(X, Y, sigma, np.sqrt(tau2_c))
    assert at_c["zero_curvature"] == pytest.approx(0.0, abs=1e-9)
    # The Hessian in μ at μ = 0 (s at its optimum there) has largest eigenvalue λ0.
    low = theory.mfvi_two_layer_optimum(X, Y, sigma, 0.2)
    hess = jax.hessian(lambda m: theory.mfvi_elbo(m, jnp.full(2, low["s"]), X, Y, sigma, 0.2))(
        jnp.zeros(2)
    )
    assert float(jnp.linalg.eigvalsh(hess).max()) == pytest.approx(low["zero_curvature"])


def test_mfvi_two_layer_optimum_sign_and_weak_data():
    opt = theory.mfvi_two_layer_optimum(X, -Y, 0.5, 1.0)
    assert opt["nu"] < 0
    assert opt["nu"] == pytest.approx(-theory.mfvi_two_layer_optimum(X, Y, 0.5, 1.0)["nu"])
    # S² ≤ σ² Σx²: the optimum is μ = 0 for every τ.
    weak = theory.mfvi_two_layer_optimum(X, Y, 5.0, 100.0)
    assert weak["nu"] == 0.0 and weak["tau2_critical"] == np.inf and weak["zero_curvature"] < 0
    with pytest.raises(ValueError, match="all zeros"):
        theory.mfvi_two_layer_optimum(np.zeros(3), np.ones(3), 1.0, 1.0)
    with pytest.raises(ValueError, match="tau"):
        theory.mfvi_two_layer_optimum(X, Y, 1.0, 0.0)


# --- exact posterior of β by quadrature -----------------------------------------------------

U = np.linspace(-40.0, 15.0, 2751)  # du = 0.02
DU = U[1] - U[0]


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 2, 3, 5])
@pytest.mark.parametrize("tau", [0.5, 1.0, 2.0])
def test_log_abs_product_density_integrates_to_one(depth, tau):
    dens = theory.log_abs_product_density(depth, tau, U)
    assert dens.shape == U.shape
    assert np.all(dens >= 0)
    assert dens.sum() * DU == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("tau", [0.5, 2.0])
def test_log_abs_product_density_depth_one_is_density_of_log_abs_w(tau):
    # u = log|w| with |w| half-normal: p(u) = p_|w|(e^u) e^u.
    expected = stats.halfnorm.pdf(np.exp(U), scale=tau) * np.exp(U)
    np.testing.assert_allclose(theory.log_abs_product_density(1, tau, U), expected, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [2, 3, 4])
@pytest.mark.parametrize("tau", [1.0, 1.5])
def test_log_abs_product_density_moments(depth, tau):
    dens = theory.log_abs_product_density(depth, tau, U)
    # E|β| = (E|w|)^L = (τ √(2/π))^L and E log|β| = L (log τ − (γ + log 2)/2).
    mean_abs = np.sum(np.exp(U) * dens) * DU
    assert mean_abs == pytest.approx((tau * np.sqrt(2 / np.pi)) ** depth, rel=1e-6)
    mean_log = np.sum(U * dens) * DU
    assert mean_log == pytest.approx(depth * (np.log(tau) - (np.euler_gamma + np.log(2)) / 2))


def test_log_abs_product_density_depth_three_mean_abs_beta():
    dens = theory.log_abs_product_density(3, 1.0, U)
    assert np.sum(np.exp(U) * dens) * DU == pytest.approx((2 / np.pi) ** 1.5, rel=1e-6)


@pytest.mark.slow
def test_log_abs_product_density_on_a_grid_not_aligned_with_zero():
    u = (np.arange(7001) - 6000.5) * 0.005  # uniform, but 0 lies between two grid points
    dens = theory.log_abs_product_density(3, 1.0, u)
    mean_abs = np.sum(np.exp(u) * dens) * (u[1] - u[0])
    assert mean_abs == pytest.approx((2 / np.pi) ** 1.5, rel=1e-4)


@pytest.mark.parametrize("depth", [0, -2, 1.5])
def test_log_abs_product_density_rejects_bad_depth(depth):
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        theory.log_abs_product_density(depth, 1.0, U)


@pytest.mark.parametrize(
    "u", [np.array([0.0, 1.0]), np.array([0.0, 0.1, 0.5, 0.6]), np.zeros((3, 3))]
)
def test_log_abs_product_density_rejects_bad_grid(u):
    with pytest.raises(ValueError, match="u must be a uniform, increasing 1-D grid"):
        theory.log_abs_product_density(2, 1.0, u)


@pytest.mark.parametrize(("sigma", "tau"), [(0.5, 1.0), (2.0, 0.7)])
def test_posterior_beta_quadrature_depth_one_is_conjugate(sigma, tau):
    m, v = conjugate_posterior(sigma, tau)
    post = theory.posterior_beta_quadrature(1, X, Y, sigma, tau)
    assert post["weight_pos"].sum() + post["weight_neg"].sum() == pytest.approx(1.0)
    assert post["u"].shape == post["weight_pos"].shape == post["weight_neg"].shape
    assert post["mean_abs_beta"] == pytest.approx(folded_normal_mean(m, v), rel=1e-5)
    assert post["prob_positive"] == pytest.approx(stats.norm.cdf(m / np.sqrt(v)), rel=1e-5)


@pytest.mark.slow
def test_posterior_beta_quadrature_depth_two_matches_2d_grid():
    sigma, tau = 1.0, 1.0
    grid = np.linspace(-5, 5, 800)  # even: no grid line on an axis, where β = 0
    w1, w2 = np.meshgrid(grid, grid, indexing="ij")
    log_post = -np.asarray(theory.neg_log_posterior(np.stack([w1, w2], -1), X, Y, sigma, tau))
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    beta = w1 * w2
    post = theory.posterior_beta_quadrature(2, X, Y, sigma, tau)
    assert post["mean_abs_beta"] == pytest.approx(np.sum(np.abs(beta) * weights), rel=2e-4)
    assert post["prob_positive"] == pytest.approx(np.sum(weights[beta > 0]), rel=2e-4)


def test_posterior_beta_quadrature_is_symmetric_in_the_sign_of_y():
    plus = theory.posterior_beta_quadrature(3, X, Y, 0.5, 1.0)
    minus = theory.posterior_beta_quadrature(3, X, -Y, 0.5, 1.0)
    assert plus["prob_positive"] > 0.9
    assert minus["prob_positive"] == pytest.approx(1 - plus["prob_positive"], abs=1e-10)
    np.testing.assert_allclose(minus["weight_neg"], plus["weight_pos"], atol=1e-14)


# --- scaling symmetry -----------------------------------------------------------------------


def test_rescale_keeps_the_product_and_the_likelihood():
    w = RNG.normal(size=(6, 3))
    c = np.linspace(0.5, 3.0, 6)
    out = np.asarray(theory.rescale(w, 0, 2, c))
    np.testing.assert_allclose(out[:, 0], w[:, 0] * c)
    np.testing.assert_allclose(out[:, 2], w[:, 2] / c)
    np.testing.assert_array_equal(out[:, 1], w[:, 1])
    np.testing.assert_allclose(out.prod(-1), w.prod(-1), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(theory.g1(out.prod(-1), X, Y, 0.5)),
        np.asarray(theory.g1(w.prod(-1), X, Y, 0.5)),
        rtol=1e-12,
    )


@pytest.mark.parametrize(("i", "j"), [(1, 1), (0, 3), (-1, 0)])
def test_rescale_rejects_bad_indices(i, j):
    with pytest.raises(ValueError, match="need two distinct layer indices in"):
        theory.rescale(np.ones(3), i, j, 2.0)


@pytest.mark.parametrize("c", [0.0, -1.0, np.array([1.0, -2.0])])
def test_rescale_rejects_non_positive_factor(c):
    with pytest.raises(ValueError, match="scaling factor c must be positive"):
        theory.rescale(np.ones((2, 3)), 0, 1, c)


@pytest.mark.parametrize("u", [np.array([0.0]), np.linspace(3.0, -3.0, 50)])
def test_log_abs_product_density_rejects_degenerate_or_descending_grids(u):
    with pytest.raises(ValueError, match="uniform, increasing 1-D grid"):
        theory.log_abs_product_density(2, 1.0, u)


def test_log_abs_product_density_rejects_a_grid_that_misses_the_mass():
    with pytest.raises(ValueError, match="holds only"):
        theory.log_abs_product_density(2, 1.0, np.linspace(0.5, 3.0, 200))


@pytest.mark.slow
@pytest.mark.parametrize(("n", "half_width"), [(100, 1.5), (200, 2.0)])
def test_quadrature_survives_a_strong_likelihood_and_a_tight_prior(n, half_width):
    """Regression: the prior density of β was floored at 1e-300 before its log, so where a
    strong likelihood met a tight prior (σ = 0.173, τ² = 2e-4) the floor won and E|β| came
    out near β̂ = 1 (0.9996 for n = 100, where the truth is 2e-4). Reference: depth 2,
    p(β) = K₀(|β|/τ²)/(πτ²), summed on a fine grid of β in log space."""
    from scipy import special

    x = np.linspace(-half_width, half_width, n)
    y = x.copy()  # β̂ = 1
    sigma, tau = 0.173, np.sqrt(2e-4)
    found = theory.posterior_beta_quadrature(2, x, y, sigma, tau)["mean_abs_beta"]
    beta = np.linspace(1e-9, 1.5, 1_500_001)
    z = beta / tau**2
    log_prior = np.log(special.k0e(z)) - z
    log_post = {
        s: log_prior - np.asarray(theory.g1(jnp.asarray(s * beta), x, y, sigma))
        for s in (1.0, -1.0)
    }
    top = max(v.max() for v in log_post.values())
    weights = sum(np.exp(v - top) for v in log_post.values())
    reference = float(np.sum(beta * weights) / np.sum(weights))
    assert found == pytest.approx(reference, rel=0.05)


def test_log_densities_at_several_depths_are_the_single_depth_densities_in_one_pass():
    u = np.linspace(-40.0, 4.0, 1201)
    several = theory.log_densities_of_log_abs_product((3, 1, 5), 1.0, u)
    assert list(several) == [1, 3, 5]
    for depth in (1, 3, 5):
        np.testing.assert_allclose(
            several[depth], theory.log_density_of_log_abs_product(depth, 1.0, u)
        )
    q = theory.posterior_beta_quadrature(3, X, Y, 0.5, 1.0, u_min=-40.0, num=1201)
    given = theory.posterior_beta_quadrature(
        3, X, Y, 0.5, 1.0, u_min=-40.0, num=1201, log_prior=several[3]
    )
    assert given["mean_abs_beta"] == pytest.approx(q["mean_abs_beta"])
    with pytest.raises(ValueError, match="depths is empty"):
        theory.log_densities_of_log_abs_product((), 1.0, u)
    with pytest.raises(ValueError, match="at L = 5"):
        theory.log_densities_of_log_abs_product((5,), 1.0, np.linspace(-5.0, 4.0, 101))
    with pytest.raises(ValueError, match="log_prior must be on the grid"):
        theory.posterior_beta_quadrature(3, X, Y, 0.5, 1.0, log_prior=several[3])
