"""Tests of the seed sweep: runs a fake chapter executor, then summarises."""

from __future__ import annotations

import json

import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.claims import sweep


@pytest.fixture(autouse=True)
def rules(catalogue_rules):
    """The rules the fake chapters below are checked by."""
    catalogue_rules(
        {
            "C3.4": [{"part": "root", "rule": "approx", "bound": 0.777, "tol": 0.01}],
            "C5.1": [{"part": "p", "rule": "less", "bound": 1.0}],
            "C2.2": [{"part": "p", "rule": "greater", "bound": 1.0}],
        }
    )


def fake_execute(values):
    """An executor that records one C3.4 check whose value depends on the seed."""

    def execute(path, profile, seed):
        claims.check("C3.4", values[seed])
        return 0

    return execute


def summary_of(values, out):
    """The one summary row of a 3-seed sweep of chapter 3 whose C3.4 values are ``values``."""
    result = sweep.run_sweep(
        ["03_symmetries"], 3, "quick", out, execute=fake_execute(values), log=lambda _: None
    )
    return sweep.summarise(result)[0]


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setenv("BNN_PROFILE", "quick")
    monkeypatch.delenv("BNN_SEED", raising=False)


def test_seeds_start_at_the_chapters_default():
    assert sweep.seeds("03_symmetries", 3) == [20250303, 20250304, 20250305]
    with pytest.raises(ValueError, match="positive integer"):
        sweep.seeds("03_symmetries", 0)
    with pytest.raises(ValueError, match="no settings"):
        sweep.seeds("99_nothing", 2)


def test_sweep_records_status_and_margin_per_seed(tmp_path):
    values = dict(zip(sweep.seeds("03_symmetries", 3), (0.777, 0.780, 0.790), strict=True))
    out = tmp_path / "sweep.json"
    result = sweep.run_sweep(
        ["03_symmetries"], 3, "quick", out, execute=fake_execute(values), log=lambda _: None
    )
    assert "provenance" in json.loads(out.read_text())
    (row,) = sweep.summarise(result)
    assert row["id"] == "C3.4" and row["reproduced"] == 2
    assert row["statuses"] == ["reproduced", "reproduced", "not reproduced"]
    assert row["min_margin"] == pytest.approx(-0.003)
    assert not row["robust"]
    # the third seed's status is not C3.4's lock: that seed would fail the build
    assert row["locked"] == "reproduced" and row["at_lock"] == 2
    assert sweep.seeds_by_claim(result) == {"C3.4": "2 of 3"}
    assert "2 of 3" in sweep.sweep_markdown(result)


def test_a_check_decided_on_committed_results_is_marked_not_robust(tmp_path):
    seeds = sweep.seeds("03_symmetries", 3)

    def execute(path, profile, seed):
        claims.check("C3.4", 0.777, committed="results/x.json")
        return 0

    result = sweep.run_sweep(
        ["03_symmetries"], 3, "quick", tmp_path / "s.json", execute=execute, log=lambda _: None
    )
    (row,) = sweep.summarise(result)
    assert row["committed"] and not row["robust"] and row["at_lock"] == len(seeds)
    assert sweep.seeds_by_claim(result) == {"C3.4": sweep.COMMITTED}
    for run in result["runs"].values():  # swept before the claim's lock changed
        run["checks"][0]["locked"] = "not reproduced"
    assert sweep.seeds_by_claim(result) == {"C3.4": sweep.STALE}
    assert "decided on committed results (seed-independent)" in sweep.sweep_markdown(result)
    commits = sweep.chapter_commits(result)
    assert list(commits) == ["03_symmetries"]
    assert commits["03_symmetries"] == f"`{next(iter(result['runs'].values()))['commit']}`"


def test_each_run_names_its_commit_and_old_runs_are_not_credited_to_a_merge(tmp_path):
    records = [{"git_commit": "abc1234"}, {"git_commit": "abc1234"}]
    assert sweep.run_commit(records) == "abc1234"
    assert sweep.run_commit([*records, {"git_commit": "def5678+dirty"}]).startswith("several")
    assert sweep.run_commit([]) is None
    old_run = {"chapter": "03_symmetries", "seed": 1, "checks": []}
    merged = {
        "runs": {"a": old_run, "b": {**old_run, "seed": 2, "commit": "abc1234"}},
        "sources": [{"chapters": ["03_symmetries"], "commit": "fff0000"}],
        "provenance": {"commit": "eee0000"},
    }
    (text,) = sweep.chapter_commits(merged).values()
    assert text == "`abc1234`; not recorded (merged from the sweep of `fff0000`)"


def test_a_check_swept_by_another_rule_than_the_catalogues_is_stale(tmp_path, catalogue_rules):
    seeds = sweep.seeds("03_symmetries", 2)
    result = sweep.run_sweep(
        ["03_symmetries"],
        2,
        "quick",
        tmp_path / "s.json",
        execute=fake_execute(dict.fromkeys(seeds, 0.777)),
        log=lambda _: None,
    )
    assert sweep.seeds_by_claim(result) == {"C3.4": "2 of 2"}
    catalogue_rules({"C3.4": [{"part": "root", "rule": "approx", "bound": 0.777, "tol": 0.02}]})
    (row,) = sweep.summarise(result)
    assert row["rule_changed"] and sweep.seeds_by_claim(result) == {"C3.4": sweep.STALE}


def test_robust_needs_a_margin_above_the_spread(tmp_path):
    seeds = sweep.seeds("03_symmetries", 3)
    steady = dict(zip(seeds, (0.777, 0.7771, 0.7769), strict=True))
    assert summary_of(steady, tmp_path / "s.json")["robust"]
    shaky = dict(zip(seeds, (0.768, 0.777, 0.786), strict=True))  # all pass, margin ≈ spread
    row = summary_of(shaky, tmp_path / "t.json")
    assert row["reproduced"] == 3 and not row["robust"]


def test_resume_keeps_finished_runs(tmp_path):
    seeds = sweep.seeds("03_symmetries", 2)
    out = tmp_path / "sweep.json"
    execute = fake_execute(dict.fromkeys(seeds, 0.777))
    sweep.run_sweep(["03_symmetries"], 2, "quick", out, execute=execute, log=lambda _: None)

    def must_not_run(*_):
        raise AssertionError("a finished run was executed again")

    result = sweep.run_sweep(
        ["03_symmetries"], 2, "quick", out, resume=True, execute=must_not_run, log=lambda _: None
    )
    assert len(result["runs"]) == 2


def test_a_run_that_stops_early_counts_as_missing(tmp_path):
    seeds = sweep.seeds("03_symmetries", 2)

    def execute(path, profile, seed):
        if seed == seeds[0]:
            claims.check("C3.4", 0.777)
        return 0 if seed == seeds[0] else 1

    result = sweep.run_sweep(
        ["03_symmetries"], 2, "quick", tmp_path / "s.json", execute=execute, log=lambda _: None
    )
    row = sweep.summarise(result)[0]
    assert row["statuses"] == ["reproduced", "missing"] and not row["robust"]


def test_unknown_chapter_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown chapter"):
        sweep.run_sweep(["99_nothing"], 2, "quick", tmp_path / "s.json", execute=None)


def test_no_sweep_file():
    assert sweep.seeds_by_claim(None) == {}
    assert "No seed sweep" in sweep.sweep_markdown(None)


def test_a_steady_failure_is_robust(tmp_path):
    """A check that fails on every seed by more than its spread is a robust finding."""
    seeds = sweep.seeds("03_symmetries", 3)
    failing = dict(zip(seeds, (0.9, 0.91, 0.905), strict=True))
    row = summary_of(failing, tmp_path / "s.json")
    assert row["reproduced"] == 0 and row["robust"]


def test_merge_replaces_chapters_and_keeps_sources(tmp_path):
    """Chapters swept separately merge into one file; a later sweep of a chapter wins."""
    seeds3 = sweep.seeds("03_symmetries", 3)

    def execute(path, profile, seed):
        claims.check("C3.4" if seed in seeds3 else "C5.1", 0.5)
        return 0

    quiet = {"execute": execute, "log": lambda _: None}
    a, b, c = (tmp_path / f"{n}.json" for n in "abc")
    sweep.run_sweep(["03_symmetries"], 2, "quick", a, **quiet)
    sweep.run_sweep(["05_symmetrised_vi"], 2, "quick", b, **quiet)
    out = tmp_path / "merged.json"
    merged = sweep.merge_sweeps([a, b], out)
    assert {r["chapter"] for r in merged["runs"].values()} == {"03_symmetries", "05_symmetrised_vi"}
    assert [s["chapters"] for s in merged["sources"]] == [["03_symmetries"], ["05_symmetrised_vi"]]
    # chapter 3 again: its runs and its source are replaced, chapter 5's are kept
    sweep.run_sweep(["03_symmetries"], 2, "quick", c, **quiet)
    merged = sweep.merge_sweeps([c], out)
    assert len(merged["runs"]) == 4
    assert [s["chapters"] for s in merged["sources"]] == [["05_symmetrised_vi"], ["03_symmetries"]]
    assert merged["sources"][1]["date"] == json.loads(c.read_text())["provenance"]["date"]
    with pytest.raises(ValueError, match="no sweep file"):
        sweep.merge_sweeps([tmp_path / "none.json"], out)
    with pytest.raises(ValueError, match="is the file merged into"):
        sweep.merge_sweeps([out, c], out)  # would lose every source of out
    sweep.run_sweep(["03_symmetries"], 3, "quick", a, **quiet)  # 3 seeds: not mergeable
    with pytest.raises(ValueError, match="cannot merge"):
        sweep.merge_sweeps([a], out)


def test_a_check_inconclusive_on_every_seed_is_robust_whatever_its_rules_margin(tmp_path):
    seeds = sweep.seeds("02_convexified_relu", 3)
    margins = dict(zip(seeds, (1.5, 0.5, 0.2), strict=True))  # the rule flips: 1.5 vs 0.5

    def execute(path, profile, seed):
        gate = claims.Gate(False, "the chains did not mix", "longer chains")
        claims.check("C2.2", margins[seed], gate=gate)
        return 0

    result = sweep.run_sweep(
        ["02_convexified_relu"],
        3,
        "quick",
        tmp_path / "s.json",
        execute=execute,
        log=lambda _: None,
    )
    (row,) = sweep.summarise(result)
    assert row["statuses"] == ["inconclusive"] * 3 and row["robust"]
    assert sweep.check_name(row) == "C2.2"
