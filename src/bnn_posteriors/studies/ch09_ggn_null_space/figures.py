"""Chapter 9's figures: the GGN spectrum, the predictive bands on the toy, the sweep errors."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from bnn_posteriors.inference import laplace


def spectrum(eigvals, num_constraints: int, rank: int):
    """GGN eigenvalues, largest first, on a log axis, with N·O and the numerical rank marked.

    Eigenvalues at or below 0 are drawn at the smallest positive one / 10 (the kernel).
    Returns the figure.
    """
    lam = np.sort(np.asarray(eigvals, dtype=np.float64))[::-1]
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"spectrum: eigvals must be a non-empty vector, got shape {lam.shape}")
    positive = lam[lam > 0]
    floor = positive.min() / 10 if positive.size else 1.0
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.semilogy(np.arange(1, lam.size + 1), np.where(lam > floor, lam, floor), lw=1.5)
    ax.axvline(num_constraints, color="C1", ls="--", label="N·O")
    ax.axvline(rank, color="C2", ls=":", label="numerical rank")
    ax.set_xlabel("index i")
    ax.set_ylabel(r"eigenvalue $\lambda_i$ of the GGN")
    ax.legend(frameon=False)
    return fig


def bands(
    fit,
    grid,
    projected_mean,
    projected_sd,
    rng_key,
    num_samples: int = 200,
    label: str = "projected posterior",
):
    """Predictive mean ± 2 sd on ``grid`` of the MAP (σ only), the sampled LA, the
    linearised LA and the projected posterior, one panel each, over the toy's data.

    ``fit`` is a :class:`.study.Fit`; ``projected_sd`` the epistemic sd of the projected
    posterior (σ is added here). ``label`` titles the last panel (e.g. "Laplace diffusion"
    for C9.4's samples' mean and sd). Returns the figure.
    """
    g = np.asarray(grid)[:, 0]
    sigma = fit.noise_scale
    map_mean = np.asarray(fit.model_fn(fit.theta, grid))[:, 0]
    s_mean, s_var = laplace.sampled_predictive(fit.posterior, grid, rng_key, num_samples)
    l_mean, l_var = laplace.linearised_predictive(fit.posterior, grid)
    panels = [
        ("MAP", map_mean, np.full_like(map_mean, sigma)),
        ("sampled LA", np.asarray(s_mean)[:, 0], np.sqrt(np.asarray(s_var)[:, 0])),
        ("linearised LA", np.asarray(l_mean)[:, 0], np.sqrt(np.asarray(l_var)[:, 0])),
        (label, np.asarray(projected_mean), np.sqrt(np.asarray(projected_sd) ** 2 + sigma**2)),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2), sharey=True)
    for ax, (title, mean, sd) in zip(axes, panels, strict=True):
        ax.fill_between(g, mean - 2 * sd, mean + 2 * sd, alpha=0.3, lw=0)
        ax.plot(g, mean, lw=1.5)
        ax.plot(fit.x[:, 0], fit.y, "k.", ms=3, label="train")
        ax.plot(fit.x_test[:, 0], fit.y_test, "x", color="C3", ms=3, label="gap (test)")
        ax.set_title(title)
        ax.set_xlabel("x")
    axes[0].set_ylabel("y")
    lo, hi = float(np.min(fit.y)), float(np.max(fit.y))
    axes[0].set_ylim(lo - 2.0, hi + 2.0)
    axes[0].legend(frameon=False, loc="lower left")
    return fig


def sweep_errors(errors):
    """Mean relative error to the dense projector after each sweep, log axis."""
    errors = np.asarray(errors, dtype=np.float64)
    if errors.ndim != 1 or errors.size == 0:
        raise ValueError(f"sweep_errors: errors must be a non-empty vector, got {errors.shape}")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.semilogy(np.arange(1, errors.size + 1), errors, "o-")
    ax.set_xlabel("sweeps over the minibatches")
    ax.set_ylabel(r"$\|P_{AP}v - P_{ker}v\| / \|P_{ker}v\|$")
    return fig


def viking_band(fit, grid, mean, sd_kernel, sd_image):
    """VIKING's linearised predictive on the toy: mean ± 2 sd (noise included), with the sd
    split into its kernel and image parts (lower panel). ``fit`` a :class:`.study.Fit`;
    ``mean``, ``sd_kernel``, ``sd_image`` on ``grid`` (n,). Returns the figure."""
    g = np.asarray(grid)[:, 0]
    mean, sd_k, sd_i = (
        np.asarray(a, dtype=np.float64).ravel() for a in (mean, sd_kernel, sd_image)
    )
    if not mean.shape == sd_k.shape == sd_i.shape == g.shape:
        raise ValueError(
            f"viking_band: mean, sd_kernel, sd_image must match the grid {g.shape}, got "
            f"{mean.shape}, {sd_k.shape}, {sd_i.shape}"
        )
    sd = np.sqrt(sd_k**2 + sd_i**2 + fit.noise_scale**2)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(6, 4.8), sharex=True, height_ratios=(2, 1))
    ax.fill_between(g, mean - 2 * sd, mean + 2 * sd, alpha=0.3, lw=0)
    ax.plot(g, mean, lw=1.5, label="VIKING mean")
    ax.plot(fit.x[:, 0], fit.y, "k.", ms=3, label="train")
    ax.plot(fit.x_test[:, 0], fit.y_test, "x", color="C3", ms=3, label="gap (test)")
    ax.set_ylim(float(np.min(fit.y)) - 2.0, float(np.max(fit.y)) + 2.0)
    ax.set_ylabel("y")
    ax.legend(frameon=False, loc="lower left")
    ax2.semilogy(g, sd_k, label="kernel part")
    ax2.semilogy(g, sd_i, label="image part")
    ax2.set_xlabel("x")
    ax2.set_ylabel("epistemic sd")
    ax2.legend(frameon=False)
    return fig
