"""The figures of chapter 02: each function takes computed results and returns a Figure.

The chapter glues each figure (``glue("fig-…", fig, display=False)``) and closes it; the
style is the book's (:func:`bnn_posteriors.site.plotting.use_style`, Okabe–Ito colours).
Runs are those of :mod:`posterior_runs` (width → run).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from bnn_posteriors.site import plotting

LEMMA_SHOWN = 300  # draws per (data set, width) in the left panel of :func:`lemma`


def _u_label(j: int, d_in: int) -> str:
    """The label of flat component ``j`` of u (H, d_in): $u_{unit, input}$, from 1."""
    return f"$u_{{{j // d_in + 1},{j % d_in + 1}}}$"


def lemma(gaps: dict, pooled: dict, n_shown: int = LEMMA_SHOWN):
    """Lemma E.1: the gap f − g∘K against the imbalance, and the gap after rebalancing.

    ``gaps``: :func:`convex.lemma_check` ((data set, width) → ``gap``, ``imbalance``);
    ``pooled``: :func:`convex.lemma_summary` (``imbalance``, ``gap_balanced``).
    """
    if n_shown < 1:
        raise ValueError(f"n_shown must be positive, got {n_shown}")
    imbalance = np.asarray(pooled["imbalance"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    ax = axes[0]
    for v in gaps.values():
        ax.loglog(v["imbalance"][:n_shown], v["gap"][:n_shown], ".", ms=2, alpha=0.5)
    lims = [imbalance.min(), imbalance.max()]
    ax.plot(lims, lims, "k--", lw=1, label="$f - g = $ imbalance")
    ax.set(
        xlabel=r"$\sum_i(\|W_{1,i}\| - |w_{2,i}|)^2/(2\tau^2)$",
        ylabel=r"$f - g\circ\mathcal{K}$",
        title="The gap is the imbalance",
    )
    ax.legend(loc="upper left")
    ax = axes[1]
    balanced = np.abs(np.asarray(pooled["gap_balanced"]))
    ax.hist(np.log10(np.maximum(balanced, 1e-18)), bins=40, color=plotting.OKABE_ITO[1])
    ax.set(
        xlabel=r"$\log_{10}|f - g|$ after rebalancing",
        ylabel="draws",
        title="Balanced units: the zero set",
    )
    return fig


def u_marginals(runs: dict, picks: dict, n_show: int = 4):
    """The authors' Fig. 9: per-chain densities of the first ``n_show`` picked components
    of u, one row per width (``picks``: width → flat indices, :func:`posterior_runs.u_dips`)."""
    fig, axes = plt.subplots(len(runs), n_show, figsize=(10, 4.2), squeeze=False)
    for row, (width, r) in zip(axes, runs.items(), strict=True):
        u = np.asarray(r["u"])
        show = picks[width][:n_show]
        labels = [_u_label(j, u.shape[-1]) for j in show]
        plotting.chain_densities(row, u.reshape(*u.shape[:2], -1)[..., show], labels)
        row[0].set_ylabel(f"H = {width}")
    return fig


def rhat(rhats: dict):
    """Histograms of log10 split-R-hat of the components of u, raw and with units matched,
    one panel per width (``rhats``: :func:`posterior_runs.rhat_diagnostics`)."""
    fig, axes = plt.subplots(1, len(rhats), figsize=(9, 3.2), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, (width, d) in zip(axes, rhats.items(), strict=True):
        bins = np.linspace(0, np.log10(max(d["rhat_raw"].max(), 1.01)) + 0.05, 40)
        for key, label, color in (
            ("rhat_raw", "raw components", plotting.OKABE_ITO[0]),
            ("rhat_aligned", "units matched", plotting.OKABE_ITO[2]),
        ):
            ax.hist(np.log10(d[key]), bins=bins, alpha=0.7, label=label, color=color)
        ax.set(xlabel=r"$\log_{10}\hat R$ of the components of $u$", title=f"H = {width}")
    axes[0].set_ylabel("components")
    axes[0].legend()
    return fig


def u_bivariate(u, pair, width: int):
    """The authors' Fig. 8: kernel density contours of two components of u, one colour
    per chain. ``u`` (chains, draws, H, d); ``pair``: two flat component indices."""
    u = np.asarray(u)
    if u.ndim != 4 or len(pair) != 2:
        raise ValueError(
            f"u must be (chains, draws, H, d) and pair two indices, got {u.shape} and {pair}"
        )
    u_flat = u.reshape(*u.shape[:2], -1)
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    for c in range(u_flat.shape[0]):
        xy = u_flat[c][:, pair].T
        kde = stats.gaussian_kde(xy)
        gx, gy = np.meshgrid(*[np.linspace(a.min(), a.max(), 60) for a in xy])
        dens = kde(np.stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
        color = plotting.OKABE_ITO[c % len(plotting.OKABE_ITO)]
        ax.contour(gx, gy, dens, levels=4, colors=[color], linewidths=0.8)
    d_in = u.shape[-1]
    ax.set(
        xlabel=_u_label(pair[0], d_in),
        ylabel=_u_label(pair[1], d_in),
        title=f"H = {width}, one colour per chain",
    )
    return fig


def weights(runs: dict):
    """Per-chain densities of two entries of W1 and two of w2, one row per width."""
    fig, axes = plt.subplots(len(runs), 4, figsize=(10, 4.2), squeeze=False)
    for row, (width, r) in zip(axes, runs.items(), strict=True):
        w1 = np.asarray(r["W1"])
        w1 = w1.reshape(*w1.shape[:2], -1)
        plotting.chain_densities(row[:2], w1[..., :2], ["$W_{1;1,1}$", "$W_{1;1,2}$"])
        plotting.chain_densities(row[2:], np.asarray(r["w2"])[..., :2], ["$w_{2;1}$", "$w_{2;2}$"])
        row[0].set_ylabel(f"H = {width}")
    return fig
