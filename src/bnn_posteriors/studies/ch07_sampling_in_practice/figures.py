"""Chapter 7's figures: each takes computed results and returns a matplotlib Figure in the
book's style (:mod:`bnn_posteriors.site.plotting`); the chapter glues it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from bnn_posteriors.evaluation import metrics
from bnn_posteriors.studies.ch07_sampling_in_practice.functional_diversity import SIGNIFICANT


def permuted_lppd(y, mean, sigma, regular, permuted):
    """Cumulative test LPPD of each chain (thin) and of the ensemble of chains (thick), for
    the chains ``permuted`` (one permuted group) and ``regular`` — [SAP] Figs. 3 and 10.
    ``mean`` (chains, samples, n), ``sigma`` (chains, samples)."""
    mean, sigma = np.asarray(mean), np.asarray(sigma)
    if mean.ndim != 3 or sigma.shape != mean.shape[:2]:
        raise ValueError(
            f"mean must be (chains, samples, n), sigma (chains, samples): "
            f"got {mean.shape} and {sigma.shape}"
        )
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    steps = np.arange(1, mean.shape[1] + 1)
    for idx, colour in ((permuted, "C1"), (regular, "C0")):
        for k in idx:
            running = metrics.running_lppd(y, mean[k], sigma[k])
            ax.plot(steps, running, color=colour, alpha=0.4, lw=0.8)
    for idx, colour, label in (
        (permuted, "C1", "permuted starts"),
        (regular, "C0", "regular starts"),
    ):
        # interleave the chains' samples: after every K entries each chain has one more sample
        merged = mean[idx].transpose(1, 0, 2).reshape(-1, mean.shape[2])
        ens = metrics.running_lppd(y, merged, sigma[idx].T.reshape(-1))[len(idx) - 1 :: len(idx)]
        ax.plot(steps, ens, color=colour, lw=2.2, label=f"ensemble, {label}")
    ax.set_xlabel("samples per chain")
    ax.set_ylabel("cumulative test LPPD")
    ax.legend()
    return fig


def w2_matrices(z_tests: Mapping, ratio: Mapping, *, n_chains: int, n_samples: int):
    """W₂² of the first chain's sample pairs, pairs the Z test does not separate marked
    (Fig. 4, left), and of all regular chains' samples, chain by chain (Fig. 11, right);
    from :func:`.functional_diversity.within_chain_z` and :func:`.w2_ratio`."""
    w2_all = np.asarray(ratio["w2_all"])
    if w2_all.shape != (n_chains * n_samples,) * 2:
        raise ValueError(f"w2_all is {w2_all.shape}, not {n_chains} chains x {n_samples} samples")
    fig, (ax, ax_all) = plt.subplots(1, 2, figsize=(9.4, 4))
    image = ax.imshow(z_tests["w2_first"], cmap="viridis")
    z = np.asarray(z_tests["z_first"])
    ns = np.argwhere((np.abs(z) <= SIGNIFICANT) & ~np.eye(len(z), dtype=bool))
    ax.scatter(ns[:, 1], ns[:, 0], s=4, color="C1", label="not significant")
    ax.set_xlabel("sample $t$")
    ax.set_ylabel("sample $s$")
    ax.set_title("first chain (Fig. 4)")
    fig.colorbar(image, ax=ax, label=r"$W_2^2$ per input")
    if len(ns):
        ax.legend(loc="lower left", fontsize=8)
    image_all = ax_all.imshow(w2_all, cmap="viridis")
    for edge in np.arange(1, n_chains) * n_samples - 0.5:
        ax_all.axhline(edge, color="w", lw=0.5)
        ax_all.axvline(edge, color="w", lw=0.5)
    ax_all.set_xlabel("sample (chain by chain)")
    ax_all.set_title(f"{n_chains} regular chains (Fig. 11)")
    fig.colorbar(image_all, ax=ax_all, label=r"$W_2^2$ per input")
    return fig


def chain_saturation(sat: Mapping):
    """Test LPPD of the first k chains, mean ± sd over orderings — [SAP] Fig. 5; ``sat``
    from :func:`.many_chains.chain_saturation`."""
    cum = np.asarray(sat["cum"])
    if cum.ndim != 2:
        raise ValueError(f"sat['cum'] must be (orderings, chains), got {cum.shape}")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    cum_mean, cum_sd = sat["cum_mean"], cum.std(axis=0)
    k = np.arange(1, len(cum_mean) + 1)
    ax.plot(k, cum_mean, color="C0")
    ax.fill_between(k, cum_mean - cum_sd, cum_mean + cum_sd, color="C0", alpha=0.3)
    ax.set_xscale("log")
    ax.set_xlabel("number of chains")
    ax.set_ylabel("test LPPD")
    return fig


def bivariate(w, *, few: int = 10):
    """Samples of two weights of the kernel ``w`` (chains, samples, in, out), from ``few``
    chains (left) and all chains (right) — [SAP] Figs. 1 and 7."""
    w = np.asarray(w)
    if w.ndim != 4 or w.shape[3] < 2:
        raise ValueError(f"w must be (chains, samples, in, out) with out >= 2, got {w.shape}")
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.6), sharex=True, sharey=True)
    panels = ((axes[0], few, f"{few} chains"), (axes[1], w.shape[0], f"{w.shape[0]} chains"))
    for ax, n, title in panels:
        ax.scatter(w[:n, :, 0, 0].ravel(), w[:n, :, 0, 1].ravel(), s=1, alpha=0.3, color="C0")
        ax.set_title(title)
        ax.set_xlabel(r"$W^{(3)}_{1,1}$")
    axes[0].set_ylabel(r"$W^{(3)}_{1,2}$")
    return fig


def prior_ranks(cells: Sequence[Mapping], rk: Mapping, *, scales: Sequence[float], glorot: float):
    """Rank of each prior scale by the LPPD (left) and the RMSE (right) per cell (colour:
    depth; solid airfoil, dashed others), the Glorot scale as a square — [SAP] Fig. 12;
    ``rk`` from :func:`.prior_scales.rank_clauses` of ``cells``."""
    n_grid = len(scales)
    if len(cells) != len(rk["glorot_ranks"]["LPPD"]):
        raise ValueError("prior_ranks: one row of ranks per cell is needed")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), sharey=True)
    x_pos = np.arange(n_grid + 1)
    ticks = [*(f"{s:g}" for s in scales), f"{glorot:g}\n(Glorot)"]
    for ax, metric in zip(axes, ("LPPD", "RMSE"), strict=True):
        for c, r in zip(cells, rk["glorot_ranks"][metric], strict=True):
            depth, name = c["settings"]["depth"], c["settings"]["dataset"]
            colour, ls = f"C{depth - 1}", "-" if name == "airfoil" else "--"
            label = f"{name}, {depth} layer(s)"
            ax.plot(x_pos[:-1], r[:-1], marker="o", lw=0.8, color=colour, ls=ls, label=label)
            ax.plot(x_pos[-1], r[-1], marker="s", color=colour, ls="none")
        ax.set_xticks(x_pos, ticks)
        ax.set_xlabel("prior scale $s$")
        ax.set_title(f"{metric} rank")
    axes[0].set_ylabel("rank (1 = best)")
    axes[0].invert_yaxis()
    axes[1].legend(fontsize=7)
    return fig
