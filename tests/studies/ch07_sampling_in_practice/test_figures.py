"""Chapter 7's figures (:mod:`bnn_posteriors.studies.ch07_sampling_in_practice.figures`):
each returns a Figure with labelled axes, and refuses malformed input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bnn_posteriors.studies.ch07_sampling_in_practice import figures  # noqa: E402

RNG = np.random.default_rng(0)


def labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


def test_permuted_lppd():
    y, mean = RNG.normal(size=5), RNG.normal(size=(4, 6, 5))
    fig = figures.permuted_lppd(y, mean, np.ones((4, 6)), np.arange(2), np.arange(2, 4))
    assert labels(fig) == [("samples per chain", "cumulative test LPPD")]
    assert len(fig.axes[0].lines) == 6
    plt.close(fig)
    with pytest.raises(ValueError, match="sigma"):
        figures.permuted_lppd(y, mean, np.ones(4), np.arange(2), np.arange(2, 4))


def test_w2_matrices():
    z = dict(w2_first=RNG.random((3, 3)), z_first=np.array([[0, 3, 0.5], [3, 0, 3], [0.5, 3, 0]]))
    fig = figures.w2_matrices(z, dict(w2_all=RNG.random((6, 6))), n_chains=2, n_samples=3)
    assert labels(fig)[0] == ("sample $t$", "sample $s$")
    assert labels(fig)[1][0] == "sample (chain by chain)"
    assert fig.axes[1].get_title() == "2 regular chains (Fig. 11)"
    plt.close(fig)
    with pytest.raises(ValueError, match="chains"):
        figures.w2_matrices(z, dict(w2_all=RNG.random((5, 5))), n_chains=2, n_samples=3)


def test_chain_saturation():
    cum = RNG.normal(size=(3, 12))
    fig = figures.chain_saturation(dict(cum=cum, cum_mean=cum.mean(axis=0)))
    assert labels(fig) == [("number of chains", "test LPPD")]
    assert fig.axes[0].get_xscale() == "log"
    plt.close(fig)
    with pytest.raises(ValueError, match="orderings"):
        figures.chain_saturation(dict(cum=np.ones(3), cum_mean=np.ones(3)))


def test_bivariate():
    fig = figures.bivariate(RNG.normal(size=(12, 5, 4, 4)))
    assert labels(fig)[0] == (r"$W^{(3)}_{1,1}$", r"$W^{(3)}_{1,2}$")
    assert [ax.get_title() for ax in fig.axes] == ["10 chains", "12 chains"]
    plt.close(fig)
    with pytest.raises(ValueError, match="out >= 2"):
        figures.bivariate(np.ones((2, 3, 4, 1)))


def test_prior_ranks():
    cells = [
        {"settings": {"depth": d, "dataset": n}} for n in ("airfoil", "energy") for d in (1, 2)
    ]
    ranks = np.tile(np.arange(1, 5), (4, 1))
    rk = {"glorot_ranks": {"LPPD": ranks, "RMSE": ranks[:, ::-1]}}
    fig = figures.prior_ranks(cells, rk, scales=(0.1, 1.0, 10.0), glorot=0.25)
    assert labels(fig) == [("prior scale $s$", "rank (1 = best)"), ("prior scale $s$", "")]
    assert fig.axes[0].get_title() == "LPPD rank" and fig.axes[0].yaxis_inverted()
    plt.close(fig)
    with pytest.raises(ValueError, match="one row"):
        figures.prior_ranks(cells[:2], rk, scales=(0.1, 1.0, 10.0), glorot=0.25)
