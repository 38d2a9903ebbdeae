"""The scorecard of the book, built from the claim records, never typed by hand.

:func:`scorecard` gives one row per claim of the catalogue (``claims/catalogue/``) with the
status, measured value and expectation of its latest record in each profile (:func:`latest`);
:func:`summary` counts the statuses (reproduced, not reproduced, inconclusive),
:func:`summary_text` puts the counts in one line, :func:`scorecard_markdown` renders the
rows as the compact table of ``book/scorecard.md`` and :func:`findings_markdown` says each
finding in words, with the claim's further findings. The records are those that
:func:`bnn_posteriors.claims.checking.check` writes.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.claims import sweep
from bnn_posteriors.claims.checking import expectation, short  # re-exported: the scorecard's cells
from bnn_posteriors.site import chapters as book
from bnn_posteriors.site import profiles, tables

_NBSP = "\u00a0"  # keeps "✗ (stale)" on one line of the table
STALE = "stale (to be run again)"
# the status of several checks of one claim in one run: the worst of theirs
_RANK = {claims.REPRODUCED: 0, claims.INCONCLUSIVE: 1, claims.NOT_REPRODUCED: 2}


def _key(record: dict) -> tuple[str, str | None, str]:
    return record["id"], record.get("finding"), record["profile"]


def latest(records: Iterable[dict]) -> dict[tuple[str, str | None, str], dict]:
    """The latest record (by ``time``; later in the input on ties) per (id, finding,
    profile); ``finding`` is None for the paper's claim itself.

    A claim checked several times in one run (same ``run`` id) is judged by all of
    those checks: the returned record is the one with the worst status among them
    (not reproduced, then inconclusive, then reproduced).
    """
    records = list(records)
    best: dict[tuple[str, str | None, str], dict] = {}
    for record in records:
        key = _key(record)
        if key not in best or _time(record) >= _time(best[key]):
            best[key] = record
    for record in records:
        newest = best[_key(record)]
        same_run = record.get("run") is not None and record.get("run") == newest.get("run")
        if same_run and _RANK.get(record["status"], 0) > _RANK.get(newest["status"], 0):
            best[_key(record)] = record
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
    seed_counts: dict[str, str] | None = None,
) -> list[dict]:
    """One row per catalogue claim, in order: id, title, source, chapter, locked, link,
    seeds, findings, and per profile (``quick``, ``full``) a cell of its latest record:
    status, measured, expected, time, note, message, words (the finding in words).

    ``link`` is where a chapter checks the claim (``book.claim_links``), or None;
    ``seeds`` is the claim's cell of the committed quick seed sweep
    (:func:`bnn_posteriors.claims.sweep.seeds_by_claim`: "5 of 5" at the lock, or "committed
    results"), "" where it was not swept. ``findings`` lists the claim's further
    findings: name, locked and the same per-profile cells. A cell is ``stale`` when its
    record was checked against another lock than today's, or by another rule than the
    catalogue's today (:func:`.checking.rule_changed`): it must be run again.
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
        row["seeds"] = seed_counts.get(claim["id"], "")
        row.update(_cells(newest, claim["id"], None, claim["locked"]))
        row["findings"] = [
            {"name": name, "locked": locked, **_cells(newest, claim["id"], name, locked)}
            for name, locked in claim.get("findings", {}).items()
        ]
        rows.append(row)
    return rows


def _cells(newest: dict, claim_id: str, finding: str | None, locked: str) -> dict:
    cells = {}
    for profile in profiles.PROFILES:
        record = newest.get((claim_id, finding, profile))
        cells[profile] = _cell(record)
        cells[profile]["stale"] = record is not None and (
            record.get("locked") not in (None, _lock_today(record, locked))
            or claims.rule_changed(record)
        )
    return cells


def _lock_today(record: dict, locked: str) -> str:
    """The catalogue's lock today for the check a record made: its part's own lock where the
    part has one, else ``locked`` (the claim's or the finding's)."""
    if record.get("part") and record.get("finding") is None:
        try:
            return claims.part_lock(record["id"], record["part"])
        except ValueError:
            return locked
    return locked


def _cell(record: dict | None) -> dict:
    if record is None:
        return {
            "status": claims.NOT_YET_RUN,
            "measured": "",
            "expected": "",
            "time": None,
            "note": "",
            "message": "",
            "words": "",
        }
    return {
        "status": record["status"],
        "measured": short(record.get("value")),
        "expected": expectation(record, width=24),
        "time": record["time"],
        "note": record.get("note", ""),
        "message": record.get("message", ""),
        "words": claims.in_words(record),
    }


def summary(rows: Sequence[dict] | None = None) -> dict[str, dict[str, int]]:
    """Counts of the claims (not their further findings) per profile and status:
    ``{"quick": {"reproduced": 3, ...}, "full": {...}}``. A cell checked against an older
    lock counts as :data:`STALE` (its run must be repeated), not under its old status."""
    rows = scorecard() if rows is None else rows
    counts = {
        p: dict.fromkeys((*claims.STATUSES, STALE, claims.NOT_YET_RUN), 0)
        for p in profiles.PROFILES
    }
    for row in rows:
        for profile in profiles.PROFILES:
            cell = row[profile]
            status = STALE if cell.get("stale") else cell["status"]
            counts[profile][status] = counts[profile].get(status, 0) + 1
    return counts


def summary_text(counts: dict[str, dict[str, int]]) -> str:
    """One line of counts: 'quick: 40 reproduced, 2 not reproduced, 5 not yet run; full: …'."""
    parts = []
    for profile, by_status in counts.items():
        items = ", ".join(f"{n} {status}" for status, n in by_status.items())
        parts.append(f"{profile}: {items}")
    return "; ".join(parts)


def _claim_cell(row: dict) -> str:
    return f"[{row['id']}]({row['link']})" if row.get("link") else row["id"]


def _words(row: dict) -> str:
    """The finding in words of a row: the full profile's where it has run against today's
    lock, else this build's (quick)."""
    full = row["full"]
    fresh = full["status"] != claims.NOT_YET_RUN and not full.get("stale")
    return full["words"] if fresh or not row["quick"]["words"] else row["quick"]["words"]


def scorecard_markdown(rows: Sequence[dict] | None = None) -> str:
    """The scorecard as a compact Markdown table: one short line per claim.

    Columns: the claim (a MyST link to the section of the chapter that checks it, with
    the paper's source), what it says (its title in full), its
    status in each profile as one mark (✓ reproduced, ✗ not reproduced, ? inconclusive,
    — not yet run; "(stale)" after it), and its seeds at the lock ("4/5", "committed",
    "stale"). The findings in words, with the full titles, are in
    :func:`findings_markdown`.
    """
    rows = scorecard() if rows is None else rows
    header = ["Claim", "What", "quick", "full", "seeds"]
    cells = [
        [
            _claim_cell(row),
            row["title"],
            _status_mark(row["quick"]),
            _status_mark(row["full"]),
            seeds_cell(row.get("seeds", "")),
        ]
        for row in rows
    ]
    return tables.markdown_table(header, cells)


def seeds_cell(seeds: str) -> str:
    """A claim's seeds at the lock (:func:`bnn_posteriors.claims.sweep.seeds_by_claim`) in
    the scorecard's few characters: "4 of 5" → "4/5", committed results → "committed", a
    sweep against another lock → "stale"; "" where it was not swept."""
    if not isinstance(seeds, str):
        raise TypeError(f"seeds must be a string such as '4 of 5', got {seeds!r}")
    if seeds == sweep.COMMITTED:
        return "committed"
    if seeds == sweep.STALE:
        return "stale"
    return seeds.replace(" of ", "/")


def findings_markdown(rows: Sequence[dict] | None = None) -> str:
    """Each claim's finding in words, and its further findings (checks the book adds
    beyond the paper, which never decide the claim's status), as a Markdown list."""
    rows = scorecard() if rows is None else rows
    lines = []
    for row in rows:
        lines.append(
            f"- **{_claim_cell(row)}** {row['title']} ({_profiles_text(row)}): "
            f"{_words(row) or 'not yet run.'}"
        )
        for finding in row["findings"]:
            lines.append(
                f"  - *further finding* `{finding['name']}` ({_profiles_text(finding)}): "
                f"{_words(finding) or 'not yet run.'}"
            )
    return "\n".join(lines) + "\n"


def _profiles_text(row: dict) -> str:
    return ", ".join(f"{p}: {row[p]['status']}" for p in profiles.PROFILES)


def _status_mark(cell: dict) -> str:
    mark = claims.MARKS.get(cell["status"], cell["status"])
    return f"{mark}{_NBSP}(stale)" if cell.get("stale") else mark


def not_reproduced_markdown(rows: Sequence[dict] | None = None) -> str:
    """A Markdown table of the claims not reproduced or inconclusive in some profile (or a
    sentence if none): one row per claim, its title, its outcome in each profile ("quick ✗
    not reproduced") and its finding in words (as in :func:`findings_markdown`)."""
    rows = scorecard() if rows is None else rows
    doubtful = (claims.NOT_REPRODUCED, claims.INCONCLUSIVE)
    cells = [
        [_claim_cell(row), row["title"], _outcomes_text(row), _words(row)]
        for row in rows
        if any(row[profile]["status"] in doubtful for profile in profiles.PROFILES)
    ]
    if not cells:
        return "Every claim that has been run reproduced.\n"
    header = ["Claim", "What", "outcome", "finding in words"]
    return tables.markdown_table(header, cells)


def _outcomes_text(row: dict) -> str:
    """'quick: ✗ not reproduced; full: ? inconclusive' (a stale record marked as such)."""
    parts = []
    for profile in profiles.PROFILES:
        cell = row[profile]
        mark = claims.MARKS.get(cell["status"], "")
        stale = " (stale)" if cell.get("stale") else ""
        parts.append(f"{profile}: {mark} {cell['status']}{stale}")
    return "; ".join(parts)


def summary_markdown(counts: dict[str, dict[str, int]]) -> str:
    """The counts of :func:`summary` as a small Markdown table, one row per profile."""
    statuses = list(next(iter(counts.values())))
    rows = [[profile, *(by_status[s] for s in statuses)] for profile, by_status in counts.items()]
    return tables.markdown_table(["profile", *statuses], rows)
