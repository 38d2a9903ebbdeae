"""Execute the book's chapters in parallel into the build's notebook cache.

Jupyter Book 1.x (``execute_notebooks: cache``) executes the chapters one after another
while it reads them, and keeps each executed notebook in a jupyter-cache database under
``_build/.jupyter_cache``, keyed on a hash of the notebook's code. The chapters are
independent programs, so :func:`execute_chapters` runs them side by side (one kernel per
process) before the build and stores each result exactly as the build would have stored
it; the build then finds every chapter in the cache and executes none again.

Nothing here can change a page: a chapter is read with the build's own reader and
configuration (so its hash is the one the build looks up), executed with the build's
timeout in its own folder (``run_in_temp: false``), and cached only when every cell ran
without error. A chapter that fails is left out of the cache, so the build executes it
once more and reports the error with its traceback, as without this step. Pages that
``mystnb.execution_mode: force`` (the scorecard and the pages that read the chapters'
claim records) are left to the build, which runs them after the chapters.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

from bnn_posteriors.site.chapters import toc_files
from bnn_posteriors.util.validate import positive_int


def book_config(root: Path) -> dict:
    """``_config.yml`` of the book at ``root``."""
    path = Path(root) / "_config.yml"
    if not path.is_file():
        raise FileNotFoundError(f"no _config.yml in {root}: not the root of a Jupyter Book")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def read_chapter(path: Path, config: dict):
    """The notebook of the MyST chapter at ``path``, read as the book build reads it; None
    for a page that is not a notebook (no jupytext/kernelspec front matter)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    text = Path(path).read_text(encoding="utf-8")
    reader = create_nb_reader(
        str(path), MdParserConfig(enable_extensions=set(extensions)), NbParserConfig(), text
    )
    return None if reader is None else reader.read(text)


def cached_chapters(root: Path) -> list[Path]:
    """The chapters of ``_toc.yml`` with code cells that the build executes in cache mode."""
    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    config = book_config(root)
    chapters = []
    for name in toc_files(toc):
        path = root / f"{name}.md"
        notebook = read_chapter(path, config)
        if notebook is None:
            continue
        if (notebook.metadata.get("mystnb") or {}).get("execution_mode", "cache") != "cache":
            continue
        if any(cell.cell_type == "code" for cell in notebook.cells):
            chapters.append(path)
    return chapters


def _execute(path: Path, config: dict, timeout: int):
    """Execute one chapter in its folder: ``(notebook, seconds, error text or None)``."""
    from jupyter_cache.executors.utils import single_nb_execution

    notebook = read_chapter(path, config)
    result = single_nb_execution(
        notebook, cwd=str(path.parent), allow_errors=False, timeout=timeout, meta_override=True
    )
    return notebook, result.time, (result.exc_string if result.err is not None else None)


def execute_chapters(
    root: Path | str, processes: int = 2, chapters: Sequence[Path] | None = None
) -> dict[str, float | None]:
    """Execute the chapters of the book at ``root`` in ``processes`` parallel kernels and
    cache each successful one where the build looks for it.

    Returns ``{chapter file name: seconds}``, with None for a chapter that failed (the
    build executes it again and reports its error). The longest chapters (by size) start
    first.
    """
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    root = Path(root).resolve()
    processes = positive_int("processes", processes)
    config = book_config(root)
    execute = config.get("execute", {})
    if execute.get("execute_notebooks", "auto") != "cache":
        raise ValueError(
            "execute_chapters needs `execute: execute_notebooks: cache` in _config.yml"
        )
    if execute.get("run_in_temp", False):
        raise ValueError("execute_chapters runs each chapter in its folder (run_in_temp: false)")
    timeout = int(execute.get("timeout", 30))
    cache = get_cache(str(root / "_build" / ".jupyter_cache"))
    todo = [Path(p).resolve() for p in (cached_chapters(root) if chapters is None else chapters)]
    for path in todo:
        if read_chapter(path, config) is None:
            raise ValueError(f"{path} is not a MyST notebook (no jupytext/kernelspec front matter)")
    todo = [p for p in todo if _not_cached(cache, read_chapter(p, config))]
    todo.sort(key=lambda p: p.stat().st_size, reverse=True)
    seconds: dict[str, float | None] = {}
    with ProcessPoolExecutor(max_workers=min(processes, max(len(todo), 1))) as pool:
        runs = {p: pool.submit(_execute, p, config, timeout) for p in todo}
        for path, run in runs.items():
            notebook, time, error = run.result()
            if error is not None:
                print(f"{path.name}: failed; the build executes it again\n{error[-2000:]}")
                seconds[path.name] = None
                continue
            bundle = CacheBundleIn(notebook, str(path), data={"execution_seconds": time})
            cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
            seconds[path.name] = time
            print(f"{path.name}: executed in {time:.0f} s", flush=True)
    return seconds


def _not_cached(cache, notebook) -> bool:
    try:
        cache.match_cache_notebook(notebook)
    except KeyError:
        return True
    return False


def main() -> None:
    """``python -m bnn_posteriors.site.execute``: the chapters of the book in the working
    directory, in ``$BNN_EXECUTE_PROCESSES`` (default 2) parallel kernels."""
    execute_chapters(Path.cwd(), processes=int(os.environ.get("BNN_EXECUTE_PROCESSES", "2")))


if __name__ == "__main__":
    main()
