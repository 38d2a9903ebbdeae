"""Claim checks: decide, record and lock whether a claim of the catalogue reproduces.

The catalogue is ``claims/catalogue/NN_<chapter>.toml`` (its fields are explained in
``claims/catalogue/README.md``): per claim the paper's sentence, the book's operational
reading, why that reading is faithful, the locked status, and each of its checks with its
rule (statistic, rule, bound, tolerance).
A check has three outcomes:

- **reproduced**: the evidence supports the paper's statement, with a margin;
- **not reproduced**: the evidence contradicts it;
- **inconclusive**: the book cannot decide (a :class:`Gate` that the evidence must pass
  first, such as mixed chains, failed); the record says why and what would decide it.

A chapter calls :func:`check` once per check of the catalogue with what it measured, e.g.
``check("C3.4", root)`` or ``check("C6.1", rise, part="band")``: the rule, its bound and
tolerance are read from the catalogue's ``[[claim.check]]`` of that part, never passed by the
caller (a bound the chapter measures itself, such as a closed form, is passed as ``bound=``
where the catalogue declares it ``bound_measured``). A check the book adds beyond the paper is
a *further finding* (its catalogue entry names it), locked separately under the claim's
``findings`` table and never part of the claim's status. Each call appends one JSON line to
``<claims_dir>/<profile>/<chapter>.jsonl`` and raises :class:`ClaimError` when the
measured status differs from the status locked in the catalogue, so that no result
changes unseen. :mod:`bnn_posteriors.claims.scorecard` builds the book's scorecard from
the records; :func:`short` and :func:`expectation` format a record's value and expectation
for the unlock message and the scorecard alike.
"""

from __future__ import annotations

import datetime as _dt
import functools
import html
import importlib.resources
import json
import os
import platform
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from bnn_posteriors.claims import rules as claim_rules
from bnn_posteriors.claims.rules import margin  # noqa: F401 (re-exported: the sweep calls it)
from bnn_posteriors.site import profiles
from bnn_posteriors.store import provenance
from bnn_posteriors.store.provenance import repo_root  # re-exported: chapters import it from here

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_YET_RUN = "not yet run"
STATUSES = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)

_SIGNIFICANT = 6  # significant digits of the floats stored in a record


# One id per process: the checks of one execution of a chapter share it, so the
# scorecard can judge a claim by all the checks of its latest run.
RUN_ID = f"{platform.node()}-{os.getpid()}-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S%f}"


class ClaimError(AssertionError):
    """A claim's measured status differs from the status locked in the claims catalogue."""


@dataclass(frozen=True)
class Gate:
    """A condition the evidence must meet before a check can decide its claim.

    ``passed``: whether it is met; ``why``: what was measured, in words a reader
    understands ("the chains did not mix: median ESS 11 of 5 000 draws"); ``decide``:
    what would decide the claim ("chains with a median ESS of at least 100"). A check
    whose gate fails is *inconclusive*, whatever its rule finds.
    """

    passed: bool
    why: str
    decide: str

    def __post_init__(self) -> None:
        if not isinstance(self.passed, bool | np.bool_):
            raise TypeError(f"Gate.passed must be a bool, got {self.passed!r}")
        if not (str(self.why).strip() and str(self.decide).strip()):
            raise ValueError(
                "a Gate needs why= (what was measured) and decide= (what would decide it)"
            )


# --------------------------------------------------------------------------- catalogue


CHECK_KEYS = frozenset(
    {"part", "statistic", "rule", "bound", "bound_measured", "tol", "rtol", "finding", "locked"}
)


def combined(statuses: Iterable[str]) -> str:
    """The status of a claim from those of its parts: not reproduced if one part is, else
    inconclusive if one part is, else reproduced."""
    statuses = list(statuses)
    for status in (NOT_REPRODUCED, INCONCLUSIVE):
        if status in statuses:
            return status
    return REPRODUCED


@functools.cache
def _read_catalogue() -> tuple[dict, ...]:
    folder = importlib.resources.files("bnn_posteriors.claims").joinpath("catalogue")
    claims: list[dict] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            claims.extend(tomllib.loads(entry.read_text("utf-8")).get("claim", []))
    return validated(tuple(claims))


def validated(claims: tuple[dict, ...]) -> tuple[dict, ...]:
    """The catalogue's claims, each checked for its fields, its locks and its checks' rules
    (ValueError naming the claim and what is wrong)."""
    for claim in claims:
        missing = {"id", "chapter", "title", "source", "locked"} - set(claim)
        if missing:
            raise ValueError(f"claims catalogue: claim {claim!r} lacks {sorted(missing)}")
        for name, locked in {"": claim["locked"], **claim.get("findings", {})}.items():
            if locked not in STATUSES:
                what = f"finding {name!r} of claim" if name else "claim"
                raise ValueError(
                    f"claims catalogue: {what} {claim['id']} is locked as {locked!r}; "
                    f"use one of {STATUSES}"
                )
        parts = [entry.get("part") for entry in claim.get("check", [])]
        if len(set(parts)) != len(parts):
            raise ValueError(f"claims catalogue: claim {claim['id']} repeats a part: {parts}")
        for entry in claim.get("check", []):
            _validate_check(claim, entry)
        own = [
            e.get("locked", claim["locked"]) for e in claim.get("check", []) if not e.get("finding")
        ]
        if own and combined(own) != claim["locked"]:
            raise ValueError(
                f"claims catalogue: claim {claim['id']} is locked as {claim['locked']!r}, but its "
                f"parts' locks {own} combine to {combined(own)!r} (one part not reproduced makes "
                "the claim not reproduced; else one inconclusive, inconclusive)"
            )
    return claims


def _validate_check(claim: dict, entry: dict) -> None:
    where = f"claims catalogue: claim {claim['id']}, check {entry.get('part')!r}"
    unknown = set(entry) - CHECK_KEYS
    if unknown:
        raise ValueError(f"{where} has unknown keys {sorted(unknown)}; known: {sorted(CHECK_KEYS)}")
    for key in ("part", "statistic", "rule"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ValueError(f'{where} needs {key} = "…" (a non-empty string)')
    finding = entry.get("finding")
    if finding is not None and finding not in claim.get("findings", {}):
        raise ValueError(f"{where} names finding {finding!r}, which [claim.findings] does not lock")
    if "locked" in entry and (finding is not None or entry["locked"] not in STATUSES):
        raise ValueError(
            f"{where}: a part of the claim may carry its own lock (one of {STATUSES}); a "
            "further finding is locked in [claim.findings]"
        )
    if "bound" in entry and "bound_measured" in entry:
        raise ValueError(f"{where} has both bound and bound_measured; keep one")
    measured = entry.get("bound_measured")
    if measured is not None and (not isinstance(measured, str) or not measured.strip()):
        raise ValueError(f"{where}: bound_measured says in words what the bound is")
    # a measured bound is validated with a stand-in: the rule needs one, its value comes later
    expect = 0.0 if measured is not None else entry.get("bound")
    try:
        claim_rules.validate(entry["rule"], expect, entry.get("tol"), entry.get("rtol"))
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def catalogue_check(claim_id: str, part: str | None = None) -> dict:
    """The catalogue's ``[[claim.check]]`` of a claim's ``part``: its statistic, rule, bound
    (or ``bound_measured``), tolerance and finding. ``part`` may be left out when the claim
    has one check. ValueError naming the claim's parts otherwise."""
    claim = _claim(claim_id)
    entries = claim.get("check", [])
    names = [entry["part"] for entry in entries]
    if not entries:
        raise ValueError(f"claim {claim_id} has no [[claim.check]] in the claims catalogue")
    if part is None:
        if len(entries) > 1:
            raise ValueError(f"claim {claim_id} has {len(entries)} checks; name one: part= {names}")
        return dict(entries[0])
    for entry in entries:
        if entry["part"] == part:
            return dict(entry)
    raise ValueError(f"claim {claim_id} has no check {part!r} in the catalogue; its parts: {names}")


def _rule_and_bound(claim_id: str, part: str | None, bound: Any) -> tuple[dict, Any]:
    """The catalogue entry of a check and the bound it decides by: the catalogue's, or the
    measured one passed where the catalogue declares it measured (ValueError otherwise)."""
    entry = catalogue_check(claim_id, part)
    if "bound_measured" in entry:
        if bound is None:
            raise ValueError(
                f"claim {claim_id}, check {entry['part']!r}: its bound is measured "
                f"({entry['bound_measured']}); pass it as bound="
            )
        return entry, bound
    if bound is not None:
        raise ValueError(
            f"claim {claim_id}, check {entry['part']!r}: the catalogue holds its bound "
            f"({entry.get('bound')!r}); do not pass bound="
        )
    return entry, entry.get("bound")


def verdict(
    claim_id: str,
    value: Any,
    *,
    part: str | None = None,
    bound: Any = None,
    labels: Sequence[str] | None = None,
) -> tuple[bool, str]:
    """Whether a measured value satisfies the catalogue's rule for the claim's ``part``, and
    the sentence saying why (:func:`.rules.evaluate`), without recording anything or looking
    at the lock or a gate (:func:`check` records and locks)."""
    entry, expect = _rule_and_bound(claim_id, part, bound)
    return claim_rules.evaluate(
        entry["rule"], value, expect, entry.get("tol"), entry.get("rtol"), labels
    )


def part_lock(claim_id: str, part: str | None = None, finding: str | None = None) -> str:
    """The status the catalogue locks for one check: a further finding's lock; else the part's
    own ``locked`` where it has one (a claim whose parts differ: some hold, one does not);
    else the claim's. ``part`` None (records from before the parts): the claim's or the
    finding's lock."""
    claim = _claim(claim_id)
    if finding is not None:
        return str(claim["findings"][finding])
    if part is not None:
        entry = next((e for e in claim.get("check", []) if e["part"] == part), None)
        if entry is not None and entry.get("finding") is None:
            return str(entry.get("locked", claim["locked"]))
    return str(claim["locked"])


def rule_changed(record: dict) -> bool:
    """Whether the catalogue's check of a record differs from the one the record was decided
    by: its rule, tolerance or fixed bound, or the statistic it measures (a check whose
    measurement changed names it anew, so that its records from before are stale), or its
    part is gone. False for records written before the rules moved into the catalogue (they
    name no part); the statistic is compared where the record holds one."""
    if not record.get("part"):
        return False
    try:
        entry = catalogue_check(record["id"], record["part"])
    except ValueError:
        return True
    if entry.get("finding") != record.get("finding") or entry["rule"] != record.get("rule"):
        return True
    if "statistic" in record and entry.get("statistic") != record["statistic"]:
        return True
    for key in ("tol", "rtol"):
        if to_json(entry.get(key)) != record.get(key):
            return True
    return "bound_measured" not in entry and to_json(entry.get("bound")) != record.get("expect")


def catalogue() -> list[dict]:
    """The claims of the catalogue (``claims/catalogue/*.toml``, by chapter) in order: dicts
    with id, chapter, title, source, locked, the paper's ``sentence``, the book's ``reading``,
    why it is ``faithful``, the locks of its further ``findings`` (name → status; empty if
    none) and its ``check`` entries (the rules, :func:`catalogue_check`)."""
    return [dict(claim) for claim in _read_catalogue()]


def _claim(claim_id: str) -> dict:
    for claim in catalogue():
        if claim["id"] == claim_id:
            claim.setdefault("findings", {})
            return claim
    raise ValueError(
        f"unknown claim id {claim_id!r}; the ids are those of the claims catalogue (e.g. 'C1.4')"
    )


def chapter_of(claim_id: str) -> int:
    """The chapter number of a claim id: ``"C1.4"`` → 1."""
    head, _, _ = claim_id.partition(".")
    if not head.startswith("C") or not head[1:].isdigit():
        raise ValueError(f"malformed claim id {claim_id!r}; expected 'C<chapter>.<n>'")
    return int(head[1:])


# --------------------------------------------------------------------------- locations


def claims_dir() -> Path:
    """Where checks write: ``$BNN_CLAIMS_DIR``, else ``<root>/_build/claims``."""
    env = os.environ.get("BNN_CLAIMS_DIR", "").strip()
    if env:
        return Path(env)
    return (repo_root() or Path.cwd()) / "_build" / "claims"


def committed_claims_dir() -> Path | None:
    """The committed records (full profile, with provenance): ``<root>/results/claims``."""
    root = repo_root()
    return None if root is None else root / "results" / "claims"


def record_path(claim_id: str, profile: str, directory: Path | None = None) -> Path:
    """The JSON-lines file of a claim's chapter: ``<dir>/<profile>/<NN>.jsonl``."""
    base = claims_dir() if directory is None else Path(directory)
    return base / profile / f"{chapter_of(claim_id):02d}.jsonl"


def _seed(seed: int | None, chapter: int) -> int | None:
    """The seed given, else the chapter's seed from ``profiles`` (honours ``$BNN_SEED``)."""
    if seed is not None:
        return int(seed)
    names = [name for name in profiles.chapters() if name.startswith(f"{chapter:02d}_")]
    if names:
        return profiles.chapter_seed(names[0])
    raw = os.environ.get("BNN_SEED", "").strip()
    return int(raw) if raw.isdigit() else None


# --------------------------------------------------------------------------- values


def to_json(value: Any) -> Any:
    """Plain JSON-able Python: arrays → lists, floats to 6 significant digits, NaN → "NaN"."""
    return provenance.to_json(value, _SIGNIFICANT)


def record_only() -> bool:
    """True when ``$BNN_CLAIMS_RECORD_ONLY`` is 1: checks record but never raise (the sweep)."""
    return os.environ.get("BNN_CLAIMS_RECORD_ONLY", "").strip() == "1"


# --------------------------------------------------------------------------- check


class Record(dict):
    """A claim record (a plain dict) that shows itself in a notebook as its outcome: a
    styled block on the page (:func:`outcome_html`), one line in a console."""

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(summary_line(self))

    def _repr_html_(self) -> str:
        return outcome_html(self)


class Records(list):
    """The records of several checks, shown one outcome block (or console line) each."""

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text("\n".join(summary_line(record) for record in self))

    def _repr_html_(self) -> str:
        return "\n".join(outcome_html(record) for record in self)


class ShownRecords(Records):
    """Records that :func:`show_and_check` has already shown, each after its table: a cell
    that ends with them (or keeps them, ``records += show_and_check(...)``) shows nothing
    twice."""

    def _ipython_display_(self) -> None:
        pass


MARKS = {REPRODUCED: "✓", NOT_REPRODUCED: "✗", INCONCLUSIVE: "?", NOT_YET_RUN: "—"}


def summary_line(record: dict) -> str:
    """'C2.1 reproduced: 2.3e-07, below 1e-09 by …' for a record in one console line (its
    finding's name after the id, and the gate's reason when it is inconclusive)."""
    name = record["id"] + (f" [{record['finding']}]" if record.get("finding") else "")
    line = f"{name} {record['status']}: {result_in_words(record)}"
    gate = record.get("gate")
    if record["status"] == INCONCLUSIVE and gate:
        line += f"; {gate['why']}, so the check cannot decide (would decide: {gate['decide']})"
    return line


def result_in_words(record: dict) -> str:
    """What a record measured against its bound, and by how much, in words (the rule's
    sentence, with the elements of a vector named by the record's labels): 'H = 64:
    0.6667, not above 1 (0.3333 below it); …'. Re-derived from the recorded values, so
    that records written before a rule's wording changed read the same way."""
    try:
        _, words = claim_rules.evaluate(
            record.get("rule", "approx"),
            provenance.from_json(record.get("value")),
            provenance.from_json(record.get("expect")),
            record.get("tol"),
            record.get("rtol"),
            record.get("labels"),
        )
    except (TypeError, ValueError):  # a record of another shape: its own message
        words = str(record.get("message", ""))
    return words


def in_words(record: dict) -> str:
    """The finding of a record in words: the failed gate's reason and what would decide
    it; else the check's ``says``; else what was measured (its note) and the result
    against the bound (:func:`result_in_words`)."""
    gate = record.get("gate")
    if record.get("status") == INCONCLUSIVE and gate:
        return f"{gate['why']}, so the check cannot decide; what would decide it: {gate['decide']}"
    if record.get("says"):
        return record["says"]
    note = str(record.get("note", "")).strip()
    return f"{note + ': ' if note else ''}{result_in_words(record)}"


def _sentence(text: str) -> str:
    text = str(text).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def outcome_html(record: dict) -> str:
    """A check's outcome as a styled HTML block for the page: a mark (✓ reproduced,
    ✗ not reproduced, ? inconclusive), the claim and its title, the finding in words, and
    the measured value against the bound with the margin (:func:`result_in_words`). The
    book's CSS (``book/_static/custom.css``) styles the classes ``claim-outcome`` and
    ``claim-reproduced`` / ``claim-not-reproduced`` / ``claim-inconclusive``."""
    status = str(record.get("status", NOT_YET_RUN))
    try:
        title = _claim(record["id"])["title"]
    except ValueError:
        title = ""
    finding = record.get("finding")
    name = f"{record['id']}, further finding “{finding}”" if finding else record["id"]
    head = (
        f'<span class="claim-mark" aria-hidden="true">{MARKS.get(status, "")}</span> '
        f"<strong>{html.escape(name)}</strong> · {html.escape(status)}"
        + (f" · {html.escape(title)}" if title else "")
    )
    lines = []
    gate = record.get("gate")
    if status == INCONCLUSIVE and gate:
        lines.append(
            f"<strong>Why it cannot decide:</strong> {html.escape(_sentence(gate['why']))}"
        )
        lines.append(
            f"<strong>What would decide it:</strong> {html.escape(_sentence(gate['decide']))}"
        )
    finding_words = record.get("says") or record.get("note")
    if finding_words:
        lines.append(f"<strong>Finding:</strong> {html.escape(_sentence(finding_words))}")
    measured = result_in_words(record)
    if record.get("statistic"):
        measured = f"{record['statistic']}: {measured}"
    lines.append(f"<strong>Measured:</strong> {html.escape(_sentence(measured))}")
    body = "".join(f"<p>{line}</p>" for line in lines)
    css = "claim-" + status.replace(" ", "-")
    return (
        f'<div class="claim-outcome {css}" role="note">'
        f'<p class="claim-outcome-head">{head}</p>{body}</div>'
    )


def check(
    claim_id: str,
    value: Any,
    *,
    part: str | None = None,
    bound: Any = None,
    note: str = "",
    says: str = "",
    gate: Gate | None = None,
    committed: str | None = None,
    seed: int | None = None,
    labels: Sequence[str] | None = None,
) -> dict:
    """Check a measured value by its catalogue rule, append its record and return it; raise
    ClaimError if the status unlocks.

    The rule is the catalogue's ``[[claim.check]]`` of ``part`` (:func:`catalogue_check`;
    ``part`` may be left out when the claim has one check): ``approx`` (|value − bound| ≤
    max(tol, rtol·|bound|), elementwise), ``greater``/``less`` (value > / < bound,
    elementwise), ``at-least``/``at-most`` (value ≥ / ≤ bound), ``non-increasing``,
    ``non-decreasing``, ``increasing``, ``decreasing`` (over a 1-D sequence; the last two
    strictly) and ``true`` (a bool or all of an array of bools).
    ``bound`` is passed only where the catalogue declares the bound measured
    (``bound_measured``), else the catalogue's ``bound`` decides. A NaN value does not
    reproduce. The status is "reproduced" or "not reproduced" as the rule finds, unless
    ``gate`` failed: then "inconclusive" (the rule's outcome is still recorded). A check whose
    entry names a ``finding`` is that further finding of the claim.

    ``says``: the finding in one sentence a reader understands (the scorecard shows it);
    ``note``: what was measured, in detail. ``committed``: the committed results file(s) the
    value was read from, when the check decides on them (its value cannot vary with the seed).
    ``seed`` is recorded as given, else ``$BNN_SEED``, else null. ``labels`` name the
    elements of a vector value, one each ("H = 64"), so that the finding in words names them
    (recorded; without them an element is "value 2 of 4"). The record carries the part,
    the statistic and the rule it was decided by, and the check's :func:`margin`. Under
    ``$BNN_CLAIMS_RECORD_ONLY=1`` (the seed sweep) an unlocked status is recorded but not
    raised.
    """
    entry, expect = _rule_and_bound(claim_id, part, bound)
    rule, tol, rtol, finding = (
        entry["rule"],
        entry.get("tol"),
        entry.get("rtol"),
        entry.get("finding"),
    )
    claim = _claim(claim_id)
    if gate is not None and not isinstance(gate, Gate):
        raise TypeError(f"gate must be a claims.Gate, got {type(gate).__name__}")
    claim_rules.validate(rule, expect, tol, rtol)
    labels = claim_rules.validate_labels(value, labels)
    reproduced, message = claim_rules.evaluate(rule, value, expect, tol, rtol, labels)
    status = REPRODUCED if reproduced else NOT_REPRODUCED
    if gate is not None and not gate.passed:
        status = INCONCLUSIVE
    locked = part_lock(claim_id, entry["part"], finding)
    root = repo_root()
    record = {
        "id": claim_id,
        "finding": finding,
        "part": entry["part"],
        "statistic": entry["statistic"],
        "chapter": int(claim["chapter"]),
        "profile": profiles.profile_name(),
        "seed": _seed(seed, int(claim["chapter"])),
        "run": RUN_ID,
        "value": to_json(value),
        "labels": None if labels is None else list(labels),
        "expect": to_json(expect),
        "rule": rule,
        "tol": to_json(tol),
        "rtol": to_json(rtol),
        "reproduced": reproduced,
        "margin": to_json(margin(rule, value, expect, tol, rtol)),
        "status": status,
        "locked": locked,
        "gate": None
        if gate is None
        else {"passed": bool(gate.passed), "why": gate.why, "decide": gate.decide},
        "committed": committed,
        "message": message,
        "says": says,
        "note": note,
        "time": provenance.now("microseconds"),
        "git_commit": provenance.git_commit(root),
        "host": provenance.host(),
        "versions": dict(provenance.versions()),
    }
    record = Record(record)
    append_record(record)
    if status != locked and not record_only():
        raise ClaimError(_unlock_message(claim, record))
    return record


@dataclass(frozen=True)
class Evidence:
    """What a study measured for one check of a claim, ready to show and check.

    The fields after ``claim`` and ``value`` are :func:`check`'s keywords (the rule is the
    catalogue's, of ``part``); ``glue`` holds
    the values the chapter's prose cites (``{glue:text}`name```) and ``table`` a Markdown
    table of the numbers behind the value (shown above the check), or None. A study
    returns one ``Evidence`` per check; the chapter passes it to :func:`show_and_check`.
    """

    claim: str
    value: Any
    part: str | None = None
    bound: Any = None
    note: str = ""
    says: str = ""
    gate: Gate | None = None
    committed: str | None = None
    labels: Sequence[str] | None = None
    glue: Mapping[str, Any] = field(default_factory=dict)
    table: str | None = None

    def verdict(self) -> tuple[bool, str]:
        """Whether the catalogue's rule for this check holds for its value, and why in words
        (:func:`verdict`; before its gate, nothing recorded)."""
        return verdict(self.claim, self.value, part=self.part, bound=self.bound, labels=self.labels)


def show_and_check(*evidence: Evidence) -> ShownRecords:
    """For each :class:`Evidence`: glue its values, display its table, :func:`check` it and
    display its outcome (a ✓ / ✗ / ? block in words on the page, :func:`outcome_html`).
    Returns the records, in order, already shown (:class:`ShownRecords`)."""
    from IPython.display import Markdown, display

    from bnn_posteriors.site.tables import glue_values

    records = ShownRecords()
    for item in evidence:
        if not isinstance(item, Evidence):
            raise TypeError(f"show_and_check takes Evidence, got {type(item).__name__}")
        glue_values(item.glue)
        if item.table is not None:
            display(Markdown(item.table))
        keywords = {
            f.name: getattr(item, f.name)
            for f in fields(item)
            if f.name not in ("claim", "value", "glue", "table")
        }
        record = check(item.claim, item.value, **keywords)
        display(record)
        records.append(record)
    return records


def append_record(record: dict, directory: Path | None = None) -> Path:
    """Append one record as a JSON line to its chapter file; return the file's path."""
    path = record_path(record["id"], record["profile"], directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, allow_nan=False)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return path


def _unlock_message(claim: dict, record: dict) -> str:
    what = f"further finding {record['finding']!r} of claim" if record.get("finding") else "claim"
    return (
        f"{what} {claim['id']} ({claim['title']}; {claim['source']}) measured "
        f"{record['status']!r} in the {record['profile']} profile, but the claims catalogue locks "
        f"{record['locked']!r}.\n"
        f"  measured: {short(record['value'], 200)}\n"
        f"  expected: {expectation(record)}\n"
        f"  detail:   {record['message']}\n"
        f"  finding:  {in_words(record)}\n"
        "A change of status must be explained in the chapter and locked in the claims catalogue "
        "(src/bnn_posteriors/claims/catalogue/); the record was written to "
        f"{record_path(record['id'], record['profile'])}."
    )


# --------------------------------------------------------------------------- records


def load_records(claims_dirs: Iterable[Path | str | None] | None = None) -> list[dict]:
    """All records under ``claims_dirs`` (default: :func:`claims_dir` and results/claims).

    Each folder holds ``<profile>/<NN>.jsonl`` files of one JSON object per line.
    """
    if claims_dirs is None:
        claims_dirs = [claims_dir(), committed_claims_dir()]
    seen: set[Path] = set()
    records: list[dict] = []
    for directory in claims_dirs:
        if directory is None or not Path(directory).is_dir():
            continue
        resolved = Path(directory).resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        for path in sorted(resolved.glob("*/*.jsonl")):
            records.extend(read_jsonl(path))
    return records


def read_jsonl(path: Path) -> list[dict]:
    """The records of one JSON-lines file; a malformed line raises ValueError (file:line)."""
    records = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: malformed claim record: {error}") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: a claim record must be a JSON object")
            missing = {"id", "profile", "status", "time"} - set(record)
            if missing:
                raise ValueError(f"{path}:{number}: claim record lacks {sorted(missing)}")
            records.append(record)
    return records


# --------------------------------------------------------------------------- formatting


def short(value: Any, width: int = 24) -> str:
    """A short string of a recorded value: 4 significant digits, first 3 list items, '…'."""
    text = _short(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return claim_rules.fmt(value)
    if isinstance(value, list):
        items = [_short(item) for item in value[:3]]
        return "[" + ", ".join(items) + (", …" if len(value) > 3 else "") + "]"
    if isinstance(value, dict):
        items = [f"{key}: {_short(item)}" for key, item in list(value.items())[:3]]
        return "{" + ", ".join(items) + (", …" if len(value) > 3 else "") + "}"
    return str(value)


def expectation(record: dict, width: int = 200) -> str:
    """The expectation of a record as a short string: '≈ 0.777 ± 0.001', '> 0.5', 'increasing'."""
    rule, expect = record.get("rule"), record.get("expect")
    if rule == "approx":
        bounds = [f"± {short(record['tol'])}"] if record.get("tol") is not None else []
        if record.get("rtol") is not None:
            bounds.append(f"rtol {short(record['rtol'])}")
        text = f"≈ {short(expect, width)} {' or '.join(bounds)}"
    elif rule in ("greater", "less", "at-least", "at-most"):
        sign = {"greater": ">", "less": "<", "at-least": "≥", "at-most": "≤"}[rule]
        text = f"{sign} {short(expect, width)}"
    else:
        text = str(rule)
    return text if len(text) <= width else text[: width - 1] + "…"
