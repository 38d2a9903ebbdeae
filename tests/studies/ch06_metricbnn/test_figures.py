"""Smoke tests of chapter 06's figures: each returns a Figure with its axis labels."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from bnn_posteriors.studies.ch06_metricbnn import figures

matplotlib.use("Agg")
RNG = np.random.default_rng(0)


def test_snelson_figure_has_a_panel_per_posterior():
    x_grid = np.linspace(-1, 7, 11)[:, None]
    post = SimpleNamespace(
        x_grid=x_grid,
        lin_mean=np.zeros((11, 1)),
        lin_var=np.ones((11, 1)),
        pred_grid={"LA": RNG.normal(size=(4, 11)), "MetricBNN": RNG.normal(size=(4, 11))},
    )
    x = RNG.uniform(size=(5, 1))
    fig = figures.snelson(post, 0.3, x, x[:, 0], x[:2], x[:2, 0])
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert fig.axes[0].get_ylabel() == "f(x) ± 2 sd" and fig.axes[2].get_xlabel() == "x"
    assert [ax.get_title() for ax in fig.axes] == ["Lin LA", "LA", "MetricBNN"]
    plt.close(fig)


def test_banana_figure_has_an_entropy_colour_bar():
    g = np.linspace(-1, 1, 5)
    first = RNG.uniform(0.2, 0.8, (25, 1))
    probs = {"grid": dict.fromkeys(("LA", "Lin LA", "MetricBNN"), np.hstack([first, 1 - first]))}
    x = RNG.normal(size=(6, 2))
    fig = figures.banana(probs, g, 1.5, x, (x[:, 0] > 0).astype(int))
    assert isinstance(fig, Figure) and len(fig.axes) == 4  # three panels and the colour bar
    assert fig.axes[-1].get_ylabel() == "predictive entropy (nats)"
    plt.close(fig)


def test_cost_figure_labels_size_and_operations():
    rows = {"depth": [1, 2], "P": [100, 200], "LA": [1e6, 8e6], "MetricBNN": [1e9, 1.1e9]}
    fig = figures.cost(rows)
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("number of parameters P")
    assert ax.get_ylabel() == "floating-point operations" and ax.get_xscale() == "log"
    plt.close(fig)
