"""Smoke tests of chapter 03's figures: each returns a Figure with labelled axes."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from bnn_posteriors.studies.ch03_symmetries import figures

matplotlib.use("Agg")

X = np.linspace(-2.0, 2.0, 12)
Y = 0.8 * X


def test_counterexample_h_marks_the_root_and_the_papers_value():
    ce = dict(w1=0.5, w2=0.8, b1=0.9)
    fig = figures.counterexample_h(ce, 0.777, 0.77754)
    ax = fig.axes[0]
    assert isinstance(fig, Figure) and (ax.get_xlabel(), ax.get_ylabel()) == ("c", "h(c)")
    assert "w_1=0.5" in ax.get_title() and len(ax.get_legend().get_texts()) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match="c_range"):
        figures.counterexample_h(ce, 0.777, 0.77754, c_range=(1.0, 0.5))


def test_hyperbola_has_one_panel_per_prior_variance():
    rng = np.random.default_rng(0)
    fit = {"w": rng.normal(size=(3, 30, 2)), "svi_mu": np.array([0.9, 0.9]), "svi_s": [0.1, 0.2]}
    fig = figures.hyperbola({1.0: fit, 0.01: fit}, 0.8)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert fig.axes[0].get_ylabel() == "$w_2$" and fig.axes[1].get_xlabel() == "$w_1$"
    assert fig.axes[1].get_title() == r"$\tau^2$ = 0.01"
    plt.close(fig)
    with pytest.raises(ValueError, match="no prior variance"):
        figures.hyperbola({}, 0.8)


def test_adjusted_prior_plots_both_kinds_of_runs():
    runs = {"plain": np.array([0.0, 0.1]), "adjusted": np.array([0.01, 0.2])}
    fig = figures.adjusted_prior({0.001: runs, 0.02: runs}, X, Y, 0.5, 0.01, 0.8)
    ax = fig.axes[0]
    assert isinstance(fig, Figure) and ax.get_xlabel() == r"$\tau^2/\tau^2_c$"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "plain SVI runs" in labels and "adjusted SVI runs" in labels
    plt.close(fig)
    with pytest.raises(ValueError, match="tau2_c"):
        figures.adjusted_prior({}, X, Y, 0.5, 0.0, 0.8)
