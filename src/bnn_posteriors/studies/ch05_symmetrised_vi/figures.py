"""Chapter 5's figures: each takes computed results and returns a matplotlib Figure in the
book's style (:mod:`bnn_posteriors.site.plotting`); the chapter glues it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from bnn_posteriors.site import plotting


def mi_curves(curves: Mapping, *, separations: Sequence[float], ks: Sequence[int], width: int):
    """I against the separation of the units (left) and the InfoNCE bound Î_K of the fitted
    q against K (right), from :func:`.repeats.mi_curves`; bars: two standard errors."""
    if len(separations) != len(curves["separation"]) or len(ks) != len(curves["infonce"]):
        raise ValueError("mi_curves: separations and ks must match the curves' lengths")
    log_g = math.lgamma(width + 1)
    separation, infonce = curves["separation"], curves["infonce"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    ax = axes[0]
    ax.errorbar(
        separations,
        separation[:, 0],
        yerr=2 * separation[:, 1],
        marker="o",
        color=plotting.OKABE_ITO[0],
    )
    ax.axhline(log_g, ls="--", color="k", lw=0.8, label=r"$\log|G|$")
    ax.set(
        xlabel="separation $d$ of the unit means",
        ylabel=r"$I(g;\omega)$ [nats]",
        title=f"H = {width}, |G| = {math.factorial(width)}",
    )
    ax.legend()
    ax = axes[1]
    ax.errorbar(
        ks,
        infonce[:, 0],
        yerr=2 * infonce[:, 1],
        marker="o",
        color=plotting.OKABE_ITO[1],
        label=r"$\hat I_K$",
    )
    ax.axhline(curves["mi"][0], color=plotting.OKABE_ITO[0], label="exact $I$")
    ax.plot(ks, np.log(ks), ":", color="k", lw=0.8, label=r"$\log K$")
    ax.set(
        xscale="log",
        xlabel="K (permutations)",
        ylabel="nats",
        title="fitted plain q",
        ylim=(0, 1.15 * log_g),
    )
    ax.legend()
    return fig


def nuts_plane(arr: Mapping, *, num_chains: int):
    """Output weights of the first two hidden units: NUTS draws by chain, draws of plain q and
    of q_G (:func:`.repeats.nuts_arrangements`), with the diagonal the transposition mirrors."""
    nuts_draws, q_draws, qg_draws = arr["draws"], arr["q_draws"], arr["qg_draws"]
    if nuts_draws["W1"].shape[0] != num_chains:
        raise ValueError(
            f"nuts_plane: {nuts_draws['W1'].shape[0]} chains in the draws, "
            f"num_chains = {num_chains}"
        )
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4), sharex=True, sharey=True)
    colors = plotting.sequential_colors(num_chains)
    for c in range(num_chains):
        axes[0].scatter(
            nuts_draws["W1"][c, :, 0, 0],
            nuts_draws["W1"][c, :, 1, 0],
            s=2,
            alpha=0.4,
            color=colors[c],
        )
    for ax, draws, title, color in (
        (axes[1], q_draws, "plain MFVI q", plotting.OKABE_ITO[3]),
        (axes[2], qg_draws, "symmetrised q_G", plotting.OKABE_ITO[0]),
    ):
        ax.scatter(draws[1]["W"][:, 0, 0], draws[1]["W"][:, 1, 0], s=2, alpha=0.3, color=color)
        ax.set_title(title)
    axes[0].set_title(f"NUTS, {num_chains} chains")
    lim = float(np.quantile(np.abs(np.asarray(nuts_draws["W1"][..., :2, 0])), 0.995)) * 1.1
    for ax in axes:
        ax.plot([-lim, lim], [-lim, lim], ":", color="k", lw=0.8)
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), xlabel="$W_1[0]$ (output weight, unit 0)")
    axes[0].set_ylabel("$W_1[1]$ (output weight, unit 1)")
    return fig


def toy_predictive(toy: Mapping, per_width: Mapping, *, n_seeds: int, noise_scale: float):
    """Predictive mean ± 2 sd (with the noise ``noise_scale``) of the first seed's plain and
    symmetrised fits on the toy set's grid, one panel per width. ``toy``:
    :func:`.runs.toy_runs`; ``per_width``: :func:`.pruning.collapse_by_width`'s
    ``per_width`` (the pruned fraction in the titles)."""
    fits, x_grid = toy["fits"], toy["x_grid"]
    if list(fits) != list(per_width):
        raise ValueError("toy_predictive: the fits and per_width must have the same widths")
    fig, axes = plt.subplots(1, len(fits), figsize=(3.2 * len(fits), 3), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, (w, r) in zip(axes, fits.items(), strict=True):
        for run, color, label in (
            (0, plotting.OKABE_ITO[3], "plain"),
            (n_seeds, plotting.OKABE_ITO[0], "symmetrised"),
        ):
            f = r["extra"][run]
            m, sd = f.mean(0), np.sqrt(f.var(0) + noise_scale**2)
            ax.plot(x_grid[:, 0], m, color=color, label=label)
            ax.fill_between(x_grid[:, 0], m - 2 * sd, m + 2 * sd, color=color, alpha=0.15)
        ax.scatter(toy["x_train"][:, 0], toy["y_train"], s=8, color="k", zorder=3)
        ax.set(title=f"H = {w}: pruned {100 * per_width[w]['pruned'][0]:.0f}% (plain)", xlabel="x")
    axes[0].set_ylabel("y")
    axes[0].legend()
    return fig


def gains(toy_gain: Mapping, mnist_gain: Mapping, mnist_fits: Mapping, *, mnist_seeds: int):
    """Symmetrised minus plain against the width (mean ± sd over seeds, :func:`.fits.gains`):
    ELBO gain with log H! (left), test log-likelihood gain (middle), and MNIST test accuracy
    of both methods (right; ``mnist_fits``: :func:`.fits.fit_width` per width)."""
    if list(mnist_gain) != list(mnist_fits):
        raise ValueError("gains: mnist_gain and mnist_fits must have the same widths")
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.2))
    for fits, gain, marker, name in (
        (None, toy_gain, "o", "toy"),
        (mnist_fits, mnist_gain, "s", "MNIST"),
    ):
        ws = list(gain)
        for ax, key in zip(axes[:2], ("elbo", "test_ll"), strict=True):
            m = np.array([gain[w][key].mean() for w in ws])
            s = np.array([gain[w][key].std() for w in ws])
            ax.errorbar(ws, m, yerr=s, marker=marker, capsize=3, label=name)
        if fits is not None:
            n = mnist_seeds
            for part, color, label in (
                (slice(0, n), plotting.OKABE_ITO[3], "plain"),
                (slice(n, None), plotting.OKABE_ITO[0], "symmetrised"),
            ):
                acc = [fits[w]["accuracy"][part] for w in ws]
                axes[2].errorbar(
                    ws,
                    [a.mean() for a in acc],
                    yerr=[a.std() for a in acc],
                    marker=marker,
                    capsize=3,
                    color=color,
                    label=label,
                )
    widths = list(toy_gain)
    axes[0].plot(
        widths, [math.lgamma(w + 1) for w in widths], ":", color="k", lw=0.8, label=r"$\log H!$"
    )
    axes[0].set(
        xlabel="width H", ylabel="nats", title=r"ELBO gain: ELBO$(q_G^{sym})$ − ELBO$(q^{plain})$"
    )
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set(xlabel="width H", ylabel="nats per test point", title="test log-likelihood gain")
    axes[2].set(xlabel="width H", ylabel="test accuracy", title="MNIST accuracy")
    for ax in axes:
        ax.legend()
    return fig
