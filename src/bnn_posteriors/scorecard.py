"""The scorecard of the book, built from the claim records, never typed by hand.

:func:`scorecard` gives one row per claim of ``claims.toml`` with the status, measured
value and expectation of its latest record in each profile (:func:`latest`);
:func:`summary` counts the statuses, :func:`summary_text` puts the counts in one line and
:func:`scorecard_markdown` renders the rows as the Markdown table of ``book/scorecard.md``.
The records are those that :func:`bnn_posteriors.claims.check` writes.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence

from bnn_posteriors import book, claims, profiles, sweep, tables
from bnn_posteriors.claims import expectation, short  # re-exported: the scorecard's cells

_MARKS = {
    claims.REPRODUCED: "✓ reproduced",
    claims.NOT_REPRODUCED: "✗ not reproduced",
    claims.NOT_YET_RUN: "—",
}


def latest(records: Iterable[dict]) -> dict[tuple[str, str], dict]:
    """The latest record (by ``time``; later in the input on ties) per (id, profile).

    A claim checked several times in one run (same ``run`` id) is judged by all of
    those checks: the returned record carries status "not reproduced" if any of
    them did not reproduce (that failing record is returned).
    """
    records = list(records)
    best: dict[tuple[str, str], dict] = {}
    for record in records:
        key = (record["id"], record["profile"])
        if key not in best or _time(record) >= _time(best[key]):
            best[key] = record
    for record in records:
        key = (record["id"], record["profile"])
        newest = best[key]
        same_run = record.get("run") is not None and record.get("run") == newest.get("run")
        if (
            same_run
            and record["status"] != claims.REPRODUCED
            and newest["status"] == claims.REPRODUCED
        ):
            best[key] = record
    return best


def _time(record: dict) -> _dt.datetime:
    try:
        time = _dt.datetime.fromisoformat(str(record["time"]))
    except ValueError:
        raise ValueError(
            f"claim record {record.get('id')} has a bad time {record['time']!r}"
        ) from None
    return time if time.tzinfo else time.replace(tzinfo=_dt.UTC)


def scorecard(
    records: Sequence[dict] | None = None,
    links: dict[str, str] | None = None,
    seed_counts: dict[str, tuple[int, int]] | None = None,
) -> list[dict]:
    """One row per catalogue claim, in order: id, title, source, chapter, locked, link,
    seeds, and per profile (``quick``, ``full``) a dict of status, measured, expected, time
    (latest record). ``link`` is where a chapter checks the claim (``book.claim_links``), or
    None; ``seeds`` is "k of n" from the committed quick seed sweep
    (:func:`bnn_posteriors.sweep.seeds_by_claim`), or "" where the claim was not swept.
    A profile's cell is ``stale`` when its record was checked against another lock than
    the claim's lock today (the check changed since that run; it must be run again).
    """
    newest = latest(claims.load_records() if records is None else records)
    if links is None:
        links = book.claim_links() if claims.repo_root() is not None else {}
    if seed_counts is None:
        seed_counts = sweep.seeds_by_claim(sweep.load_sweep())
    rows = []
    for claim in claims.catalogue():
        row = {key: claim[key] for key in ("id", "title", "source", "chapter", "locked")}
        row["link"] = links.get(claim["id"])
        k_n = seed_counts.get(claim["id"])
        row["seeds"] = f"{k_n[0]} of {k_n[1]}" if k_n else ""
        for profile in profiles.PROFILES:
            record = newest.get((claim["id"], profile))
            row[profile] = _cell(record)
            row[profile]["stale"] = bool(record) and record.get("locked") not in (
                None,
                claim["locked"],
            )
        rows.append(row)
    return rows


def _cell(record: dict | None) -> dict:
    if record is None:
        return {
            "status": claims.NOT_YET_RUN,
            "measured": "",
            "expected": "",
            "time": None,
            "note": "",
            "message": "",
        }
    return {
        "status": record["status"],
        "measured": short(record.get("value")),
        "expected": expectation(record, width=24),
        "time": record["time"],
        "note": record.get("note", ""),
        "message": record.get("message", ""),
    }


def summary(rows: Sequence[dict] | None = None) -> dict[str, dict[str, int]]:
    """Counts per profile and status: ``{"quick": {"reproduced": 3, ...}, "full": {...}}``."""
    rows = scorecard() if rows is None else rows
    counts = {
        p: dict.fromkeys((*claims.STATUSES, claims.NOT_YET_RUN), 0) for p in profiles.PROFILES
    }
    for row in rows:
        for profile in profiles.PROFILES:
            status = row[profile]["status"]
            counts[profile][status] = counts[profile].get(status, 0) + 1
    return counts


def summary_text(counts: dict[str, dict[str, int]]) -> str:
    """One line of counts: 'quick: 40 reproduced, 2 not reproduced, 5 not yet run; full: …'."""
    parts = []
    for profile, by_status in counts.items():
        items = ", ".join(f"{n} {status}" for status, n in by_status.items())
        parts.append(f"{profile}: {items}")
    return "; ".join(parts)


def scorecard_markdown(rows: Sequence[dict] | None = None) -> str:
    """The scorecard as a Markdown table, one row per claim, short cells.

    A claim with a link is a MyST link to the section of the chapter that checks it.
    """
    rows = scorecard() if rows is None else rows
    header = ["Claim", "What", "Source", "quick", "seeds reproducing", "full", "measured (quick)"]
    header.append("expected")
    cells = []
    for row in rows:
        quick, full = row["quick"], row["full"]
        expected = quick["expected"] or full["expected"]
        claim = f"[{row['id']}]({row['link']})" if row.get("link") else row["id"]
        cells.append([
            claim, short(row["title"], 48), short(row["source"], 28), _status_mark(quick),
            row.get("seeds", ""), _status_mark(full), quick["measured"], expected,
        ])  # fmt: skip
    return tables.markdown_table(header, cells)


def _status_mark(cell: dict) -> str:
    mark = _MARKS.get(cell["status"], cell["status"])
    return f"{mark} (stale: checked against an older lock)" if cell.get("stale") else mark


def not_reproduced_markdown(rows: Sequence[dict] | None = None) -> str:
    """A Markdown table of the claims not reproduced in some profile (or a sentence if none).

    Each row gives the check's note (what was measured) and its finding (which part failed).
    """
    rows = scorecard() if rows is None else rows
    cells = []
    for row in rows:
        for profile in profiles.PROFILES:
            cell = row[profile]
            if cell["status"] == claims.NOT_REPRODUCED:
                claim = f"[{row['id']}]({row['link']})" if row.get("link") else row["id"]
                what = f"{short(row['title'], 48)}: {short(cell['note'], 140)}"
                cells.append([claim, what, profile, cell["message"], cell["expected"]])
    if not cells:
        return "Every claim that has been run reproduced.\n"
    header = ["Claim", "What was checked", "profile", "finding", "expected"]
    return tables.markdown_table(header, cells)


def summary_markdown(counts: dict[str, dict[str, int]]) -> str:
    """The counts of :func:`summary` as a small Markdown table, one row per profile."""
    statuses = list(next(iter(counts.values())))
    rows = [[profile, *(by_status[s] for s in statuses)] for profile, by_status in counts.items()]
    return tables.markdown_table(["profile", *statuses], rows)
