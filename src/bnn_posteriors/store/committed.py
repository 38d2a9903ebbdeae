"""Committed result files: small JSON tables of full-profile runs, with their provenance.

A chapter whose full-profile run is too long for CI writes what it measured with
:func:`write_json` (under ``results/`` of the checkout) and shows it, in every
profile, with :func:`read_json`. Each file carries the run's provenance
(:func:`bnn_posteriors.store.provenance.provenance`): commit (``+dirty`` when tracked files
differed from it), machine, date and versions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from bnn_posteriors.store import provenance as _provenance
from bnn_posteriors.store.provenance import provenance, repo_root

__all__ = ["plain", "provenance", "read_json", "results_dir", "write_json"]


def results_dir() -> Path:
    """``results/`` of the checkout (``ValueError`` outside a checkout)."""
    root = repo_root()
    if root is None:
        raise ValueError("no book checkout found (no _toc.yml above the package or the cwd)")
    return root / "results"


def plain(tree):
    """``tree`` with numpy/JAX arrays and scalars as lists and Python numbers (for JSON)."""
    return _provenance.to_json(tree)


def write_json(path: Path | str, payload: Mapping, *, profile: str | None) -> Path:
    """Write ``payload`` with ``profile`` and :func:`provenance` to ``path`` atomically
    (indent 1, through a temporary file beside it).

    Arrays become lists (NaN stays NaN, as Python's json writes it). Returns the path.
    """
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a mapping, got {type(payload).__name__}")
    record = {**payload, "profile": profile, "provenance": provenance()}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(plain(record), indent=1, allow_nan=True) + "\n"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def read_json(path: Path | str) -> dict:
    """Read a file written by :func:`write_json`; a clear error if missing or not one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no result file {path}; run the chapter in the full profile")
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict) or "provenance" not in record:
        raise ValueError(f"{path} is not a result file with provenance")
    return record
