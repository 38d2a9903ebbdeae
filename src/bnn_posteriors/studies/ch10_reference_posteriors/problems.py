"""The problems of the reference posteriors: small data sets and MLPs on which long NUTS
chains can mix on a 2-core CPU.

Each problem is a pure function with no arguments that returns a :class:`Problem`: the
training data, the Bayesian MLP (a :class:`~bnn_posteriors.models.numpyro_models.MLP` spec,
whose NumPyro model NUTS and every approximation use), the labelled test set, and the points
where the reference predictive is stored (:meth:`Problem.points`: the test inputs and, for the
low-dimensional problems, a grid for the figures). :func:`problem` looks one up by name.

- ``snelson_gap``: Snelson's 1-D regression without the points of 1.5 ≤ x ≤ 3 (the gap is
  the test set), as chapter 9 (:func:`bnn_posteriors.data.loaders.load_snelson`).
- ``energy_gap``: UCI energy with a gap split along one input, as the "UCI-Gap" sets of
  Foong et al. (2019, "'In-between' uncertainty in Bayesian neural networks") that the
  NeurIPS 2021 BDL competition used (izmailovpavel/neurips_bdl_starter_kit): the rows whose
  relative compactness (input 0) lies in the middle third of its distinct values are the
  test set, the others the training set.
- ``banana``: the 2-D Banana classification set of chapter 6
  (:func:`~bnn_posteriors.data.loaders.load_banana`).
- ``digits``: scikit-learn's bundled 8×8 digits (no download), average-pooled to 4×4, ten
  classes.
- ``snelson_sparse``, ``banana_sparse`` and ``digits_sparse``: the same networks on few
  training points, so that the network has more parameters than the training set has outputs
  (P > N·O, :attr:`Problem.sparse`). The GGN then has a null space (its rank is at most N·O),
  and the null-space Laplace approximation, VIKING's kernel part and the Laplace diffusion
  differ from the MAP; on the other problems N·O ≥ P and the null space is empty. Only on
  ``digits_sparse`` does the null space reach the test points: at a MAP of seed 0,
  ‖J_test P_ker‖ / ‖J_test‖ is 0.21 there, against 4e-4 (snelson_sparse) and 1e-6
  (banana_sparse); a guess at why, not measured: with inputs of one or two dimensions the
  Jacobian at a test input lies close to the span of its training neighbours'.

Every regression samples its noise scale (log σ ~ N(0, 1)); every network has tanh hidden
units (a smooth potential for NUTS) and a N(0, 1) prior on every weight and bias.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import numpy as np

from bnn_posteriors.data import loaders
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.util import validate


@dataclasses.dataclass(frozen=True, eq=False)
class Problem:
    """One reference problem: data, model and the points of the stored predictive.

    ``x_train`` (n, d) float32, ``y_train`` (n,) (float32 targets or int32 labels);
    ``x_test`` (m, d), ``y_test`` (m,) the labelled test set; ``x_grid`` (g, d) or None,
    unlabelled inputs for figures; ``spec`` the Bayesian MLP.
    """

    name: str
    description: str
    spec: MLP
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    x_grid: np.ndarray | None = None

    def __post_init__(self):
        d_in = self.spec.widths[0]
        for part in ("x_train", "x_test", "x_grid"):
            x = getattr(self, part)
            if x is not None and (x.ndim != 2 or x.shape[1] != d_in):
                raise ValueError(f"{self.name}: {part} must be (n, {d_in}), got {x.shape}")
        for x, y in ((self.x_train, self.y_train), (self.x_test, self.y_test)):
            validate.check_xy(x, y, where=self.name, likelihood=self.spec.likelihood)
            if self.spec.likelihood == "categorical" and y.max() >= self.spec.widths[-1]:
                raise ValueError(
                    f"{self.name}: labels must lie in 0..{self.spec.widths[-1] - 1}, got {y.max()}"
                )

    @property
    def likelihood(self) -> str:
        return self.spec.likelihood

    def points(self) -> dict[str, np.ndarray]:
        """The inputs where the reference predictive is stored: ``{"test": x_test}`` and,
        where the problem has one, ``"grid": x_grid``."""
        points = {"test": self.x_test}
        if self.x_grid is not None:
            points["grid"] = self.x_grid
        return points

    @property
    def num_params(self) -> int:
        """P, the number of weights and biases of the network (σ not counted)."""
        widths = self.spec.widths
        return sum(a * b + b * self.spec.bias for a, b in itertools.pairwise(widths))

    @property
    def num_constraints(self) -> int:
        """N·O, the number of training outputs: an upper bound on the GGN's rank."""
        return len(self.y_train) * self.spec.widths[-1]

    @property
    def sparse(self) -> bool:
        """Whether P > N·O, so that the GGN of the training set has a null space."""
        return self.num_params > self.num_constraints

    def model_kwargs(self) -> dict:
        """The keyword arguments of ``spec.model`` on the training data."""
        return self.spec.kwargs(self.x_train, self.y_train)


def _f32(*arrays):
    return tuple(np.asarray(a, dtype=np.float32) for a in arrays)


def _standardise(train, *others):
    """``train`` and ``others`` standardised with the training mean and population sd."""
    mean, sd = train.mean(axis=0), train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return tuple((a - mean) / sd for a in (train, *others))


def snelson_gap() -> Problem:
    """Snelson's data without 1.5 ≤ x ≤ 3 (148 points; the 52 in the gap are the test set),
    an MLP 1–10–10–1, and a grid of 100 inputs over [−1, 7] for the band figure."""
    x, y, x_gap, y_gap = loaders.load_snelson(in_between=True)
    grid = np.linspace(-1.0, 7.0, 100)[:, None]
    x, y, x_gap, y_gap, grid = _f32(x, y, x_gap, y_gap, grid)
    spec = MLP((1, 10, 10, 1), likelihood="gaussian", activation="tanh")
    return Problem(
        "snelson_gap",
        "Snelson 1-D regression, the gap 1.5 ≤ x ≤ 3 held out",
        spec,
        x,
        y,
        x_gap,
        y_gap,
        grid,
    )


def gap_split(x, dim: int) -> np.ndarray:
    """The test rows of a gap split along input ``dim``: the rows whose value of ``x[:, dim]``
    lies in the middle third of its sorted distinct values (Foong et al. 2019 sort the rows
    and take the middle third; on a column of few distinct values, cutting between values
    keeps ties on one side). ``x`` (n, d) → boolean mask (n,)."""
    x = np.asarray(x)
    if x.ndim != 2 or not 0 <= dim < x.shape[1]:
        raise ValueError(f"gap_split: dim must index a column of x {x.shape}, got {dim}")
    values = np.unique(x[:, dim])
    if len(values) < 3:
        raise ValueError(f"gap_split: column {dim} has {len(values)} distinct values, need ≥ 3")
    k = len(values)
    middle = values[k // 3 : k - k // 3]
    return np.isin(x[:, dim], middle)


def energy_gap() -> Problem:
    """UCI energy (heating load) with the gap split of :func:`gap_split` along relative
    compactness (input 0; 12 distinct values, the middle 4 held out: 512 training and 256 test
    rows), inputs and target standardised with the training rows, an MLP 8–16–1."""
    x, y = loaders.load_dataset("energy")
    test = gap_split(x, 0)
    x_tr, x_te = _standardise(x[~test], x[test])
    y_tr, y_te = _standardise(y[~test], y[test])
    x_tr, y_tr, x_te, y_te = _f32(x_tr, y_tr, x_te, y_te)
    spec = MLP((8, 16, 1), likelihood="gaussian", activation="tanh")
    return Problem(
        "energy_gap",
        "UCI energy, gap split along relative compactness",
        spec,
        x_tr,
        y_tr,
        x_te,
        y_te,
    )


BANANA_TEST = 200  # test points of Banana (the first of chapter 6's test set)


def banana() -> Problem:
    """Banana (265 training points, as [MBNN]), the first 200 test points, an MLP 2–10–10–2,
    and a 20 × 20 grid over [−2.5, 2.5]² for the figure."""
    x_tr, y_tr, _, _, x_te, y_te = loaders.load_banana()
    axis = np.linspace(-2.5, 2.5, 20)
    grid = np.stack(np.meshgrid(axis, axis), axis=-1).reshape(-1, 2)
    x_tr, x_te, grid = _f32(x_tr, x_te[:BANANA_TEST], grid)
    spec = MLP((2, 10, 10, 2), likelihood="categorical", activation="tanh")
    return Problem(
        "banana",
        "Banana 2-D binary classification",
        spec,
        x_tr,
        y_tr.astype(np.int32),
        x_te,
        y_te[:BANANA_TEST].astype(np.int32),
        grid,
    )


DIGITS_TRAIN, DIGITS_TEST = 500, 200


def pool_digits(images) -> np.ndarray:
    """8×8 digit images (n, 64) with values 0..16 → 2×2 average-pooled 4×4 images (n, 16)
    in [0, 1]."""
    images = np.asarray(images, dtype=np.float64)
    if images.ndim != 2 or images.shape[1] != 64:
        raise ValueError(f"pool_digits: images must be (n, 64), got {images.shape}")
    return images.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16) / 16.0


def digits() -> Problem:
    """scikit-learn's 8×8 digits (1797 images, bundled), pooled to 4×4
    (:func:`pool_digits`), a stratified split of 500 training and 200 test images
    (``random_state=0``), inputs standardised with the training images, an MLP 16–16–10."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    x = pool_digits(images)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x,
        labels,
        train_size=DIGITS_TRAIN,
        test_size=DIGITS_TEST,
        stratify=labels,
        random_state=0,
    )
    x_tr, x_te = _f32(*_standardise(x_tr, x_te))
    spec = MLP((16, 16, 10), likelihood="categorical", activation="tanh")
    return Problem(
        "digits",
        "scikit-learn 8×8 digits pooled to 4×4, ten classes",
        spec,
        x_tr,
        y_tr.astype(np.int32),
        x_te,
        y_te.astype(np.int32),
    )


SPARSE_TRAIN = 30  # training points of the sparse problems


def _sparse(prob: Problem, name: str, description: str, stratify: bool) -> Problem:
    """``prob`` on :data:`SPARSE_TRAIN` of its training points (a random subset of seed 0,
    stratified by class for a classifier), with its network, test set and grid."""
    from sklearn.model_selection import train_test_split

    keep, _ = train_test_split(
        np.arange(len(prob.y_train)),
        train_size=SPARSE_TRAIN,
        stratify=prob.y_train if stratify else None,
        random_state=0,
    )
    keep = np.sort(keep)
    sparse = dataclasses.replace(
        prob,
        name=name,
        description=description,
        x_train=prob.x_train[keep],
        y_train=prob.y_train[keep],
    )
    if not sparse.sparse:
        raise AssertionError(f"{name}: P={sparse.num_params} ≤ N·O={sparse.num_constraints}")
    return sparse


def snelson_sparse() -> Problem:
    """:func:`snelson_gap` on 30 of its 148 training points (P = 141 > N·O = 30): the same
    network, gap and grid."""
    return _sparse(
        snelson_gap(),
        "snelson_sparse",
        "Snelson 1-D regression on 30 training points, the gap 1.5 ≤ x ≤ 3 held out",
        stratify=False,
    )


def banana_sparse() -> Problem:
    """:func:`banana` on 30 of its 265 training points, stratified by class (P = 162 > N·O =
    60): the same network, test points and grid."""
    return _sparse(
        banana(),
        "banana_sparse",
        "Banana 2-D binary classification on 30 training points",
        stratify=True,
    )


def digits_sparse() -> Problem:
    """:func:`digits` on 30 of its 500 training images, 3 per class (P = 442 > N·O = 300):
    the same network and test images."""
    return _sparse(
        digits(),
        "digits_sparse",
        "scikit-learn digits pooled to 4×4 on 30 training images, 3 per class",
        stratify=True,
    )


PROBLEMS: dict[str, Callable[[], Problem]] = {
    "snelson_gap": snelson_gap,
    "energy_gap": energy_gap,
    "banana": banana,
    "digits": digits,
    "snelson_sparse": snelson_sparse,
    "banana_sparse": banana_sparse,
    "digits_sparse": digits_sparse,
}


def known(name: str) -> str:
    """``name`` if it names a problem of :data:`PROBLEMS`, else ``ValueError`` listing them."""
    if name not in PROBLEMS:
        raise ValueError(
            f"unknown reference problem {name!r}; the problems are {', '.join(PROBLEMS)}"
        )
    return name


def problem(name: str) -> Problem:
    """The problem called ``name``; an unknown name raises ``ValueError`` listing them."""
    return PROBLEMS[known(name)]()
