"""Smoke tests of chapter 4's figures on hand-made fits: a Figure with labelled axes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bnn_posteriors.studies.ch04_elbo_tempering import figures  # noqa: E402


def labels(fig: Figure) -> list[tuple[str, str]]:
    """The (x, y) labels of every axes of ``fig``; closes it."""
    assert isinstance(fig, Figure)
    out = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
    plt.close(fig)
    return out


@pytest.mark.slow
def test_kl_rmse_and_predictive(toy):
    fits = toy.fake_fits()
    assert labels(figures.kl_rmse(fits)) == [
        ("neurons $N$", r"KL$(q^*\|P_0)$"),
        ("neurons $N$", "test RMSE (standardised $y$)"),
    ]
    fig = figures.predictive(fits, noise_scale=1.0)
    assert len(fig.axes[0].lines) == len(toy.WIDTHS)
    assert labels(fig)[0] == ("x (standardised)", "y (standardised)")


def test_terms_balanced_and_gap(toy):
    fits = toy.fake_fits()
    by_p, fam = toy.fake_by_p(fits), toy.fake_fam()
    fig = figures.terms(fits, by_p, fam, toy.PS, toy.FAMILY, p_width=16)
    assert [x for x, _ in labels(fig)] == ["neurons $N$", "observations $p$", "neurons $N$"]
    assert labels(figures.balanced(fits))[1] == (
        "observed y (test, standardised)",
        "predictive mean",
    )
    gap = figures.gap(fits, by_p, fam, toy.PS, toy.FAMILY)
    assert len(gap.axes[0].lines) == 4
    assert labels(gap) == [("neurons $N$", r"$|\mathrm{ELBO}^N_\eta - \tilde F^N_\eta|$")]


def test_mnist_sweep():
    sweep = [
        {"eta": e, "accuracy": 0.9, "nll": 0.3, "ece": 0.01, "confidence": 0.8} for e in (0.01, 1.0)
    ]
    fig = figures.mnist(sweep, [0.01, 1.0], 0.05)
    assert [ax.get_title() for ax in fig.axes] == ["accuracy", "NLL", "ECE", "confidence"]
    assert labels(fig)[0][0] == r"temperature $\eta$"
