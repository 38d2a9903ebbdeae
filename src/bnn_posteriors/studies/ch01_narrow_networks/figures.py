"""Chapter 01's figures: each function takes computed results and returns a matplotlib Figure.

The book's style (:func:`bnn_posteriors.site.plotting.use_style`) is applied by the chapter;
the chapter glues the figure (``myst_nb.glue``) and closes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

from bnn_posteriors.site import plotting
from bnn_posteriors.theory import narrow_network as theory

MCSE_BAND = 2  # the NUTS error bars of fig-nuts span ± this many MCSE


def g_figure(x, y, sigma: float, tau: float, depths: Sequence[int]):
    """Fig. fig-g: g(β) − min g (eq. 27) and its prior part g2(β) over β ∈ [−1.5, 1.5].

    One curve per depth L in ``depths``, on the data ``x``, ``y`` (n,) with noise ``sigma``
    (a weak likelihood shows the prior's shape) and prior scale ``tau``.
    """
    if not depths:
        raise ValueError("depths is empty: the figure needs at least one depth")
    betas = jnp.linspace(-1.5, 1.5, 3001)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    colors = plotting.sequential_colors(len(depths))
    for depth, color in zip(depths, colors, strict=True):
        gv = theory.g(betas, x, y, sigma, tau, depth)
        axes[0].plot(betas, gv - gv.min(), color=color, label=f"L = {depth}")
        axes[1].plot(betas, theory.g2(betas, depth, tau), color=color)
    axes[0].set(
        xlabel=r"$\beta$",
        ylabel=r"$g(\beta) - \min g$",
        ylim=(-0.2, 6),
        title=rf"$g = g_1 + g_2$ ($\sigma$ = {sigma:g})",
    )
    axes[1].set(xlabel=r"$\beta$", ylabel=r"$g_2(\beta)$", title=r"prior part $g_2$")
    axes[0].legend()
    return fig


def mfvi_figure(mfvi: Mapping[float, Mapping], depths: Sequence[int], x):
    """Fig. fig-mfvi: the exact MFVI slope |ν| and the KL's share of −ELBO over depth.

    ``mfvi``: ``{σ: dict}`` of :func:`narrow_posterior.mfvi_over_depth` over ``depths``, one
    curve per σ, labelled with the likelihood precision Σ x_i² / σ² of the inputs ``x``.
    """
    if not mfvi:
        raise ValueError("mfvi is empty: the figure needs at least one fit")
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for (sigma, m), color in zip(mfvi.items(), plotting.OKABE_ITO, strict=False):
        label = rf"$\sigma$ = {sigma:g} (precision {float(jnp.sum(x**2)) / sigma**2:.0f})"
        axes[0].plot(depths, np.abs(m["nu"]), "o-", color=color, label=label)
        axes[1].plot(depths, m["kl_share"], "o-", color=color)
    axes[0].set(xlabel="depth L", ylabel=r"$|\nu| = |\prod_l \mu_l|$", title="MFVI slope")
    axes[1].set(xlabel="depth L", ylabel="KL / (−ELBO)", title="prior share of the objective")
    axes[0].legend(fontsize=8)
    return fig


def nuts_figure(nuts_runs: Mapping[int, Mapping], weak: Mapping[float, Sequence], sigma: float):
    """Fig. fig-nuts: NUTS posterior of β, E[|β| | y] over depth, KS distance to the prior.

    ``nuts_runs``: ``{L: dict}`` of :func:`narrow_posterior.nuts_over_depth` (noise
    ``sigma``); ``weak``: ``{σ: exact E|β| over the same depths}`` for weaker likelihoods
    (:func:`narrow_posterior.exact_mean_abs_beta`). Error bars span ± ``MCSE_BAND`` MCSE.
    """
    if not nuts_runs:
        raise ValueError("nuts_runs is empty: the figure needs at least one depth")
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    colors = plotting.sequential_colors(len(nuts_runs))
    for (depth, r), color in zip(nuts_runs.items(), colors, strict=True):
        axes[0].hist(
            np.sign(r["w"]).prod(-1).ravel() * r["abs_beta"].ravel(),
            bins=80,
            range=(0.5, 1.5),
            density=True,
            histtype="step",
            color=color,
            label=f"L = {depth}",
        )
    depths = list(nuts_runs)
    axes[1].errorbar(
        depths,
        [r["mean"] for r in nuts_runs.values()],
        yerr=[MCSE_BAND * r["mcse"] for r in nuts_runs.values()],
        fmt="o",
        color="k",
        label=rf"NUTS, $\sigma$ = {sigma:g}",
    )
    exact = [r["exact"] for r in nuts_runs.values()]
    axes[1].plot(depths, exact, "-", color=plotting.OKABE_ITO[0], label="exact")
    for (s, means), color in zip(weak.items(), plotting.OKABE_ITO[1:], strict=False):
        axes[1].plot(depths, means, "-", color=color, label=rf"exact, $\sigma$ = {s:g}")
    ks = [nuts_runs[depth]["ks"] for depth in depths[1:]]
    axes[2].plot(depths[1:], ks, "o-", color=plotting.OKABE_ITO[3])
    axes[0].set(xlabel=r"$\beta$", ylabel="posterior density", title=r"NUTS posterior of $\beta$")
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].set(xlabel="depth L", ylabel=r"$E[|\beta| \mid y]$", title="posterior mean of |β|")
    axes[1].legend(fontsize=7)
    axes[2].set(xlabel="depth L", ylabel="KS distance", title=r"$|w_l|$ vs prior half-normal")
    return fig
