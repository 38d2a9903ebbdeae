"""Tests of chapter 06's tables, settings glue and full-profile record
(``studies.ch06_metricbnn.report``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bnn_posteriors.site import profiles
from bnn_posteriors.studies.ch06_metricbnn import experiments as mbx
from bnn_posteriors.studies.ch06_metricbnn import report

POST = SimpleNamespace(
    ratios={"LA": 1.1, "Lin LA": 2.0}, nll_gap={"LA": 3.0}, la=SimpleNamespace(prior_precision=12.5)
)
ROWS = [("glass", "LA", 2.0, 0.1, 1.5, 2.28), ("glass", "MAP", 1.0, 0.0, 0.0, float("nan"))]
MNIST = {
    "nll": {"LA (last layer)": 0.5, "MetricBNN": 0.3},
    "seconds": {"MetricBNN": 4.0},
    "num_params": 12345,
    "n_train": 500,
    "n_test": 200,
}


def test_tables_show_the_numbers():
    gap = report.gap_table(POST)
    assert "| Lin LA | 2.00 |" in gap and "12.5" in gap
    uci = report.uci_table(ROWS)
    assert uci.splitlines()[0].startswith("| data set") and "2.000 ± 0.10" in uci
    assert "0.300" in report.mnist_table(MNIST) and "4.0" in report.mnist_table(MNIST)


def test_chapter_glue_from_settings_and_the_committed_run():
    cfg = profiles.settings("06_metricbnn", "quick")
    problem = SimpleNamespace(x=np.zeros((10, 1)), x_gap=np.zeros((3, 1)))
    run = SimpleNamespace(problem=problem, n_params=2209)
    mine = report.chapter_glue(cfg, None, run, 200, MNIST)
    assert mine["ch6_snelson_n"] == 13 and mine["ch6_snelson_params"] == "2\u202f209"
    assert mine["ch6_uci_full_splits"] == len(cfg.uci_seeds) and mine["ch6_paper_wins_la"] == 6
    assert mine["ch6_paper_wins_lin"] == 5 and mine["ch6_cnn_params"] == "12\u202f345"
    full = profiles.settings("06_metricbnn", "full")
    committed = {
        "config": {"ae_updates": full.ae_updates, "ae_batch": full.ae_batch, "uci_seeds": [0, 1, 2]}
    }
    theirs = report.chapter_glue(cfg, committed, run, 200, MNIST)
    assert theirs["ch6_uci_full_splits"] == 3
    assert theirs["ch6_ae_committed_budget"] == "App. A's budget"
    assert mine["ch6_ae_committed_budget"] == "a budget shorter than App. A's"


def test_full_record_and_its_display(quick_cfg):
    cfg = quick_cfg(seed=1, uci_seeds=(0,))
    summary = {"mean": 0.1}
    keys = (
        "gap NLL: Gaussian - latent",
        "mean loss ratio - 1",
        "projected solutions: mean loss ratio - 1",
        "straightness",
    )
    summaries = {"deciding (full profile)": dict.fromkeys(keys, summary)}
    banana = {w: {"LA": np.full((4, 2), 0.5)} for w in ("grid", "ring", "test")}
    record = report.full_record(
        cfg,
        12.34,
        c61={},
        summaries=summaries,
        per_map={},
        run=SimpleNamespace(mse_map=0.1),
        post=POST,
        banana=banana,
        y_banana=np.array([0, 1, 1, 0]),
        rows=ROWS,
        mnist=MNIST,
        cost_rows={},
        growth={"LA": 8.0},
        accuracy={"depth": [1], "LA": [1.0], "MetricBNN": [0.9]},
    )
    assert record["wall_time_s"] == 12.3 and set(record["snelson"]["c64"]) == set(keys[1:])
    assert record["banana"]["LA"]["ring entropy"] == pytest.approx(np.log(2))
    assert record["banana"]["LA"]["test NLL"] == pytest.approx(np.log(2))
    assert record["uci_table"][0]["paper_nll"] == 2.28
    assert record["gap_nll_vs_depth"]["MetricBNN"] == [0.9]
    full = {
        **record,
        "provenance": {"commit": "abc", "machine": "m", "date": "d"},
        "mnist_nll": MNIST["nll"],
        "flop_ratio_deepest_shallowest": {"LA": 8.0},
    }
    shown = report.full_run(full)
    assert "commit abc" in shown and "MetricBNN 0.300" in shown and "LA 8.00" in shown
    assert mbx.METHODS[0] == "LA"
