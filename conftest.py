"""Collect the book's chapters as notebook tests (nbval), on request.

``pytest`` alone runs ``tests/`` only (the chapters are executed once, by the book
build). ``pytest book`` (or ``pytest book/03_symmetries.md``) walks ``book/``: every
chapter listed in ``_toc.yml`` is converted from its MyST markdown source with jupytext
into ``_build/nbval/<name>.ipynb`` and executed by nbval (``--nbval-lax``: every cell
must run without error; outputs are not compared).
"""

from pathlib import Path

import jupytext
import yaml
from nbval.plugin import IPyNbFile

from bnn_posteriors.site.chapters import toc_files

ROOT = Path(__file__).resolve().parent


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix != ".md" or file_path.parent != ROOT / "book":
        return None
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    if file_path.relative_to(ROOT).with_suffix("").as_posix() not in set(toc_files(toc)):
        return None
    notebook = jupytext.read(file_path)
    if not any(cell.cell_type == "code" for cell in notebook.cells):
        return None
    target = ROOT / "_build" / "nbval" / f"{file_path.stem}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(notebook, target)
    return IPyNbFile.from_parent(parent, path=target)
