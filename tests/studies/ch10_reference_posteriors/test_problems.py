"""Tests of chapter 10's reference problems: data, models, points and the lookup by name."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from bnn_posteriors.data import loaders
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.studies.ch10_reference_posteriors import problems

SHARED = Path(
    os.environ.get(loaders.ENV_DATA) or Path(__file__).resolve().parents[4] / "shared" / "data"
)


@pytest.fixture
def shared(monkeypatch, tmp_path):
    if not (SHARED / "toy" / "banana" / "banana.csv").is_file():
        pytest.skip(f"shared data not found at {SHARED}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(loaders.ENV_DATA, str(SHARED))


def _check(prob: problems.Problem, n_train, n_test, d, likelihood, points):
    assert prob.x_train.shape == (n_train, d) and prob.y_train.shape == (n_train,)
    assert prob.x_test.shape == (n_test, d) and prob.y_test.shape == (n_test,)
    assert prob.likelihood == likelihood and prob.spec.widths[0] == d
    assert {k: v.shape[0] for k, v in prob.points().items()} == points
    assert prob.x_train.dtype == np.float32
    kwargs = prob.model_kwargs()
    assert kwargs["x"] is prob.x_train and kwargs["y"] is prob.y_train


def test_snelson_gap_holds_out_the_gap(shared):
    prob = problems.problem("snelson_gap")
    _check(prob, 148, 52, 1, "gaussian", {"test": 52, "grid": 100})
    inside = (prob.x_train[:, 0] >= 1.5) & (prob.x_train[:, 0] <= 3.0)
    assert not inside.any()
    assert ((prob.x_test >= 1.5) & (prob.x_test <= 3.0)).all()
    assert prob.spec.noise_scale is None  # σ sampled, stored in the reference


def test_energy_gap_split_and_standardisation(shared):
    prob = problems.problem("energy_gap")
    _check(prob, 512, 256, 8, "gaussian", {"test": 256})
    np.testing.assert_allclose(prob.x_train.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(prob.y_train.std(), 1, rtol=1e-5)
    # the gap: the test rows' compactness lies strictly between the training rows' extremes
    # and no training row shares a value with a test row
    x, _ = loaders.load_dataset("energy")
    test = problems.gap_split(x, 0)
    assert not set(x[test, 0]) & set(x[~test, 0])
    assert x[~test, 0].min() < x[test, 0].min() and x[test, 0].max() < x[~test, 0].max()


def test_gap_split_takes_the_middle_third_of_the_values():
    x = np.array([[v, 0.0] for v in [5, 1, 2, 3, 4, 6, 3, 4]], dtype=float)
    np.testing.assert_array_equal(problems.gap_split(x, 0), np.isin(x[:, 0], [3, 4]))
    with pytest.raises(ValueError, match="column 1 has 1 distinct values"):
        problems.gap_split(x, 1)
    with pytest.raises(ValueError, match="dim must index a column"):
        problems.gap_split(x, 2)


def test_banana(shared):
    prob = problems.problem("banana")
    _check(prob, 265, 200, 2, "categorical", {"test": 200, "grid": 400})
    assert set(np.unique(prob.y_train)) == {0, 1}


def test_digits_pooled_and_stratified():
    prob = problems.problem("digits")
    _check(prob, 500, 200, 16, "categorical", {"test": 200})
    assert prob.spec.widths == (16, 16, 10)
    assert np.bincount(prob.y_train).min() >= 45  # stratified: about 50 per class


def test_only_the_sparse_problems_have_a_null_space(shared):
    """P > N·O (the GGN's rank bound) on the sparse problems, N·O ≥ P on the others."""
    sizes = {}
    for name in problems.PROBLEMS:
        prob = problems.problem(name)
        sizes[name] = (prob.num_params, prob.num_constraints)
        assert prob.sparse == name.endswith("_sparse"), (name, sizes[name])
    assert sizes["snelson_sparse"] == (141, 30) and sizes["banana_sparse"] == (162, 60)
    assert sizes["digits_sparse"] == (442, 300)
    assert sizes["digits"] == (16 * 16 + 16 + 16 * 10 + 10, 5000)


def test_sparse_problems_are_subsets_with_the_same_network_and_test_set(shared):
    pairs = (
        ("snelson_gap", "snelson_sparse"),
        ("banana", "banana_sparse"),
        ("digits", "digits_sparse"),
    )
    for dense_name, sparse_name in pairs:
        dense, sparse = problems.problem(dense_name), problems.problem(sparse_name)
        assert sparse.spec == dense.spec and sparse.name == sparse_name
        np.testing.assert_array_equal(sparse.x_test, dense.x_test)
        np.testing.assert_array_equal(sparse.x_grid, dense.x_grid)
        assert len(sparse.y_train) == problems.SPARSE_TRAIN
        rows = {tuple(r) for r in dense.x_train.tolist()}
        assert all(tuple(r) in rows for r in sparse.x_train.tolist())
    banana_sparse = problems.problem("banana_sparse")
    assert np.bincount(banana_sparse.y_train).tolist() == [17, 13]  # stratified: 153 : 112
    assert np.bincount(problems.problem("digits_sparse").y_train).tolist() == [3] * 10


def test_pool_digits_averages_blocks():
    image = np.zeros(64)
    image[[0, 1, 8, 9]] = 16.0  # the top-left 2×2 block
    image[63] = 8.0
    pooled = problems.pool_digits(image[None])
    expected = np.zeros(16)
    expected[0], expected[15] = 1.0, 0.125
    np.testing.assert_allclose(pooled[0], expected)
    with pytest.raises(ValueError, match=r"images must be \(n, 64\)"):
        problems.pool_digits(np.zeros((2, 63)))


def test_unknown_problem_lists_the_problems():
    with pytest.raises(
        ValueError,
        match="unknown reference problem 'mnist'.*snelson_gap, energy_gap, banana, digits",
    ):
        problems.problem("mnist")


def test_problem_rejects_bad_data():
    spec = MLP((2, 3, 2), likelihood="categorical")
    x = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match=r"labels must lie in 0..1, got 2"):
        problems.Problem("p", "", spec, x, np.array([0, 1, 2, 0]), x, np.zeros(4, int))
    with pytest.raises(ValueError, match=r"x_grid must be \(n, 2\)"):
        problems.Problem("p", "", spec, x, np.zeros(4, int), x, np.zeros(4, int), np.zeros((3, 1)))


def test_known_names_a_problem_or_lists_them():
    assert problems.known("banana") == "banana"
    with pytest.raises(ValueError, match="unknown reference problem 'nope'; the problems are "):
        problems.known("nope")
