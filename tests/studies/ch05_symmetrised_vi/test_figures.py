"""Chapter 5's figures (:mod:`bnn_posteriors.studies.ch05_symmetrised_vi.figures`): each
returns a Figure with labelled axes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bnn_posteriors.studies.ch05_symmetrised_vi import figures  # noqa: E402

RNG = np.random.default_rng(0)


def labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


def test_mi_curves():
    curves = dict(
        separation=np.array([[0.0, 0.0], [1.0, 0.1], [1.79, 0.0]]),
        infonce=np.array([[0.6, 0.01], [1.5, 0.02]]),
        mi=[1.7, 0.01],
    )
    fig = figures.mi_curves(curves, separations=(0.0, 1.0, 3.0), ks=(2, 16), width=3)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 2
    assert labels(fig)[0] == ("separation $d$ of the unit means", r"$I(g;\omega)$ [nats]")
    assert labels(fig)[1] == ("K (permutations)", "nats")
    plt.close(fig)
    with pytest.raises(ValueError, match="lengths"):
        figures.mi_curves(curves, separations=(0.0,), ks=(2, 16), width=3)


def test_nuts_plane():
    draws = {"W1": RNG.normal(size=(2, 5, 3, 1))}
    q = [{"W": RNG.normal(size=(10, 1, 3))}, {"W": RNG.normal(size=(10, 3, 1))}]
    fig = figures.nuts_plane(dict(draws=draws, q_draws=q, qg_draws=q), num_chains=2)
    assert len(fig.axes) == 3 and labels(fig)[0][1] == "$W_1[1]$ (output weight, unit 1)"
    assert all(x == "$W_1[0]$ (output weight, unit 0)" for x, _ in labels(fig))
    plt.close(fig)
    with pytest.raises(ValueError, match="chains"):
        figures.nuts_plane(dict(draws=draws, q_draws=q, qg_draws=q), num_chains=3)


def test_toy_predictive():
    fits = {w: {"extra": RNG.normal(size=(4, 6, 20))} for w in (2, 4)}
    toy = dict(
        fits=fits,
        x_grid=np.linspace(-2, 2, 20)[:, None],
        x_train=RNG.normal(size=(5, 1)),
        y_train=RNG.normal(size=5),
    )
    per_width = {w: {"pruned": np.array([0.5, 0.0])} for w in (2, 4)}
    fig = figures.toy_predictive(toy, per_width, n_seeds=2, noise_scale=0.3)
    assert len(fig.axes) == 2 and labels(fig)[0] == ("x", "y")
    assert fig.axes[1].get_title() == "H = 4: pruned 50% (plain)"
    plt.close(fig)
    with pytest.raises(ValueError, match="widths"):
        figures.toy_predictive(toy, {2: per_width[2]}, n_seeds=2, noise_scale=0.3)


def test_gains():
    gain = {w: {"elbo": RNG.normal(size=3), "test_ll": RNG.normal(size=3)} for w in (2, 4)}
    fits = {w: {"accuracy": RNG.random(6)} for w in (2, 4)}
    fig = figures.gains(gain, gain, fits, mnist_seeds=3)
    assert len(fig.axes) == 3
    assert labels(fig) == [
        ("width H", "nats"),
        ("width H", "nats per test point"),
        ("width H", "test accuracy"),
    ]
    plt.close(fig)
    with pytest.raises(ValueError, match="widths"):
        figures.gains(gain, gain, {2: fits[2]}, mnist_seeds=3)
