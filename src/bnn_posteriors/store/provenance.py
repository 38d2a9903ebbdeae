"""Where a result came from, and how it is written: provenance and the one JSON conversion.

:func:`provenance` is the record every result file carries (commit with ``+dirty``, machine,
CPU count, date, Python, package versions, JAX devices); :func:`git_commit`, :func:`host` and
:func:`versions` are its parts, which a claim record stores flat. :func:`to_json` turns a
pytree of arrays and scalars into plain JSON values, exactly (``significant=None``) or
rounded to a number of significant digits with non-finite floats as strings (claim records);
:func:`bnn_posteriors.store.committed.write_json` writes such a tree atomically.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import math
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

PACKAGES = ("jax", "numpyro", "blackjax")


def repo_root() -> Path | None:
    """The book's root: the folder holding ``_toc.yml`` above the package or the cwd."""
    package_root = Path(__file__).resolve().parents[3]
    if (package_root / "_toc.yml").is_file():
        return package_root
    cwd = Path.cwd().resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return None


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
def git_commit(root: Path | None) -> str | None:
    """Short hash of the repository's HEAD, with "+dirty" if tracked files were modified."""
    if root is None:
        return None
    head = _git(root, "rev-parse", "--short", "HEAD")
    if not head:
        return None
    # "+dirty": the run used tracked files that differ from the commit.
    return head + ("+dirty" if _git(root, "status", "--porcelain", "--untracked-files=no") else "")


@functools.cache
def versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None where not installed) and of Python."""

    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {**{name: version(name) for name in names}, "python": platform.python_version()}


def host(sep: str = "/") -> str:
    """The machine: node name and architecture, e.g. ``"box/x86_64"``."""
    return f"{platform.node()}{sep}{platform.machine()}"


def now(timespec: str = "seconds") -> str:
    """The current UTC time in ISO 8601 (``timespec`` as :meth:`datetime.isoformat`)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec=timespec)


def provenance() -> dict:
    """Commit, machine, CPU count, date (UTC), Python and JAX versions, JAX devices."""
    import jax

    return {
        "commit": git_commit(repo_root()),
        "machine": f"{host(' ')} {platform.processor() or ''}".strip(),
        "cpu_count": os.cpu_count(),
        "date": now(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
    }


def to_json(value: Any, significant: int | None = None) -> Any:
    """Plain JSON values of a pytree: mappings → dicts (str keys), arrays and tuples → lists.

    ``significant=None`` keeps every number as it is (NaN stays a float NaN, which
    :func:`json.dumps` writes as ``NaN``); an integer rounds floats to that many significant
    digits and writes non-finite floats as the strings "NaN", "Infinity", "-Infinity"
    (strict JSON, the claim records). Complex numbers become ``[real, imag]`` when rounding.
    """
    if significant is not None and (isinstance(significant, bool) or significant < 1):
        raise ValueError(f"significant must be None or a positive integer, got {significant!r}")
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, Mapping):
        return {str(key): to_json(item, significant) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(item, significant) for item in value]
    if significant is None and isinstance(value, int | float):
        return value
    if not (hasattr(value, "dtype") or isinstance(value, int | float | complex)):
        return value if significant is None else str(value)
    array = np.asarray(value)
    if array.dtype == object:
        return to_json(array.tolist(), significant) if array.ndim else str(value)
    if array.ndim:
        return [to_json(item, significant) for item in array.tolist()]
    item = array.item()
    if significant is None or isinstance(item, bool | int):
        return item
    if isinstance(item, complex):
        return [_round(item.real, significant), _round(item.imag, significant)]
    return _round(float(item), significant)


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def from_json(value: Any) -> Any:
    """The numbers of a value written by :func:`to_json` with ``significant``: the strings
    "NaN", "Infinity" and "-Infinity" become floats again, in lists too."""
    if isinstance(value, list):
        return [from_json(item) for item in value]
    return _NON_FINITE.get(value, value) if isinstance(value, str) else value


def _round(x: float, significant: int) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(f"{x:.{significant}g}")
