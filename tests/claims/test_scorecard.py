"""Tests of bnn_posteriors.claims.scorecard: latest records, rows, counts, Markdown table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.claims import scorecard


def record(claim_id: str, profile: str, status: str, time: str, value=1.0) -> dict:
    return {
        "id": claim_id,
        "profile": profile,
        "status": status,
        "time": time,
        "value": value,
        "expect": 1.0,
        "rule": "approx",
        "tol": 0.1,
    }


def test_scorecard_latest_status_and_not_yet_run():
    records = [
        record("C1.2", "quick", "not reproduced", "2025-01-02T00:00:00+00:00", 5.0),
        record("C1.2", "quick", "reproduced", "2025-01-03T00:00:00+00:00", 1.01),
        record("C1.2", "quick", "not reproduced", "2025-01-01T00:00:00+00:00", 7.0),
        record("C1.2", "full", "not reproduced", "2025-01-01T00:00:00+00:00"),
        record("C9.9", "quick", "reproduced", "2025-01-01T00:00:00+00:00"),
    ]
    rows = scorecard.scorecard(records)
    assert [row["id"] for row in rows] == [c["id"] for c in claims.catalogue()]
    row = next(row for row in rows if row["id"] == "C1.2")
    assert row["quick"]["status"] == "reproduced"
    assert row["quick"]["measured"] == "1.01"
    assert row["quick"]["expected"] == "≈ 1 ± 0.1"
    assert row["full"]["status"] == "not reproduced"
    other = next(row for row in rows if row["id"] == "C1.1")
    assert other["quick"]["status"] == other["full"]["status"] == "not yet run"
    counts = scorecard.summary(rows)
    assert counts["quick"] == {
        "reproduced": 1,
        "not reproduced": 0,
        "inconclusive": 0,
        "stale (to be run again)": 0,
        "not yet run": len(claims.catalogue()) - 1,
    }
    assert counts["full"]["not reproduced"] == 1
    assert "quick: 1 reproduced" in scorecard.summary_text(counts)


def test_a_failed_check_of_the_latest_run_decides_the_status():
    failed = {**record("C1.6", "quick", "not reproduced", "2025-01-02T00:00:00+00:00"), "run": "a"}
    passed = {**record("C1.6", "quick", "reproduced", "2025-01-02T00:00:01+00:00"), "run": "a"}
    assert scorecard.latest([failed, passed])[("C1.6", None, "quick")]["status"] == "not reproduced"
    rerun = {**record("C1.6", "quick", "reproduced", "2025-01-03T00:00:00+00:00"), "run": "b"}
    key = ("C1.6", None, "quick")
    assert scorecard.latest([failed, passed, rerun])[key]["status"] == "reproduced"


def test_an_inconclusive_check_makes_its_run_inconclusive_unless_one_contradicts():
    def run_of(*statuses):
        return [
            {**record("C2.2", "quick", s, f"2025-01-02T00:00:0{i}+00:00"), "run": "a"}
            for i, s in enumerate(statuses)
        ]

    key = ("C2.2", None, "quick")
    assert scorecard.latest(run_of("reproduced", "inconclusive"))[key]["status"] == "inconclusive"
    worst = scorecard.latest(run_of("inconclusive", "not reproduced", "reproduced"))[key]
    assert worst["status"] == "not reproduced"


def test_a_further_finding_is_a_row_of_its_own_and_never_the_claims_status(monkeypatch):
    original = claims.catalogue()
    name = "linearised-la"
    patched = [
        {**c, "findings": {name: "not reproduced"}} if c["id"] == "C6.6" else c for c in original
    ]
    monkeypatch.setattr(claims, "catalogue", lambda: patched)
    claim = patched[[c["id"] for c in patched].index("C6.6")]
    paper = {**record(claim["id"], "quick", "reproduced", "2025-01-02T00:00:00+00:00"), "run": "a"}
    further = {
        **record(claim["id"], "quick", "not reproduced", "2025-01-02T00:00:01+00:00"),
        "run": "a",
        "finding": name,
        "says": "linearised LA is better",
    }
    rows = scorecard.scorecard([paper, further], links={}, seed_counts={})
    row = next(r for r in rows if r["id"] == claim["id"])
    assert row["quick"]["status"] == "reproduced"
    (shown,) = [f for f in row["findings"] if f["name"] == name]
    assert shown["quick"]["status"] == "not reproduced"
    text = scorecard.findings_markdown(rows)
    assert f"*further finding* `{name}` (quick: not reproduced" in text
    assert "linearised LA is better" in text


def test_an_inconclusive_finding_says_why_and_what_would_decide_it():
    gate = {"passed": False, "why": "the chains did not mix", "decide": "longer chains"}
    inconclusive = {
        **record("C2.2", "quick", "inconclusive", "2025-01-02T00:00:00+00:00"),
        "gate": gate,
    }
    rows = scorecard.scorecard([inconclusive], links={}, seed_counts={})
    row = next(r for r in rows if r["id"] == "C2.2")
    assert row["quick"]["words"].startswith("the chains did not mix, so the check cannot decide")
    assert "longer chains" in row["quick"]["words"]
    line = next(x for x in scorecard.scorecard_markdown(rows).splitlines() if "| C2.2 |" in x)
    assert line.split(" | ")[2] == "?"  # the quick column
    table = scorecard.not_reproduced_markdown(rows)
    assert "| C2.2 |" in table and "the chains did not mix" in table


def test_scorecard_markdown_has_a_row_per_claim():
    long_value = list(range(100))
    records = [record("C1.2", "quick", "reproduced", "2025-01-03T00:00:00+00:00", long_value)]
    text = scorecard.scorecard_markdown(scorecard.scorecard(records, links={}))
    lines = text.strip().splitlines()
    assert lines[0] == "| Claim | What | quick | full | seeds |"
    body = lines[2:]
    assert len(body) == len(claims.catalogue())
    for line, claim in zip(body, claims.catalogue(), strict=True):
        assert line.startswith(f"| {claim['id']} |")
        assert line.count(" | ") == 4
    row = next(line for line in body if line.startswith("| C1.2 |"))
    assert row.split(" | ")[2] == "✓"
    # each title in full (a reader tells C1.5 from C1.6), one mark per status
    titles = {claim["id"]: claim["title"] for claim in claims.catalogue()}
    assert all(line.split(" | ")[1] == titles[line.split(" | ")[0][2:]] for line in body)
    assert "…" not in text


def test_the_scorecard_fits_a_page_with_every_status_and_seed_count():
    """The widest cells a row can have: a long title, stale statuses, every seed count."""
    from bnn_posteriors.claims import sweep

    lock = next(c["locked"] for c in claims.catalogue() if c["id"] == "C1.2")
    other = "reproduced" if lock == "not reproduced" else "not reproduced"
    stale = {**record("C1.2", "full", other, "2025-01-01T00:00:00+00:00"), "locked": other}
    seeds = {"C1.2": sweep.STALE, "C1.1": sweep.COMMITTED, "C1.3": "12 of 20"}
    rows = scorecard.scorecard([stale], links={}, seed_counts=seeds)
    text = scorecard.scorecard_markdown(rows)
    by_id = {line.split(" | ")[0][2:]: line.split(" | ") for line in text.splitlines()[2:]}
    mark = "✓" if other == "reproduced" else "✗"
    assert by_id["C1.2"][3] == f"{mark}\u00a0(stale)" and by_id["C1.2"][4] == "stale |"
    assert by_id["C1.1"][4] == "committed |" and by_id["C1.3"][4] == "12/20 |"


def test_seeds_cell_shortens_the_seed_counts():
    from bnn_posteriors.claims import sweep

    assert scorecard.seeds_cell("4 of 5") == "4/5"
    assert scorecard.seeds_cell(sweep.COMMITTED) == "committed"
    assert scorecard.seeds_cell(sweep.STALE) == "stale"
    assert scorecard.seeds_cell("") == ""
    with pytest.raises(TypeError, match="seeds must be a string"):
        scorecard.seeds_cell(5)


def test_claims_does_not_import_scorecard():
    tree = ast.parse(Path(claims.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    assert not any("scorecard" in name for name in imported), imported


def test_scorecard_links_claims_to_their_sections():
    rows = scorecard.scorecard([], links={"C1.2": "01_narrow_networks.md#weight-decay"})
    text = scorecard.scorecard_markdown(rows)
    assert "| [C1.2](01_narrow_networks.md#weight-decay) |" in text
    assert "| C1.1 |" in text  # no link known: the plain id
    # by default the links come from the book's chapters
    default = {row["id"]: row["link"] for row in scorecard.scorecard([])}
    assert default["C3.4"].startswith("03_symmetries.md#")


def test_not_reproduced_markdown_lists_only_failures():
    records = [
        record("C1.2", "quick", "reproduced", "2025-01-03T00:00:00+00:00"),
        record("C1.6", "full", "not reproduced", "2025-01-03T00:00:00+00:00", 0.5),
    ]
    text = scorecard.not_reproduced_markdown(scorecard.scorecard(records, links={}))
    lines = text.strip().splitlines()
    assert lines[0] == "| Claim | What | outcome | finding in words |"
    assert len(lines) == 3 and lines[2].startswith("| C1.6 |")
    assert "quick: — not yet run; full: ✗ not reproduced" in lines[2]
    assert scorecard.not_reproduced_markdown(scorecard.scorecard([], links={})).startswith(
        "Every claim that has been run reproduced"
    )


def test_summary_markdown_has_a_row_per_profile():
    rows = scorecard.scorecard(
        [record("C1.2", "quick", "reproduced", "2025-01-03T00:00:00+00:00")], links={}
    )
    lines = scorecard.summary_markdown(scorecard.summary(rows)).strip().splitlines()
    assert lines[0].startswith("| profile | reproduced | not reproduced |")
    quick = next(line for line in lines if line.startswith("| quick |"))
    assert quick.split(" | ")[1] == "1"


def test_scorecard_shows_k_of_n_seeds():
    rows = scorecard.scorecard([], links={}, seed_counts={"C1.2": "4 of 5"})
    by_id = {row["id"]: row for row in rows}
    assert by_id["C1.2"]["seeds"] == "4 of 5" and by_id["C1.1"]["seeds"] == ""
    line = next(x for x in scorecard.scorecard_markdown(rows).splitlines() if "| C1.2 |" in x)
    assert "| 4/5 |" in line


def test_a_record_checked_against_an_older_lock_is_stale():
    """A full-profile record from before a claim's lock changed is marked stale."""
    lock = next(c["locked"] for c in claims.catalogue() if c["id"] == "C1.2")
    other = "reproduced" if lock == "not reproduced" else "not reproduced"
    records = [
        {**record("C1.2", "full", other, "2025-01-01T00:00:00+00:00"), "locked": other},
        {**record("C1.2", "quick", lock, "2025-01-01T00:00:00+00:00"), "locked": lock},
    ]
    rows = scorecard.scorecard(records, links={}, seed_counts={})
    row = next(r for r in rows if r["id"] == "C1.2")
    assert row["full"]["stale"] and not row["quick"]["stale"]
    line = next(ln for ln in scorecard.scorecard_markdown([row]).splitlines() if "C1.2" in ln)
    assert line.count("stale") == 1


def test_a_record_decided_by_an_older_rule_is_stale(catalogue_rules):
    """A record whose check's rule changed in the catalogue since it was written is stale,
    though its lock is today's."""
    catalogue_rules({"C1.2": [{"part": "p", "rule": "approx", "bound": 1.0, "tol": 0.1}]})
    lock = next(c["locked"] for c in claims.catalogue() if c["id"] == "C1.2")
    today = {
        **record("C1.2", "full", lock, "2025-01-01T00:00:00+00:00"),
        "locked": lock,
        "part": "p",
        "finding": None,
        "rtol": None,
    }
    older = {**today, "profile": "quick", "tol": 0.2}
    row = next(r for r in scorecard.scorecard([today, older], links={}) if r["id"] == "C1.2")
    assert not row["full"]["stale"] and row["quick"]["stale"]


def test_the_findings_in_words_skip_a_stale_full_record():
    old = {
        **record("C2.2", "full", "not reproduced", "2025-01-01T00:00:00+00:00"),
        "locked": "not reproduced",
        "says": "the old reading",
    }
    new = {
        **record("C2.2", "quick", "inconclusive", "2025-01-02T00:00:00+00:00"),
        "locked": "inconclusive",
        "gate": {"passed": False, "why": "the chains did not mix", "decide": "longer chains"},
    }
    rows = scorecard.scorecard([old, new], links={}, seed_counts={})
    row = next(r for r in rows if r["id"] == "C2.2")
    assert row["locked"] == "inconclusive" and row["full"]["stale"]
    text = scorecard.findings_markdown(rows)
    line = next(line for line in text.splitlines() if line.startswith("- **C2.2**"))
    assert "the chains did not mix" in line and "the old reading" not in line
    counts = scorecard.summary(rows)
    assert counts["full"][scorecard.STALE] == 1 and counts["full"]["not reproduced"] == 0


def test_a_part_locked_apart_from_its_claim_is_not_stale(catalogue_rules, monkeypatch):
    """C6.6-like: a part that holds while the claim does not is locked at its own status; its
    record is current, and the claim's cell is the worst of its parts in the run."""
    claim = next(c for c in claims._read_catalogue() if c["id"] == "C1.2")
    patched = tuple(
        {**c, "locked": "not reproduced"} if c["id"] == "C1.2" else c
        for c in claims._read_catalogue()
    )
    monkeypatch.setattr(claims, "_read_catalogue", lambda: patched)
    catalogue_rules(
        {
            "C1.2": [
                {"part": "holds", "rule": "true", "locked": "reproduced"},
                {"part": "fails", "rule": "true"},
            ]
        }
    )
    base = {
        **record("C1.2", "quick", "reproduced", "2025-01-01T00:00:00+00:00"),
        "rule": "true",
        "expect": None,
        "tol": None,
        "rtol": None,
        "finding": None,
        "run": "r",
    }
    holds = {**base, "part": "holds", "locked": "reproduced"}
    fails = {**base, "part": "fails", "status": "not reproduced", "locked": "not reproduced"}
    row = next(r for r in scorecard.scorecard([holds, fails], links={}) if r["id"] == "C1.2")
    assert row["quick"]["status"] == "not reproduced" and not row["quick"]["stale"]
    # the part that holds, alone: current at its own lock, though the claim's is another
    alone = next(r for r in scorecard.scorecard([holds], links={}) if r["id"] == "C1.2")
    assert alone["quick"]["status"] == "reproduced" and not alone["quick"]["stale"]
    assert claim["id"] == "C1.2"
