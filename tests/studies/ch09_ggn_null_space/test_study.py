"""Tests of chapter 9's study and figures on tiny problems (no data files)."""

from __future__ import annotations

import dataclasses
import types

import jax
import matplotlib
import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.data import loaders
from bnn_posteriors.studies.ch09_ggn_null_space import figures, study

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def cfg(make_cfg):
    """Chapter 9's quick settings with the tiny budgets of these problems."""
    return make_cfg(
        rank_widths=(2, 4, 2),
        rank_points=(1, 3, 12),
        rank_directions=4,
        activation="tanh",
        toy_widths=(1, 8, 1),
        toy_noise_scale=0.3,
        uci_names=("yacht",),
        uci_hidden=(8,),
        uci_noise=0.3,
        uci_map_noise_scale=0.3,
        map_prior_precision=1.0,
        map_learning_rate=1e-2,
        map_steps=300,
        pred_samples=20,
        ap_batch_size=5,
        ap_sweeps=4,
        ap_vectors=2,
        kernel_rtol=1e-6,
        slq_matvecs=10,
        slq_probes=20,
    )


def _passes(ev: Evidence) -> bool:
    return ev.verdict()[0]


def _toy_data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-2, -0.5, n // 2), rng.uniform(0.5, 2, n // 2)])[:, None]
    x_gap = np.linspace(-0.4, 0.4, 5)[:, None]
    return x, np.sin(2 * x[:, 0]), x_gap, np.sin(2 * x_gap[:, 0])


@pytest.fixture(scope="module")
def toy(cfg):
    jax.config.update("jax_enable_x64", True)
    x, y, xg, yg = _toy_data()
    f = study.fit(
        "toy", x, y, xg, yg, rng_key=jax.random.PRNGKey(0), hidden=(8,), cfg=cfg, noise_scale=0.3
    )
    yield f
    jax.config.update("jax_enable_x64", False)


@pytest.mark.slow
def test_fit_gives_the_map_laplace_and_the_kernel(toy):
    assert toy.jac.shape == (20, toy.theta.size)
    residual = np.abs(np.asarray(toy.jac @ toy.projector)).max()
    assert residual <= 1e-6 * np.linalg.norm(np.asarray(toy.jac), 2)
    assert toy.prior_precision > 0


@pytest.mark.slow
def test_toy_and_uci_fits_use_their_loaders(monkeypatch, toy, cfg):
    monkeypatch.setattr(loaders, "load_snelson", lambda in_between: _toy_data())
    split = types.SimpleNamespace(
        **dict(zip(("x_train", "y_train", "x_test", "y_test"), _toy_data(), strict=True))
    )
    monkeypatch.setattr(loaders, "load_split", lambda name, seed: split)
    assert study.toy_fit(jax.random.PRNGKey(0), cfg).name == "toy"
    key = jax.random.PRNGKey(0)
    assert study.uci_fit(key, cfg, seed=0, name="yacht").name == "yacht"
    two = dataclasses.replace(cfg, uci_names=("yacht", "energy"))
    fits = study.uci_fits(key, two, seed=0)
    assert [f.name for f in fits] == ["yacht", "energy"]
    # the first set keeps its key when a set is added: its fit is uci_fit's with rng_key
    np.testing.assert_array_equal(fits[0].theta, study.uci_fit(key, cfg, 0, "yacht").theta)
    assert not np.allclose(fits[0].theta, fits[1].theta)  # the second has its own key
    for bad in ((), ("yacht", "yacht")):
        with pytest.raises(ValueError, match="uci_names"):
            study.uci_fits(key, dataclasses.replace(cfg, uci_names=bad), 0)


@pytest.mark.slow
def test_uci_noise_is_fixed_by_a_number_or_fitted_by_the_evidence(monkeypatch, cfg):
    split = types.SimpleNamespace(
        **dict(zip(("x_train", "y_train", "x_test", "y_test"), _toy_data(), strict=True))
    )
    monkeypatch.setattr(loaders, "load_split", lambda name, seed: split)
    key = jax.random.PRNGKey(0)
    x64 = jax.config.jax_enable_x64  # the module's toy fixture may have switched it on
    jax.config.update("jax_enable_x64", True)
    try:
        fixed = study.uci_fit(key, cfg, seed=0, name="yacht")
        by_evidence = dataclasses.replace(cfg, uci_noise="evidence")
        fitted = study.uci_fit(key, by_evidence, seed=0, name="yacht")
    finally:
        jax.config.update("jax_enable_x64", x64)
    assert fixed.noise_scale == fixed.posterior.noise_scale == 0.3
    # the same MAP (trained with uci_map_noise_scale), then σ fitted with δ: σ² = SSE/(n − γ)
    np.testing.assert_array_equal(fitted.theta, fixed.theta)
    assert fitted.noise_scale == fitted.posterior.noise_scale != 0.3
    sse = float(np.sum((np.asarray(fitted.model_fn(fitted.theta, fitted.x))[:, 0] - fitted.y) ** 2))
    lam = np.asarray(fitted.posterior.eigvals)
    gamma = float(np.sum(lam / (lam + fitted.prior_precision)))
    np.testing.assert_allclose(fitted.noise_scale**2, sse / (fitted.y.size - gamma), rtol=1e-5)
    assert study.uci_noise(by_evidence) == (0.3, True) and study.uci_noise(cfg) == (0.3, False)
    for bad in ("mle", -0.1):
        with pytest.raises(ValueError, match="uci_noise"):
            study.uci_noise(dataclasses.replace(cfg, uci_noise=bad))
    with pytest.raises(ValueError, match="fit_noise"):
        x, _, xg, _ = _toy_data()
        study.fit(
            "c",
            x,
            np.zeros(20, int),
            xg,
            np.zeros(5, int),
            rng_key=key,
            hidden=(4,),
            cfg=cfg,
            likelihood="categorical",
            fit_noise=True,
        )


@pytest.mark.slow
def test_rank_study_and_evidence(toy, cfg):
    result = study.rank_study(jax.random.PRNGKey(1), cfg)
    assert np.all(result["rank_ggn"] <= result["NO"])
    assert np.all(result["dim_ker"] == result["P"] - result["rank_ggn"])
    assert np.any(result["rank_hessian"] > result["NO"])  # the broken input
    has_kernel = result["dim_ker"] > 0
    assert np.all(np.isnan(result["kernel_change"]) == ~has_kernel)
    assert np.all(result["kernel_change"][has_kernel] < 1e-5 * result["image_change"][has_kernel])
    rank, preserves = study.rank_evidence(result)
    assert isinstance(rank, Evidence) and all(rank.value) and "rank GGN" in rank.table
    assert _passes(rank) and "kernel / range" in rank.table
    assert preserves.part == "preserves-predictions" and len(preserves.value) == has_kernel.sum()
    assert _passes(preserves) and "preserve the linearised" in preserves.says


def _rank_result(**changes):
    base = {
        "N": np.array([1, 2]),
        "NO": np.array([2, 4]),
        "P": np.array([10, 10]),
        "rank_ggn": np.array([2, 4]),
        "rank_J": np.array([2, 4]),
        "dim_ker": np.array([8, 6]),
        "rank_hessian": np.array([5, 9]),
        "kernel_change": np.array([1e-9, 2e-9]),
        "image_change": np.array([1.0, 1.5]),
    }
    return {**base, **changes}


def test_rank_evidence_fails_on_a_rank_above_no():
    rank, preserves = study.rank_evidence(_rank_result(rank_ggn=np.array([3, 4])))
    assert not all(rank.value) and rank.part == "rank-bound" and not _passes(rank)
    assert _passes(preserves)


def test_rank_evidence_fails_when_kernel_directions_move_the_predictions():
    # a null space built elsewhere: its directions move the outputs like the range's
    _, moved = study.rank_evidence(_rank_result(kernel_change=np.array([1e-9, 0.4])))
    assert not _passes(moved) and "not the preserved predictions" in moved.says
    assert moved.glue["ch9_preserve_ratio"] == pytest.approx(0.4 / 1.5)
    # a size without a kernel is left out of the part, not counted as preserved
    _, empty = study.rank_evidence(
        _rank_result(kernel_change=np.array([1e-9, np.nan]), dim_ker=np.array([8, 0]))
    )
    assert empty.labels == ["N = 1"] and len(empty.value) == 1
    catalogue = checking.catalogue_check("C9.1", "preserves-predictions")
    assert catalogue["rule"] == "less" and catalogue["bound"] == 1e-3


@pytest.mark.slow
def test_rank_study_fails_with_a_basis_that_is_not_the_null_space(monkeypatch, toy, cfg):  # x64
    # the check can fail: random orthonormal directions of the kernel's dimension in place of
    # the GGN's null space move the training outputs like the range's
    real_null = study.sla.null_space
    rng = np.random.default_rng(0)

    def wrong_null(ggn):
        k = real_null(ggn).shape[1]
        return np.linalg.qr(rng.normal(size=(len(ggn), max(k, 1))))[0][:, :k]

    monkeypatch.setattr(study.sla, "null_space", wrong_null)
    result = study.rank_study(jax.random.PRNGKey(1), cfg)
    assert not _passes(study.rank_evidence(result)[1])


@pytest.mark.slow
def test_underfitting_evidence(toy, cfg):
    scores = study.predictive_scores(toy, jax.random.PRNGKey(2), 10)
    assert set(scores) == {
        (m, p) for m in ("MAP", "sampled LA", "linearised LA") for p in ("train", "test")
    }
    np.testing.assert_allclose(scores[("MAP", "train")][0], scores[("linearised LA", "train")][0])
    change = study.kernel_image_change(toy, jax.random.PRNGKey(3), 10)
    assert set(change) == {"full", "kernel", "image"} and all(v >= 0 for v in change.values())
    ev = study.underfitting_evidence([toy], jax.random.PRNGKey(4), cfg)
    assert [e.claim for e in ev] == ["C9.2"] * 3 and ev[0].gate is not None
    assert [e.part for e in ev] == ["underfit", "linearised-nll", "kernel-split"]
    assert [checking.catalogue_check("C9.2", e.part)["rule"] for e in ev] == [
        "greater",
        "less",
        "greater",
    ]
    assert ev[0].glue["ch9_underfit_ratio"] == checking.catalogue_check("C9.2", "underfit")["bound"]


@pytest.mark.slow
def test_projected_study_and_evidence(toy, cfg):
    grid = np.linspace(-4, 4, 41)[:, None]
    result = study.projected_study(toy, jax.random.PRNGKey(5), cfg, grid)
    assert result["errors"].shape == (cfg.ap_sweeps,)
    assert float(result["residual"].max()) < 1e-6
    assert float(result["change_projected"].max()) < 1e-4 * np.median(result["change_isotropic"])
    assert float(result["sd_train"].max()) < 1e-2 * float(result["grid_sd"].max())
    ev = study.projected_evidence(toy, result, grid, cfg)
    assert _passes(ev[0]) and "leave the linearised training predictions" in ev[0].says
    # the check can fail: samples that move the training outputs like unprojected draws
    moved = {**result, "change_projected": result["change_isotropic"]}
    broken = study.projected_evidence(toy, moved, grid, cfg)[0]
    assert not _passes(broken) and "does not keep" in broken.says
    assert [e.part for e in ev] == [
        "training-predictions",
        "alternating-projections",
        "alternating-projections-error",
        "sd-growth",
    ]
    entries = [checking.catalogue_check("C9.3", e.part) for e in ev]
    assert [e["rule"] for e in entries] == ["less", "less", "less", "greater"]
    assert [e.get("finding") for e in entries] == [None, *[e.part for e in ev[1:3]], None]
    errors = result["errors"]
    assert ev[1].value == pytest.approx(float(errors[-1] / errors[0]))
    converging = study.projected_evidence(
        toy, {**result, "errors": np.geomspace(0.1, 1e-4, cfg.ap_sweeps)}, grid, cfg
    )
    assert _passes(converging[1])  # sweeps that converge reproduce it
    stalling = study.projected_evidence(
        toy, {**result, "errors": np.full(cfg.ap_sweeps, 0.05)}, grid, cfg
    )
    assert not _passes(stalling[1])  # sweeps that do not improve do not
    # the prose's words follow the errors: falling every sweep, or where the smallest one is
    assert converging[1].glue["ch9_ap_trend"].startswith("falls after every one of the")
    assert stalling[1].glue["ch9_ap_trend"].startswith("does not fall after every sweep")
    rising = np.array([0.05, 0.01, *np.linspace(0.02, 0.03, cfg.ap_sweeps - 2)])
    text = study.projected_evidence(toy, {**result, "errors": rising}, grid, cfg)[1].glue
    assert f"after sweep 2 of {cfg.ap_sweeps}" in text["ch9_ap_trend"]
    assert text["ch9_ap_ratio"] == pytest.approx(rising[-1] / rising[0])


@pytest.mark.slow
def test_lanczos_study_and_evidence(toy, cfg):
    result = study.lanczos_study(toy, jax.random.PRNGKey(6), cfg)
    assert abs(result["slq_grad"] - result["dense_grad"]) < 0.2 * abs(result["dense_grad"])
    assert abs(result["slq"] - result["dense"]) < 0.1 * toy.theta.size
    assert abs(result["slq_grad"] - result["finite_diff"]) < 1e-4 * abs(result["finite_diff"])
    assert result["memory_adjoint"] < result["memory_iterations"]
    assert 0 < result["memory_forward"] < result["memory_adjoint"]
    ev = study.lanczos_evidence(result, cfg)
    assert [e.claim for e in ev] == ["C9.6"] * 4
    assert [e.part for e in ev] == ["slq", "adjoint", "evidence-delta", "efficiency"]
    assert ev[0].glue["ch9_slq_tol"] == checking.catalogue_check("C9.6", "slq")["tol"]
    assert _passes(ev[3]) and "of the memory" in ev[3].says
    # the check can fail: adjoints that needed more memory than the iterations' reverse mode
    costly = {**result, "memory_adjoint": 2 * result["memory_iterations"]}
    broken = study.lanczos_evidence(costly, cfg)[3]
    assert not _passes(broken) and "no saving" in broken.says
    assert broken.glue["ch9_mem_ratio"] == pytest.approx(2.0)


@pytest.mark.slow
@pytest.mark.filterwarnings("error")  # a warning is stderr in the page: a build error
def test_figures(toy):
    lam = np.asarray(toy.posterior.eigvals)
    assert figures.spectrum(lam, 20, 10).axes
    grid = np.linspace(-3, 3, 11)[:, None]
    fig = figures.bands(toy, grid, np.zeros(11), np.ones(11), jax.random.PRNGKey(7), 5)
    assert len(fig.axes) == 4
    assert figures.sweep_errors([0.5, 0.1]).axes
    with pytest.raises(ValueError, match="non-empty"):
        figures.spectrum([], 1, 1)
    with pytest.raises(ValueError, match="non-empty"):
        figures.sweep_errors([])


@pytest.mark.slow
def test_mnist_fit_is_a_categorical_fit_of_the_downscaled_images(monkeypatch, toy, cfg):
    rng = np.random.default_rng(0)
    images = rng.uniform(0.0, 1.0, (40, 784))
    labels = np.arange(40, dtype=np.int32) % 10
    split = (images[:30], labels[:30], images[30:], labels[30:])
    monkeypatch.setattr(loaders, "load_mnist_subset", lambda seed, n_test: split)
    mnist_cfg = dataclasses.replace(
        cfg, mnist_n_train=10, mnist_n_test=10, mnist_hidden=(4,), mnist_activation="gelu"
    )
    f = study.mnist_fit(jax.random.PRNGKey(0), mnist_cfg, seed=0)
    assert (f.name, f.likelihood, f.activation) == ("mnist", "categorical", "gelu")
    assert f.x.shape == (10, study.MNIST_SIDE**2) and f.x_test.shape == (10, 64)
    np.testing.assert_array_equal(f.x, loaders.mnist_downscale(images[:10]))
    size = (64 + 1) * 4 + (4 + 1) * 10
    assert f.theta.size == size and f.jac.shape == (10 * 10, size)
    assert f.y.dtype == np.int32 and f.prior_precision > 0
