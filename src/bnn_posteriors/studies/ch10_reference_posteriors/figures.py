"""Chapter 10's figures: fidelity against cost, and each method's predictive beside the
reference's on the 1-D regression (bands) and the 2-D classification (probability maps)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from bnn_posteriors.studies.ch10_reference_posteriors import problems, score
from bnn_posteriors.studies.ch10_reference_posteriors.evidence import distance_metric
from bnn_posteriors.studies.ch10_reference_posteriors.report import LABELS


def fidelity_vs_cost(
    rows: Sequence[Mapping],
    problem_names: Sequence[str],
    floors: Mapping[str, Mapping],
    columns: int = 3,
):
    """One panel per problem, ``columns`` a row: each method's distance to the reference (mean
    and 95 % interval over seeds) against its cost in FLOPs, both on log axes; the dashed line
    is the reference's floor (its two halves of chains). Returns the figure."""
    ncols = min(columns, len(problem_names))
    nrows = -(-len(problem_names) // ncols)
    fig, grid = plt.subplots(
        nrows, ncols, figsize=(4.6 * ncols, 4.2 * nrows), squeeze=False, layout="constrained"
    )
    axes = grid.ravel()
    for ax in axes[len(problem_names) :]:
        ax.set_axis_off()  # the last row's empty panels
    methods = list(score.METHODS)
    for ax, problem in zip(axes, problem_names, strict=False):
        mine = [r for r in rows if r["settings"]["problem"] == problem and r.get("applies", True)]
        if not mine:
            ax.set_title(f"{problem}: no scored parts")
            continue
        metric = distance_metric(mine[0])
        board = score.leaderboard(mine, (metric, "flops"))
        for (_, method), entry in board.items():
            mean, low, high = entry[metric]
            err = None if np.isnan(low) else [[mean - low], [high - mean]]
            color = plt.get_cmap("tab20")(methods.index(method) % 20)
            marker = "os^Dv<>ph*XP8"[methods.index(method) % 13]
            ax.errorbar(
                entry["flops"][0],
                mean,
                yerr=err,
                fmt=marker,
                color=color,
                ms=6,
                capsize=2,
                label=method,
            )
        if problem in floors:
            ax.axhline(floors[problem][metric], color="0.4", ls="--", lw=1, label="reference floor")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("cost (FLOPs)")
        ax.set_ylabel(f"{LABELS[metric].split()[0]} to the reference")
        ax.set_title(problem)
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    # "outside": the figure's layout engine (constrained, plotting.use_style) makes room for it
    fig.legend(
        [handles[lab] for lab in labels],
        labels,
        loc="outside lower center",
        ncol=min(len(labels), 5),
        frameon=False,
    )
    return fig


def _part_of(rows: Sequence[Mapping], problem: str, method: str, seed: int):
    for row in rows:
        s = row["settings"]
        if (s["problem"], s["method"], s["seed"]) == (problem, method, seed) and "grid" in row:
            return row
    return None


def _panels(n: int, ncols: int, size: tuple[float, float]):
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(size[0] * ncols, size[1] * nrows),
        sharex=True,
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def regression_bands(
    reference: Mapping,
    rows: Sequence[Mapping],
    problem: str,
    methods: Sequence[str],
    seed: int,
    ncols: int = 4,
):
    """The 1-D regression: the reference's predictive mean ± 2 sd of y (grey) on the grid and,
    one panel per method, that method's (``seed``'s part) over it, with the training points
    and the held-out test points. ``reference``: the arrays of the reference. Returns the
    figure."""
    prob = problems.problem(problem)
    ref = score.grid_summary(score.reference_predictive(reference, "grid"))
    g = np.asarray(reference["grid_x"])[:, 0]
    shown = [m for m in methods if _part_of(rows, problem, m, seed) is not None]
    fig, axes = _panels(len(shown), ncols, (3.4, 2.6))
    ref_mean, ref_sd = np.asarray(ref["mean"]), np.asarray(ref["sd"])
    for ax, method in zip(axes, shown, strict=False):
        grid = _part_of(rows, problem, method, seed)["grid"]
        mean, sd = np.asarray(grid["mean"]), np.asarray(grid["sd"])
        ax.fill_between(
            g,
            ref_mean - 2 * ref_sd,
            ref_mean + 2 * ref_sd,
            color="0.75",
            lw=0,
            label="reference ± 2 sd",
        )
        ax.plot(g, mean, color="C0", lw=1.3, label="method mean")
        ax.plot(g, mean - 2 * sd, color="C0", lw=0.8, ls="--", label="method ± 2 sd")
        ax.plot(g, mean + 2 * sd, color="C0", lw=0.8, ls="--")
        ax.plot(prob.x_train[:, 0], prob.y_train, "k.", ms=2)
        ax.plot(prob.x_test[:, 0], prob.y_test, "x", color="C3", ms=2)
        ax.set_title(method, fontsize=9)
    lo, hi = np.percentile(np.concatenate([prob.y_train, prob.y_test]), [0, 100])
    axes[0].set_ylim(lo - 1.5 * (hi - lo) / 2, hi + 1.5 * (hi - lo) / 2)
    axes[0].legend(frameon=False, fontsize=7, loc="lower left")
    return fig


def probability_maps(
    reference: Mapping,
    rows: Sequence[Mapping],
    problem: str,
    methods: Sequence[str],
    seed: int,
    ncols: int = 5,
):
    """The 2-D classification: p(class 1) on the grid of the reference (first panel) and of
    each method (``seed``'s part), with the training points and the reference's decision
    boundary (white) drawn in every panel. Returns the figure."""
    prob = problems.problem(problem)
    x = np.asarray(reference["grid_x"])
    side = int(round(np.sqrt(len(x))))
    if side * side != len(x):
        raise ValueError(f"probability_maps: the grid of {problem} is not square ({len(x)} points)")
    extent = (x[:, 0].min(), x[:, 0].max(), x[:, 1].min(), x[:, 1].max())
    ref = np.asarray(score.grid_summary(score.reference_predictive(reference, "grid"))["probs1"])
    shown = [m for m in methods if _part_of(rows, problem, m, seed) is not None]
    maps = [("reference", ref)] + [
        (m, np.asarray(_part_of(rows, problem, m, seed)["grid"]["probs1"])) for m in shown
    ]
    fig, axes = _panels(len(maps), ncols, (2.4, 2.4))
    xs, ys = np.unique(x[:, 0]), np.unique(x[:, 1])
    order = np.lexsort((x[:, 0], x[:, 1]))  # rows of constant x2, x1 increasing
    image = None
    for ax, (title, p1) in zip(axes, maps, strict=False):
        image = ax.imshow(
            p1[order].reshape(side, side),
            origin="lower",
            extent=extent,
            vmin=0,
            vmax=1,
            cmap="RdBu_r",
            aspect="auto",
        )
        ax.contour(xs, ys, ref[order].reshape(side, side), levels=[0.5], colors="w", linewidths=1)
        ax.scatter(
            *prob.x_train.T, c=prob.y_train, cmap="RdBu_r", s=3, edgecolors="k", linewidths=0.2
        )
        ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=list(axes[: len(maps)]), shrink=0.8, label="p(class 1)")
    return fig
