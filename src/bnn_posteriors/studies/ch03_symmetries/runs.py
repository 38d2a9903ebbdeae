"""The computations of chapter 03 ([SAP] §3, App. B) and the tables of their numbers.

Prior symmetries (C3.2, C3.3) on random draws and on a grid; the two-weight network
f(x) = w2 (w1 x) on the authors' ``synthetic_regression_1x`` (C3.6, Fig. 2) and the
adjusted-prior scan of Prop. B.5 (C3.7). ``cfg`` is the chapter's settings
(:func:`bnn_posteriors.site.profiles.settings`); ``x`` and ``y`` are 1-D arrays of length n.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.models.symmetry import priors as symmetry
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import SymmetriesSettings
from bnn_posteriors.studies.ch01_narrow_networks import narrow_posterior
from bnn_posteriors.theory import narrow_network as theory
from bnn_posteriors.util import streams

KINDS = ("gaussian", "laplace")  # the priors of Props. B.4 and B.10


def sign_flip_gaps(rng_key, num_draws: int, num_weights: int = 6, spread: float = 2.0) -> dict:
    """max |log p(θ) − log p(Σθ)| per prior of :data:`KINDS` (Prop. B.4, C3.2).

    θ: (num_draws, num_weights) draws of N(0, spread²) (key ``rng_key``); Σ: random signs
    (key ``fold_in(rng_key, 1)``); both priors have unit scale. Returns prior → float.
    """
    if num_draws < 1 or num_weights < 1:
        raise ValueError(f"need at least one draw of one weight, got {num_draws}, {num_weights}")
    theta = spread * jax.random.normal(rng_key, (num_draws, num_weights))
    flips = jax.random.bernoulli(jax.random.fold_in(rng_key, 1), 0.5, theta.shape)
    signs = jnp.where(flips, 1.0, -1.0)
    return {
        kind: float(jnp.max(jnp.abs(symmetry.sign_flip_gap(theta, signs, kind, 1.0))))
        for kind in KINDS
    }


def pairwise_roots(limit: float = 2.0, num: int = 9, c_range=(0.05, 20.0), num_c: int = 4001):
    """The roots of ϖ(c) (Prop. B.10, C3.3) for every pair (θ1, θ2) of a grid, both priors.

    The grid is ``num`` points on [−limit, limit]; pairs with a zero or with |θ1| = |θ2|
    (where c = 1 is a double root without a sign change) are left out; c runs over ``num_c``
    log-spaced points of ``c_range``. Returns :func:`symmetry.pairwise_root_checks`'s
    ``(roots_ok, min_gap_away)``, one entry per (pair, prior).
    """
    low, high = c_range
    if not 0 < low < high:
        raise ValueError(f"c_range must be 0 < low < high, got {c_range}")
    cs = np.exp(np.linspace(np.log(low), np.log(high), num_c))
    return symmetry.pairwise_root_checks(_pairs(limit, num), cs, KINDS)


def _pairs(limit: float, num: int) -> list[tuple[float, float]]:
    grid = np.linspace(-limit, limit, num)
    pairs = [(a, b) for a in grid for b in grid if a != 0 and b != 0 and abs(a) != abs(b)]
    if not pairs:
        raise ValueError(f"the grid of {num} points on [-{limit}, {limit}] gives no pair")
    return pairs


def pairwise_case_names(limit: float = 2.0, num: int = 9) -> list[str]:
    """The names of :func:`pairwise_roots`'s cases, in its order: "gaussian prior, (θ1, θ2)
    = (−2, −1.5)", one per (prior, pair)."""
    return [
        f"{kind} prior, (θ1, θ2) = ({a:g}, {b:g})" for kind in KINDS for a, b in _pairs(limit, num)
    ]


def two_weight_data(cfg: SymmetriesSettings) -> tuple:
    """The data of Fig. 2: ``(x, y, beta_hat, tau2_threshold)``.

    ``x``: the first input column of the training split of ``cfg.dataset`` (``cfg.n_max``
    rows after the seeded shuffle, standardised), ``y`` its targets; ``beta_hat``: the least
    squares slope; ``tau2_threshold``: σ²/|Σ x_i y_i|, below which the lasso mode is 0.
    """
    split = data.load_split(cfg.dataset, cfg.seed, n_max=cfg.n_max)
    x, y = jnp.asarray(split.x_train[:, 0]), jnp.asarray(split.y_train)
    beta_hat = float(theory.ls_slope(x, y))
    tau2_threshold = cfg.sigma**2 / abs(float(jnp.sum(x * y)))
    return x, y, beta_hat, tau2_threshold


def figure2_fits(key_start, key_nuts, key_svi, x, y, cfg: SymmetriesSettings) -> dict:
    """NUTS and MFVI for every τ² of ``cfg.tau2s``: :func:`narrow_posterior.hyperbola_fits`
    with the chapter's sampler and SVI settings. Returns ``{τ²: dict}``."""
    return narrow_posterior.hyperbola_fits(
        key_start,
        key_nuts,
        key_svi,
        x,
        y,
        cfg.sigma,
        cfg.tau2s,
        num_chains=cfg.num_chains,
        num_warmup=cfg.num_warmup,
        num_samples=cfg.num_samples,
        target_acceptance_rate=cfg.target_acceptance_rate,
        svi_steps=cfg.svi_steps,
    )


def fits_table(fits: dict, n_train: int, beta_hat: float, tau2_threshold: float, sigma) -> str:
    """Markdown: the setting (n, β̂, σ, lasso threshold σ²/|Σxy|), then per τ² of ``fits``
    (:func:`figure2_fits`) NUTS's E|β| and mass away from 0, the exact E|β| (quadrature)
    and MFVI's ν by SVI and exactly."""
    header = (
        "τ²",
        "sign constant",
        "E|β| (NUTS)",
        "E|β| (exact)",
        "P(|β| > 0.05) (NUTS)",
        "MFVI ν (SVI)",
        "MFVI ν (exact)",
    )
    rows = [
        (f"{tau2:g}", r["sign_constant"])
        + tuple(
            f"{r[k]:.3f}"
            for k in ("nuts_abs_beta", "exact_abs_beta", "nuts_mass", "svi_nu", "exact_nu")
        )
        for tau2, r in fits.items()
    ]
    setting = (
        f"{n_train} training rows, β̂ = {beta_hat:.3f}, σ = {sigma}, "
        f"τ² threshold σ²/|Σ xᵢyᵢ| = {tau2_threshold:.4f}"
    )
    return setting + "\n\n" + tables.markdown_table(header, rows)


def diagnostics_table(fits: dict) -> str:
    """Markdown: NUTS diagnostics (ArviZ) per τ² of ``fits``: R-hat and bulk ESS of the
    sign-flip invariant β and of |w1|, and the number of divergences."""
    header = ("τ²", "R-hat(β)", "bulk ESS(β)", "R-hat(|w₁|)", "bulk ESS(|w₁|)", "divergences")
    rows = []
    for tau2, r in fits.items():
        cells = [f"{tau2:g}"]
        for name in ("beta", "abs_w1"):
            draws = r["draws"][name]
            cells += [
                f"{float(diagnostics.rhat(draws)):.3f}",
                f"{float(diagnostics.ess(draws)):.0f}",
            ]
        rows.append((*cells, r["divergences"]))
    return tables.markdown_table(header, rows)


def adjusted_runs(rng_key, x, y, tau2_critical: float, cfg: SymmetriesSettings) -> dict:
    """Plain and adjusted-prior MFVI (Prop. B.5, C3.7) at the smallest τ² of ``cfg.tau2s``
    and at τ² = r τ²_c for r in ``cfg.adjusted_scan``: :func:`narrow_posterior.adjusted_prior_scan`
    with the chapter's settings. Returns ``{τ²: dict}``."""
    if tau2_critical <= 0:
        raise ValueError(f"tau2_critical must be positive, got {tau2_critical}")
    scan = [min(cfg.tau2s)] + [r * tau2_critical for r in cfg.adjusted_scan]
    return narrow_posterior.adjusted_prior_scan(
        rng_key,
        x,
        y,
        cfg.sigma,
        scan,
        num_seeds=cfg.n_adjusted_seeds,
        sigma0=cfg.adjusted_sigma0,
        eps=cfg.adjusted_eps,
        svi_steps=cfg.svi_steps,
    )


def deep_trap_runs(rng_key, x, y, cfg: SymmetriesSettings) -> dict:
    """Prop. B.5 (C3.7) where plain MFVI has a trap: the narrow network of depth
    ``cfg.trap_depth`` at τ² = 1, ``cfg.trap_runs`` starts near μ = 0, plain against adjusted
    priors of each θ0 scale σ0 in ``cfg.trap_sigma0s`` (:func:`narrow_posterior.deep_trap`,
    same starts and keys for every σ0), on the named stream "C3.7/deep-trap" of ``rng_key``.
    Returns ``{σ0: dict}``."""
    key = jax.random.fold_in(rng_key, streams.name_word("C3.7/deep-trap"))
    return {
        sigma0: narrow_posterior.deep_trap(
            key,
            x,
            y,
            cfg.sigma,
            1.0,
            cfg.trap_depth,
            num_seeds=cfg.trap_runs,
            sigma0=sigma0,
            eps=cfg.adjusted_eps,
            num_steps=cfg.svi_steps,
            init_scale=cfg.trap_init_scale,
        )
        for sigma0 in cfg.trap_sigma0s
    }


def scan_table(scan: dict, tau2_critical: float, tau2_threshold: float, beta_hat: float) -> str:
    """Markdown: τ²_c against the lasso threshold and β̂, then per τ² of ``scan``
    (:func:`adjusted_runs`) the plain optimum ν*, the plain and adjusted |μ1 μ2| (median,
    min) and the median |θ01 θ02| of the adjusted priors' means."""
    header = (
        "τ²",
        "τ² / τ²_c",
        "ν*",
        "plain |μ₁μ₂| (median)",
        "plain (min)",
        "adjusted |μ₁μ₂| (median)",
        "adjusted (min)",
        "median |θ₀₁θ₀₂|",
    )
    rows = [
        (
            f"{tau2:.5f}",
            f"{tau2 / tau2_critical:.3f}",
            f"{r['nu_star']:.4f}",
            f"{np.median(r['plain']):.4f}",
            f"{r['plain'].min():.4f}",
            f"{np.median(r['adjusted']):.4f}",
            f"{r['adjusted'].min():.4f}",
            f"{np.median(r['theta0']):.2e}",
        )
        for tau2, r in scan.items()
    ]
    setting = (
        f"τ²_c = {tau2_critical:.5f} (lasso threshold σ²/S = {tau2_threshold:.5f}); "
        f"β̂ = {beta_hat:.3f}"
    )
    return setting + "\n\n" + tables.markdown_table(header, rows)


def adjusted_summary(scan: dict, tau2_critical: float, x, y, cfg: SymmetriesSettings) -> dict:
    """What C3.7 measures on ``scan`` (:func:`adjusted_runs`): ``trap``
    (:func:`narrow_posterior.trap_summary`), ``gain`` (:func:`narrow_posterior.convergence_gain`,
    trapped below half of ν*), ``grad_zero`` (|∇_μ ELBO| at μ = 0 under every adjusted
    prior of the scan, q's sd at the plain optimum's) and ``grad_plain`` (the same under the
    plain prior at the smallest τ²)."""
    trap = narrow_posterior.trap_summary(
        scan,
        tau2_critical,
        x,
        y,
        cfg.sigma,
        jitter_ratio=cfg.adjusted_scan[0],
        eps=cfg.adjusted_eps,
    )
    grad_zero = np.concatenate(
        [
            narrow_posterior.gradient_at_zero(
                x,
                y,
                cfg.sigma,
                r["loc"],
                r["scale"],
                theory.mfvi_two_layer_optimum(x, y, cfg.sigma, np.sqrt(t))["s"],
            )
            for t, r in scan.items()
        ]
    )
    smallest = min(cfg.tau2s)
    grad_plain = narrow_posterior.gradient_at_zero(
        x, y, cfg.sigma, np.zeros((1, 2)), np.full((1, 2), np.sqrt(smallest)), 1.0
    )[0]
    return {
        "trap": trap,
        "gain": narrow_posterior.convergence_gain(trap, trap_level=0.5),
        "grad_zero": grad_zero,
        "grad_plain": grad_plain,
    }
