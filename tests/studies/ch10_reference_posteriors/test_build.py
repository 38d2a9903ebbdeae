"""Tests of building a reference (``bnn-posteriors reference``): the files, the diagnostics,
and a rerun that resumes from the cached chunks and recomputes nothing."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.cli.main import main
from bnn_posteriors.inference import reference
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.store import reference as store
from bnn_posteriors.studies.ch10_reference_posteriors import build, problems

RNG = np.random.default_rng(0)
X = RNG.normal(size=(10, 1)).astype(np.float32)


def _tiny() -> problems.Problem:
    spec = MLP((1, 3, 1), activation="tanh")
    y = np.sin(X[:, 0]).astype(np.float32)
    grid = np.linspace(-2, 2, 4, dtype=np.float32)[:, None]
    return problems.Problem("tiny", "a tiny regression", spec, X, y, X[:3], y[:3], grid)


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(problems.PROBLEMS, "tiny", _tiny)


@pytest.mark.slow
def test_command_builds_and_a_rerun_recomputes_nothing(tiny, tmp_path, capsys):
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["reference", "tiny", "--profile", "quick", "--out", str(out), "--cache", str(cache)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "reference tiny by nuts (profile quick, 2 chains" in printed and "max R-hat" in printed
    arrays, record = store.read_reference("tiny", out)
    assert set(arrays) == {
        "test_y",
        "test_x",
        "test_f",
        "test_noise_scale",
        "grid_x",
        "grid_f",
        "grid_noise_scale",
    }
    assert arrays["test_f"].shape == (2, 20, 3) and arrays["grid_f"].shape == (2, 20, 4)
    assert record["settings"]["num_warmup"] == 20 and record["profile"] == "quick"
    assert record["wall_s"] > 0 and "commit" in record["provenance"]
    assert set(record["mixing"]) == {"test", "grid"}
    assert isinstance(record["mixing"]["test"]["mixed"], bool)
    units = {p: p.stat().st_mtime_ns for p in cache.rglob("*.npz")}
    assert len(units) == 3  # the adaptation and two chunks of 10 draws
    # an interrupted run loses its last chunk: the rerun computes that one only
    last = max(units, key=units.get)
    last.unlink()
    assert main(argv) == 0
    assert last.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in units.items() if p != last)
    again, _ = store.read_reference("tiny", out)
    np.testing.assert_array_equal(again["test_f"], arrays["test_f"])
    # a complete rerun writes no unit at all
    units = {p: p.stat().st_mtime_ns for p in cache.rglob("*.npz")}
    assert main(argv) == 0
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*.npz")} == units


def test_command_errors(tiny, tmp_path, capsys):
    assert main(["reference", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown reference problem 'nope'" in err and "snelson_gap, energy_gap" in err
    assert main(["reference", "tiny", "--profile", "quick"]) == 2
    assert "profile quick names no results folder: pass --out" in capsys.readouterr().err


def test_problem_keys_differ_by_name_and_seed():
    keys = [build.problem_key(s, n) for s in (0, 1) for n in ("banana", "digits")]
    data = {tuple(np.asarray(jax_key).tolist()) for jax_key in keys}
    assert len(data) == 4
    with pytest.raises(ValueError, match="seed must be"):
        build.problem_key(-1, "banana")


def test_arrays_of_names_every_set_of_points():
    prob = _tiny()
    result = {
        "predictive": {
            "test": {"f": np.zeros((2, 5, 3)), "noise_scale": np.ones((2, 5))},
            "grid": {"f": np.zeros((2, 5, 4)), "noise_scale": np.ones((2, 5))},
        }
    }
    arrays = build.arrays_of(prob, result)
    assert arrays["grid_f"].dtype == np.float32 and arrays["grid_x"].shape == (4, 1)
    np.testing.assert_array_equal(arrays["test_y"], prob.y_test)


@pytest.mark.slow
def test_the_second_sampler_family_writes_its_own_reference(tiny, tmp_path, capsys):
    """`--sampler mams`: MAMS chains of the same problem, stored beside the NUTS reference as
    tiny__mams with the sampler in its settings."""
    out = tmp_path / "out"
    argv = ["reference", "tiny", "--profile", "quick", "--out", str(out), "--sampler", "mams"]
    argv += ["--cache", str(tmp_path / "cache")]
    assert main(argv) == 0
    assert "reference tiny by mams" in capsys.readouterr().out
    arrays, record = store.read_reference("tiny__mams", out)
    assert arrays["test_f"].shape == (2, 20, 3) and record["settings"]["sampler"] == "mams"
    assert record["settings"]["target_acceptance_rate"] == 0.9 and len(record["stats"]["L"]) == 2
    assert record["settings"]["integration_steps"] == 32.0  # mams_integration_steps
    assert record["settings"]["initial_step_size"] == 0.01  # mams_initial_step_size
    np.testing.assert_allclose(
        np.asarray(record["stats"]["L"]) / np.asarray(record["stats"]["step_size"]), 32, rtol=1e-4
    )
    assert not (out / "tiny.json").exists()


@pytest.mark.parametrize(
    ("option", "value"), [("initial_step_size", 0.01), ("integration_steps", 8)]
)
def test_integration_steps_are_mams_alone(tiny, option, value):
    prob = problems.problem("tiny")
    with pytest.raises(ValueError, match=f"{option} applies to MAMS, not 'nuts'"):
        reference.run(
            jax.random.PRNGKey(0),
            prob.spec,
            prob.x_train,
            prob.y_train,
            prob.points(),
            num_chains=2,
            num_warmup=20,
            num_samples=20,
            **{option: value},
        )


def test_stored_name_keeps_the_nuts_reference_at_the_problems_name():
    assert build.stored_name("banana") == "banana"
    assert build.stored_name("banana", "mams") == "banana__mams"
    with pytest.raises(ValueError, match="sampler must be one of"):
        build.stored_name("banana", "hmc")
