"""Approximate and exact posteriors of the narrow network over depth and prior scale.

[SAP] §2.1: mean-field VI (ABI) and NUTS (SAI) on f(x) = (∏_l w_l) x for L = 1, …, 10,
where AM-GM makes the prior's pull on β = ∏ w_l grow with L (C1.4–C1.6). [SAP] §3, Fig. 2
and Prop. B.5: the two-weight network (L = 2), whose posterior lies along the hyperbola
w1·w2 ≈ β̂, sampled by warm-started NUTS and fitted by MFVI for decreasing τ², and MFVI
under the adjusted prior N(θ0, Σ) (C3.6, C3.7). ``x`` and ``y`` are 1-D arrays of length n.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.inference import mcmc, optim, vi
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.theory import narrow_network as theory


def mfvi_over_depth(
    rng_key, x, y, sigma: float, tau: float, depths: Sequence[int], *, num_starts: int
) -> dict:
    """Exact MFVI optima (:func:`vi.fit_mfvi_narrow`) for every depth L, summarised.

    The key of depth L is ``fold_in(rng_key, L)``; all depths share one compiled program
    (``max_depth = max(depths)``). Returns arrays over ``depths``: ``nu`` = ∏ μ_l (the
    slope under q), ``kl_share`` = KL(q‖p) / (−ELBO), ``ratio`` = max|μ_l| / min|μ_l|
    (1 at the AM-GM equality), and ``sigma``.
    """
    fits = {
        depth: vi.fit_mfvi_narrow(
            jax.random.fold_in(rng_key, depth),
            x,
            y,
            depth=depth,
            sigma=sigma,
            tau=tau,
            max_depth=max(depths),
            num_starts=num_starts,
        )
        for depth in depths
    }
    mus = [q.loc["w"] for q, _ in fits.values()]
    nu = np.array([float(jnp.prod(mu)) for mu in mus])
    kl = np.array([float(theory.mfvi_kl(q.loc["w"], q.scale["w"], tau)) for q, _ in fits.values()])
    share = kl / -np.array([float(elbo) for _, elbo in fits.values()])
    ratio = np.array([float(jnp.max(jnp.abs(mu)) / jnp.min(jnp.abs(mu))) for mu in mus])
    return {"nu": nu, "kl_share": share, "ratio": ratio, "sigma": sigma}


def collapse_depth(depths: Sequence[int], nu, threshold: float = 1e-3):
    """The first depth at which the MFVI slope |ν| falls below ``threshold``, else None."""
    return next((depth for depth, v in zip(depths, nu, strict=True) if abs(v) < threshold), None)


def svi_over_depth(
    rng_key,
    x,
    y,
    sigma: float,
    tau: float,
    depths: Sequence[int],
    *,
    num_steps: int,
    num_particles: int,
) -> dict:
    """Stochastic MFVI (NumPyro SVI, AutoNormal) of the narrow network for every depth L.

    Key ``fold_in(rng_key, L)``, learning rate 0.02. Returns ``{L: {"nu", "elbo",
    "ratio"}}``: ν = ∏ μ_l, the exact ELBO (:func:`theory.mfvi_elbo`) of the fitted q and
    max|μ_l| / min|μ_l|, floats.
    """
    rows = {}
    for depth in depths:
        q, _ = vi.fit_mfvi(
            jax.random.fold_in(rng_key, depth),
            models.narrow_network,
            dict(x=x, y=y, depth=depth, sigma=sigma, tau=tau),
            num_steps=num_steps,
            learning_rate=0.02,
            num_particles=num_particles,
        )
        mu, s = q.loc["w"], q.scale["w"]
        rows[depth] = {
            "nu": float(jnp.prod(mu)),
            "elbo": float(theory.mfvi_elbo(mu, s, x, y, sigma, tau)),
            "ratio": float(jnp.max(jnp.abs(mu)) / jnp.min(jnp.abs(mu))),
        }
    return rows


def nuts_over_depth(rng_key, x, y, sigma: float, tau: float, depths: Sequence[int], **nuts_kwargs):
    """NUTS on the exact posterior eq. (24) for every depth L, against the quadrature.

    All depths share one compiled sampler: the model has ``max(depths)`` weights and only
    the first L enter the product (``max_depth`` of :func:`models.narrow_network`). Key
    ``fold_in(rng_key, L)``; ``nuts_kwargs``: ``num_chains``, ``num_warmup``,
    ``num_samples``, ``target_acceptance_rate`` of :func:`mcmc.nuts`. Returns ``{L: dict}``
    with ``abs_beta`` (chains, draws), ``w`` (chains, draws, L), the NUTS ``mean`` of |β|
    and its ``mcse``, ``rhat`` (the largest of |β| and |w_l|, sign-flip invariant),
    ``divergences``, the ``exact`` E|β| (:func:`theory.posterior_beta_quadrature`) and
    ``ks``, the KS distance of the pooled |w_l| to the prior half-normal.
    """
    runs = {}
    for depth in depths:
        samples, stats = mcmc.nuts(
            jax.random.fold_in(rng_key, depth),
            models.narrow_network,
            dict(x=x, y=y, depth=jnp.asarray(depth), sigma=sigma, tau=tau, max_depth=max(depths)),
            **nuts_kwargs,
        )
        w = np.asarray(samples["w"])[..., :depth]  # the network's weights; the rest are inert
        runs[depth] = {
            "abs_beta": np.abs(np.asarray(samples["beta"])),
            "w": w,
            "mean": float(np.mean(np.abs(samples["beta"]))),
            "mcse": float(diagnostics.mcse(np.abs(samples["beta"]))),
            "rhat": float(max(diagnostics.rhat(np.abs(a)).max() for a in (samples["beta"], w))),
            "divergences": int(stats["diverging"].sum()),
            "exact": theory.posterior_beta_quadrature(depth, x, y, sigma, tau)["mean_abs_beta"],
            "ks": metrics.ks_to_normal(w, tau, absolute=True),
        }
    return runs


def posterior_modes(rng_key, x, y, sigma: float, tau: float, num_chains: int):
    """One mode of the two-weight posterior eq. (24) per chain, in both branches (Fig. 2).

    Starts (w1, w2) ~ N(0, I), Adam (500 steps) then 30 Newton steps. Returns (chains, 2).
    """
    inits = jax.random.normal(rng_key, (num_chains, 2))
    w, _, _ = optim.multistart_minimise(
        theory.neg_log_posterior,
        inits,
        x,
        y,
        sigma,
        tau,
        num_steps=500,
        learning_rate=0.02,
        newton_steps=30,
    )
    return w


def hyperbola_fits(
    key_start,
    key_nuts,
    key_svi,
    x,
    y,
    sigma: float,
    tau2s: Sequence[float],
    *,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    target_acceptance_rate: float,
    svi_steps: int,
) -> dict:
    """NUTS and MFVI on the two-weight network for every prior variance τ² ([SAP] Fig. 2).

    For the i-th τ²: NUTS warm-started at :func:`posterior_modes` (key
    ``fold_in(key_start, i)``, sampler key ``fold_in(key_nuts, i)``), SVI from μ = 0 (key
    ``fold_in(key_svi, i)``) and the exact MFVI optimum (``fold_in(key_svi, 100 + i)``).
    Returns ``{τ²: dict}`` with the draws ``w`` (chains, draws, 2), ``starts``,
    ``sign_constant`` / ``sign_changes`` (chains whose w1 keeps / changes its sign),
    ``nuts_mass`` = P(|β| > 0.05), ``nuts_abs_beta``, ``exact_abs_beta``, ``svi_mu``,
    ``svi_s``, ``svi_nu``, ``exact_nu``, ``draws`` (β and |w1|, sign-flip invariant) and
    ``divergences``.
    """
    fits = {}
    for i, tau2 in enumerate(tau2s):
        tau = float(np.sqrt(tau2))
        starts = posterior_modes(jax.random.fold_in(key_start, i), x, y, sigma, tau, num_chains)
        samples, stats = mcmc.nuts(
            jax.random.fold_in(key_nuts, i),
            models.narrow_network,
            dict(x=x, y=y, depth=2, sigma=sigma, tau=jnp.asarray(tau)),
            num_chains=num_chains,
            num_warmup=num_warmup,
            num_samples=num_samples,
            init_positions={"w": starts},
            target_acceptance_rate=target_acceptance_rate,
        )
        svi, _ = vi.fit_mfvi(
            jax.random.fold_in(key_svi, i),
            models.narrow_network,
            dict(x=x, y=y, depth=2, sigma=sigma, tau=tau),
            num_steps=svi_steps,
            learning_rate=0.01,
            num_particles=1,
        )
        exact, _ = vi.fit_mfvi_narrow(
            jax.random.fold_in(key_svi, 100 + i), x, y, depth=2, sigma=sigma, tau=tau, max_depth=2
        )
        w = np.asarray(samples["w"])
        w1_sign = np.abs(np.sign(w[..., 0]).mean(axis=1))
        fits[tau2] = {
            "w": w,
            "starts": np.asarray(starts),
            "sign_constant": bool(np.all(w1_sign == 1)),
            "sign_changes": int(np.sum(w1_sign < 1)),
            "nuts_mass": float(np.mean(np.abs(w.prod(-1)) > 0.05)),
            "nuts_abs_beta": float(np.mean(np.abs(w.prod(-1)))),
            "exact_abs_beta": theory.posterior_beta_quadrature(2, x, y, sigma, tau)[
                "mean_abs_beta"
            ],
            "svi_mu": np.asarray(svi.loc["w"]),
            "svi_s": np.asarray(svi.scale["w"]),
            "svi_nu": float(np.prod(svi.loc["w"])),
            "exact_nu": float(jnp.prod(exact.loc["w"])),
            "draws": {"beta": w.prod(-1), "abs_w1": np.abs(w[..., 0])},
            "divergences": int(stats["diverging"].sum()),
        }
    return fits


def mfvi_abs_nu(rng_key, x, y, sigma: float, tau, *, num_steps: int, prior_loc=None) -> float:
    """|μ1 μ2| of SVI (AutoNormal from μ = 0, one particle) for the two-weight network.

    ``tau`` and ``prior_loc`` as in :func:`models.narrow_network` (a scalar or one value
    per weight; ``prior_loc`` None for the zero-mean prior).
    """
    q, _ = vi.fit_mfvi(
        rng_key,
        models.narrow_network,
        dict(x=x, y=y, depth=2, sigma=sigma, tau=tau, prior_loc=prior_loc),
        num_steps=num_steps,
        learning_rate=0.01,
        num_particles=1,
    )
    return abs(float(np.prod(q.loc["w"])))


def adjusted_prior_scan(
    rng_key,
    x,
    y,
    sigma: float,
    tau2s: Sequence[float],
    *,
    num_seeds: int,
    sigma0: float,
    eps: float,
    svi_steps: int,
) -> dict:
    """Plain against adjusted-prior MFVI on the two-weight network ([SAP] Prop. B.5).

    At the j-th τ² and seed i (key ``fold_in(fold_in(rng_key, j), i)``, split into the
    prior mean, the prior variances and the SVI key shared by both fits) the adjusted
    prior is N(θ0, Σ) with θ0 ~ N(0, (σ0 τ)² I) and Σ_ii = τ² / u_i, u_i ~ U(1 − ε, 1 + ε).
    Returns ``{τ²: {"plain", "adjusted", "theta0" (num_seeds,), "loc", "scale"
    (num_seeds, 2), "nu_star"}}``: |μ1 μ2| of both fits, |θ01 θ02|, the adjusted prior's
    means θ0 and standard deviations √Σ_ii, and the plain optimum |ν*|
    (:func:`theory.mfvi_two_layer_optimum`).
    """
    scan = {}
    for j, tau2 in enumerate(tau2s):
        tau = float(np.sqrt(tau2))
        runs: dict[str, list] = {"plain": [], "adjusted": [], "theta0": [], "loc": [], "scale": []}
        for i in range(num_seeds):
            key = jax.random.fold_in(jax.random.fold_in(rng_key, j), i)
            k_loc, k_u, k_fit = jax.random.split(key, 3)
            loc = sigma0 * tau * jax.random.normal(k_loc, (2,))
            u = jax.random.uniform(k_u, (2,), minval=1 - eps, maxval=1 + eps)
            runs["plain"].append(mfvi_abs_nu(k_fit, x, y, sigma, tau, num_steps=svi_steps))
            runs["adjusted"].append(
                mfvi_abs_nu(
                    k_fit,
                    x,
                    y,
                    sigma,
                    tuple(np.asarray(tau / jnp.sqrt(u))),
                    num_steps=svi_steps,
                    prior_loc=tuple(np.asarray(loc)),
                )
            )
            runs["theta0"].append(abs(float(loc[0] * loc[1])))
            runs["loc"].append(np.asarray(loc))
            runs["scale"].append(np.asarray(tau / jnp.sqrt(u)))
        nu_star = abs(theory.mfvi_two_layer_optimum(x, y, sigma, tau)["nu"])
        scan[tau2] = {k: np.array(v) for k, v in runs.items()} | {"nu_star": nu_star}
    return scan


def _neg_adjusted_elbo(params, x, y, sigma, loc, scale):
    """−:func:`adjusted_elbo` of q with means ``params["mu"]`` and sds exp(``params["log_s"]``)."""
    return -adjusted_elbo(params["mu"], jnp.exp(params["log_s"]), x, y, sigma, loc, scale)


def deep_trap(
    rng_key,
    x,
    y,
    sigma: float,
    tau: float,
    depth: int,
    *,
    num_seeds: int,
    sigma0: float,
    eps: float,
    num_steps: int,
    init_scale: float,
) -> dict:
    """Plain against adjusted-prior MFVI of the depth-L narrow network, from near μ = 0.

    MFVI by gradient ascent on the closed-form ELBO (:func:`adjusted_elbo`, exact gradients:
    Adam then Newton, :func:`optim.multistart_minimise`) from μ ~ N(0, ``init_scale``² I) and
    s = τ/2, the same start for both fits of a seed. For L ≥ 3, μ = 0 is a stable fixed point
    of the plain ELBO (its Hessian in μ there is negative definite) whatever the optimum is.
    Seed i (key ``fold_in(rng_key, i)``) draws the start and the adjusted prior
    N(θ0, Σ), θ0 ~ N(0, (σ0 τ)² I), Σ_ii = τ²/u_i, u_i ~ U(1 − ε, 1 + ε) ([SAP] Prop. B.5).
    Returns ``plain``, ``adjusted`` (num_seeds,) |∏ μ| and ``nu_star``, the plain optimum's
    |∏ μ| (the best of the fits from the balanced start μ_l = |β̂|^{1/L} and from the seeds').
    """
    depth = int(depth)
    if depth < 2:
        raise ValueError(f"deep_trap needs a depth of 2 or more, got {depth}")
    zero, plain_scale = jnp.zeros(depth), jnp.full(depth, tau)
    log_s0 = jnp.full((1, depth), float(np.log(tau / 2)))

    def fit(mu0, loc, scale):
        inits = {"mu": mu0[None], "log_s": log_s0}
        params, loss, _ = optim.multistart_minimise(
            _neg_adjusted_elbo,
            inits,
            x,
            y,
            sigma,
            loc,
            scale,
            num_steps=num_steps,
            learning_rate=0.01,
            newton_steps=20,
        )
        return abs(float(jnp.prod(params["mu"][0]))), -float(loss[0])

    runs: dict[str, list] = {"plain": [], "adjusted": [], "plain_elbo": []}
    for i in range(num_seeds):
        k_start, k_loc, k_u = jax.random.split(jax.random.fold_in(rng_key, i), 3)
        mu0 = init_scale * jax.random.normal(k_start, (depth,))
        loc = sigma0 * tau * jax.random.normal(k_loc, (depth,))
        u = jax.random.uniform(k_u, (depth,), minval=1 - eps, maxval=1 + eps)
        nu, elbo = fit(mu0, zero, plain_scale)
        runs["plain"].append(nu)
        runs["plain_elbo"].append(elbo)
        runs["adjusted"].append(fit(mu0, loc, tau / jnp.sqrt(u))[0])
    balanced = jnp.full(depth, abs(float(theory.ls_slope(x, y))) ** (1.0 / depth))
    best = max(
        [fit(balanced, zero, plain_scale)]
        + list(zip(runs["plain"], runs["plain_elbo"], strict=True)),
        key=lambda r: r[1],
    )
    return {
        "plain": np.array(runs["plain"]),
        "adjusted": np.array(runs["adjusted"]),
        "nu_star": best[0],
        "elbo_star": best[1],
        "plain_elbo": np.array(runs["plain_elbo"]),
        "depth": depth,
    }


def adjusted_elbo(mu, s, x, y, sigma: float, loc, scale):
    """ELBO of q = ∏ N(μ_l, s_l²) for the two-weight network under the prior N(loc, diag(scale²)).

    E_q[log p(y | x, w)] (:func:`theory.mfvi_expected_log_likelihood`) minus
    Σ_l KL(N(μ_l, s_l²) ‖ N(loc_l, scale_l²)); with ``loc`` = 0 and ``scale`` = τ it is
    :func:`theory.mfvi_elbo`. ``mu``, ``s``, ``loc``, ``scale``: (2,) → a scalar.
    """
    mu, loc = jnp.asarray(mu), jnp.asarray(loc)
    kl = jnp.sum(theory.gaussian_kl(mu - loc, jnp.asarray(s), jnp.asarray(scale)))
    return theory.mfvi_expected_log_likelihood(mu, s, x, y, sigma) - kl


def gradient_at_zero(x, y, sigma: float, loc, scale, s) -> np.ndarray:
    """|∇_μ ELBO| at μ = 0 under the prior N(loc, diag(scale²)), per prior ([SAP] Prop. B.5).

    The plain prior (loc = 0) is invariant under the sign flip w → −w, which makes μ = 0 a
    stationary point of the ELBO whatever s: the gradient is exactly 0. The adjusted prior
    breaks that symmetry: the gradient is |loc / scale²| (from the KL; the likelihood's
    expectation is flat in μ at μ = 0). ``loc``, ``scale``: (priors, 2); ``s``: q's standard
    deviation (a scalar or (2,)). Returns (priors,) Euclidean norms, by automatic
    differentiation of :func:`adjusted_elbo`.
    """
    loc, scale = np.atleast_2d(loc), np.atleast_2d(scale)
    if loc.shape != scale.shape or loc.shape[-1] != 2:
        raise ValueError(f"loc and scale must both be (priors, 2), got {loc.shape}, {scale.shape}")
    s = jnp.broadcast_to(jnp.asarray(s, dtype=float), (2,))
    grad = jax.grad(adjusted_elbo)
    zero = jnp.zeros(2)
    norms = [
        jnp.linalg.norm(grad(zero, s, x, y, sigma, m, c)) for m, c in zip(loc, scale, strict=True)
    ]
    return np.array([float(n) for n in norms])


def hyperbola_parts(fits: dict, beta_hat: float, tau2s_figure: Sequence[float]) -> dict:
    """The four parts of C3.6 from :func:`hyperbola_fits`, each as text → measured value.

    MFVI's |μ1 μ2| at the smallest τ²; NUTS's P(|β| ≤ 0.05) there; MFVI's shrinkage
    1 − |μ1 μ2| / β̂ at the largest τ²; the chains whose w1 changes sign at the τ² of Fig. 2.
    Their bounds are C3.6's check ``four-parts`` in the claims catalogue.
    """
    smallest, largest = min(fits), max(fits)
    return {
        "MFVI |mu1 mu2| at the smallest tau2": abs(fits[smallest]["svi_nu"]),
        "NUTS P(|beta| <= 0.05) at the smallest tau2": 1.0 - fits[smallest]["nuts_mass"],
        "MFVI shrinkage 1 - |mu1 mu2| / beta_hat at tau2 = 1": (
            1.0 - abs(fits[largest]["svi_nu"]) / beta_hat
        ),
        "chains whose w1 changes sign at the tau2 of Fig. 2": sum(
            fits[t]["sign_changes"] for t in tau2s_figure
        ),
    }


def trap_summary(
    scan: dict, tau2_critical: float, x, y, sigma: float, *, jitter_ratio: float, eps: float
) -> dict:
    """Where plain MFVI is trapped at (0, 0) above τ²_c ([SAP] Prop. B.5, C3.7).

    ``scan``: :func:`adjusted_prior_scan`. Over its τ² > ``tau2_critical``: ``above`` (those
    entries), ``progress`` (median plain |μ1 μ2| / ν* per τ²) and ``n_short`` (runs below
    ν*/2, plain and adjusted); ``jitter``: |ν*| at τ² = ``jitter_ratio`` τ²_c divided by
    1 + ε, 1 and 1 − ε (the adjusted prior's variances move τ² so).
    """
    above = {tau2: r for tau2, r in scan.items() if tau2 > tau2_critical}
    tau2_r = jitter_ratio * tau2_critical
    return {
        "above": above,
        "progress": {t: float(np.median(r["plain"]) / r["nu_star"]) for t, r in above.items()},
        "n_short": {
            name: int(sum(np.sum(r[name] < r["nu_star"] / 2) for r in above.values()))
            for name in ("plain", "adjusted")
        },
        "jitter": [
            abs(theory.mfvi_two_layer_optimum(x, y, sigma, np.sqrt(tau2_r / (1 + e)))["nu"])
            for e in (eps, 0.0, -eps)
        ],
    }


def convergence_gain(trap: dict, trap_level: float = 0.5) -> dict:
    """Does the adjusted prior converge better where plain MFVI is trapped? (C3.7, Prop. B.5)

    ``trap``: :func:`trap_summary`. A τ² above τ²_c is *trapped* when the median plain run
    ends below ``trap_level`` of the plain optimum ν*; the adjusted prior gets out of the trap
    where its median run reaches ``trap_level`` of ν* or more. Returns ``trapped`` (those
    τ²), ``at`` (the trapped τ², else the one τ² where the plain runs get least far, so that
    the comparison is recorded even without a trap) and, per τ² of ``at``, ``adjusted`` and
    ``plain`` (median |μ1 μ2| / ν*) and ``gain`` (their difference).
    """
    if not trap["above"]:
        raise ValueError("no τ² of the scan lies above τ²_c: nothing to compare")
    if not 0.0 < trap_level <= 1.0:
        raise ValueError(f"trap_level must lie in (0, 1], got {trap_level!r}")
    progress = trap["progress"]
    trapped = [t for t, p in progress.items() if p < trap_level]
    at = trapped or [min(progress, key=progress.get)]
    above = trap["above"]
    adjusted = np.array([float(np.median(above[t]["adjusted"]) / above[t]["nu_star"]) for t in at])
    plain = np.array([progress[t] for t in at])
    return {
        "trapped": trapped,
        "at": at,
        "adjusted": adjusted,
        "plain": plain,
        "gain": adjusted - plain,
    }


def kl_against_monte_carlo(rng_key, tau: float, num_samples: int) -> dict:
    """The mean-field KL (eq. KL) in closed form and by Monte Carlo, for one fixed q (C1.4).

    q has means μ = (0.9, −1.2, 0.4) and standard deviations s = (0.3, 0.5, 0.8), the prior
    N(0, τ² I). Returns ``closed`` (:func:`theory.mfvi_kl`), the Monte-Carlo estimate ``mc``
    and its standard error ``se`` (:func:`theory.mfvi_kl_monte_carlo`), floats, and ``mu``
    and ``s`` as lists.
    """
    mu, s = jnp.array([0.9, -1.2, 0.4]), jnp.array([0.3, 0.5, 0.8])
    closed = float(theory.mfvi_kl(mu, s, tau))
    mc, se = theory.mfvi_kl_monte_carlo(rng_key, mu, s, tau, num_samples)
    return {"mu": mu.tolist(), "s": s.tolist(), "closed": closed, "mc": mc, "se": se}


def exact_mean_abs_beta(x, y, sigmas: Sequence[float], tau: float, depths: Sequence[int]) -> dict:
    """The exact posterior E[|β| | y] by quadrature for every σ and depth L.

    :func:`theory.posterior_beta_quadrature`. Returns ``{σ: [float over depths]}``.
    """
    return {
        sigma: [
            theory.posterior_beta_quadrature(depth, x, y, sigma, tau)["mean_abs_beta"]
            for depth in depths
        ]
        for sigma in sigmas
    }


def nonzero_suppression(x, y, sigma: float, tau: float, depths: Sequence[int], beta_hat) -> dict:
    """The exact posterior probability of a non-zero β, P(|β| ≥ |β̂|/2 | y), over depths.

    By quadrature (:func:`theory.posterior_beta_quadrature`) on u = log|β| ∈ [−100, 4] with
    4001 points, the prior densities of all depths from one pass of convolutions. Returns
    ``depths``, ``prob`` (over depths) and ``rate``: the per-layer decrease of log P between
    consecutive depths, −Δ log P / ΔL (constant where the suppression is exponential).
    """
    depths = sorted(int(d) for d in depths)
    if len(depths) < 3:
        raise ValueError(f"nonzero_suppression needs three depths at least, got {depths}")
    u = np.linspace(-100.0, 4.0, 4001)
    priors = theory.log_densities_of_log_abs_product(depths, tau, u)
    far = u >= np.log(abs(float(beta_hat)) / 2)
    prob = []
    for depth in depths:
        q = theory.posterior_beta_quadrature(
            depth, x, y, sigma, tau, u_min=-100.0, u_max=4.0, num=4001, log_prior=priors[depth]
        )
        prob.append(float((q["weight_pos"] + q["weight_neg"])[far].sum()))
    rate = -np.diff(np.log(prob)) / np.diff(depths)
    return {"depths": depths, "prob": prob, "rate": rate.tolist()}
