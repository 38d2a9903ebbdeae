"""Numerical minima and symmetries of the narrow network f(x) = (∏_l w_l) x ([SAP] §2.1, App. F.1).

The closed forms live in :mod:`bnn_posteriors.theory.narrow_network`; this module checks them
with random
draws and multi-start optimisation: the likelihood is constant on scaling orbits (C1.1),
the minimisers of the penalised problem in w (eq. 2) and in β (eq. 3) match, with 2^{L−1}
sign patterns of equal magnitudes (C1.2, C1.3), the negative log posterior (eq. 24) and
g (eq. 27) have the same minima (C1.7), and L = 2 is a lasso (C1.8).
``x`` and ``y`` are 1-D arrays of the same length n.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize

from bnn_posteriors.inference import optim
from bnn_posteriors.theory import narrow_network as theory

LIMIT_DEPTHS = (10, 100, 1_000, 10_000, 100_000, 1_000_000)  # C1.9's limit, decade by decade


def orbit_deviation(rng_key, depth: int, x, y, sigma: float, tau: float, num_points: int = 200):
    """Largest relative change of −log p(y | x, w) along one random scaling orbit (C1.1).

    Draws w ~ N(0, τ² I_L), a random pair of layers (i, j) and ``num_points`` factors c
    log-uniform on [1/10, 10], and moves w along (w_i, w_j) → (c w_i, w_j / c)
    (:func:`theory.rescale`). Returns max |NLL(orbit) − NLL(w)| / |NLL(w)| as a float.
    """
    if not (isinstance(depth, int | np.integer) and depth >= 2):
        raise ValueError(f"a scaling orbit needs depth >= 2 layers, got {depth!r}")
    k_w, k_c, k_pair = jax.random.split(rng_key, 3)
    w = tau * jax.random.normal(k_w, (depth,))
    i, j = np.asarray(jax.random.choice(k_pair, depth, (2,), replace=False))
    c = jnp.exp(jax.random.uniform(k_c, (num_points,), minval=-np.log(10), maxval=np.log(10)))
    orbit = theory.rescale(jnp.broadcast_to(w, (num_points, depth)), i, j, c)
    nll = theory.neg_log_likelihood(jnp.prod(orbit, axis=-1), x, y, sigma)
    nll0 = theory.neg_log_likelihood(jnp.prod(w), x, y, sigma)
    return float(jnp.max(jnp.abs(nll - nll0)) / jnp.abs(nll0))


def max_orbit_deviation(
    rng_key, depths: Sequence[int], x, y, sigma: float, tau: float, num_orbits: int = 20
) -> dict:
    """Per depth L, the largest :func:`orbit_deviation` over ``num_orbits`` random orbits.

    The key of depth L is ``fold_in(rng_key, L)``, split into one key per orbit.
    Returns ``{L: float}``.
    """
    return {
        depth: max(
            orbit_deviation(key, depth, x, y, sigma, tau)
            for key in jax.random.split(jax.random.fold_in(rng_key, depth), num_orbits)
        )
        for depth in depths
    }


def _multistart(rng_key, loss_fn, depth, x, y, sigma, scale, num_starts, num_steps, newton_steps):
    """Minima of ``loss_fn(w, x, y, sigma, scale)`` from w ~ N(0, 1.5²) (``num_starts``
    starts of length ``depth``): Adam (learning rate 0.01) then Newton steps. Returns
    ``(w (num_starts, depth), loss (num_starts,))``."""
    inits = 1.5 * jax.random.normal(rng_key, (num_starts, depth))
    w, loss, _ = optim.multistart_minimise(
        loss_fn,
        inits,
        x,
        y,
        sigma,
        scale,
        num_steps=num_steps,
        learning_rate=0.01,
        newton_steps=newton_steps,
    )
    return w, loss


def penalised_minima(
    rng_key,
    depth: int,
    psi: float,
    x,
    y,
    sigma: float,
    *,
    num_starts: int,
    num_steps: int,
    newton_steps: int,
) -> dict:
    """Multi-start minima of eq. (2) over w and the minimum of eq. (3) over β, one (L, ψ).

    Starts w ~ N(0, 1.5²) (``num_starts`` of them), Adam then Newton steps
    (:func:`optim.multistart_minimise`); eq. (3) by :func:`theory.minimise_1d`. Returns
    ``patterns`` (distinct sign patterns among the global minimisers), ``min_w``,
    ``min_beta``, ``rel_gap`` = |min_w − min_beta| / |min_beta|, ``magnitude_gap``
    = max | |w_l| − |β_pen|^{1/L} | over the global minimisers, ``beta_sign`` (the sign of
    β_pen, ±1 or 0) and ``zero_starts`` (starts that end at w = 0).
    """
    w, loss = _multistart(
        rng_key, theory.penalised_w, depth, x, y, sigma, psi, num_starts, num_steps, newton_steps
    )
    w, loss = np.asarray(w), np.asarray(loss)
    best = loss.min()
    is_global = loss <= best + 1e-9 * abs(best)
    patterns = {tuple(p) for p in np.sign(w[is_global]).astype(int)}
    beta_pen, min_beta = theory.minimise_1d(
        lambda b: theory.penalised_beta(b, x, y, sigma, psi, depth), x, y
    )
    magnitude_gap = np.max(np.abs(np.abs(w[is_global]) - abs(beta_pen) ** (1 / depth)))
    return {
        "patterns": len(patterns),
        "min_w": float(best),
        "min_beta": min_beta,
        "rel_gap": abs(float(best) - min_beta) / abs(min_beta),
        "magnitude_gap": float(magnitude_gap),
        "beta_sign": int(np.sign(beta_pen)),
        "zero_starts": int(np.sum(np.all(np.abs(w) < 1e-6, axis=1))),
    }


def penalised_minima_grid(
    rng_key, depths: Sequence[int], psis: Sequence[float], x, y, sigma: float, **settings
) -> dict:
    """:func:`penalised_minima` for every (L, ψ); key ``fold_in(rng_key, 10 L + i)`` for ψ_i.

    ``settings``: ``num_starts``, ``num_steps``, ``newton_steps``. Returns ``{(L, ψ): dict}``.
    """
    return {
        (depth, psi): penalised_minima(
            jax.random.fold_in(rng_key, 10 * depth + i), depth, psi, x, y, sigma, **settings
        )
        for depth in depths
        for i, psi in enumerate(psis)
    }


def posterior_minimiser(
    rng_key,
    depth: int,
    x,
    y,
    sigma: float,
    tau: float,
    *,
    num_starts: int,
    num_steps: int,
    newton_steps: int,
):
    """Mode of the negative log posterior eq. (24) over w: multi-start Adam + Newton.

    Starts w ~ N(0, 1.5²). Returns ``(w_star (L,), min_loss float)``.
    """
    w, loss = _posterior_end_points(
        rng_key, depth, x, y, sigma, tau, num_starts, num_steps, newton_steps
    )
    return w[jnp.argmin(loss)], float(jnp.min(loss))


def _posterior_end_points(rng_key, depth, x, y, sigma, tau, num_starts, num_steps, newton_steps):
    """Every start's end point of :func:`_multistart` on eq. (24): ``(w (S, L), loss (S,))``."""
    return _multistart(
        rng_key,
        theory.neg_log_posterior,
        depth,
        x,
        y,
        sigma,
        tau,
        num_starts,
        num_steps,
        newton_steps,
    )


def matching_minima(rng_key, depth: int, x, y, sigma: float, tau: float, **settings) -> dict:
    """Minimum of eq. (24) over w and of g over β (eq. 27), and their minimisers (C1.7).

    ``settings``: ``num_starts``, ``num_steps``, ``newton_steps`` of
    :func:`posterior_minimiser`. Returns ``min_w``, ``min_g``, ``beta_of_w`` = ∏ w*,
    ``beta_g`` = argmin g, all floats; and every local minimum, ``local_w`` of eq. (24)
    (:func:`w_local_minima`, same starts) and ``local_g`` of g (:func:`g_local_minima`),
    lists of (β, value).
    """
    w, loss = _posterior_end_points(
        rng_key,
        depth,
        x,
        y,
        sigma,
        tau,
        settings["num_starts"],
        settings["num_steps"],
        settings["newton_steps"],
    )
    w_star, min_w = w[jnp.argmin(loss)], float(jnp.min(loss))
    beta_star, min_g = theory.minimise_1d(lambda b: theory.g(b, x, y, sigma, tau, depth), x, y)
    return {
        "min_w": min_w,
        "min_g": min_g,
        "beta_of_w": float(jnp.prod(w_star)),
        "beta_g": beta_star,
        "local_w": w_local_minima(w, loss, x, y, sigma, tau),
        "local_g": g_local_minima(x, y, sigma, tau, depth),
    }


def g_local_minima(x, y, sigma: float, tau: float, depth: int, *, grid: int = 20001) -> list:
    """Every local minimum of g (eq. 27) over β: ``[(β, g(β))]``, sorted by β.

    On a grid over [−2|β̂|, 2|β̂|], which holds every minimum (beyond it g₁ and g₂ both grow
    with |β|), each grid point below both neighbours is one, refined by bounded Brent
    between them. β = 0, the cusp of |β|^{2/L}, is decided on its own: its basin can be far
    narrower than any grid's spacing (for L = 3 about (L/(2τ²|g₁'(0)|))^{L/(L−2)}), so it is
    a local minimum when g(±h) > g(0) at h = 1e-10 and 1e-12.
    """
    bhat = abs(float(theory.ls_slope(x, y)))
    grid_b = np.linspace(-2.0 * bhat, 2.0 * bhat, grid)

    def fn(b):
        return theory.g(jnp.asarray(b, dtype=float), x, y, sigma, tau, depth)

    g0 = float(fn(0.0))
    steps = np.array([1e-10, 1e-12])
    minima = [(0.0, g0)] if bool(np.all(np.asarray(fn(np.r_[steps, -steps])) > g0)) else []
    vals = np.asarray(fn(grid_b))
    for i in np.flatnonzero((vals[1:-1] < vals[:-2]) & (vals[1:-1] < vals[2:])) + 1:
        if grid_b[i - 1] < 0.0 < grid_b[i + 1] and minima:
            continue  # the cusp, decided above
        res = optimize.minimize_scalar(
            lambda t: float(fn(t)),
            bounds=(grid_b[i - 1], grid_b[i + 1]),
            method="bounded",
            options={"xatol": 1e-12},
        )
        minima.append((float(res.x), float(min(res.fun, vals[i]))))
    return sorted(minima)


def w_local_minima(w, loss, x, y, sigma: float, tau: float) -> list:
    """The local minima of eq. (24) over w among multi-start end points, as ``[(∏w, value)]``.

    ``w`` (S, L) and ``loss`` (S,) are :func:`_multistart`'s end points (Adam, then Newton);
    those where the gradient vanishes (‖∇‖ ≤ 1e-6) and the Hessian is positive definite
    count, merged when their values agree to 1e-9 (relative) and their ∏w to 1e-6 (the
    2^{L−1} sign patterns of a minimum are one); and the origin w = 0, a stationary point,
    when its Hessian is positive definite (a basin too small for random starts). Sorted by ∏w.
    """
    w, loss = jnp.asarray(w), jnp.asarray(loss)

    def objective(v):
        return theory.neg_log_posterior(v, x, y, sigma, tau)

    grads = jax.vmap(jax.grad(objective))(w)
    lowest = jax.vmap(lambda v: jnp.linalg.eigvalsh(jax.hessian(objective)(v))[0])(w)
    found = np.asarray((jnp.linalg.norm(grads, axis=1) <= 1e-6) & (lowest > 0))
    points = [(float(jnp.prod(v)), float(f)) for v, f in zip(w[found], loss[found], strict=True)]
    origin = jnp.zeros(w.shape[1])
    if float(jnp.linalg.eigvalsh(jax.hessian(objective)(origin))[0]) > 0:
        points.append((0.0, float(objective(origin))))
    minima: list = []
    for beta, value in sorted(points):
        if not any(abs(value - v) <= 1e-9 * abs(v) and abs(beta - b) <= 1e-6 for b, v in minima):
            minima.append((beta, value))
    return minima


def lasso_modes(rng_key, x, y, sigma: float, taus: Mapping[str, float], **settings) -> dict:
    """L = 2: the closed-form lasso mode (:func:`theory.lasso_mode`) and the numerical one.

    For every named prior scale τ in ``taus``, the product w1·w2 of the mode of eq. (24)
    found by :func:`posterior_minimiser` (same ``rng_key`` for every τ; ``settings`` as
    there). Returns ``{name: {"tau", "closed", "numerical"}}``, floats.
    """
    modes = {}
    for name, tau in taus.items():
        closed = float(theory.lasso_mode(x, y, sigma, tau))
        w_star, _ = posterior_minimiser(rng_key, 2, x, y, sigma, tau, **settings)
        modes[name] = {"tau": tau, "closed": closed, "numerical": float(jnp.prod(w_star))}
    return modes


def lasso_cases(x, y, sigma: float, tau: float) -> dict:
    """The two prior scales of the L = 2 lasso check (C1.8): the data's and a thresholded one.

    ``"data prior"`` is τ itself; ``"thresholded"`` is τ = sqrt(σ² / (2|s|)) with
    s = Σ x_i y_i, so that σ²/τ² = 2|s| exceeds |s| and the lasso mode (eq. lasso) is 0.
    Returns ``{name: τ}``, floats.
    """
    s_xy = float(jnp.sum(x * y))
    if s_xy == 0.0:
        raise ValueError("Σ x_i y_i is 0: every prior thresholds the lasso, no case to build")
    return {"data prior": tau, "thresholded": float(np.sqrt(sigma**2 / (2 * abs(s_xy))))}


def g_shape(x, y, sigma: float, tau: float, depths: Sequence[int], beta_hat: float) -> dict:
    """The shape of g (eq. 27) over depth (C1.9): its curvature and the likelihood's share.

    On 3001 points of [−1.5, 1.5], ``min_second_diff`` ``{L: float}`` is the smallest second
    difference of g (negative where g is concave somewhere); ``ratio_g1_g2`` is the list
    g1(β̂) / g2(β̂) over ``depths``; ``ratio_limit`` the same ratio at the depths
    ``limit_depths`` = 10, 10², …, 10⁶, where the limit L → ∞ is read (g is closed-form at any
    L).
    """
    grid = jnp.linspace(-1.5, 1.5, 3001)
    min_second_diff = {
        depth: float(jnp.min(jnp.diff(theory.g(grid, x, y, sigma, tau, depth), 2)))
        for depth in depths
    }

    def ratio(depth):
        return float(theory.g1(beta_hat, x, y, sigma) / theory.g2(beta_hat, depth, tau))

    return {
        "min_second_diff": min_second_diff,
        "ratio_g1_g2": [ratio(depth) for depth in depths],
        "limit_depths": LIMIT_DEPTHS,
        "ratio_limit": [ratio(depth) for depth in LIMIT_DEPTHS],
    }
