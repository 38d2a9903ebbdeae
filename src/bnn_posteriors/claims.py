"""Claim checks: decide, record and lock whether a claim of ``CLAIMS.md`` reproduces.

A chapter calls :func:`check` once per claim, e.g. ``check("C3.4", root, expect=0.777,
tol=1e-3)`` or ``check("C1.5", nu_by_depth, rule="non-increasing")``. Each call appends
one JSON line to ``<claims_dir>/<profile>/<chapter>.jsonl`` and raises :class:`ClaimError`
when the measured status differs from the status locked in ``claims.toml``, so that no
result changes unseen. :mod:`bnn_posteriors.scorecard` builds the book's scorecard from
the records; :func:`short` and :func:`expectation` format a record's value and expectation
for the unlock message and the scorecard alike.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import importlib.resources
import json
import math
import os
import platform
import subprocess
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from bnn_posteriors import profiles

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_YET_RUN = "not yet run"
STATUSES = (REPRODUCED, NOT_REPRODUCED)

RULES = (
    "approx",
    "greater",
    "less",
    "non-increasing",
    "non-decreasing",
    "increasing",
    "decreasing",
    "true",
)
_MONOTONE = {
    "non-increasing": (np.less_equal, "≤"),
    "non-decreasing": (np.greater_equal, "≥"),
    "increasing": (np.greater, ">"),
    "decreasing": (np.less, "<"),
}
_SIGNIFICANT = 6  # significant digits of the floats stored in a record


# One id per process: the checks of one execution of a chapter share it, so the
# scorecard can judge a claim by all the checks of its latest run.
RUN_ID = f"{platform.node()}-{os.getpid()}-{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%S%f}"


class ClaimError(AssertionError):
    """A claim's measured status differs from the status locked in ``claims.toml``."""


# --------------------------------------------------------------------------- catalogue


@functools.cache
def _read_catalogue() -> tuple[dict, ...]:
    text = importlib.resources.files("bnn_posteriors").joinpath("claims.toml").read_text("utf-8")
    claims = tuple(tomllib.loads(text).get("claim", []))
    for claim in claims:
        missing = {"id", "chapter", "title", "source", "locked"} - set(claim)
        if missing:
            raise ValueError(f"claims.toml: claim {claim!r} lacks {sorted(missing)}")
        if claim["locked"] not in STATUSES:
            raise ValueError(
                f"claims.toml: claim {claim['id']} is locked as {claim['locked']!r}; "
                f"use one of {STATUSES}"
            )
    return claims


def catalogue() -> list[dict]:
    """The claims of ``claims.toml`` in order: dicts with id, chapter, title, source, locked."""
    return [dict(claim) for claim in _read_catalogue()]


def _claim(claim_id: str) -> dict:
    for claim in catalogue():
        if claim["id"] == claim_id:
            return claim
    raise ValueError(
        f"unknown claim id {claim_id!r}; the ids are those of claims.toml (e.g. 'C1.4')"
    )


def chapter_of(claim_id: str) -> int:
    """The chapter number of a claim id: ``"C1.4"`` → 1."""
    head, _, _ = claim_id.partition(".")
    if not head.startswith("C") or not head[1:].isdigit():
        raise ValueError(f"malformed claim id {claim_id!r}; expected 'C<chapter>.<n>'")
    return int(head[1:])


# --------------------------------------------------------------------------- locations


def repo_root() -> Path | None:
    """The book's root: the folder holding ``_toc.yml`` above the package or the cwd."""
    package_root = Path(__file__).resolve().parents[2]
    if (package_root / "_toc.yml").is_file():
        return package_root
    cwd = Path.cwd().resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return None


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


# --------------------------------------------------------------------------- provenance


def _git(root: Path, *args: str) -> str | None:
    """Output of ``git -C root args`` (stripped), or None where git or the repository is missing."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def _git_commit(root: Path | None) -> str | None:
    """Short hash of the repository's HEAD, with "+dirty" if tracked files were modified."""
    head = _git(root, "rev-parse", "--short", "HEAD") if root is not None else None
    if not head:
        return None
    # "+dirty": the run used tracked files that differ from the commit.
    return head + ("+dirty" if _git(root, "status", "--porcelain", "--untracked-files=no") else "")


@functools.cache
def _versions() -> dict[str, str | None]:
    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    names = ("jax", "numpyro", "blackjax")
    return {**{name: version(name) for name in names}, "python": platform.python_version()}


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
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    array = np.asarray(value)
    if array.dtype == object:
        return to_json(array.tolist()) if array.ndim else str(value)
    if array.ndim:
        return [to_json(item) for item in array.tolist()]
    item = array.item()
    if isinstance(item, bool | int):
        return item
    if isinstance(item, complex):
        return [_round(item.real), _round(item.imag)]
    return _round(float(item))


def _round(x: float) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(f"{x:.{_SIGNIFICANT}g}")


def _numeric(value: Any, what: str) -> np.ndarray:
    array = np.asarray(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{what} must be a number or an array of numbers, got {value!r}")
    if array.size == 0:
        raise ValueError(f"{what} is empty")
    return array.astype(float)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


# --------------------------------------------------------------------------- rules


def _validate(rule: str, expect: Any, tol: float | None, rtol: float | None) -> None:
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; the rules are {', '.join(RULES)}")
    if rule == "approx":
        if expect is None:
            raise ValueError("rule 'approx' needs expect=")
        if tol is None and rtol is None:
            raise ValueError("rule 'approx' needs tol= (absolute) or rtol= (relative)")
    elif tol is not None or rtol is not None:
        raise ValueError(f"tol/rtol apply to rule 'approx' only, not to {rule!r}")
    if rule in ("greater", "less") and expect is None:
        raise ValueError(f"rule {rule!r} needs expect= (the bound)")
    if rule in (*_MONOTONE, "true") and expect is not None:
        raise ValueError(f"rule {rule!r} takes no expect= (the rule is the expectation)")
    for name, bound in (("tol", tol), ("rtol", rtol)):
        if bound is not None and not (math.isfinite(bound) and bound >= 0):
            raise ValueError(f"{name} must be a finite number ≥ 0, got {bound!r}")


def _evaluate(rule: str, value: Any, expect: Any, tol: float | None, rtol: float | None):
    """Whether ``value`` satisfies ``rule``, and a one-line message saying why (or why not)."""
    if rule == "true":
        array = np.asarray(value)
        if array.dtype != np.bool_:
            raise TypeError(f"rule 'true' needs a bool or an array of bools, got {value!r}")
        if array.size == 0:
            raise ValueError("value is empty")
        false = np.flatnonzero(~array.ravel())
        if false.size == 0:
            return True, f"all {array.size} true" if array.ndim else "true"
        return False, f"{false.size} of {array.size} false (first at flat index {false[0]})"

    array = _numeric(value, "value")
    if np.isnan(array).any():
        return False, f"value contains NaN ({int(np.isnan(array).sum())} of {array.size})"

    if rule in _MONOTONE:
        return _monotone(rule, array)

    bound = _numeric(expect, "expect")
    if np.isnan(bound).any():
        raise ValueError(f"expect contains NaN: {expect!r}")
    try:
        array, bound = np.broadcast_arrays(array, bound)
    except ValueError:
        raise ValueError(
            f"value of shape {np.shape(array)} does not match expect of shape {np.shape(bound)}"
        ) from None
    if rule == "approx":
        allowed = np.maximum(tol or 0.0, (rtol or 0.0) * np.abs(bound))
        gap = np.abs(array - bound)
        ok = gap <= allowed
        worst = int(np.argmax(gap - allowed))
        where = f" at index {np.unravel_index(worst, gap.shape)}" if gap.ndim else ""
        sign = "≤" if ok.all() else ">"
        detail = f"|value − expect| = {_fmt(gap.flat[worst])} {sign} {_fmt(allowed.flat[worst])}"
        return bool(ok.all()), f"{'max ' if gap.ndim else ''}{detail}{where}"
    op, sign = (np.greater, ">") if rule == "greater" else (np.less, "<")
    ok = op(array, bound)
    if ok.all():
        return True, f"all {array.size} values {sign} bound" if array.ndim else "holds"
    bad = int(np.flatnonzero(~ok.ravel())[0])
    return False, (
        f"{int((~ok).sum())} of {array.size} fail; value {_fmt(array.flat[bad])} is not "
        f"{sign} {_fmt(bound.flat[bad])}" + (f" at flat index {bad}" if array.ndim else "")
    )


def margin(
    rule: str, value: Any, expect: Any = None, tol: float | None = None, rtol: float | None = None
) -> float | None:
    """How far a check's value is inside (> 0) or outside (< 0) its bound, in its own units.

    ``approx``: min of max(tol, rtol·|expect|) − |value − expect|; ``greater``/``less``: min of
    value − bound / bound − value; the monotone rules: the smallest step in the required
    direction. None for rule ``true`` (a boolean has no distance) and for values with NaN.
    Elementwise checks report their worst element, so a margin ≤ 0 is a failed check
    (a strict rule fails at 0).
    """
    if rule == "true":
        return None
    array = _numeric(value, "value")
    if np.isnan(array).any():
        return None
    if rule in _MONOTONE:
        steps = np.diff(array)
        return float(np.min(-steps if rule in ("non-increasing", "decreasing") else steps))
    bound = _numeric(expect, "expect")
    array, bound = np.broadcast_arrays(array, bound)
    if rule == "approx":
        allowed = np.maximum(tol or 0.0, (rtol or 0.0) * np.abs(bound))
        return float(np.min(allowed - np.abs(array - bound)))
    return float(np.min(array - bound if rule == "greater" else bound - array))


def record_only() -> bool:
    """True when ``$BNN_CLAIMS_RECORD_ONLY`` is 1: checks record but never raise (the sweep)."""
    return os.environ.get("BNN_CLAIMS_RECORD_ONLY", "").strip() == "1"


def _monotone(rule: str, array: np.ndarray) -> tuple[bool, str]:
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"rule {rule!r} needs a 1-D sequence of ≥ 2 values, got {array.shape}")
    op, sign = _MONOTONE[rule]
    ok = op(array[1:], array[:-1])
    if ok.all():
        return True, f"{rule} over {array.size} values"
    i = int(np.flatnonzero(~ok)[0])
    return False, (
        f"not {rule}: {int((~ok).sum())} of {array.size - 1} steps fail, first "
        f"value[{i + 1}] = {_fmt(array[i + 1])} is not {sign} value[{i}] = {_fmt(array[i])}"
    )


# --------------------------------------------------------------------------- check


class Record(dict):
    """A claim record (a plain dict) that shows itself in a notebook as one line."""

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(summary_line(self))


def summary_line(record: dict) -> str:
    """'C2.1 reproduced: measured 2.3e-07, expected > -1e-09' for a record."""
    return (
        f"{record['id']} {record['status']}: measured {short(record.get('value'), 60)}, "
        f"expected {expectation(record, width=60)}"
    )


def check(
    claim_id: str,
    value: Any,
    *,
    expect: Any = None,
    rule: str = "approx",
    tol: float | None = None,
    rtol: float | None = None,
    note: str = "",
    seed: int | None = None,
) -> dict:
    """Check a claim, append its record and return it; raise ClaimError if it unlocks.

    Rules: ``approx`` (|value − expect| ≤ max(tol, rtol·|expect|), elementwise),
    ``greater``/``less`` (value > / < expect, elementwise), ``non-increasing``,
    ``non-decreasing``, ``increasing``, ``decreasing`` (over a 1-D sequence; the last
    two strictly) and ``true`` (a bool or all of an array of bools). ``seed`` is
    recorded as given, else ``$BNN_SEED``, else null. A NaN value does not reproduce.
    The record carries the check's :func:`margin`. Under ``$BNN_CLAIMS_RECORD_ONLY=1``
    (the seed sweep) an unlocked status is recorded but not raised.
    """
    claim = _claim(claim_id)
    _validate(rule, expect, tol, rtol)
    reproduced, message = _evaluate(rule, value, expect, tol, rtol)
    status = REPRODUCED if reproduced else NOT_REPRODUCED
    root = repo_root()
    record = {
        "id": claim_id,
        "chapter": int(claim["chapter"]),
        "profile": profiles.profile_name(),
        "seed": _seed(seed, int(claim["chapter"])),
        "run": RUN_ID,
        "value": to_json(value),
        "expect": to_json(expect),
        "rule": rule,
        "tol": to_json(tol),
        "rtol": to_json(rtol),
        "reproduced": reproduced,
        "margin": to_json(margin(rule, value, expect, tol, rtol)),
        "status": status,
        "locked": claim["locked"],
        "message": message,
        "note": note,
        "time": _dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"),
        "git_commit": _git_commit(root),
        "host": f"{platform.node()}/{platform.machine()}",
        "versions": dict(_versions()),
    }
    record = Record(record)
    append_record(record)
    if status != claim["locked"] and not record_only():
        raise ClaimError(_unlock_message(claim, record))
    return record


def append_record(record: dict, directory: Path | None = None) -> Path:
    """Append one record as a JSON line to its chapter file; return the file's path."""
    path = record_path(record["id"], record["profile"], directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, allow_nan=False)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    return path


def _unlock_message(claim: dict, record: dict) -> str:
    return (
        f"claim {claim['id']} ({claim['title']}; {claim['source']}) measured "
        f"{record['status']!r} in the {record['profile']} profile, but claims.toml locks "
        f"{claim['locked']!r}.\n"
        f"  measured: {short(record['value'], 200)}\n"
        f"  expected: {expectation(record)}\n"
        f"  detail:   {record['message']}\n"
        "A change of status must be explained in the chapter and locked in claims.toml "
        "(src/bnn_posteriors/claims.toml); the record was written to "
        f"{record_path(record['id'], record['profile'])}."
    )


# --------------------------------------------------------------------------- records


def load_records(claims_dirs: Iterable[Path | str] | None = None) -> list[dict]:
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
        return _fmt(value)
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
    elif rule in ("greater", "less"):
        text = f"{'>' if rule == 'greater' else '<'} {short(expect, width)}"
    else:
        text = str(rule)
    return text if len(text) <= width else text[: width - 1] + "…"
