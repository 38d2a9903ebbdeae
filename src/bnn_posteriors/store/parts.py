"""The part store of a resumable study: one committed JSON file per finished part.

A study too long for one session (chapter 8's benchmark units, chapter 7's prior-scale cells
and many-chain seeds) is split into *parts*. Each part is decided by its ``settings`` (plain
JSON values: data, seeds, budgets, the computation's version) and written, as soon as it is
done, to ``<directory>/<name>.json`` with its settings, profile and provenance
(:func:`bnn_posteriors.store.committed.write_json`). A later run, on any machine, reads a part
back only when its file holds exactly the settings it would compute with
(:func:`read_part`), so the study resumes part by part (:func:`resumed_part`), and a chapter
shows a study only when all of its parts are committed (:func:`committed_parts`).

Where the unit cache (:mod:`bnn_posteriors.store.cache`) keeps arrays on one machine under
hashed keys, parts are small, readable and committed under ``results/``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from bnn_posteriors.store.committed import read_json, results_dir, write_json

__all__ = [
    "committed_dir",
    "committed_parts",
    "part_path",
    "read_part",
    "resumed_part",
    "write_part",
]

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def part_path(directory: Path | str, name: str) -> Path:
    """File of the part ``name`` of a study: ``<directory>/<name>.json``.

    ``name``: letters, digits, ``_``, ``.`` and ``-`` only (``ValueError`` otherwise).
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"part name must be letters, digits, '_', '.', '-' only, got {name!r}")
    return Path(directory) / f"{name}.json"


def committed_dir(name: str | None) -> Path | None:
    """Folder ``results/<name>`` of a study's committed parts, or None when ``name`` is None
    (a profile that commits nothing); ``ValueError`` outside a checkout."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a results folder must be a non-empty string, got {name!r}")
    return results_dir() / name


def read_part(path: Path | str, settings: Mapping | None = None, *, required: bool = False):
    """The part at ``path`` if its file exists and holds exactly ``settings``, else None.

    ``settings=None`` reads the file whatever it holds. ``required``: a missing file is a
    ``FileNotFoundError`` instead of None (a file with other settings still gives None). A
    file that is not a result file with provenance is a ``ValueError``.
    """
    path = Path(path)
    if not path.exists():
        if required:
            raise FileNotFoundError(f"no result file {path}; run the study in the full profile")
        return None
    record = read_json(path)
    if settings is not None and record.get("settings") != settings:
        return None
    return record


def write_part(path: Path | str, payload: Mapping, settings: Mapping, *, profile: str | None):
    """Write the part ``payload`` with its ``settings``, ``profile`` and provenance to ``path``
    (atomically); returns the path.

    ``payload`` may hold ``"settings"`` already, then equal to ``settings`` (``ValueError``
    otherwise): what is written is read back by :func:`read_part` with the same settings.
    """
    if not isinstance(payload, Mapping):
        raise TypeError(f"a part must be a mapping, got {type(payload).__name__}")
    if not isinstance(settings, Mapping):
        raise TypeError(f"a part's settings must be a mapping, got {type(settings).__name__}")
    if "settings" in payload and payload["settings"] != settings:
        raise ValueError(f"the part for {path} holds other settings than those it is written with")
    return write_json(path, {**payload, "settings": settings}, profile=profile)


def resumed_part(
    path: Path | str | None,
    settings: Mapping,
    compute: Callable[..., Mapping],  # called without arguments; `...`: mypy cannot match a
    # lambda binding loop variables as defaults (`lambda s=s: ...`) to Callable[[], Mapping]
    *,
    profile: str | None,
    reuse: bool = True,
    mark: str = "read",
) -> dict:
    """One part of a resumable study: read from ``path`` if it holds ``settings``, else computed.

    A part read back gets ``mark: True``. Otherwise ``compute()`` (a mapping) gives it, with
    ``mark: False`` unless it sets ``mark`` itself, and it is written to ``path``
    (:func:`write_part`, without ``mark``). ``path=None``: compute only, nothing is written;
    ``reuse=False``: compute and write even when the file holds the settings.
    """
    if not callable(compute):
        raise TypeError("compute must be a callable without arguments")
    old = read_part(path, settings) if path is not None and reuse else None
    if old is not None:
        return {**old, mark: True}
    part = dict(compute())
    part[mark] = part.get(mark, False)
    if path is not None:
        write_part(path, {k: v for k, v in part.items() if k != mark}, settings, profile=profile)
    return part


def committed_parts(directory: Path | str | None, named: Mapping[str, Mapping]) -> list | None:
    """All the parts ``named`` (part name → settings) of ``directory``, in that order, or None
    unless every one is there with its settings (or ``directory`` is None): a study is shown
    from its committed parts only when it is complete."""
    if directory is None:
        return None
    found = []
    for name, settings in named.items():
        part = read_part(part_path(directory, name), settings)
        if part is None:
            return None
        found.append(part)
    return found
