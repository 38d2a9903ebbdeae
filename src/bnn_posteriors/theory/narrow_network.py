"""Closed forms for the narrow network of [SAP] §2.1 and App. F.1.

Model: f(x) = β·x with β = ∏_l w_l, y_i ~ N(β x_i, σ²), w_l ~ N(0, τ²).
``x`` and ``y`` are 1-D arrays of the same length n; ``w`` has shape (..., L).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize

from bnn_posteriors.util.validate import positive, positive_int


def _xy(x, y):
    x, y = jnp.asarray(x), jnp.asarray(y)
    if x.ndim != 1 or y.shape != x.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    return x, y


def ls_slope(x, y):
    """Least-squares slope β̂ = Σ x_i y_i / Σ x_i², the maximum-likelihood product ([SAP] §2.1)."""
    x, y = _xy(x, y)
    return jnp.sum(x * y) / jnp.sum(x**2)


def neg_log_likelihood(beta, x, y, sigma):
    """−log p(y | x, β) = Σ (y_i − β x_i)² / (2σ²) + (n/2) log(2πσ²); ``beta`` (...,) → (...)."""
    x, y = _xy(x, y)
    sigma = positive("sigma", sigma)
    beta = jnp.asarray(beta)[..., None]
    rss = jnp.sum((y - beta * x) ** 2, axis=-1)
    return rss / (2 * sigma**2) + 0.5 * x.size * jnp.log(2 * jnp.pi * sigma**2)


def neg_log_posterior(w, x, y, sigma, tau):
    """Unnormalised −log p(w | y, x) of eq. (24): g₁(∏w) + Σ_l w_l² / (2τ²); ``w`` (..., L)."""
    tau = positive("tau", tau)
    w = jnp.asarray(w)
    g1_ = g1(jnp.prod(w, axis=-1), x, y, sigma)
    return g1_ + jnp.sum(w**2, axis=-1) / (2 * tau**2)


def g1(beta, x, y, sigma):
    """Likelihood part of eq. (27): g₁(β) = Σ (y_i − β x_i)² / (2σ²)."""
    x, _ = _xy(x, y)
    sigma = positive("sigma", sigma)
    return neg_log_likelihood(beta, x, y, sigma) - 0.5 * x.size * jnp.log(2 * jnp.pi * sigma**2)


def g2(beta, depth, tau):
    """Prior part of eq. (27): g₂(β) = L |β|^{2/L} / (2τ²), the AM-GM bound of Σ w_l²/(2τ²)."""
    tau = positive("tau", tau)
    _depth(depth)
    return depth * jnp.abs(jnp.asarray(beta)) ** (2.0 / depth) / (2 * tau**2)


def g(beta, x, y, sigma, tau, depth):
    """Eq. (27): g(β) = g₁(β) + g₂(β), whose minima match those of eq. (24) under β = ∏ w_l."""
    return g1(beta, x, y, sigma) + g2(beta, depth, tau)


def penalised_w(w, x, y, sigma, psi):
    """Eq. (2): −log p(y | x, w) + ψ ‖w‖²; ``w`` (..., L) → (...)."""
    w = jnp.asarray(w)
    return neg_log_likelihood(jnp.prod(w, axis=-1), x, y, sigma) + psi * jnp.sum(w**2, axis=-1)


def penalised_beta(beta, x, y, sigma, psi, depth):
    """Eq. (3): −log p(y | x, β) + ψ L |β|^{2/L}."""
    _depth(depth)
    beta = jnp.asarray(beta)
    return neg_log_likelihood(beta, x, y, sigma) + psi * depth * jnp.abs(beta) ** (2.0 / depth)


def minimise_1d(fn, x, y, *, grid: int = 20001):
    """Global minimiser of a function of β on the segment between 0 and β̂ (and 2β̂ beyond).

    Penalised objectives (eqs. 3, 27) have their minima between 0 and β̂ = ls_slope.
    A dense grid finds the best basin, bounded Brent refines it.
    Returns ``(beta_min, value_min)`` as floats.
    """
    bhat = float(ls_slope(x, y))
    lo, hi = sorted((0.0, 2.0 * bhat))
    grid_b = np.linspace(lo, hi, grid)
    vals = np.asarray(fn(jnp.asarray(grid_b)))
    i = int(np.argmin(vals))
    a, b = grid_b[max(i - 1, 0)], grid_b[min(i + 1, grid - 1)]
    res = optimize.minimize_scalar(
        lambda t: float(fn(jnp.asarray(t))),
        bounds=(a, b),
        method="bounded",
        options={"xatol": 1e-12},
    )
    if res.fun <= vals[i]:
        return float(res.x), float(res.fun)
    return float(grid_b[i]), float(vals[i])


def lasso_mode(x, y, sigma, tau):
    """Posterior mode of β for L = 2 (App. F.1): a soft threshold.

    g(β) = Σ(y_i − βx_i)²/(2σ²) + |β|/τ² is minimised by
    β* = sgn(s) · max(|s| − σ²/τ², 0) / Σx_i², with s = Σ x_i y_i.
    With Σx² = σ² = 1 this is the seed's form sgn(s)(|s| − 1/τ²)₊.
    """
    x, y = _xy(x, y)
    sigma, tau = positive("sigma", sigma), positive("tau", tau)
    s = jnp.sum(x * y)
    return jnp.sign(s) * jnp.maximum(jnp.abs(s) - sigma**2 / tau**2, 0.0) / jnp.sum(x**2)


def gaussian_kl(mu, sd, prior_scale):
    """KL(N(μ, sd²) ‖ N(0, s²)) of each parameter, elementwise (no checks, jit-able):
    log(s/sd) + (sd² + μ²)/(2s²) − 1/2, with s = ``prior_scale``."""
    return jnp.log(prior_scale / sd) + (sd**2 + mu**2) / (2 * prior_scale**2) - 0.5


def mfvi_kl(mu, s, tau):
    """KL(q ‖ prior) of a factorised Gaussian q = ∏ N(μ_l, s_l²) and N(0, τ²) ([SAP] §2.1).

    Σ_l [log(τ²/s_l²) − 1 + (s_l² + μ_l²)/τ²] / 2; ``mu``, ``s`` (..., L) → (...).
    """
    tau = positive("tau", tau)
    mu, s = jnp.asarray(mu), jnp.asarray(s)
    if not isinstance(s, jax.core.Tracer) and bool(jnp.any(s <= 0)):
        raise ValueError("the standard deviations s of q must be positive")
    return jnp.sum(gaussian_kl(mu, s, tau), axis=-1)


def amgm_bound(mu):
    """AM-GM lower bound of Σ_l μ_l²: L |ν|^{2/L} with ν = ∏ μ_l ([SAP] §2.1); (..., L) → (...)."""
    mu = jnp.asarray(mu)
    depth = mu.shape[-1]
    return depth * jnp.abs(jnp.prod(mu, axis=-1)) ** (2.0 / depth)


def mfvi_expected_log_likelihood(mu, s, x, y, sigma):
    """E_q[log p(y | x, w)] for factorised Gaussian q, in closed form.

    With E[β] = ∏ μ_l and E[β²] = ∏ (μ_l² + s_l²):
    −(n/2) log(2πσ²) − [Σy² − 2 E[β] Σxy + E[β²] Σx²] / (2σ²).
    """
    x, y = _xy(x, y)
    sigma = positive("sigma", sigma)
    mu, s = jnp.asarray(mu), jnp.asarray(s)
    e_beta = jnp.prod(mu, axis=-1)
    e_beta2 = jnp.prod(mu**2 + s**2, axis=-1)
    quad = jnp.sum(y**2) - 2 * e_beta * jnp.sum(x * y) + e_beta2 * jnp.sum(x**2)
    return -0.5 * x.size * jnp.log(2 * jnp.pi * sigma**2) - quad / (2 * sigma**2)


def mfvi_elbo(mu, s, x, y, sigma, tau):
    """ELBO of factorised Gaussian q for the narrow network: E_q[log p(y|x,w)] − KL(q‖p)."""
    return mfvi_expected_log_likelihood(mu, s, x, y, sigma) - mfvi_kl(mu, s, tau)


def mfvi_two_layer_optimum(x, y, sigma, tau) -> dict:
    """Optimum of the MFVI ELBO (:func:`mfvi_elbo`) for L = 2, f(x) = w2·w1·x, in closed form.

    With S = |Σ x_i y_i| and X = Σ x_i², a stationary point with μ ≠ 0 needs s1·s2 = σ²/S;
    the optimum is |μ1| = |μ2| = √ν*, s1 = s2 = σ/√S, sign(μ1μ2) = sign(Σxy), with
    ν* = (S − σ²/τ²)/X − σ²/S (the lasso mode of :func:`lasso_mode` minus σ²/S) when this is
    positive. Otherwise the optimum is μ = 0, s1 = s2 = s0 with 1/s0² = X s0²/σ² + 1/τ².
    μ = 0 is stationary for every τ (the sign-flip symmetry); the largest eigenvalue of the
    ELBO's Hessian in μ there is λ0 = S/σ² − 1/s0², < 0 (a stable fixed point) exactly when
    τ² < τ²_c = σ² / (S − σ² X / S), i.e. where ν* = 0 ([SAP] Fig. 2, App. B.1).
    Returns floats ``nu`` (E_q[β] = μ1μ2), ``s``, ``tau2_critical`` (inf when S² ≤ σ²X),
    ``zero_curvature`` (λ0).
    """
    x, y = _xy(x, y)
    sigma, tau = positive("sigma", sigma), positive("tau", tau)
    sxy, sxx = float(jnp.sum(x * y)), float(jnp.sum(x**2))
    s_abs, var = abs(sxy), sigma**2
    if sxx == 0.0:
        raise ValueError("x is all zeros: the likelihood does not depend on the weights")
    a = sxx / var  # s0⁴·a + s0²/τ² − 1 = 0
    s0_sq = (-1.0 / tau**2 + np.sqrt(1.0 / tau**4 + 4.0 * a)) / (2.0 * a)
    nu = (s_abs - var / tau**2) / sxx - var / s_abs if s_abs > 0 else 0.0
    gap = s_abs - var * sxx / s_abs if s_abs > 0 else -np.inf
    return {
        "nu": float(np.sign(sxy) * max(nu, 0.0)),
        "s": float(np.sqrt(var / s_abs) if nu > 0 else np.sqrt(s0_sq)),
        "tau2_critical": float(var / gap) if gap > 0 else float("inf"),
        "zero_curvature": float(s_abs / var - 1.0 / s0_sq),
    }


def _depth(depth):
    depth = positive_int("depth", depth)


def log_density_of_log_abs_product(depth, tau, u):
    """Log density of u = log|β| for β = ∏_{l=1}^L w_l, w_l i.i.d. N(0, τ²), on a uniform grid.

    log|w| has log density log 2 + u − e^{2u}/(2τ²) − log(√(2π) τ); the sum of L of them
    is an L-fold convolution, summed directly in log space (log-sum-exp), so the far tails
    keep their relative precision however small they are. ``u``: (m,) uniform grid wide
    enough for the mass → (m,).
    """
    return log_densities_of_log_abs_product((depth,), tau, u)[depth]


def log_densities_of_log_abs_product(depths, tau, u) -> dict:
    """:func:`log_density_of_log_abs_product` at several depths, ``{L: (m,)}``, in one pass:
    the convolutions run once up to the largest depth, each depth read on the way."""
    depths = sorted({positive_int("depth", d) for d in depths})
    if not depths:
        raise ValueError("depths is empty")
    tau = positive("tau", tau)
    u = np.asarray(u, dtype=float)
    if u.ndim != 1 or u.size < 3 or not u[1] > u[0] or not np.allclose(np.diff(u), u[1] - u[0]):
        raise ValueError("u must be a uniform, increasing 1-D grid with at least 3 points")
    du = u[1] - u[0]
    one = np.log(2.0) + u - 0.5 * np.exp(2 * u) / tau**2 - np.log(np.sqrt(2 * np.pi) * tau)
    log_dens, out = one.copy(), {}
    for depth in range(1, depths[-1] + 1):
        if depth > 1:
            full = np.full(2 * u.size - 1, -np.inf)  # on the grid 2 u[0] + k du
            for j, value in enumerate(log_dens):
                window = full[j : j + u.size]
                np.logaddexp(window, value + one, out=window)
            log_dens = np.interp(u, 2 * u[0] + du * np.arange(full.size), full + np.log(du))
        if depth in depths:
            mass = np.exp(log_dens).sum() * du
            if not abs(mass - 1.0) < 1e-3:
                raise ValueError(
                    f"the grid u in [{u[0]:g}, {u[-1]:g}] holds only {mass:.3g} of the density's "
                    f"mass at L = {depth}; widen it (the mass of log|β| lies near "
                    "L·(log τ − 0.64) ± 4·sqrt(1.23·L))"
                )
            out[depth] = log_dens.copy()
    return out


def log_abs_product_density(depth, tau, u):
    """Density of u = log|β| (the exponential of :func:`log_density_of_log_abs_product`)."""
    return np.exp(log_density_of_log_abs_product(depth, tau, u))


def posterior_beta_quadrature(
    depth, x, y, sigma, tau, *, u_min=-30.0, u_max=4.0, num=4001, log_prior=None
):
    """Exact posterior of β = ∏ w_l for eq. (24) by quadrature on u = log|β|.

    p(β | y) ∝ exp(−g₁(β)) p_L(β), with p_L the density of a product of L
    N(0, τ²) weights. Returns ``dict(u, weight_pos, weight_neg, mean_abs_beta,
    prob_positive)`` where the weights are normalised grid masses of
    β = +e^u and β = −e^u. ``log_prior``: log p_L on that grid, when already computed
    (:func:`log_densities_of_log_abs_product`).
    """
    u = np.linspace(u_min, u_max, num)
    if log_prior is None:
        log_h = log_density_of_log_abs_product(depth, tau, u)  # no floor: log space
    else:
        log_h = np.asarray(log_prior, dtype=float)
        if log_h.shape != u.shape:
            raise ValueError(f"log_prior must be on the grid of {num} points, got {log_h.shape}")
    beta = np.exp(u)
    log_pos = log_h - np.asarray(g1(jnp.asarray(beta), x, y, sigma))
    log_neg = log_h - np.asarray(g1(jnp.asarray(-beta), x, y, sigma))
    top = max(log_pos.max(), log_neg.max())
    w_pos, w_neg = np.exp(log_pos - top), np.exp(log_neg - top)
    total = w_pos.sum() + w_neg.sum()
    w_pos, w_neg = w_pos / total, w_neg / total
    return {
        "u": u,
        "weight_pos": w_pos,
        "weight_neg": w_neg,
        "mean_abs_beta": float(np.sum(beta * (w_pos + w_neg))),
        "prob_positive": float(w_pos.sum()),
    }


def rescale(w, i: int, j: int, c):
    """Scaling symmetry of [SAP] §2.1: multiply w_i by c > 0 and divide w_j by c (i ≠ j).

    Leaves β = ∏ w_l, hence the likelihood, unchanged. ``w``: (..., L); ``c`` broadcasts
    against the batch axes.
    """
    w = jnp.asarray(w)
    c = jnp.asarray(c)
    if i == j or not (0 <= i < w.shape[-1] and 0 <= j < w.shape[-1]):
        raise ValueError(f"need two distinct layer indices in [0, {w.shape[-1]}), got {i}, {j}")
    if not isinstance(c, jax.core.Tracer) and bool(jnp.any(c <= 0)):
        raise ValueError("the scaling factor c must be positive")
    return w.at[..., i].multiply(c).at[..., j].divide(c)


def mfvi_kl_monte_carlo(rng_key, mu, s, tau, num_samples: int):
    """Monte-Carlo estimate of KL(q ‖ N(0, τ²I)) = E_q[log q(w) − log p(w)] and its standard error.

    ``mu``, ``s``: (L,). Returns ``(estimate, standard_error)`` as floats.
    """
    tau = positive("tau", tau)
    mu, s = jnp.asarray(mu), jnp.asarray(s)
    w = mu + s * jax.random.normal(rng_key, (num_samples, mu.shape[-1]))
    log_q = jnp.sum(jax.scipy.stats.norm.logpdf(w, mu, s), axis=-1)
    log_p = jnp.sum(jax.scipy.stats.norm.logpdf(w, 0.0, tau), axis=-1)
    diff = log_q - log_p
    return float(diff.mean()), float(diff.std() / jnp.sqrt(num_samples))
