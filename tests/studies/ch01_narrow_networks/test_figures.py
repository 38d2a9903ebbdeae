"""Smoke tests of chapter 01's figures: each returns a Figure whose axes carry their labels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bnn_posteriors.studies.ch01_narrow_networks import figures  # noqa: E402

pytestmark = pytest.mark.usefixtures("x64")

X = np.linspace(-2.0, 2.0, 12)
Y = 0.8 * X


def _labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


def test_g_figure():
    fig = figures.g_figure(X, Y, 1.0, 1.0, (2, 3))
    assert isinstance(fig, Figure) and len(fig.axes[0].lines) == 2
    assert _labels(fig) == [(r"$\beta$", r"$g(\beta) - \min g$"), (r"$\beta$", r"$g_2(\beta)$")]
    plt.close(fig)
    with pytest.raises(ValueError, match="depths is empty"):
        figures.g_figure(X, Y, 1.0, 1.0, ())


def test_mfvi_figure():
    fit = dict(nu=np.array([0.9, 0.8]), kl_share=np.array([0.1, 0.2]))
    fig = figures.mfvi_figure({0.1: fit, 1.0: fit}, (1, 2), X)
    assert isinstance(fig, Figure) and len(fig.axes[0].lines) == 2
    assert _labels(fig)[1] == ("depth L", "KL / (−ELBO)")
    plt.close(fig)
    with pytest.raises(ValueError, match="mfvi is empty"):
        figures.mfvi_figure({}, (1, 2), X)


def test_nuts_figure():
    rng = np.random.default_rng(0)
    runs = {
        depth: dict(
            w=rng.normal(size=(2, 50, depth)),
            abs_beta=np.abs(rng.normal(1, 0.1, (2, 50))),
            mean=1.0,
            mcse=0.01,
            exact=1.0 - 0.01 * depth,
            ks=0.1 / depth,
        )
        for depth in (1, 2, 3)
    }
    fig = figures.nuts_figure(runs, {1.0: [0.9, 0.8, 0.7]}, 0.1)
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert _labels(fig) == [
        (r"$\beta$", "posterior density"),
        ("depth L", r"$E[|\beta| \mid y]$"),
        ("depth L", "KS distance"),
    ]
    plt.close(fig)
    with pytest.raises(ValueError, match="nuts_runs is empty"):
        figures.nuts_figure({}, {}, 0.1)
