"""The figures of chapter 06: each function takes computed results and returns a Figure.

The chapter glues each figure (``glue("ch6_…_fig", fig, display=False)``) and closes it;
the style is the book's (:func:`bnn_posteriors.site.plotting.use_style`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from bnn_posteriors.evaluation.predictive import entropy

GAP = (1.5, 3.0)  # Snelson's held-out in-between gap


def snelson(post, noise_scale: float, x_tr, y_tr, x_gap, y_gap):
    """[MBNN] Figs. 2–3: the data and each posterior's predictive mean ± 2 sd of f.

    ``post``: :class:`snelson.Posteriors` (``x_grid``, ``lin_mean``, ``lin_var`` with the
    noise, ``pred_grid``: method → (S, G)); x_tr (n, 1), y_tr (n,), x_gap (m, 1), y_gap (m,).
    """
    lin_sd = np.sqrt(np.asarray(post.lin_var)[:, 0] - noise_scale**2)
    panels = [("Lin LA", np.asarray(post.lin_mean)[:, 0], lin_sd)]
    panels += [(m, f.mean(0), f.std(0)) for m, f in post.pred_grid.items()]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 3.2), sharey=True, squeeze=False)
    xs = np.asarray(post.x_grid)[:, 0]
    for ax, (name, mean, sd) in zip(axes[0], panels, strict=True):
        ax.axvspan(*GAP, color="0.9")
        ax.scatter(np.asarray(x_tr)[:, 0], y_tr, s=4, color="C0")
        ax.scatter(np.asarray(x_gap)[:, 0], y_gap, s=4, color="C3")
        ax.plot(xs, mean, color="C1")
        ax.fill_between(xs, mean - 2 * sd, mean + 2 * sd, color="C1", alpha=0.3)
        ax.set_title(name)
        ax.set_ylim(-4, 3)
        ax.set_xlabel("x")
    axes[0, 0].set_ylabel("f(x) ± 2 sd")
    return fig


def banana(probs: dict, g, radius: float, x_tr, y_tr):
    """[MBNN] Fig. 4: each method's predictive entropy on the grid, the training data and
    the ring of C6.5.

    ``probs["grid"]``: method → class probabilities on the ``len(g)``² grid of
    :func:`experiments.banana_run`.
    """
    g = np.asarray(g)
    grid = {m: entropy(p) for m, p in probs["grid"].items()}
    fig, axes = plt.subplots(1, len(grid), figsize=(12, 3.8), sharey=True, squeeze=False)
    x_tr = np.asarray(x_tr)
    for ax, m in zip(axes[0], grid, strict=True):
        im = ax.contourf(
            g,
            g,
            np.asarray(grid[m]).reshape(g.size, g.size),
            levels=np.linspace(0, np.log(2), 11),
            cmap="Blues",
        )
        ax.scatter(x_tr[:, 0], x_tr[:, 1], c=y_tr, cmap="autumn", s=5)
        ax.add_patch(plt.Circle((0, 0), radius, fill=False, ls="--", color="k"))
        ax.set_title(m)
        ax.set_aspect("equal")
    fig.colorbar(im, ax=axes[0].tolist(), label="predictive entropy (nats)")
    return fig


def cost(rows: dict):
    """[MBNN] Fig. 5 in operations: each method's FLOP count against the network's size P,
    labelled by depth (:func:`experiments.cost_study`'s rows)."""
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for m in ("LA", "MetricBNN"):
        ax.plot(rows["P"], rows[m], "o-", label=m)
        for d, p_, c_ in zip(rows["depth"], rows["P"], rows[m], strict=True):
            ax.annotate(str(d), (p_, c_), fontsize=8)
    ax.set_xlabel("number of parameters P (labels: hidden layers)")
    ax.set_ylabel("floating-point operations")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend()
    return fig
