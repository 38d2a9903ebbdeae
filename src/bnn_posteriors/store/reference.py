"""Committed reference predictives: ``results/reference/<problem>.npz`` with a JSON record.

The arrays (the predictive of every kept draw at the problem's points, chain by chain) go to
``<problem>.npz``; the record ``<problem>.json`` (:func:`bnn_posteriors.store.committed.
write_json`: profile and provenance, i.e. commit with ``+dirty``, machine, date, versions)
holds the settings, the wall time, the mixing diagnostics and the sha256 of the arrays
(:func:`arrays_sha256`). :func:`read_reference` recomputes the hash and refuses arrays that
differ from the record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bnn_posteriors.store import committed

SUBDIR = "reference"


class ReferenceIntegrityError(ValueError):
    """A reference file whose arrays do not match the sha256 of its record."""


def reference_dir() -> Path:
    """``results/reference/`` of the checkout."""
    return committed.results_dir() / SUBDIR


def arrays_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over the arrays in name order: each name, dtype, shape and C-order bytes."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def _paths(directory: Path | str | None, name: str) -> tuple[Path, Path]:
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"a reference name is a plain file stem, got {name!r}")
    folder = reference_dir() if directory is None else Path(directory)
    return folder / f"{name}.npz", folder / f"{name}.json"


def write_reference(
    name: str,
    arrays: Mapping[str, np.ndarray],
    record: Mapping,
    *,
    profile: str | None,
    directory: Path | str | None = None,
) -> Path:
    """Write ``arrays`` to ``<directory>/<name>.npz`` (compressed) and ``record`` with the
    arrays' sha256, profile and provenance to ``<name>.json``. Returns the JSON path."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    if not arrays:
        raise ValueError("write_reference: no arrays to write")
    npz, meta = _paths(directory, name)
    npz.parent.mkdir(parents=True, exist_ok=True)
    tmp = npz.with_name(npz.stem + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)  # type: ignore[arg-type]  # (numpy stubs: allow_pickle)
    tmp.replace(npz)
    payload = {**record, "name": name, "arrays": sorted(arrays), "sha256": arrays_sha256(arrays)}
    return committed.write_json(meta, payload, profile=profile)


def read_reference(
    name: str, directory: Path | str | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and record of reference ``name``, after checking the arrays' sha256.

    Raises ``FileNotFoundError`` if a file is missing and :class:`ReferenceIntegrityError`
    (a ``ValueError``) if the arrays differ from the ones the record was written with.
    """
    npz, meta = _paths(directory, name)
    record = committed.read_json(meta)
    if not npz.is_file():
        raise FileNotFoundError(f"no reference arrays {npz} beside its record {meta}")
    with np.load(npz, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    found = arrays_sha256(arrays)
    if found != record.get("sha256"):
        raise ReferenceIntegrityError(
            f"reference {name!r}: the arrays of {npz} have sha256 {found}, but {meta} records "
            f"{record.get('sha256')}; the file changed since the run (rebuild it with "
            f"`bnn-posteriors reference {name}`)"
        )
    return arrays, record
