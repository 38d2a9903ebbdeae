"""The seed sweep: every chapter run under several seeds, each check's status and margin.

A claim's check must hold for every reasonable seed, by a margin larger than its
seed-to-seed spread. :func:`run_sweep` executes each chapter once per seed (the chapter's
default seed and the ``n − 1`` integers after it) with the checks in record-only mode
(:func:`bnn_posteriors.claims.checking.record_only`), so one failing check does not hide the
others, and writes one result file with provenance, ``results/sweep/<profile>.json``.
:func:`summarise` turns its runs into one row per check (statuses, smallest margin,
spread) and :func:`seeds_by_claim` into the "k of n seeds" of the scorecard.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.site import chapters as book
from bnn_posteriors.site import profiles, tables
from bnn_posteriors.site.execute import environ, run_chapter
from bnn_posteriors.store import committed as results
from bnn_posteriors.util.validate import positive_int


def seeds(chapter: str, n: int) -> list[int]:
    """The ``n`` seeds of a chapter's sweep: its default seed, then the next ``n − 1``."""
    n = positive_int("the number of seeds", n)
    spec = profiles.chapters().get(chapter)
    if spec is None:
        known = sorted(profiles.chapters())
        raise ValueError(f"no settings for chapter {chapter!r}; known: {known}")
    return [int(spec["seed"]) + i for i in range(n)]


def sweep_path(profile: str) -> Path:
    """The committed sweep file of a profile: ``results/sweep/<profile>.json``."""
    return results.results_dir() / "sweep" / f"{profiles.profile_name(profile)}.json"


def run_key(chapter: str, seed: int) -> str:
    """The key of one run in a sweep file: ``"<chapter>/<seed>"``."""
    return f"{chapter}/{seed}"


def checks_of(records: Sequence[dict]) -> list[dict]:
    """The checks of one chapter run, in order, numbered per claim and further finding
    (``index``), with margins, the catalogue part and the rule each was decided by;
    ``committed`` marks a check decided on committed results."""
    counts: dict[tuple[str, str | None], int] = {}
    rows = []
    for record in records:
        key = (record["id"], record.get("finding"))
        index = counts.get(key, 0)
        counts[key] = index + 1
        margin = record.get("margin")
        if "margin" not in record and record.get("rule") is not None:
            margin = claims.margin(
                record["rule"],
                record["value"],
                record.get("expect"),
                record.get("tol"),
                record.get("rtol"),
            )
        rows.append(
            {
                "id": record["id"],
                "finding": record.get("finding"),
                "part": record.get("part"),
                "index": index,
                "status": record["status"],
                "locked": record.get("locked"),
                "committed": bool(record.get("committed")),
                "margin": margin,
                "measured": claims.short(record.get("value"), 40),
                "expected": claims.expectation(record, width=40),
                # the rule it was decided by, to tell when the catalogue's rule has changed
                **{key: record.get(key) for key in ("rule", "expect", "tol", "rtol")},
            }
        )
    return rows


def run_commit(records: Sequence[dict]) -> str | None:
    """The commit a chapter run ran from, as its records name it ("abc1234", "+dirty" where
    tracked files differed from it; "several" if its records disagree); None without
    records."""
    commits = {str(record.get("git_commit")) for record in records}
    if not commits:
        return None
    return commits.pop() if len(commits) == 1 else "several: " + ", ".join(sorted(commits))


def run_sweep(
    chapters: Sequence[str] | None = None,
    n_seeds: int = 5,
    profile: str | None = None,
    out: Path | None = None,
    *,
    resume: bool = False,
    execute: Callable[[Path, str, int], int] | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Run every chapter (default: all of ``_toc.yml``) under ``n_seeds`` seeds; write ``out``.

    ``execute(chapter_path, profile, seed)`` runs one chapter and returns its exit code
    (default: :func:`bnn_posteriors.site.execute.run_chapter`). Runs of chapters not asked for are
    kept from an existing file; with ``resume``, runs already in it are not repeated. The
    file is rewritten after every run, so an interrupted sweep loses no finished run.
    """
    profile = profiles.profile_name(profile)
    paths = {path.stem: path for path in book.chapter_paths()}
    names = [name for name in paths if name in profiles.chapters()] if not chapters else chapters
    for name in names:
        if name not in paths or name not in profiles.chapters():
            raise ValueError(f"unknown chapter {name!r}; the chapters are {sorted(paths)}")
    out = sweep_path(profile) if out is None else Path(out)
    execute = run_chapter if execute is None else execute

    previous = load_sweep(out) or {"runs": {}}
    runs = dict(previous.get("runs", {}))
    if not resume:
        runs = {key: run for key, run in runs.items() if run["chapter"] not in names}
    for name in names:
        for seed in seeds(name, n_seeds):
            key = run_key(name, seed)
            if key in runs:
                log(f"{key}: kept from {out}")
                continue
            with tempfile.TemporaryDirectory() as folder:
                variables = {"BNN_CLAIMS_DIR": folder, "BNN_CLAIMS_RECORD_ONLY": "1"}
                start = time.perf_counter()
                with environ(variables):
                    code = execute(paths[name], profile, seed)
                wall = time.perf_counter() - start
                files = sorted(Path(folder, profile).glob("*.jsonl"))
                records = [r for f in files for r in claims.read_jsonl(f)]
            runs[key] = {
                "chapter": name,
                "seed": seed,
                "commit": run_commit(records),
                "exit_code": int(code),
                "wall_s": round(wall, 1),
                "checks": checks_of(records),
            }
            log(f"{key}: exit {code}, {len(records)} checks, {wall:.0f} s")
            results.write_json(out, {"n_seeds": n_seeds, "runs": runs}, profile=profile)
    return _read_sweep(out)


def merge_sweeps(paths: Sequence[Path], out: Path) -> dict:
    """Merge sweep files of separate runs (e.g. chapters swept side by side) into ``out``.

    Chapter by chapter, the runs of a later file replace those of earlier files and of
    ``out`` itself; the chapters no file brings are kept from ``out``, with their sources.
    Each file's provenance is kept under ``sources``, with the chapters it brought. All
    files must be of one profile and number of seeds, and none of them may be ``out``.
    """
    out = Path(out)
    if any(Path(p).resolve() == out.resolve() for p in paths):
        # it would replace every chapter of out by itself under out's last provenance
        raise ValueError(f"{out} is the file merged into (--out): pass only the new sweep files")
    previous = load_sweep(out) or {"runs": {}}
    loaded = [(Path(p), load_sweep(Path(p))) for p in paths]
    missing = [str(p) for p, f in loaded if f is None]
    if missing:
        raise ValueError(f"no sweep file at {', '.join(missing)}")
    files = [(p, f) for p, f in loaded if f is not None]
    profile = {f["profile"] for _, f in files} | (
        {previous["profile"]} if "profile" in previous else set()
    )
    seeds_per_run = {f["n_seeds"] for _, f in files} | (
        {previous["n_seeds"]} if "n_seeds" in previous else set()
    )
    if len(profile) > 1 or len(seeds_per_run) > 1:
        raise ValueError(f"cannot merge sweeps of profiles {profile} / seeds {seeds_per_run}")
    runs = dict(previous["runs"])
    sources = list(previous.get("sources", []))
    for _, f in files:
        chapters = sorted({run["chapter"] for run in f["runs"].values()})
        runs = {k: r for k, r in runs.items() if r["chapter"] not in chapters} | f["runs"]
        sources = [
            {**s, "chapters": [c for c in s["chapters"] if c not in chapters]} for s in sources
        ]
        sources = [s for s in sources if s["chapters"]] + [
            {"chapters": chapters, **f["provenance"]}
        ]
    payload = {"n_seeds": seeds_per_run.pop(), "runs": runs, "sources": sources}
    results.write_json(out, payload, profile=profile.pop())
    return _read_sweep(out)


def load_sweep(path: Path | None = None, profile: str = "quick") -> dict | None:
    """A sweep file (default: the committed one of ``profile``), or None if there is none."""
    if path is None:
        try:
            path = sweep_path(profile)
        except ValueError:
            return None
    path = Path(path)
    if not path.is_file():
        return None
    return _read_sweep(path)


def _read_sweep(path: Path) -> dict:
    """The sweep file at ``path``, checked to hold its ``runs``."""
    sweep = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(sweep, dict) or not isinstance(sweep.get("runs"), dict):
        raise ValueError(f"{path} is not a sweep file (no 'runs')")
    return sweep


def summarise(sweep: dict) -> list[dict]:
    """One row per check (claim id, further finding, index) over the seeds of its chapter.

    Each row: ``id``, ``finding`` (None for the paper's claim), ``index``, ``seeds``,
    ``statuses`` (one per seed, "missing" where the run stopped before the check),
    ``reproduced`` (how many), ``margins``, ``min_margin``, ``spread`` (sd of the margins
    over seeds), ``committed`` (decided on committed results: its value cannot vary with
    the seed), ``robust``: every seed gives the same status and every margin is farther
    from 0 than the spread (for a margin-less boolean check, margins that do not change
    with the seed, or a check inconclusive on every seed, whose failed gate leaves the
    rule's margin deciding nothing: the same status on every seed; a committed check is
    never called robust, since the seed cannot move it), ``locked`` (the lock), ``at_lock``:
    the seeds whose status is the lock (a seed whose status is not the lock fails the build)
    and ``rule_changed``: the catalogue's rule of the check differs from the one it was
    swept by.
    """
    by_chapter: dict[str, list[dict]] = {}
    for run in sweep["runs"].values():
        by_chapter.setdefault(run["chapter"], []).append(run)
    rows = []
    for chapter in sorted(by_chapter):
        chapter_runs = sorted(by_chapter[chapter], key=lambda run: run["seed"])
        keys = []
        for run in chapter_runs:
            for c in run["checks"]:
                if _check_key(c) not in keys:
                    keys.append(_check_key(c))
        for key in keys:
            found = [
                next((c for c in run["checks"] if _check_key(c) == key), None)
                for run in chapter_runs
            ]
            statuses = [c["status"] if c else "missing" for c in found]
            margins = [c["margin"] if c else None for c in found]
            numeric = np.array([m for m in margins if isinstance(m, int | float)], dtype=float)
            spread = float(numeric.std(ddof=1)) if numeric.size > 1 else None
            committed = any(c.get("committed") for c in found if c)
            robust = "missing" not in statuses and len(set(statuses)) == 1 and not committed
            gated = set(statuses) == {claims.INCONCLUSIVE}  # the rule's margin decided nothing
            if numeric.size and spread and not gated:  # margins constant over seeds are robust
                robust = robust and float(np.abs(numeric).min()) > spread
            locked = next((c["locked"] for c in found if c and c.get("locked")), None)
            changed = any(claims.rule_changed({"id": key[0], **c}) for c in found if c)
            rows.append(
                {
                    "id": key[0],
                    "finding": key[1],
                    "index": key[2],
                    "part": next((c.get("part") for c in found if c), None),
                    "chapter": chapter,
                    "seeds": [run["seed"] for run in chapter_runs],
                    "statuses": statuses,
                    "reproduced": statuses.count(claims.REPRODUCED),
                    "locked": locked,
                    "at_lock": statuses.count(locked) if locked else None,
                    "margins": margins,
                    "min_margin": float(numeric.min()) if numeric.size else None,
                    "spread": spread,
                    "committed": committed,
                    "robust": bool(robust),
                    "rule_changed": changed,
                    "expected": next((c["expected"] for c in found if c), ""),
                }
            )
    return rows


def _check_key(check: dict) -> tuple[str, str | None, int]:
    return check["id"], check.get("finding"), check["index"]


COMMITTED = "committed results (seed-independent)"
STALE = "stale: swept against another lock or rule"


def seeds_by_claim(sweep: dict | None) -> dict[str, str]:
    """Per claim id (its own checks, not its further findings): "k of n", the seeds on
    which every check had the claim's locked status, :data:`COMMITTED` when every check
    of the claim decides on committed results (the seed cannot move them), or
    :data:`STALE` when the sweep ran the claim against another lock than today's, or decided
    one of its checks by another rule than the catalogue's today
    (:func:`.checking.rule_changed`)."""
    if not sweep:
        return {}
    per_claim: dict[str, list[dict]] = {}
    for row in summarise(sweep):
        if row["finding"] is None:
            per_claim.setdefault(row["id"], []).append(row)
    cells = {}
    for claim_id, rows in per_claim.items():
        if any(
            row["locked"] not in (None, _lock_today(claim_id, row)) or row["rule_changed"]
            for row in rows
        ):
            cells[claim_id] = STALE
            continue
        if all(row["committed"] for row in rows):
            cells[claim_id] = COMMITTED
            continue
        by_seed = list(zip(*(row["statuses"] for row in rows), strict=True))
        locks = [row["locked"] for row in rows]
        ok = sum(all(s == lock for s, lock in zip(seed, locks, strict=True)) for seed in by_seed)
        cells[claim_id] = f"{ok} of {len(by_seed)}"
    return cells


def _lock_today(claim_id: str, row: dict) -> str | None:
    """Today's catalogue lock of a swept check: its part's (:func:`.checking.part_lock`), the
    claim's for rows from before the parts; None for a claim no longer in the catalogue."""
    try:
        return claims.part_lock(claim_id, row.get("part"))
    except ValueError:
        return None


def chapter_commits(sweep: dict | None) -> dict[str, str]:
    """The commits each chapter's runs of a sweep file ran from (chapter → "abc1234", or
    several joined by ", "), as the runs record them. Runs from before runs named their
    commit say so: "not recorded (merged from the sweep of <commit>)", never crediting the
    commit of the file they were merged from."""
    if not sweep:
        return {}
    by_chapter: dict[str, set[str]] = {}
    for run in sweep["runs"].values():
        by_chapter.setdefault(run["chapter"], set()).add(run.get("commit") or "")
    sources = {
        chapter: source.get("commit", "?")
        for source in sweep.get("sources", [])
        for chapter in source["chapters"]
    }
    file_commit = sweep.get("provenance", {}).get("commit", "?")
    commits = {}
    for chapter in sorted(by_chapter):
        known = sorted(c for c in by_chapter[chapter] if c)
        unknown = "" in by_chapter[chapter]
        text = ", ".join(f"`{c}`" for c in known)
        if unknown:
            origin = sources.get(chapter, file_commit)
            text += ("; " if text else "") + f"not recorded (merged from the sweep of `{origin}`)"
        commits[chapter] = text
    return commits


def check_name(row: dict) -> str:
    """A check's name in a sweep table: 'C3.7', 'C3.7 [finding]', 'C3.7 (2)'."""
    name = row["id"] + (f" [{row['finding']}]" if row["finding"] else "")
    return name + (f" ({row['index'] + 1})" if row["index"] else "")


def sweep_markdown(sweep: dict | None) -> str:
    """The sweep as a Markdown table: one row per check, statuses, smallest margin, spread."""
    if not sweep:
        return "No seed sweep has been committed yet (`bnn-posteriors sweep`).\n"
    header = ("check", "seeds at the lock", "expected", "smallest margin", "spread (sd)", "robust")
    rows = []
    for row in summarise(sweep):
        name = check_name(row)
        at_lock = "—" if row["at_lock"] is None else f"{row['at_lock']} of {len(row['statuses'])}"
        robust = "decided on " + COMMITTED if row["committed"] else "yes" if row["robust"] else "no"
        rows.append(
            (
                name,
                at_lock,
                row["expected"],
                tables.number(row["min_margin"], ".3g"),
                tables.number(row["spread"], ".3g"),
                robust,
            )
        )
    return tables.markdown_table(header, rows)
