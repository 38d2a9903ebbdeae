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

:func:`run_chapter` executes one chapter headless under a profile and a seed, with
progress, into ``_build/executed/`` (``bnn-posteriors run``, the seed sweep, the
benchmarks).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

from bnn_posteriors.site import profiles
from bnn_posteriors.site.chapters import toc_files
from bnn_posteriors.store.provenance import repo_root
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


def execute_notebook(
    notebook, cwd: Path, timeout: int | None, on_cell: Callable[..., object] | None = None
) -> tuple[float, str | None]:
    """Execute ``notebook`` in place, in the folder ``cwd``, as the book build does (the one
    runner of the book: jupyter-cache's, which Jupyter Book uses): ``(seconds, error text or
    None)``. ``on_cell`` is called after each cell (progress); a cell that raises, times out
    or kills its kernel stops the run and is reported in the error text."""
    from jupyter_cache.executors.utils import single_nb_execution
    from nbclient.exceptions import DeadKernelError

    hooks = {} if on_cell is None else {"on_cell_executed": on_cell}
    start = time.perf_counter()
    try:
        result = single_nb_execution(
            notebook, cwd=str(cwd), allow_errors=False, timeout=timeout, meta_override=True, **hooks
        )
    except DeadKernelError as error:
        return time.perf_counter() - start, f"the kernel died: {error}"
    return result.time, (result.exc_string if result.err is not None else None)


def _execute(path: Path, config: dict, timeout: int):
    """Execute one chapter in its folder: ``(notebook, seconds, error text or None)``."""
    notebook = read_chapter(path, config)
    seconds, error = execute_notebook(notebook, path.parent, timeout)
    return notebook, seconds, error


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


# --------------------------------------------------------------------------- one chapter


def run_chapter(
    chapter: Path,
    profile: str | None = None,
    seed: int | None = None,
    timeout: int | None = None,
    out: Path | None = None,
) -> int:
    """Execute ``chapter`` under ``profile``/``seed``; write the executed notebook."""
    try:
        profile = profiles.profile_name(profile)
    except ValueError as error:
        print(f"bnn-posteriors: error: {error}", file=sys.stderr)
        return 2
    chapter = Path(chapter)
    if not chapter.is_file():
        print(f"bnn-posteriors: error: no chapter file {chapter}", file=sys.stderr)
        return 2
    if seed is not None and seed < 0:
        print(f"bnn-posteriors: error: --seed must be ≥ 0, got {seed}", file=sys.stderr)
        return 2
    other = foreign_book(chapter)
    if other is not None:
        print(
            f"bnn-posteriors: error: {chapter} belongs to the book at {other}, but the package "
            f"is imported from {repo_root()}: the run would execute that checkout's code and "
            f"record its commit; run it with PYTHONPATH={other / 'src'}",
            file=sys.stderr,
        )
        return 2

    import jupytext
    import nbformat
    from tqdm import tqdm

    notebook = jupytext.read(chapter)
    target = executed_path(chapter, profile, out)
    variables = {"BNN_PROFILE": profile}
    if seed is not None:
        variables["BNN_SEED"] = str(seed)
    print(f"running {chapter} (profile {profile}, seed {variables.get('BNN_SEED', 'default')})")
    progress = tqdm(
        total=sum(cell.cell_type == "code" for cell in notebook.cells),
        desc=chapter.stem,
        unit="cell",
        file=sys.stdout,
    )
    with environ(variables):
        wall, failure = execute_notebook(
            notebook, chapter.resolve().parent, timeout, on_cell=lambda **_: progress.update()
        )
    progress.close()
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    print(f"executed notebook: {target}")
    print(f"wall time: {wall:.1f} s")
    if failure is not None:
        print(f"bnn-posteriors: {chapter} failed:\n{failure}", file=sys.stderr)
        return 1
    return 0


def foreign_book(chapter: Path) -> Path | None:
    """The root (the folder with ``_toc.yml``) of the book that holds ``chapter`` where it is
    another checkout than the one the package is imported from (an editable install points
    at one checkout; a chapter of a second worktree would run the first one's code under
    the first one's commit), else None."""
    home = repo_root()
    for folder in Path(chapter).resolve().parents:
        if (folder / "_toc.yml").is_file():
            return None if home is None or folder == home.resolve() else folder
    return None


def executed_path(chapter: Path, profile: str, out: Path | None = None) -> Path:
    """Where the executed notebook goes: ``<out>/<profile>/<stem>.ipynb``."""
    if out is None:
        out = (repo_root() or Path.cwd()) / "_build" / "executed"
    return Path(out) / profile / f"{Path(chapter).stem}.ipynb"


@contextlib.contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the kernel, restoring the old values afterwards."""
    old = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main() -> None:
    """``python -m bnn_posteriors.site.execute``: the chapters of the book in the working
    directory, in ``$BNN_EXECUTE_PROCESSES`` (default 2) parallel kernels."""
    execute_chapters(Path.cwd(), processes=int(os.environ.get("BNN_EXECUTE_PROCESSES", "2")))


if __name__ == "__main__":
    main()
