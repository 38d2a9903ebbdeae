"""What the book build executed: every chapter's claims, once, as locked.

``make book`` (``jupyter-book build . --warningiserror --keep-going``) executes each
chapter once, and each ``claims.check`` in it appends a record to
``_build/claims/<profile>/<NN>.jsonl`` (:func:`bnn_posteriors.claims.checking.claims_dir`). The
latest ``run`` of a chapter's file is the build's execution. These tests read those
records rather than executing the chapters again: for every numbered chapter of
``_toc.yml`` there is a run, every claim of the catalogue (``claims/catalogue/``) of that
chapter was checked in it, with each of its catalogue checks, and every check's status is
the locked one. One cheap chapter (3) is executed
once more, under nbval in strict mode against the build's executed notebook (from its
jupyter-cache): every cell's output, sanitised by ``tests/nbval_sanitize.cfg``, and every
claim value must be bit-identical.

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
# where `jupyter-book build` (execute_notebooks: cache) keeps the executed notebooks
JUPYTER_CACHE = ROOT / "_build" / ".jupyter_cache"
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"


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
def test_the_build_made_every_catalogue_check_of_the_chapter(chapter):
    """Every ``[[claim.check]]`` of the chapter's claims (the further findings' included) was
    checked, so no rule in the catalogue goes unread."""
    run = build_run(chapter)
    checked = {(record["id"], record.get("part")) for record in run}
    expected = [
        (c["id"], entry["part"])
        for c in claims.catalogue()
        if int(c["chapter"]) == chapter
        for entry in c.get("check", [])
    ]
    missing = [key for key in expected if key not in checked]
    assert not missing, f"chapter {chapter}: the build made no check {missing}"


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


def build_notebook(chapter: int, cache_path: Path | None = None):
    """The build's executed notebook of ``chapter``, from the build's jupyter-cache.

    ``execute_notebooks: cache`` stores each executed notebook in ``_build/.jupyter_cache``
    as the kernel gave it. (The copy myst-nb writes to ``_build/jupyter_execute/`` is the
    one it rendered: ``nb_merge_streams`` has appended later stream outputs to the first one
    in place, so that copy shows them twice.) The chapter is read as the build reads it
    (:func:`bnn_posteriors.site.execute.read_chapter`, which also fills that cache before
    the build) and matched by its code cells; a chapter changed since the build has no
    match. Fails or skips (as :func:`build_run`) where there is none.
    """
    from jupyter_cache import get_cache

    from bnn_posteriors.site.execute import book_config, read_chapter

    cache_path = JUPYTER_CACHE if cache_path is None else cache_path
    source = ROOT / f"{CHAPTERS[chapter]}.md"
    message = f"no executed notebook of {source.name} in the build's cache {cache_path}"
    if (cache_path / "global.db").is_file():
        notebook = read_chapter(source, book_config(ROOT))  # as the build reads it
        try:
            return get_cache(str(cache_path)).merge_match_into_notebook(notebook)[1]
        except KeyError:
            message += " (the chapter changed since the build)"
    if _build_required():
        pytest.fail(f"{message} (BNN_SITE_PREBUILT=1 requires the build: run `make book`)")
    pytest.skip(f"{message}; run `make book` (or `make test`) to check the build")


def nbval_strict(notebook: Path, env: dict[str, str], timeout: float = 1800):
    """Run ``notebook`` under nbval in strict mode (every cell's output compared with the
    one stored in it, after :data:`SANITIZE`); the finished ``pytest`` process."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        str(SANITIZE),
        "--nbval-cell-timeout=900",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--rootdir",
        str(notebook.parent),
        "-q",
        "-rf",
        str(notebook),
    ]
    return subprocess.run(
        command,
        cwd=notebook.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_nbval_strict_fails_on_a_changed_output_and_passes_sanitised_ones(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    def cell(source, text, name="stdout"):
        output = new_output("stream", name=name, text=text)
        return new_code_cell(source, execution_count=1, outputs=[output])

    notebook = new_notebook(
        cells=[
            cell("print(6 * 7)", "42\n"),
            # what differs between two executions on one machine, sanitised
            cell(
                "import sys, tempfile\nfrom tqdm import tqdm\n"
                "print(tempfile.mkdtemp(), object())\n"
                "for _ in tqdm(range(3), file=sys.stderr, mininterval=0): pass",
                "/tmp/tmpa1b2c3 <object object at 0x7f0000000000>\n",
            ),
            cell("print(0.1 + 0.2)", "0.30000000000000004\n"),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    bar = "100%|██████████| 3/3 [00:07<00:00, 12.34it/s]\n"  # timings of another run
    notebook.cells[1].outputs.append(new_output("stream", name="stderr", text=bar))
    path = tmp_path / "tiny.ipynb"
    nbformat.write(notebook, path)
    done = nbval_strict(path, dict(os.environ), timeout=300)
    assert done.returncode == 0, f"nbval strict failed on equal outputs:\n{done.stdout[-3000:]}"

    notebook.cells[2].outputs[0].text = "0.30000000000000005\n"  # one digit changed
    nbformat.write(notebook, path)
    done = nbval_strict(path, dict(os.environ), timeout=300)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 failed, 2 passed" in done.stdout, done.stdout[-3000:]
    assert "tiny.ipynb::Cell 2" in done.stdout and "0.30000000000000005" in done.stdout


@pytest.mark.slow
def test_a_second_execution_of_chapter_3_gives_bit_identical_claims_and_outputs(tmp_path):
    """Chapter 3 once more, under nbval in strict mode against the build's executed
    notebook: every cell's output (sanitised by :data:`SANITIZE`) and every claim value
    must be the build's."""
    built = build_run(DETERMINISM_CHAPTER)
    reference = build_notebook(DETERMINISM_CHAPTER)
    import nbformat

    notebook = tmp_path / f"{Path(CHAPTERS[DETERMINISM_CHAPTER]).name}.ipynb"
    nbformat.write(reference, notebook)
    # its own records and unit cache: every value is computed again
    env = {
        **os.environ,
        "BNN_CLAIMS_DIR": str(tmp_path / "claims"),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
    }
    env.pop("BNN_CLAIMS_RECORD_ONLY", None)
    done = nbval_strict(notebook, env)
    assert done.returncode == 0, (
        f"chapter {DETERMINISM_CHAPTER} failed or gave other cell outputs than the build's "
        f"(nbval, strict mode):\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    )
    path = tmp_path / "claims" / profiles.profile_name() / f"{DETERMINISM_CHAPTER:02d}.jsonl"
    again = latest_run(claims.read_jsonl(path))
    assert [(r["id"], r["value"]) for r in again] == [(r["id"], r["value"]) for r in built], (
        f"chapter {DETERMINISM_CHAPTER}: a second execution gave other claim values than "
        f"the build's run {built[0]['run']}"
    )
