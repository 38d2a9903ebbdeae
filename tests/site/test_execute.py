"""Tests of the parallel execution of the chapters into the build's notebook cache."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from jupyter_cache import get_cache

from bnn_posteriors.site import execute

ROOT = Path(__file__).resolve().parents[2]
FRONT = textwrap.dedent(
    """\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    {extra}---
    """
)


def chapter(code: str, extra: str = "") -> str:
    return FRONT.format(extra=extra) + f"\n# A page\n\n```{{code-cell}} ipython3\n{code}\n```\n"


@pytest.fixture
def book(tmp_path):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        "  - file: book/01_ok\n  - file: book/02_fails\n  - file: book/scorecard\n"
    )
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nNo code.\n")
    code = "import os\nprint(2 + 2, os.path.basename(os.getcwd()))"
    (tmp_path / "book" / "01_ok.md").write_text(chapter(code, "mystnb:\n"))  # an empty table
    (tmp_path / "book" / "02_fails.md").write_text(chapter("raise RuntimeError('broken')"))
    forced = "mystnb:\n  execution_mode: force\n"
    (tmp_path / "book" / "scorecard.md").write_text(chapter("print(1)", forced))
    return tmp_path


def test_only_the_chapters_the_build_caches_are_executed_ahead(book):
    assert [p.name for p in execute.cached_chapters(book)] == ["01_ok.md", "02_fails.md"]
    assert execute.read_chapter(book / "book" / "intro.md", execute.book_config(book)) is None


@pytest.mark.slow  # starts three kernels
def test_a_chapter_is_cached_as_the_build_looks_it_up_and_a_failure_is_left_to_the_build(book):
    seconds = execute.execute_chapters(book, processes=2)
    assert seconds["02_fails.md"] is None and seconds["01_ok.md"] > 0
    cache = get_cache(str(book / "_build" / ".jupyter_cache"))
    config = execute.book_config(book)
    ok = execute.read_chapter(book / "book" / "01_ok.md", config)
    _, merged = cache.merge_match_into_notebook(ok)  # the build's lookup
    assert merged.cells[-1].outputs[0]["text"] == "4 book\n"  # ran in its own folder
    with pytest.raises(KeyError):
        cache.match_cache_notebook(execute.read_chapter(book / "book" / "02_fails.md", config))
    # a second call finds the cached chapter and executes only the failing one again
    assert execute.execute_chapters(book, processes=1) == {"02_fails.md": None}


def test_bad_input_gets_a_clear_error(book, tmp_path):
    with pytest.raises(ValueError, match="processes must be a positive integer"):
        execute.execute_chapters(book, processes=0)
    with pytest.raises(FileNotFoundError, match="not the root of a Jupyter Book"):
        execute.book_config(tmp_path / "book")
    with pytest.raises(ValueError, match="not a MyST notebook"):
        execute.execute_chapters(book, chapters=[book / "book" / "intro.md"])
    config = (book / "_config.yml").read_text().replace("execute_notebooks: cache", "x: 1")
    (book / "_config.yml").write_text(config)
    with pytest.raises(ValueError, match="execute_notebooks: cache"):
        execute.execute_chapters(book)


@pytest.mark.slow  # starts three kernels
def test_execute_notebook_runs_reports_progress_and_failures(book):
    config = execute.book_config(book)
    notebook = execute.read_chapter(book / "book" / "01_ok.md", config)
    cells = []
    seconds, error = execute.execute_notebook(
        notebook, book / "book", 60, on_cell=lambda **kw: cells.append(kw["cell"].cell_type)
    )
    assert error is None and seconds > 0 and cells == ["code"]
    assert notebook.cells[-1].outputs[0]["text"] == "4 book\n"  # ran in the folder given
    broken = execute.read_chapter(book / "book" / "02_fails.md", config)
    _, error = execute.execute_notebook(broken, book / "book", 60)
    assert "RuntimeError" in error and "broken" in error
    (book / "book" / "03_dies.md").write_text(chapter("import os\nos._exit(1)"))
    dies = execute.read_chapter(book / "book" / "03_dies.md", config)
    _, error = execute.execute_notebook(dies, book / "book", 60)
    assert error is not None and "kernel died" in error
