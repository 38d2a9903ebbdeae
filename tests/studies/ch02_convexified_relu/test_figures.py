"""Smoke tests of chapter 02's figures: each returns a Figure with its axis labels."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from bnn_posteriors.studies.ch02_convexified_relu import figures, posterior_runs

matplotlib.use("Agg")

RNG = np.random.default_rng(0)


def runs(widths=(2, 3), chains=2, draws=30, d=2) -> dict:
    out = {}
    for width in widths:
        w1 = RNG.normal(size=(chains, draws, width, d))
        w2 = RNG.normal(size=(chains, draws, width))
        out[width] = {"u": w2[..., None] * w1, "W1": w1, "w2": w2}
    return out


def test_lemma_figure_labels_the_gap_and_the_imbalance():
    imbalance = 10 ** RNG.uniform(-3, 1, 50)
    gaps = {("airfoil", 2): {"gap": imbalance, "imbalance": imbalance}}
    pooled = {"imbalance": imbalance, "gap_balanced": RNG.normal(size=50) * 1e-16}
    fig = figures.lemma(gaps, pooled, n_shown=20)
    assert isinstance(fig, Figure)
    left, right = fig.axes
    assert "tau" in left.get_xlabel() and right.get_ylabel() == "draws"
    plt.close(fig)
    with pytest.raises(ValueError, match="n_shown"):
        figures.lemma(gaps, pooled, n_shown=0)


def test_u_marginals_has_a_row_per_width():
    r = runs()
    fig = figures.u_marginals(r, {2: np.array([0, 3]), 3: np.array([1, 5])}, n_show=2)
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    assert fig.axes[0].get_ylabel() == "H = 2" and fig.axes[1].get_xlabel() == "$u_{2,2}$"
    plt.close(fig)


def test_rhat_figure_has_a_panel_per_width():
    r = runs()
    fig = figures.rhat(posterior_runs.rhat_diagnostics(r, {2: 30.0, 3: 30.0}))
    assert isinstance(fig, Figure) and [ax.get_title() for ax in fig.axes] == ["H = 2", "H = 3"]
    assert fig.axes[0].get_ylabel() == "components" and "hat R" in fig.axes[1].get_xlabel()
    plt.close(fig)


def test_u_bivariate_labels_the_pair():
    u = runs(widths=(3,))[3]["u"]
    fig = figures.u_bivariate(u, [0, 5], 3)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("$u_{1,1}$", "$u_{3,2}$")
    plt.close(fig)
    with pytest.raises(ValueError, match="pair"):
        figures.u_bivariate(u, [0], 3)


def test_weights_figure_labels_both_layers():
    fig = figures.weights(runs())
    assert isinstance(fig, Figure) and len(fig.axes) == 8
    assert fig.axes[0].get_xlabel() == "$W_{1;1,1}$" and fig.axes[3].get_xlabel() == "$w_{2;2}$"
    plt.close(fig)
