"""Tests of the UCI benchmark units, the correct and the authors' evaluation (chapter 8)."""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import metrics
from bnn_posteriors.store import cache
from bnn_posteriors.studies.ch08_benchmarks import report as benchmark_report
from bnn_posteriors.studies.ch08_benchmarks import run as benchmark


def _normal_logpdf(y, m, s):
    return -0.5 * math.log(2 * math.pi) - math.log(s) - 0.5 * ((y - m) / s) ** 2


# --------------------------------------------------------------------------- evaluation


@pytest.mark.slow
def test_authors_lppd_reads_the_variance_as_a_log_scale():
    """Hand computation: column 1 = 0.1 (a variance) becomes the scale exp(0.1)."""
    y = np.array([0.0, 1.0])
    mean = np.array([0.2, 0.7])
    lvals = benchmark.authors_columns(mean, np.full(2, 0.1))
    pairs = list(zip(y, mean, strict=True))
    expected = np.mean([_normal_logpdf(yi, mi, math.exp(0.1)) for yi, mi in pairs])
    assert benchmark.authors_lppd(y, lvals) == pytest.approx(expected, abs=1e-5)
    correct = np.mean([_normal_logpdf(yi, mi, math.sqrt(0.1)) for yi, mi in pairs])
    scores = benchmark.gaussian_scores(y, mean, np.full(2, 0.1))
    assert scores["lppd"] == pytest.approx(correct, abs=1e-5)
    assert scores["lppd_authors"] == pytest.approx(expected, abs=1e-5)
    assert scores["rmse"] == pytest.approx(math.sqrt((0.2**2 + 0.3**2) / 2), abs=1e-6)


def test_authors_lppd_with_one_column_uses_exp_of_the_mean():
    """A mean-only prediction: JAX clamps index 1 to 0, so the scale is exp(mean)."""
    y = np.array([0.0, -1.0, 2.0])
    mean = np.array([0.5, -1.0, 1.5])
    pairs = list(zip(y, mean, strict=True))
    expected = np.mean([_normal_logpdf(yi, mi, math.exp(mi)) for yi, mi in pairs])
    got = benchmark.authors_lppd(y, benchmark.authors_columns(mean))
    assert got == pytest.approx(expected, abs=1e-5)


def test_authors_lppd_mixture_and_log_sigma_column_is_correct():
    """With log σ in column 1 (the BDE case) the authors' LPPD equals the correct one."""
    rng = np.random.default_rng(0)
    y = rng.normal(size=5)
    means = rng.normal(size=(3, 4, 5))
    sigmas = np.exp(rng.normal(size=(3, 4)) * 0.3)
    lvals = np.stack([means, np.broadcast_to(np.log(sigmas)[..., None], means.shape)], -1)
    dens = stats.norm.pdf(y, means, sigmas[..., None]).reshape(-1, 5).mean(0)
    expected = np.mean(np.log(dens))
    assert benchmark.authors_lppd(y, lvals) == pytest.approx(expected, abs=1e-4)
    pointwise = metrics.pointwise_lppd(y, means, sigmas[..., None])
    assert np.mean(np.asarray(pointwise)) == pytest.approx(expected, abs=1e-4)


def test_mixture_scores_pool_chains_of_samples():
    """BDE: per-chain mixtures over samples, pooled over chains = one mixture of all draws."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=6)
    means = rng.normal(size=(3, 4, 6))
    sigmas = np.exp(rng.normal(size=(3, 4)) * 0.3)
    scores = benchmark.mixture_scores(y, means, sigmas)
    dens = stats.norm.pdf(y, means, sigmas[..., None])
    assert scores["lppd"] == pytest.approx(np.mean(np.log(dens.reshape(-1, 6).mean(0))), abs=1e-12)
    per_chain = np.log(dens.mean(1)).mean(1)
    np.testing.assert_allclose(scores["lppd_chains"], per_chain, atol=1e-12)


def test_evaluation_rejects_bad_input():
    with pytest.raises(ValueError, match="lvals must have shape"):
        benchmark.authors_lppd(np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="y must have shape"):
        benchmark.authors_lppd(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        benchmark.authors_lppd(np.array([np.nan, 0.0]), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="must have y's shape"):
        benchmark.gaussian_scores(np.zeros(3), np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="non-negative"):
        benchmark.fit_noise(np.zeros(2), np.zeros(2), -np.ones(2))


def test_fit_noise_recovers_the_noise():
    rng = np.random.default_rng(1)
    mean = rng.normal(size=4000)
    y = mean + 0.3 * rng.normal(size=4000)
    assert benchmark.fit_noise(y, mean) == pytest.approx(0.3, rel=0.05)
    # an epistemic variance of 0.05 leaves σ² ≈ 0.09 − 0.05
    assert benchmark.fit_noise(y, mean, 0.05) == pytest.approx(math.sqrt(0.04), rel=0.1)


def test_summarise_and_differences():
    rows = [
        {"dataset": "airfoil", "metrics": {"bde10": {"lppd": v, "rmse": 0.1, "tag": "x"}}}
        for v in (0.5, 0.7, 0.6)
    ]
    summary = benchmark_report.summarise(rows)
    mean, sd, n = summary["airfoil"]["bde10"]["lppd"]
    assert (mean, n) == (pytest.approx(0.6), 3)
    assert sd == pytest.approx(0.1)
    assert "tag" not in summary["airfoil"]["bde10"]
    diff = benchmark_report.differences(summary)["airfoil"]
    assert diff["reference"] == 0.665
    assert diff["difference"] == pytest.approx(0.6 - 0.665)
    assert diff["z"] == pytest.approx((0.6 - 0.665) / 0.1)


def test_reference_table_is_complete():
    assert set(benchmark.REFERENCE) == set(benchmark.DATASETS)
    for by_method in benchmark.REFERENCE.values():
        assert set(by_method) == set(benchmark.METHODS)
        for scores in by_method.values():
            assert set(scores) == {"lppd", "rmse"} and all(s[1] >= 0 for s in scores.values())


# --------------------------------------------------------------------------- units and cache


def _fake_split(n=40, d=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = np.tanh(x[:, 0]) + 0.1 * rng.normal(size=n)
    idx = {"train": np.arange(0, 28), "val": np.arange(28, 32), "test": np.arange(32, n)}
    parts = {f"{v}_{k}": a[i] for k, i in idx.items() for v, a in (("x", x), ("y", y))}
    return data.Split(
        "fake",
        "full",
        **parts,
        x_mean=np.zeros(d),
        x_std=np.ones(d),
        y_mean=0.0,
        y_std=1.0,
        indices=idx,
    )


@pytest.fixture
def fake_data(monkeypatch, tmp_path):
    monkeypatch.setattr(benchmark.data, "load_split", lambda name, seed, n_max=None: _fake_split())
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path


def test_run_unit_is_cached_and_recomputes_a_corrupt_file(fake_data, monkeypatch, cfg):
    calls = []

    def fake(key, split, s):
        calls.append(1)
        return {"laplace": {"lppd": 0.25, "rmse": 0.5}}

    monkeypatch.setitem(benchmark._COMPUTE, "laplace", fake)
    first = benchmark.run_unit("airfoil", 1, "laplace", cfg)
    assert first["metrics"]["laplace"]["lppd"] == 0.25 and not first["cached"]
    second = benchmark.run_unit("airfoil", 1, "laplace", cfg)
    assert second["cached"] and len(calls) == 1
    assert second["wall_s"] == first["wall_s"]
    parts = benchmark.unit_parts("airfoil", 1, "laplace", cfg.as_dict())
    path = cache.unit_path("ch8-laplace", parts, version=benchmark.UNIT_VERSIONS["laplace"])
    path.write_bytes(b"corrupt")
    with pytest.warns(cache.CacheWarning):
        third = benchmark.run_unit("airfoil", 1, "laplace", cfg)
    assert not third["cached"] and len(calls) == 2
    # another split or another budget is another unit
    benchmark.run_unit("airfoil", 2, "laplace", cfg)
    benchmark.run_unit("airfoil", 1, "laplace", dataclasses.replace(cfg, map_steps=31))
    assert len(calls) == 4


def test_unit_parts_validation(cfg):
    values = cfg.as_dict()
    with pytest.raises(ValueError, match="unit must be"):
        benchmark.unit_parts("airfoil", 1, "nuts", values)
    with pytest.raises(ValueError, match="unknown data set"):
        benchmark.unit_parts("nope", 1, "mfvi", values)
    with pytest.raises(ValueError, match="split must be"):
        benchmark.unit_parts("airfoil", -1, "mfvi", values)
    with pytest.raises(ValueError, match="lack"):
        benchmark.unit_parts("airfoil", 1, "mfvi", {"seed": 1})
    parts = benchmark.unit_parts("airfoil", 1, "mfvi", {**values, "n_max": {"airfoil": 100}})
    assert parts["n_max"] == 100 and "map_steps" not in parts


def test_run_table_writes_and_reads_results(fake_data, monkeypatch, cfg):
    def fake(key, split, s):
        return {"mfvi": {"lppd": float(jax.random.normal(key)), "rmse": 0.3}}

    monkeypatch.setitem(benchmark._COMPUTE, "mfvi", fake)
    out = fake_data / "results"
    rows = benchmark.run_table(cfg, splits=(1, 2), units=("mfvi",), results_dir=out, progress=False)
    assert [r["split"] for r in rows] == [1, 2]
    record = json.loads(benchmark.result_path(out, "airfoil", 2, "mfvi").read_text())
    assert {"provenance", "settings", "wall_s", "metrics"} <= set(record)
    assert "commit" in record["provenance"]
    back = benchmark.read_results(out)
    assert [r["metrics"] for r in back] == [r["metrics"] for r in rows]
    # skip_existing: the parts with these settings are read from their files, not rewritten
    path = benchmark.result_path(out, "airfoil", 2, "mfvi")
    stamp = path.stat().st_mtime_ns
    monkeypatch.setitem(benchmark._COMPUTE, "mfvi", lambda *a: pytest.fail("recomputed"))
    again = benchmark.run_table(
        cfg, splits=(1, 2), units=("mfvi",), results_dir=out, progress=False, skip_existing=True
    )
    assert all(r["cached"] for r in again) and path.stat().st_mtime_ns == stamp
    assert [r["metrics"] for r in again] == [r["metrics"] for r in rows]
    with pytest.raises(ValueError, match="unknown unit"):
        benchmark.run_table(cfg, units=("nuts",), progress=False)


@pytest.mark.slow
def test_real_units_on_a_tiny_problem(fake_data, cfg):
    """Laplace, MFVI and MILE units end to end on 40 points with tiny budgets."""
    for unit, methods in benchmark.METHODS_OF_UNIT.items():
        row = benchmark.run_unit("airfoil", 1, unit, cfg)
        assert set(methods) <= set(row["metrics"])
        for method in methods:
            scores = row["metrics"][method]
            assert {"lppd", "lppd_authors", "lppd_val_noise", "rmse"} <= set(scores)
            assert all(math.isfinite(scores[k]) for k in ("lppd", "lppd_authors", "rmse"))
    assert len(row["metrics"]["bde10"]["lppd_chains"]) == 2


@pytest.mark.slow
def test_resumable_mile_unit_caches_its_chains_and_matches_the_one_program(fake_data, cfg):
    """The full profile's chunked MILE (per-chain cache, progress) draws the same chains."""
    whole = benchmark.run_unit("airfoil", 1, "mile", cfg)
    resumable = dataclasses.replace(cfg, mile_resumable=True)
    chunked = benchmark.run_unit("airfoil", 1, "mile", resumable, progress=True)
    assert not chunked["cached"]  # mile_resumable is part of the unit's key
    names = {p.name.split("-")[1] for p in (fake_data / "cache").rglob("mile-*")}
    assert {"tune", "sample"} <= names  # each chain's tuning and sampling are cached units
    a, b = (np.asarray(r["metrics"]["bde10"]["lppd_chains"]) for r in (whole, chunked))
    # same keys; round-off of the two compiled programs differs (20 + 10 steps)
    np.testing.assert_allclose(a, b, rtol=1e-3)
    other_key = benchmark.run_unit(
        "airfoil", 1, "mile", dataclasses.replace(resumable, seed=cfg.seed + 1)
    )
    assert np.max(np.abs(np.asarray(other_key["metrics"]["bde10"]["lppd_chains"]) - b)) > 1e-3


def test_a_units_settings_are_the_parts_of_the_chapters_settings(fake_data, monkeypatch):
    """run_unit takes the chapter's settings; its cache key and the settings of its part are
    :func:`unit_parts` of their fields (as_dict), the form of the committed parts."""
    from bnn_posteriors.site import profiles

    monkeypatch.setitem(
        benchmark._COMPUTE, "laplace", lambda key, split, s: {"laplace": {"lppd": 0.0}}
    )
    quick = profiles.settings("08_benchmarks", "quick")
    row = benchmark.run_unit("airfoil", 1, "laplace", quick)
    assert row["settings"] == benchmark.unit_parts("airfoil", 1, "laplace", quick.as_dict())
    assert row["settings"]["seed"] == quick.seed
    assert row["settings"]["map_steps"] == quick.map_steps
