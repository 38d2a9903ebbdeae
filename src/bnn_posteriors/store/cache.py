"""Resumable long runs: each unit of work is cached on disk under a key, with a checksum.

A long run (training the members of an ensemble, tuning and sampling each chain, one
cell of a benchmark table) is split into *units*. :func:`cached` returns a unit's
result from disk when the same unit — same name, same inputs (``parts``: data,
configuration, seeds) and same ``version`` of its computation — was computed before,
and computes and stores it otherwise. An interrupted run therefore restarts where it
stopped. A result is a nested ``dict``/``list``/``tuple`` of arrays and plain
scalars; it is written atomically as ``.npz`` next to a ``.sha256`` file, and a
file whose checksum does not match (a corrupt or half-written file) is computed
again.

The version rule: **bump the version when the computation changes.** The caller
names its computation with a short string (``version="mile-1"``) and the author
bumps it (``"mile-2"``) whenever an edit can change the unit's result: its numerics,
its random keys, the order of its operations, or anything it calls that does (the
model's log density, the sampler). Edits that cannot change a result (docstrings,
comments, renames, other modules) keep the version, so they keep every finished
unit. A caller that names no version (``version=None``) falls back to
:func:`code_version`, the SHA of the whole package's source: always safe, but any
edit of the package recomputes its units.

The cache lives in ``$BNN_CACHE_DIR`` if set, else in ``_build/cache`` of the
repository (or ``~/.cache/bnn_posteriors`` outside a checkout). A long run takes a ``cache``
argument (``True``: that folder, a path: another, ``False``: none), decoded by
:func:`cache_location`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import warnings
from collections.abc import Callable
from functools import cache as _memoize
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bnn_posteriors.store.provenance import repo_root

CACHE_ENV = "BNN_CACHE_DIR"
_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


class CacheWarning(UserWarning):
    """A cached unit was unreadable or failed its checksum and is recomputed."""


def cache_dir() -> Path:
    """Root of the unit cache: ``$BNN_CACHE_DIR``, else the checkout's ``_build/cache``."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    root = repo_root()
    if root is not None:
        return root / "_build" / "cache"
    return Path.home() / ".cache" / "bnn_posteriors"


def cache_location(cache: bool | Path | str | None) -> Path | None:
    """The folder a long run's ``cache`` argument (``bool | Path``) names, or None for no cache.

    ``True``: the default folder (:func:`cache_dir`); a path (or a str): that folder;
    ``False``: no cache, the run computes everything in one go. None, the older spelling of
    False, is still accepted silently. The one decoding of that argument for every resumable
    computation. ``TypeError`` for anything else, ``ValueError`` for an empty path.
    """
    if cache is None or cache is False:
        return None
    if cache is True:
        return cache_dir()
    if isinstance(cache, str | os.PathLike):
        if not str(cache).strip():
            raise ValueError("cache must be True, False or a folder, got an empty path")
        return Path(cache).expanduser()
    raise TypeError(f"cache must be True, False or a folder (a Path), got {type(cache).__name__}")


@_memoize
def code_version() -> str:
    """SHA-256 (first 16 hex digits) of this package's Python sources (the fallback version)."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def fingerprint(value: Any) -> Any:
    """A JSON-serialisable stand-in for ``value``; arrays become their dtype, shape and hash."""
    if isinstance(value, dict):
        return {str(k): fingerprint(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [fingerprint(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        array = np.ascontiguousarray(np.asarray(value))
        return {
            "dtype": str(array.dtype),
            "shape": list(array.shape),
            "sha256": hashlib.sha256(array.tobytes()).hexdigest(),
        }
    raise TypeError(
        f"cannot fingerprint a value of type {type(value).__name__}; "
        "use dicts, lists, tuples, arrays and plain scalars"
    )


def function_name(fn: Callable) -> dict:
    """A stand-in for a function in a unit's ``parts``: its qualified name and, for a
    ``functools.partial``, its arguments (fingerprinted)."""
    if isinstance(fn, partial):
        return {
            "func": function_name(fn.func),
            "args": fingerprint(fn.args),
            "keywords": fingerprint(fn.keywords),
        }
    return {"func": f"{fn.__module__}.{fn.__qualname__}"}


def key_data(key) -> np.ndarray:
    """The raw ``uint32`` data of a JAX PRNG key (typed or raw), for a unit's ``parts``."""
    import jax

    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key)


def computation_version(version: str | None) -> str:
    """The version a unit key is made with: ``version`` itself, or the package SHA if None.

    A declared version is tagged ``"v:"`` and the fallback ``"code:"``, so the two can
    never collide. ``ValueError`` for an empty or blank string, ``TypeError`` for a
    non-string.
    """
    if version is None:
        return f"code:{code_version()}"
    if not isinstance(version, str):
        raise TypeError(
            f"version must be a string such as 'mile-1' (or None), got {type(version).__name__}"
        )
    if not version.strip():
        raise ValueError("version must be a non-empty string such as 'mile-1'")
    return f"v:{version}"


def unit_key(name: str, parts: dict, version: str | None = None) -> str:
    """Key of the unit ``name`` with inputs ``parts`` and computation ``version``.

    ``version``: the caller's version of the computation (bump it when the numerics
    change); None keys on :func:`code_version` instead (see the module docstring).
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"unit name must be letters, digits, '_', '.', '-' only, got {name!r}")
    if not isinstance(parts, dict):
        raise TypeError(f"parts must be a dict of the unit's inputs, got {type(parts).__name__}")
    payload = json.dumps(
        {"name": name, "parts": fingerprint(parts), "version": computation_version(version)},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _encode(tree: Any, arrays: list) -> Any:
    if isinstance(tree, dict):
        if not all(isinstance(k, str) for k in tree):
            raise TypeError("dict keys of a cached result must be strings")
        return {"dict": {k: _encode(v, arrays) for k, v in tree.items()}}
    if isinstance(tree, list):
        return {"list": [_encode(v, arrays) for v in tree]}
    if isinstance(tree, tuple):
        return {"tuple": [_encode(v, arrays) for v in tree]}
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return {"value": tree}
    if isinstance(tree, np.generic):
        return {"value": tree.item()}
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        arrays.append(np.asarray(tree))
        return {"array": len(arrays) - 1}
    raise TypeError(f"cannot cache a value of type {type(tree).__name__}")


def _decode(node: Any, arrays) -> Any:
    if "dict" in node:
        return {k: _decode(v, arrays) for k, v in node["dict"].items()}
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "array" in node:
        return arrays[f"a{node['array']}"]
    return node["value"]


def save(path: Path | str, tree: Any) -> Path:
    """Write ``tree`` to ``path`` (``.npz``) atomically, with its ``.sha256`` beside it."""
    path = Path(path)
    arrays: list = []
    structure = json.dumps(_encode(tree, arrays))
    buffer = io.BytesIO()
    np.savez(buffer, __tree__=np.array(structure), **{f"a{i}": a for i, a in enumerate(arrays)})
    content = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)
    checksum = path.with_name(path.name + ".sha256")
    tmp.write_text(hashlib.sha256(content).hexdigest())
    os.replace(tmp, checksum)
    return path


def load(path: Path | str) -> Any:
    """Read a result written by :func:`save`; ``ValueError`` if corrupt or without checksum."""
    path = Path(path)
    checksum = path.with_name(path.name + ".sha256")
    if not checksum.exists():
        raise ValueError(f"{path} has no checksum file (interrupted write?)")
    content = path.read_bytes()
    if hashlib.sha256(content).hexdigest() != checksum.read_text().strip():
        raise ValueError(f"{path} does not match its checksum (corrupt file)")
    with np.load(io.BytesIO(content), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return _decode(json.loads(str(arrays.pop("__tree__"))), arrays)


def unit_path(
    name: str, parts: dict, directory: Path | str | None = None, *, version: str | None = None
) -> Path:
    """Where the unit ``name`` with inputs ``parts`` and ``version`` is (or would be) stored."""
    root = Path(directory) if directory is not None else cache_dir()
    return root / name / f"{unit_key(name, parts, version)}.npz"


def is_cached(
    name: str, parts: dict, directory: Path | str | None = None, *, version: str | None = None
) -> bool:
    """Whether a readable result of the unit is on disk (checksum verified)."""
    path = unit_path(name, parts, directory, version=version)
    if not path.exists():
        return False
    try:
        load(path)
    except (ValueError, OSError):
        return False
    return True


def cached(
    name: str,
    parts: dict,
    compute: Callable[[], Any],
    directory: Path | str | None = None,
    *,
    version: str | None = None,
) -> Any:
    """The result of ``compute()`` for the unit ``name`` with inputs ``parts``, cached on disk.

    Returns the stored result when a verified one exists; otherwise computes, stores
    and returns it (read back from disk, so both paths give the same types).
    ``version``: the version of the computation, bumped by its author when its numerics
    change (e.g. ``"mile-1"``); None keys on the whole package's source instead.
    """
    if not callable(compute):
        raise TypeError("compute must be a callable without arguments")
    path = unit_path(name, parts, directory, version=version)
    if path.exists():
        try:
            return load(path)
        except (ValueError, OSError) as error:
            warnings.warn(f"recomputing unit {name!r}: {error}", CacheWarning, stacklevel=2)
    save(path, compute())
    return load(path)
