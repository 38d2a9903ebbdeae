"""`bnn-posteriors score`: draws made by a method outside the package, scored against a
committed reference posterior and placed on the chapter's leaderboard."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.cli import main as cli
from bnn_posteriors.store import reference
from bnn_posteriors.studies.ch10_reference_posteriors import problems, score


def outside_method(x_train, y_train, x_test, num_draws=200, seed=0):
    """A Bayesian linear regression on random Fourier features, written with NumPy alone (no
    part of the package): its posterior function draws at ``x_test`` and its noise sd."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(x_train.shape[1], 50))
    b = rng.uniform(0, 2 * np.pi, 50)

    def features(x):
        return np.sqrt(2 / 50) * np.cos(x @ w + b)

    phi, phi_test = features(x_train), features(x_test)
    noise = 0.3
    precision = phi.T @ phi / noise**2 + np.eye(50)
    cov = np.linalg.inv(precision)
    mean = cov @ phi.T @ y_train / noise**2
    weights = rng.multivariate_normal(mean, cov, size=num_draws)
    return weights @ phi_test.T, np.full(num_draws, noise)


@pytest.fixture(scope="module")
def snelson():
    return problems.problem("snelson_gap")


def test_an_outside_method_is_scored_and_ranked_through_the_command(snelson, tmp_path, capsys):
    f, noise = outside_method(snelson.x_train, snelson.y_train, snelson.x_test)
    path = tmp_path / "draws.npz"
    np.savez(path, f=f, noise_scale=noise)
    assert cli.main(["score", "--problem", "snelson_gap", "--draws", str(path)]) == 0
    out = capsys.readouterr().out
    row = score.score_draws("snelson_gap", score.read_draws(path))
    assert set(row) == {"w2", "ks", "w1", "energy", "lppd", "rmse"} and row["w2"] > 0
    assert row["energy"] > 0  # the joint law of its function draws is not the posterior's
    assert f"w2               {row['w2']:.4g}" in out and "reference's own floor" in out
    ranked = [line for line in out.splitlines() if line.strip()[:3].rstrip(".").isdigit()]
    assert any("your draws" in line and "<-" in line for line in ranked)
    assert len(ranked) >= 2  # the committed methods are there beside the outside draws
    # the reference's own draws are closer to it than the outside method's
    arrays, _ = reference.read_reference("snelson_gap")
    own = {
        "f": arrays["test_f"][:8].reshape(-1, arrays["test_f"].shape[-1]),
        "noise_scale": arrays["test_noise_scale"][:8].ravel(),
    }
    assert score.score_draws("snelson_gap", own)["w2"] < row["w2"]


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        ({"f": np.zeros((10, 5)), "noise_scale": np.ones(10)}, "must be shaped \\(S, 52\\)"),
        ({"probs": np.full((10, 52, 2), 0.5)}, "gaussian likelihood"),
        ({"f": np.zeros((10, 52))}, "a draws file holds"),
        ({"f": np.full((10, 52), np.nan), "noise_scale": np.ones(10)}, "NaN"),
    ],
)
def test_draws_that_do_not_fit_the_problem_are_refused_by_name(arrays, match, tmp_path, capsys):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    assert cli.main(["score", "--problem", "snelson_gap", "--draws", str(path)]) == 2
    assert match.replace("\\", "") in capsys.readouterr().err or pytest.fail(match)


def test_a_missing_file_and_an_unknown_problem_are_named(tmp_path, capsys):
    assert cli.main(["score", "--problem", "snelson_gap", "--draws", str(tmp_path / "x.npz")]) == 2
    assert "no draws file" in capsys.readouterr().err
    path = tmp_path / "d.npz"
    np.savez(path, f=np.zeros((2, 52)), noise_scale=np.ones(2))
    assert cli.main(["score", "--problem", "nowhere", "--draws", str(path)]) == 2
    assert "unknown reference problem" in capsys.readouterr().err


def test_standing_orders_the_methods_by_the_distance():
    board = {("p", "A"): {"w2": (0.3, 0.2, 0.4)}, ("p", "B"): {"w2": (0.1, 0.0, 0.2)}}
    assert score.standing({"w2": 0.2}, board, "p", "w2") == [
        ("B", 0.1),
        ("your draws", 0.2),
        ("A", 0.3),
    ]


def test_a_problem_without_a_reference_is_named(tmp_path):
    with pytest.raises(
        ValueError, match="'banana' has no reference by nuts in .*bnn-posteriors reference banana"
    ):
        score.committed_reference("banana", tmp_path)
    with pytest.raises(ValueError, match="by mams in .*--profile full --sampler mams`"):
        score.committed_reference("banana", tmp_path, sampler="mams")
    with pytest.raises(ValueError, match="sampler must be one of"):
        score.committed_reference("banana", tmp_path, sampler="hmc")
    with pytest.raises(ValueError, match="unknown reference problem 'nope'"):
        score.committed_reference("nope", tmp_path)
    arrays, record = score.committed_reference("banana")
    assert record["name"] == "banana" and "test_probs" in arrays


def test_the_floor_is_at_the_methods_number_of_draws():
    # banana's committed reference: 16 chains of 100 draws
    floor = score.reference_floor("banana", num_draws=200, num_splits=20)
    more = score.reference_floor("banana", num_draws=800, num_splits=20)
    assert 0 < more["total_variation"] < floor["total_variation"]  # more draws, closer
    assert floor["total_variation_sd"] > 0 and 0.9 < floor["agreement"] <= 1
    assert {"lppd", "accuracy", "ece"} <= set(floor)  # the reference's own test scores
