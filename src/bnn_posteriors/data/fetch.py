"""The registry of the book's data files and their verified location (cache, download).

Every file the book reads is one row of ``datasets.toml`` (:func:`registry`): data set,
part, path, source commit, shape, task and sha256. The files are the authors' copies
([SAP] App. D, [MBNN]), byte-identical to the pinned commits named in the ``PROVENANCE.md``
files of the book's shared data folder; every file is checked by sha256 before it is used.
Where a file is looked for (in this order):

1. ``$BNN_POSTERIORS_DATA/<path>``: a folder laid out like the book's shared data;
2. the user cache ``$XDG_CACHE_HOME/bnn_posteriors/<path>`` (default ``~/.cache``);
3. a download from the pinned raw GitHub URL into that cache by :func:`pooch.retrieve`
   (streamed to a temporary file beside the target, checked by sha256, then moved into place).

The download host can be replaced (tests, mirrors): ``locate(info, base_url=...)`` or the
environment variable ``BNN_POSTERIORS_DATA_URL``. Its value replaces
``https://raw.githubusercontent.com`` and the rest of the path is kept, i.e. the file is
fetched from ``<base_url>/<owner>/<repo>/<commit>/<remote path>`` (http or https only).
pooch logs one line per download (``pooch.get_logger()`` sets how much it says).
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import MappingProxyType

import pooch

ENV_DATA = "BNN_POSTERIORS_DATA"
ENV_URL = "BNN_POSTERIORS_DATA_URL"
RAW_HOST = "https://raw.githubusercontent.com"
DOWNLOAD_TIMEOUT_S = 30.0


class DataNotFoundError(FileNotFoundError):
    """No verified copy of a data file was found locally and the download failed."""


class DataIntegrityError(ValueError):
    """A data file's sha256 differs from the registered one."""


@dataclass(frozen=True)
class DatasetInfo:
    """One registered data file (a row of ``datasets.toml``)."""

    name: str
    subdir: str  # folder of the file under the data root, e.g. "uci"
    filename: str
    n_rows: int
    n_cols: int  # features + target for a table whose target is the last column
    sha256: str
    url: str
    task: str  # "regression" or "classification"
    part: str = ""  # which file of a set of several ("x_train", ...); "" for a one-file set
    delimiter: str | None = None  # "," for comma-separated files, None for whitespace


_FIELDS = {"name", "path", "source", "remote", "rows", "cols", "task", "sha256"}


def parse_registry(text: str) -> MappingProxyType:
    """``{name: (DatasetInfo, ...)}`` from the TOML text of a registry, in file order.

    Raises ``ValueError`` for a row with missing or unknown keys, an unknown source or task,
    or a (name, part) given twice.
    """
    table = tomllib.loads(text)
    sources = table.get("sources", {})
    out: dict[str, list[DatasetInfo]] = {}
    for i, row in enumerate(table.get("file", [])):
        keys = set(row)
        if not _FIELDS <= keys or keys - _FIELDS - {"part", "delimiter"}:
            raise ValueError(
                f"registry row {i} ({row.get('name')!r}) must have the keys {sorted(_FIELDS)} "
                f"(and optionally part, delimiter), got {sorted(keys)}"
            )
        if row["source"] not in sources:
            raise ValueError(f"registry row {i}: unknown source {row['source']!r}")
        if row["task"] not in ("regression", "classification"):
            raise ValueError(f"registry row {i}: task must be regression or classification")
        path = PurePosixPath(row["path"])
        info = DatasetInfo(
            row["name"],
            str(path.parent),
            path.name,
            int(row["rows"]),
            int(row["cols"]),
            row["sha256"],
            f"{sources[row['source']]}/{row['remote']}",
            row["task"],
            row.get("part", ""),
            row.get("delimiter"),
        )
        files = out.setdefault(info.name, [])
        if any(f.part == info.part for f in files):
            raise ValueError(f"registry: {info.name!r} part {info.part!r} is given twice")
        files.append(info)
    return MappingProxyType({name: tuple(files) for name, files in out.items()})


@functools.cache
def registry() -> MappingProxyType:
    """The book's data registry: ``{name: (DatasetInfo, ...)}`` from ``datasets.toml``."""
    text = (
        importlib.resources.files("bnn_posteriors.data")
        .joinpath("datasets.toml")
        .read_text("utf-8")
    )
    return parse_registry(text)


def dataset_files(name: str) -> tuple[DatasetInfo, ...]:
    """The registered files of data set ``name``; unknown names raise ``ValueError``."""
    try:
        return registry()[name]
    except (KeyError, TypeError):
        known = ", ".join(registry())
        raise ValueError(f"unknown data set {name!r}; known data sets: {known}") from None


def cache_dir() -> Path:
    """The user cache folder ``$XDG_CACHE_HOME/bnn_posteriors`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "bnn_posteriors"


def _verify(path: Path, info: DatasetInfo) -> Path:
    found = pooch.file_hash(str(path), alg="sha256")
    if found != info.sha256:
        raise DataIntegrityError(
            f"{path} is not the verified {info.filename}: sha256 expected {info.sha256}, "
            f"found {found}. Replace it with the file from {info.url} (or delete it)."
        )
    return path


def locate(info: DatasetInfo, base_url: str | None = None) -> Path:
    """Verified local path of one registered file (see the module docstring for the order).

    ``base_url`` (else ``$BNN_POSTERIORS_DATA_URL``) replaces ``https://raw.githubusercontent.com``
    in the registered URL. Raises ``DataIntegrityError`` (a ``ValueError``) for a file whose sha256
    differs and ``DataNotFoundError`` (a ``FileNotFoundError``) if no source has the file.
    """
    rel = Path(info.subdir, info.filename)
    root = os.environ.get(ENV_DATA)
    if root:
        local = Path(root).expanduser() / rel
        if local.is_file():
            return _verify(local, info)
        place1 = f"{local} (no such file)"
    else:
        place1 = f"{ENV_DATA} not set"
    cached = cache_dir() / rel
    if cached.is_file():
        return _verify(cached, info)
    base = base_url or os.environ.get(ENV_URL) or RAW_HOST
    url = base.rstrip("/") + info.url.removeprefix(RAW_HOST)
    downloader = pooch.HTTPDownloader(progressbar=False, timeout=DOWNLOAD_TIMEOUT_S)
    try:
        pooch.retrieve(
            url, f"sha256:{info.sha256}", info.filename, cached.parent, downloader=downloader
        )
    except OSError as exc:  # requests' errors (HTTP status, connection, bad URL) are OSErrors
        raise DataNotFoundError(
            f"data file {info.filename} (data set {info.name!r}) not found. Looked in:\n"
            f"  1. ${ENV_DATA}: {place1}\n"
            f"  2. user cache: {cached} (no such file)\n"
            f"  3. download from {url}: failed ({exc})\n"
            f"To fix: set {ENV_DATA} to a folder with the same layout as the book's shared data "
            f"(containing {rel}), or put the file at {cached} (sha256 {info.sha256})."
        ) from exc
    except ValueError as exc:  # pooch's hash mismatch; it deleted the download
        raise DataIntegrityError(
            f"downloaded {info.filename} from {url} failed verification against sha256 "
            f"{info.sha256}: {exc} Nothing was cached."
        ) from exc
    return cached
