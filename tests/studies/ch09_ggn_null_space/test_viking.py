"""Tests of chapter 9's VIKING study (C9.5) and its figure on tiny problems (no data files)."""

from __future__ import annotations

import dataclasses
import types

import jax
import matplotlib
import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.studies.ch09_ggn_null_space import figures, study
from bnn_posteriors.studies.ch09_ggn_null_space import viking as vs

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def cfg(make_cfg):
    """Chapter 9's quick settings with the tiny budgets of the VIKING study."""
    return make_cfg(
        rank_widths=(2, 4, 2),
        activation="tanh",
        map_prior_precision=1.0,
        map_learning_rate=1e-2,
        map_steps=300,
        pred_samples=20,
        kernel_rtol=1e-6,
        vk_kl_points=3,
        vk_kl_scales=((1.0, 1.0, 0.1), (0.3, 2.0, 0.05)),
        vk_steps=100,
        vk_optimiser="adam",
        vk_learning_rate=1e-2,
        vk_mc_samples=4,
        vk_mfvi_steps=100,
        vk_mfvi_learning_rate=1e-2,
        vk_mbnn_steps=5,
        vk_mbnn_drift=1e-3,
        vk_mbnn_ae_updates=5,
        vk_class_kl_weight=0.1,
        vk_class_optimiser="radam",
        vk_class_learning_rate=1e-3,
        mnist_hidden=(16, 16),
        mnist_n_train=100,
        mnist_n_test=1000,
    )


def _passes(ev) -> bool:
    return ev.verdict()[0]


@pytest.fixture(scope="module")
def toy(tiny_toy_fit, cfg):
    f = tiny_toy_fit(cfg, (8,))
    return f, vs.fit_posterior(f, jax.random.PRNGKey(1), cfg)


def test_dense_kl_is_zero_at_the_prior_and_checks_its_input():
    assert vs.dense_kl(np.zeros(3), np.eye(3) / 2.0, 2.0) == pytest.approx(0.0, abs=1e-12)
    assert vs.dense_kl(np.ones(3), np.eye(3) / 2.0, 2.0) == pytest.approx(3.0)  # α‖μ‖²/2
    with pytest.raises(ValueError, match="cov"):
        vs.dense_kl(np.zeros(3), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="prior_precision"):
        vs.dense_kl(np.zeros(2), np.eye(2), 0.0)


@pytest.mark.slow
def test_kl_study_and_evidence(toy, cfg):
    result = vs.kl_study(jax.random.PRNGKey(0), cfg)
    assert result["R"] == result["P"] - 6  # N·O = 6 < P = 22
    ev = vs.kl_evidence(result)
    assert _passes(ev) and ev.part == "closed-form-kl"
    assert checking.catalogue_check("C9.5", ev.part)["finding"] == "closed-form-kl"
    broken = {**result, "closed": result["closed"] * 1.01}  # a KL off by 1 %
    assert not _passes(vs.kl_evidence(broken))


def test_orthogonality_study_and_evidence(toy):
    f, post = toy
    result = vs.orthogonality_study(f, post, jax.random.PRNGKey(2), 10)
    assert all(v.shape == (10,) for v in result.values())
    ev = vs.orthogonality_evidence(result)
    assert _passes(ev) and ev.part == "orthogonal-subspaces"
    assert checking.catalogue_check("C9.5", ev.part)["finding"] == "orthogonal-subspaces"
    # the broken input: the identity as "kernel projector" puts image directions in the kernel
    broken = dataclasses.replace(post, projector=np.eye(f.theta.size))
    bad = vs.orthogonality_study(f, broken, jax.random.PRNGKey(2), 10)
    assert not _passes(vs.orthogonality_evidence(bad))


@pytest.mark.slow
def test_band_study_and_figure(toy):
    f, post = toy
    grid = np.linspace(-3, 3, 40)[:, None]
    band = vs.band_study(f, post, grid)
    assert all(v.shape == (40,) for v in band.values())
    at_train = vs.band_study(f, post, f.x)
    assert at_train["sd_kernel"].max() < 1e-2 * band["sd_kernel"].max()  # J P_ker = 0 there
    fig = figures.viking_band(f, grid, band["mean"], band["sd_kernel"], band["sd_image"])
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="grid"):
        figures.viking_band(f, grid, band["mean"][:3], band["sd_kernel"], band["sd_image"])


def test_fit_posterior_uses_each_examples_optimiser_and_beta(monkeypatch, cfg):
    """Regression: the authors' sinusoid.py (Adam 1e-2, β = 1); classes: their mnist.py
    (RAdam 1e-3, β = 0.1), each from the settings."""
    seen = []
    monkeypatch.setattr(vs.vk, "fit_viking", lambda *a, **kw: seen.append(kw))
    base = dict(model_fn=None, theta=None, x=None, y=None, noise_scale=0.3)
    for likelihood in ("gaussian", "categorical"):
        vs.fit_posterior(types.SimpleNamespace(**base, likelihood=likelihood), None, cfg)
    regression, classes = seen
    assert (regression["optimiser"], regression["learning_rate"], regression["kl_weight"]) == (
        "adam",
        1e-2,
        1.0,
    )
    assert (classes["optimiser"], classes["learning_rate"], classes["kl_weight"]) == (
        "radam",
        1e-3,
        0.1,
    )


@pytest.mark.slow
def test_comparison_and_evidence(toy, cfg):
    f, post = toy
    scores = vs.comparison([f], [post], jax.random.PRNGKey(3), cfg)
    assert set(scores["toy"]) == set(vs.METHODS)
    assert all(
        set(v) == {"NLL", "RMSE"} and np.isfinite(list(v.values())).all()
        for v in scores["toy"].values()
    )
    evs = vs.comparison_evidence(scores, [post], cfg)
    assert len(evs) == 1 and "test NLL" in evs[0].table
    nlls = {"VIKING": 0.5, "mean-field VI": 0.9, "linearised LA": 0.55, "MetricBNN": 1.0}
    good = {"toy": {m: {"NLL": v, "RMSE": 0.3} for m, v in nlls.items()}}
    (ok,) = vs.comparison_evidence(good, [post], cfg)
    assert _passes(ok) and ok.says.startswith("VIKING's test NLL is within 0.1 nats")
    assert "lowest of the four on toy" in ok.says and ok.glue["ch9_vk_says"] == ok.says
    bad = {"toy": {**good["toy"], "VIKING": {"NLL": 1.2, "RMSE": 0.3}}}  # worse than every one
    (ko,) = vs.comparison_evidence(bad, [post], cfg)
    assert not _passes(ko)
    assert "more than 0.1 nats above the best baseline on toy (+0.65)" in ko.says


def test_nll_margin_text_follows_the_measured_gaps():
    assert "within it on toy (+0.05)" in vs.nll_margin_text({"toy": 0.05, "yacht": 0.3}, 0.1)
    both = vs.nll_margin_text({"toy": -0.2, "yacht": 0.05}, 0.1)
    assert "on every set" in both and "lowest of the four on toy;" not in both
    assert both.endswith("the lowest of the four on toy.")
    assert vs.nll_margin_text({"toy": 0.05}, 0.1).endswith("the lowest on no set.")


@pytest.mark.slow
def test_comparison_scores_a_classifier_by_nll_ece_and_accuracy(cfg):
    rng = np.random.default_rng(0)
    x, xt = rng.normal(size=(12, 3)), rng.normal(size=(8, 3))
    y, yt = np.arange(12) % 3, np.arange(8) % 3
    jax.config.update("jax_enable_x64", True)
    try:
        f = study.fit(
            "mnist",
            x,
            y,
            xt,
            yt,
            rng_key=jax.random.PRNGKey(0),
            hidden=(4,),
            cfg=cfg,
            likelihood="categorical",
        )
        post = vs.fit_posterior(f, jax.random.PRNGKey(1), cfg)
        scores = vs.comparison([f], [post], jax.random.PRNGKey(3), cfg)
    finally:
        jax.config.update("jax_enable_x64", False)
    for m in vs.METHODS:
        assert set(scores["mnist"][m]) == {"NLL", "ECE", "accuracy"}
        assert 0.0 <= scores["mnist"][m]["accuracy"] <= 1.0 and scores["mnist"][m]["NLL"] > 0
    (ev,) = vs.comparison_evidence(scores, [post], cfg)
    assert "test ECE" in ev.table and "test RMSE" not in ev.table
    assert ev.glue["ch9_vk_ece_mnist_viking"] == scores["mnist"]["VIKING"]["ECE"]
    assert ev.glue["ch9_mnist_P"] == 1482  # the authors' 64–16–16–10 MLP
    assert "On MNIST" in ev.glue["ch9_vk_mnist"] and "VIKING" in ev.glue["ch9_vk_mnist"]
    assert "leaves MNIST out" in vs.mnist_text({"toy": scores["mnist"]})
