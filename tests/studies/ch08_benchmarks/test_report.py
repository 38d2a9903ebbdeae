"""Tests of chapter 8's report: margins, gaps, budgets and the Markdown tables of Table 2."""

from __future__ import annotations

import math

import matplotlib
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims import paper_numbers as references
from bnn_posteriors.studies.ch08_benchmarks import report as benchmark_report
from bnn_posteriors.studies.ch08_benchmarks import run as benchmark

matplotlib.use("Agg")

NAN = float("nan")


def _summary(datasets=("airfoil", "energy")):
    """A summary whose LPPDs are known: BDE(10) 1.0, BDE(1) 0.5, DE 0.2, baselines 0.1/0.3."""
    out = {}
    for d in datasets:
        base = {
            "lppd": (0.1, 0.01, 3),
            "lppd_val_noise": (0.3, 0.02, 3),
            "rmse": (0.2, 0.0, 3),
            "lppd_authors": (-1.0, 0.0, 3),
        }
        out[d] = {
            "laplace": dict(base),
            "mfvi": {**base, "lppd_val_noise": (0.25, 0.0, 3)},
            "de": {**base, "lppd": (0.2, NAN, 1), "lppd_authors": (-0.5, 0.0, 3)},
            "bde1": {
                "lppd": (0.5, 0.1, 3),
                "lppd_single_chain_mean": (0.4, 0.1, 3),
                "rmse": (0.1, 0.0, 3),
            },
            "bde10": {"lppd": (1.0, 0.1, 3), "rmse": (0.1, 0.01, 3)},
        }
    return out


def test_lppd_key_and_best_lppd():
    s = _summary()["airfoil"]
    assert benchmark_report.lppd_key(s["laplace"]) == "lppd_val_noise"
    assert benchmark_report.lppd_key(s["bde10"]) == "lppd"
    assert benchmark_report.best_lppd(s["laplace"]) == 0.3


def test_ranking_margins_against_the_best_other_method():
    margins, single = benchmark_report.ranking_margins(_summary())
    assert margins == {"airfoil": pytest.approx(0.5), "energy": pytest.approx(0.5)}
    assert single["airfoil"] == (pytest.approx(0.2), pytest.approx(0.1))
    partial = _summary()
    for method in ("de", "bde1", "bde10"):  # energy's MILE units not there yet
        del partial["energy"][method]
    assert set(benchmark_report.ranking_margins(partial)[0]) == {"airfoil"}
    assert set(benchmark_report.authors_gaps(partial, ["airfoil"])["de_gaps"]) == {"airfoil"}
    assert "DE" not in benchmark_report.authors_table(partial, ["energy"])


def test_authors_gaps_against_the_reference():
    summary = _summary()
    gaps = benchmark_report.authors_gaps(summary, ["airfoil"])
    ref = references.sap_table2()["airfoil"]
    expected = max(abs(-1.0 - ref[m]["lppd"][0]) for m in ("laplace", "mfvi"))
    assert gaps["max_gap"] == pytest.approx(expected)
    assert gaps["gain"] == pytest.approx(1.25)
    assert set(gaps["de_gaps"]) == {"airfoil", "energy"}


def test_ranking_clauses_say_where_each_ordering_of_the_sentence_holds():
    """C8.1's statements on the test summary: Laplace (0.3) is not last, MFVI (0.25) is;
    BDE(10) beats BDE(1) in LPPD; a table row per statement."""
    summary = _summary()
    clauses = benchmark_report.ranking_clauses(summary)
    ref_min = min(benchmark_report.best_lppd(summary["airfoil"][m]) for m in ("mfvi", "de"))
    assert clauses["laplace_last"]["airfoil"] == pytest.approx(ref_min - 0.3)
    assert clauses["laplace_last"]["airfoil"] < 0
    assert clauses["mfvi_lppd"]["energy"] == pytest.approx(0.25 - 0.3)
    assert clauses["ten_lppd"]["airfoil"] == pytest.approx(0.5)
    assert clauses["single_chain"]["airfoil"] == pytest.approx(0.4 - 0.3)
    # Laplace made the worst in LPPD: the statement holds
    worst = _summary()
    for d in worst:
        worst[d]["laplace"]["lppd_val_noise"] = (-2.0, 0.0, 3)
        worst[d]["laplace"]["lppd"] = (-2.5, 0.0, 3)
    assert all(v > 0 for v in benchmark_report.ranking_clauses(worst)["laplace_last"].values())
    table = benchmark_report.clauses_table(clauses)
    assert len(table.splitlines()) == 2 + len(clauses) and "airfoil" in table.splitlines()[0]
    partial = _summary()
    del partial["energy"]["bde10"]  # units still running: the data set is left out
    assert set(benchmark_report.ranking_clauses(partial)["ten_lppd"]) == {"airfoil"}


def test_described_gaps_score_the_described_predictive_against_table_2():
    """The described LPPD (column "correct") minus Table 2's, per baseline; a summary whose
    described LPPD is Table 2's passes C8.3's rule, the test summary's (0.1) does not."""
    ref = references.sap_table2()
    summary = _summary()
    gaps = benchmark_report.described_gaps(summary, ["airfoil", "energy"])
    assert gaps["gaps"][("airfoil", "mfvi")] == pytest.approx(
        0.1 - ref["airfoil"]["mfvi"]["lppd"][0]
    )
    assert gaps["max_gap"] == max(abs(g) for g in gaps["gaps"].values()) > 1.0
    assert checking.verdict("C8.3", gaps["max_gap"], part="described-variance")[0] is False
    for d in ("airfoil", "energy"):  # the described predictive lands on Table 2
        for m in ("laplace", "mfvi"):
            summary[d][m]["lppd"] = (ref[d][m]["lppd"][0] + 0.05, 0.0, 3)
    matched = benchmark_report.described_gaps(summary, ["airfoil", "energy"])
    assert matched["max_gap"] == pytest.approx(0.05)
    assert checking.verdict("C8.3", matched["max_gap"], part="described-variance")[0] is True
    with pytest.raises(ValueError, match="no summary of the data sets"):
        benchmark_report.described_gaps(summary, ["concrete"])


def _row(dataset, split, unit, wall, tuning=100, lppd=0.5):
    return {
        "dataset": dataset,
        "split": split,
        "unit": unit,
        "wall_s": wall,
        "settings": {"tuning_steps": tuning, "sampling_steps": 10},
        "metrics": {"bde10": {"lppd": lppd, "rmse": 0.1}},
    }


def test_wall_times_and_cost_table():
    rows = [_row("airfoil", 1, "laplace", 2.0), _row("airfoil", 1, "mile", 10.0)]
    assert benchmark_report.wall_times(rows) == {
        "laplace": {"airfoil": [2.0]},
        "mile": {"airfoil": [10.0]},
    }
    table = benchmark_report.cost_table(rows)
    assert table.splitlines()[2] == "| laplace | 1 | 2.0 | 2.0 |"


def test_committed_rows_keep_the_matching_settings(tmp_path):
    cfg = {k: 1 for keys in benchmark.UNIT_KEYS.values() for k in keys}
    cfg.update(seed=0, widths_hidden=(2,), n_max=None)
    parts = benchmark.unit_parts("airfoil", 1, "laplace", cfg)
    row = {"dataset": "airfoil", "split": 1, "unit": "laplace", "metrics": {}, "wall_s": 1.0}
    benchmark.write_result({**row, "settings": parts}, tmp_path)
    benchmark.write_result({**row, "split": 2, "settings": {**parts, "map_steps": 7}}, tmp_path)
    everything, kept = benchmark_report.committed_rows(tmp_path, cfg)
    assert len(everything) == 2 and [r["split"] for r in kept] == [1]
    assert benchmark_report.committed_rows(tmp_path / "none", cfg) == ([], [])


def test_tables_are_markdown_with_the_computed_values():
    summary = _summary()
    table2 = benchmark_report.table2(summary).splitlines()
    assert table2[0].startswith("| data | method | LPPD ours")
    assert "| airfoil | Laplace | 0.300 ± 0.020 | -1.056 ± 0.003 |" in table2[2]
    assert len(table2) == 2 + 2 * len(benchmark.METHODS)
    margins, single = benchmark_report.ranking_margins(summary)
    text = benchmark_report.margins_table(margins, single, {"energy": 0.25})
    assert "| airfoil | +0.50 | +0.20 | +0.10 | — |" in text and "+0.25 |" in text
    z_table, z = benchmark_report.differences_table(summary, 3.0)
    assert set(z) == {(d, m) for d in summary for m in ("lppd", "rmse")}
    assert "flagged" in z_table  # energy's BDE(10) LPPD 1.0 is far below 2.204
    authors = benchmark_report.authors_table(summary, ["energy"])
    assert "| energy | DE(10) | -0.500 | 1.561 | 0.200 | 0.300 |" in authors
    keys = ("map_steps", "splits")
    settings = benchmark_report.settings_table(
        keys, {"map_steps": 5, "splits": (1,)}, {"map_steps": 1, "splits": (1,)}
    )
    assert "| map_steps | 10000 | 5 | 1 |" in settings and "| splits | (1, 2, 3) |" in settings


def test_summarise_skips_non_numbers_and_sd_of_one_split_is_nan():
    rows = [{"dataset": "energy", "metrics": {"de": {"lppd": 1.0, "epochs": [3], "ok": True}}}]
    summary = benchmark_report.summarise(rows)
    assert set(summary["energy"]["de"]) == {"lppd"}
    assert math.isnan(summary["energy"]["de"]["lppd"][1])


def test_figures_draw_every_panel():
    summary = _summary()
    fig = benchmark_report.table_figure(summary, "title")
    assert len(fig.axes) == 8
    fig = benchmark_report.baselines_figure(summary, ["airfoil", "energy"], "quick")
    assert len(fig.axes[0].lines) >= 2
    fig = benchmark_report.cost_figure([_row("airfoil", 1, "mile", 3.0)])
    assert fig.axes[0].get_yscale() == "log"


def test_complete_units_leave_out_units_missing_a_split():
    rows = (
        [_row("energy", k, "mile", 1.0) for k in (1, 2, 3)]
        + [_row("airfoil", k, u, 1.0) for k in (1, 2) for u in ("mile", "laplace")]
        + [_row("airfoil", 3, "laplace", 1.0)]
    )
    kept = benchmark_report.complete_units(rows, (1, 2, 3))
    assert sorted({(r["dataset"], r["unit"]) for r in kept}) == [
        ("airfoil", "laplace"),
        ("energy", "mile"),
    ]
    assert len(kept) == 6
    assert benchmark_report.complete_units(rows, (1,)) == [dict(r) for r in rows if r["split"] == 1]


def test_the_chapters_checks_take_their_rules_from_the_catalogue(catalogue_rules):
    """The chapter's checks (C8.1-C8.3, cells of book/08_benchmarks.md) name their parts; the
    catalogue holds the rules, and C8.2's bound also flags the differences table's rows."""
    entries = [
        checking.catalogue_check(claim, part)
        for claim, part in (
            ("C8.1", "ranking-margin"),
            ("C8.2", "largest-difference"),
            ("C8.3", "described-variance"),
            ("C8.3", "authors-evaluation"),
        )
    ]
    assert [(e["rule"], e["bound"], e.get("finding")) for e in entries] == [
        ("greater", 0.0, None),
        ("less", 3.0, None),
        ("less", 0.1, None),
        ("less", 0.1, "authors-evaluation"),
    ]
    assert checking.verdict("C8.2", 1.6, part="largest-difference")[0]
    assert not checking.verdict("C8.2", 3.5, part="largest-difference")[0]
    assert not checking.verdict("C8.3", 0.1, part="authors-evaluation")[0]  # strictly below
    z_table, z = benchmark_report.differences_table(_summary(), entries[1]["bound"])
    assert z_table.count("flagged") == sum(abs(v) > 3.0 for v in z.values())
    catalogue_rules({"C8.2": [{"part": "largest-difference", "rule": "less", "bound": 1.0}]})
    assert not checking.verdict("C8.2", 1.6, part="largest-difference")[0]
