"""Committed result files: small JSON tables of full-profile runs, with their provenance.

A chapter whose full-profile run is too long for CI writes what it measured with
:func:`write_json` (under ``results/`` of the checkout) and shows it, in every
profile, with :func:`read_json`. Each file carries the run's provenance: commit
(``+dirty`` when tracked files differed from it), machine, date and versions.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path

import jax
import numpy as np

from .claims import _git_commit, repo_root


def provenance() -> dict:
    """Commit, machine, CPU count, date (UTC), Python and JAX versions, JAX devices."""
    return {
        "commit": _git_commit(repo_root()),
        "machine": f"{platform.node()} {platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_count": os.cpu_count(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
    }


def results_dir() -> Path:
    """``results/`` of the checkout (``ValueError`` outside a checkout)."""
    root = repo_root()
    if root is None:
        raise ValueError("no book checkout found (no _toc.yml above the package or the cwd)")
    return root / "results"


def plain(tree):
    """``tree`` with numpy/JAX arrays and scalars as lists and Python numbers (for JSON)."""
    if isinstance(tree, Mapping):
        return {str(k): plain(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [plain(v) for v in tree]
    if isinstance(tree, np.generic):
        return tree.item()
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        return np.asarray(tree).tolist()
    return tree


def write_json(path: Path | str, payload: Mapping, *, profile: str) -> Path:
    """Write ``payload`` with ``profile`` and :func:`provenance` to ``path`` atomically.

    Arrays become lists (NaN stays NaN, as Python's json writes it). Returns the path.
    """
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a mapping, got {type(payload).__name__}")
    record = {**plain(payload), "profile": profile, "provenance": provenance()}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, allow_nan=True) + "\n", encoding="utf-8")
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
