"""What the book build executed: every chapter's claims, once, as locked.

``make book`` (``jupyter-book build . --warningiserror --keep-going``) executes each
chapter once, and each ``claims.check`` in it appends a record to
``_build/claims/<profile>/<NN>.jsonl`` (:func:`bnn_posteriors.claims.checking.claims_dir`). The
latest ``run`` of a chapter's file is the build's execution. These tests read those
records rather than executing the chapters again: for every numbered chapter of
``_toc.yml`` there is a run, every claim of ``claims/catalogue.toml`` of that chapter was checked
in it, and every check's status is the locked one. One cheap chapter (3) is executed
once more and must give bit-identical claim values.

Where the build is required (``BNN_SITE_PREBUILT=1``, as ``make test`` sets) its
missing records fail these tests; otherwise they are skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.site import profiles
from bnn_posteriors.site.chapters import toc_files

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = {
    int(Path(page).name[:2]): page
    for page in toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))
    if Path(page).name[:2].isdigit()
}
DETERMINISM_CHAPTER = 3  # seconds to run in the quick profile


def _build_required() -> bool:
    return os.environ.get("BNN_SITE_PREBUILT") == "1"


def _records_file(chapter: int) -> Path:
    return claims.claims_dir() / profiles.profile_name() / f"{chapter:02d}.jsonl"


def latest_run(records: list[dict]) -> list[dict]:
    """The records of the run with the latest record (by ``time``), in file order."""
    if not records:
        return []
    newest = max(records, key=lambda record: record["time"])["run"]
    return [record for record in records if record.get("run") == newest]


def build_run(chapter: int) -> list[dict]:
    """The records of the build's execution of ``chapter``; fail or skip where there is none."""
    path = _records_file(chapter)
    records = claims.read_jsonl(path) if path.is_file() else []
    if not records:
        message = (
            f"no claim records of chapter {chapter} ({CHAPTERS[chapter]}) in {path}: "
            "the book build did not execute it"
        )
        if _build_required():
            pytest.fail(f"{message} (BNN_SITE_PREBUILT=1 requires the build: run `make book`)")
        pytest.skip(f"{message}; run `make book` (or `make test`) to check the build")
    return latest_run(records)


def test_latest_run_takes_the_run_of_the_newest_record():
    records = [
        {"id": "C3.1", "run": "a", "time": "2026-01-01T00:00:00.000001+00:00"},
        {"id": "C3.1", "run": "b", "time": "2026-01-02T00:00:00.000000+00:00"},
        {"id": "C3.2", "run": "b", "time": "2026-01-02T00:00:01.000000+00:00"},
        {"id": "C3.2", "run": "a", "time": "2026-01-01T00:00:01.000000+00:00"},
    ]
    assert [r["id"] for r in latest_run(records)] == ["C3.1", "C3.2"]
    assert {r["run"] for r in latest_run(records)} == {"b"}
    assert latest_run([]) == []


def test_every_numbered_chapter_is_in_the_catalogue():
    assert sorted(CHAPTERS) == sorted({int(claim["chapter"]) for claim in claims.catalogue()})


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_the_build_checked_every_claim_of_the_chapter(chapter):
    run = build_run(chapter)
    checked = {record["id"] for record in run}
    expected = [c["id"] for c in claims.catalogue() if int(c["chapter"]) == chapter]
    missing = [claim_id for claim_id in expected if claim_id not in checked]
    assert not missing, (
        f"chapter {chapter}: the build's run {run[0]['run']} checked no record of {missing}"
    )


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_the_build_checked_every_further_finding_of_the_chapter(chapter):
    run = build_run(chapter)
    checked = {(record["id"], record.get("finding")) for record in run}
    expected = [
        (c["id"], name)
        for c in claims.catalogue()
        if int(c["chapter"]) == chapter
        for name in c.get("findings", {})
    ]
    missing = [key for key in expected if key not in checked]
    assert not missing, f"chapter {chapter}: the build checked no further finding {missing}"


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_check_of_the_build_has_its_locked_status(chapter):
    run = build_run(chapter)
    unlocked = [
        f"{record['id']}: {record['status']!r}, locked {record.get('locked')!r} "
        f"({record.get('message', '')})"
        for record in run
        if record["status"] != record.get("locked")
    ]
    assert not unlocked, f"chapter {chapter}: checks off their locked status: {unlocked}"


def test_a_second_execution_of_chapter_3_gives_bit_identical_claim_values(tmp_path):
    built = build_run(DETERMINISM_CHAPTER)
    chapter = ROOT / f"{CHAPTERS[DETERMINISM_CHAPTER]}.md"
    # its own records and unit cache: every value is computed again
    env = {
        **os.environ,
        "BNN_CLAIMS_DIR": str(tmp_path / "claims"),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
    }
    env.pop("BNN_CLAIMS_RECORD_ONLY", None)
    done = subprocess.run(
        [sys.executable, "-m", "bnn_posteriors", "run", str(chapter), "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"chapter {DETERMINISM_CHAPTER} failed:\n{done.stderr[-4000:]}"
    path = tmp_path / "claims" / profiles.profile_name() / f"{DETERMINISM_CHAPTER:02d}.jsonl"
    again = latest_run(claims.read_jsonl(path))
    assert [(r["id"], r["value"]) for r in again] == [(r["id"], r["value"]) for r in built], (
        f"chapter {DETERMINISM_CHAPTER}: a second execution gave other claim values than "
        f"the build's run {built[0]['run']}"
    )
