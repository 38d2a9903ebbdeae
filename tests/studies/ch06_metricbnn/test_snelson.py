"""Tests of chapter 06's Snelson pipeline (``studies.ch06_metricbnn.snelson``) on tiny data."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.studies.ch06_metricbnn import experiments as mbx
from bnn_posteriors.studies.ch06_metricbnn import snelson

KEY = jax.random.PRNGKey(0)


@pytest.fixture(scope="module")
def run_and_keys(tiny_cfg):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (30, 1)).astype(np.float32)
    y = np.sin(2 * x[:, 0])
    x_gap = np.array([[2.5], [3.0]], np.float32)
    cfg = tiny_cfg()
    keys = mbx.chapter_keys(KEY, cfg)
    run = snelson.fit_and_walk(keys, x, y, x_gap, np.sin(2 * x_gap[:, 0]), cfg, mbx.walker(cfg))
    return run, keys, cfg


@pytest.mark.slow
def test_fit_and_walk_returns_the_walk_and_its_losses(run_and_keys):
    run, _, cfg = run_and_keys
    assert run.paths.shape == (cfg.num_particles, cfg.snelson_steps, run.n_params)
    assert run.solutions.shape == (cfg.num_particles * cfg.snelson_steps, run.n_params)
    assert run.mse_paths.shape == (run.solutions.shape[0],)
    assert run.mse_map == pytest.approx(float(run.train_mse(run.theta_map)))
    assert 0 < float(run.eta) <= cfg.refine_learning_rate
    rows = dict(snelson.walk_table(run))
    assert rows["parameters P"] == str(run.n_params)


def test_control_measures_compare_the_walk_with_its_unrefined_control(run_and_keys):
    run, keys, cfg = run_and_keys
    c61 = snelson.control_measures(run, keys["walk"], cfg)
    assert c61["max loss ratio - 1"] == pytest.approx(run.mse_paths.max() / run.mse_map - 1)
    assert c61["isotropic top-k"] == (cfg.num_particles // 2) / run.n_params
    assert 0 < c61["explained top-k"] <= 1 + 1e-6
    assert c61["control: max loss ratio - 1"] > -1


@pytest.mark.slow
def test_posteriors_draw_each_method_and_widen_by_their_ratios(run_and_keys):
    run, keys, cfg = run_and_keys
    post = snelson.posteriors(keys, run, cfg)
    assert set(post.draws) == {
        "LA",
        "Gaussian of samples",
        "MetricBNN samples",
        "MetricBNN posterior",
    }
    assert set(post.ratios) == {*post.draws, "Lin LA"} and set(post.nll_gap) == set(post.draws)
    assert post.pred_grid["LA"].shape == (cfg.pred_samples, snelson.X_GRID[2])
    assert post.ratios["LA"] == pytest.approx(mbx.gap_ratio(post.draws["LA"], run.problem))


@pytest.mark.slow
def test_per_map_metrics_summaries_and_table(run_and_keys):
    run, keys, cfg = run_and_keys
    per_map = snelson.per_map_metrics(keys["repeats"], run, cfg, mbx.walker(cfg))
    assert all(v.shape == (cfg.snelson_repeats,) for v in per_map.values())
    first = mbx.latent_posterior_metrics(
        keys["repeats"],
        run.theta_map,
        run.paths,
        run.latent,
        run.problem,
        num_samples=cfg.pred_samples,
    )
    assert {k: v[0] for k, v in per_map.items()} == pytest.approx(first)
    # the run's Gaussian of the solutions is computed once and is the one computed here
    assert run.gaussian is run.gaussian
    args = (keys["repeats"], run.theta_map, run.paths, run.latent, run.problem)
    shared = mbx.latent_posterior_metrics(
        *args, num_samples=cfg.pred_samples, gaussian=run.gaussian
    )
    assert shared == first
    wider = (run.gaussian[0], 3 * run.gaussian[1])  # a wrong Gaussian changes the gap NLL
    other = mbx.latent_posterior_metrics(*args, num_samples=cfg.pred_samples, gaussian=wider)
    assert other["gap NLL: Gaussian - latent"] != first["gap NLL: Gaussian - latent"]
    own = snelson.summaries(per_map, None)
    assert own["this build"] == own["deciding (full profile)"]
    committed = {"snelson": {"per_map": {k: [1.0, 2.0, 3.0] for k in per_map}}}
    deciding = snelson.summaries(per_map, committed)["deciding (full profile)"]
    assert deciding["straightness"]["n"] == 3 and deciding["straightness"]["mean"] == 2.0
    header, rows = snelson.summary_table(snelson.summaries(per_map, committed))
    assert header[3] == "95% t-interval" and len(rows) == 2 * len(per_map)
    with pytest.raises(ValueError, match="no metrics"):
        snelson.summaries({}, None)


def test_one_map_of_this_build_has_no_interval_and_the_deciding_run_still_decides():
    per_map = {"straightness": np.array([0.97])}
    committed = {"snelson": {"per_map": {"straightness": [0.95, 0.96, 0.99]}}}
    by_label = snelson.summaries(per_map, committed)
    one = by_label["this build"]["straightness"]
    assert one["n"] == 1 and one["mean"] == 0.97 and one["per MAP"] == [0.97]
    assert np.isnan(one["low"]) and np.isnan(one["high"]) and np.isnan(one["sd"])
    assert by_label["deciding (full profile)"]["straightness"]["n"] == 3
    _, rows = snelson.summary_table(by_label)
    assert rows[0] == ("this build (1 MAP)", "straightness", "0.9700", "—", "—")
    assert rows[1][0] == "deciding (full profile) (3 MAPs)" and rows[1][3].startswith("[")
