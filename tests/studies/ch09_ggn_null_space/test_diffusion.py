"""Tests of chapter 9's C9.4 study (the Laplace diffusion) on a tiny toy (no data files)."""

from __future__ import annotations

import dataclasses

import jax
import matplotlib
import numpy as np
import pytest

from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.studies.ch09_ggn_null_space import diffusion, figures

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def cfg(make_cfg):
    """Chapter 9's quick settings with the tiny budgets of the toy's diffusion."""
    return make_cfg(
        activation="tanh",
        map_prior_precision=1.0,
        map_learning_rate=1e-2,
        map_steps=300,
        pred_samples=20,
        kernel_rtol=1e-6,
        diffusion_steps=3,
        diffusion_samples=12,
        diffusion_max_rank=1000,
    )


@pytest.fixture(scope="module")
def toy(tiny_toy_fit, cfg):
    return tiny_toy_fit(cfg, (8, 8))


def _passes(ev: Evidence) -> bool:
    return ev.verdict()[0]


@pytest.mark.slow
def test_diffusion_rank_counts_eigenvalues_above_delta(toy):
    lam = np.asarray(toy.posterior.eigvals)
    k = diffusion.diffusion_rank(toy)
    assert k == max(int(np.sum(lam > toy.prior_precision)), 1) and 1 <= k < toy.theta.size


@pytest.fixture(scope="module")
def projected(toy, cfg):
    grid = np.linspace(-3, 3, 7)[:, None]
    return grid, diffusion.diffusion_study([toy], jax.random.PRNGKey(1), cfg, grid)


@pytest.mark.slow
def test_diffusion_study_scores_every_method_and_the_grid(toy, projected, cfg):
    grid, result = projected
    scores = result["scores"]["toy"]
    assert set(scores) == {(m, p) for m in diffusion.METHODS for p in ("train", "test")}
    assert result["grid_mean"].shape == result["grid_sd"].shape == (7,)
    evidence = diffusion.diffusion_evidence(result, cfg)
    assert [e.claim for e in evidence] == ["C9.4", "C9.4"]
    assert "Laplace diffusion" in evidence[0].table
    tr = scores[("Laplace diffusion", "train")][1] - scores[("sampled LA", "train")][1]
    assert evidence[0].value == [pytest.approx(tr)]
    fig = figures.bands(
        toy,
        grid,
        result["grid_mean"],
        result["grid_sd"],
        jax.random.PRNGKey(2),
        10,
        label="Laplace diffusion",
    )
    assert fig.axes[3].get_title() == "Laplace diffusion"


@pytest.mark.slow
def test_unprojected_steps_underfit(toy, projected, cfg):
    """The broken input: without the projection the diffusion carries the prior's variance
    along the kernel, and its training NLL rises far above the projected diffusion's."""
    proj = projected[1]["scores"]["toy"]
    broken = diffusion.diffusion_study([toy], jax.random.PRNGKey(1), cfg, project=False)
    broken = broken["scores"]["toy"]
    assert broken[("Laplace diffusion", "train")][1] > proj[("Laplace diffusion", "train")][1] + 1


def test_evidence_fails_when_the_diffusion_is_no_better_than_sampled_la(cfg):
    same = {(m, p): (0.5, 1.0) for m in diffusion.METHODS for p in ("train", "test")}
    worse = {
        **same,
        ("Laplace diffusion", "train"): (0.9, 2.0),
        ("Laplace diffusion", "test"): (0.9, 3.0),
    }
    for scores in (same, worse):
        result = {"scores": {"toy": scores}, "ranks": {"toy": 3}}
        nll, lppd = diffusion.diffusion_evidence(result, cfg)
        assert (nll.part, lppd.part) == ("train-nll", "test-lppd")
        assert not _passes(nll) and not _passes(lppd)
    better = {
        **same,
        ("Laplace diffusion", "train"): (0.4, 0.5),
        ("Laplace diffusion", "test"): (0.4, 0.8),
    }
    nll, lppd = diffusion.diffusion_evidence({"scores": {"toy": better}, "ranks": {"toy": 3}}, cfg)
    assert _passes(nll) and _passes(lppd)


@pytest.mark.slow
def test_a_fit_above_the_rank_cap_is_left_out_and_named(toy, monkeypatch, cfg):
    k = diffusion.diffusion_rank(toy)
    at_k = dataclasses.replace(cfg, diffusion_max_rank=k)
    wide = dataclasses.replace(toy, name="wide")
    rank = diffusion.diffusion_rank
    monkeypatch.setattr(
        diffusion, "diffusion_rank", lambda f: k + 5 if f.name == "wide" else rank(f)
    )
    with pytest.raises(ValueError, match="every fit's rank exceeds"):
        diffusion.diffusion_study([wide], jax.random.PRNGKey(1), at_k)
    result = diffusion.diffusion_study([toy, wide], jax.random.PRNGKey(1), at_k)
    assert set(result["scores"]) == {"toy"} and result["skipped"] == {"wide": k + 5}
    nll, _ = diffusion.diffusion_evidence(result, at_k)
    assert "left out" in nll.note and f"wide (k = {k + 5})" in nll.note
    assert nll.glue["ch9_diff_skipped"] == f"wide (k = {k + 5})"
