"""Tests of chapter 10's scoring: a fit against a reference written to a temporary folder,
resumed parts, methods that do not apply, and the leaderboard over seeds."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.site import profiles
from bnn_posteriors.store import parts
from bnn_posteriors.store import reference as store
from bnn_posteriors.studies.ch10_reference_posteriors import problems, score
from bnn_posteriors.studies.ch10_reference_posteriors.fits import DoesNotApply, MethodFit

RNG = np.random.default_rng(0)
X = np.linspace(-2, 2, 12, dtype=np.float32)[:, None]
Y = np.sin(X[:, 0]).astype(np.float32)


def _tiny() -> problems.Problem:
    spec = MLP((1, 3, 1), activation="tanh")
    grid = np.linspace(-3, 3, 5, dtype=np.float32)[:, None]
    return problems.Problem("tiny", "a tiny regression", spec, X, Y, X[:4], Y[:4], grid)


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """The problem ``tiny``, its reference (4 chains of 30 draws around sin x, σ = 0.1) in
    ``tmp_path/ref``, and a method ``shifted`` whose f is the reference's plus ``shift``."""
    monkeypatch.setitem(problems.PROBLEMS, "tiny", _tiny)
    prob = _tiny()
    f = {
        name: np.sin(x[:, 0]) + 0.05 * RNG.normal(size=(4, 30, len(x)))
        for name, x in prob.points().items()
    }
    arrays = {"test_y": prob.y_test}
    for name, x in prob.points().items():
        arrays |= {
            f"{name}_x": x,
            f"{name}_f": f[name].astype(np.float32),
            f"{name}_noise_scale": np.full((4, 30), 0.1, np.float32),
        }
    store.write_reference(
        "tiny", arrays, {"problem": "tiny"}, profile="quick", directory=tmp_path / "ref"
    )
    calls = []

    def shifted(rng_key, problem, *, shift=0.0):
        calls.append(shift)
        pred = {
            name: {"f": f[name][0] + shift, "noise_scale": np.full(30, 0.1)}
            for name in problem.points()
        }
        return MethodFit(pred, gradient_evaluations=100.0, extra_flops=5.0)

    def one_layer_only(rng_key, problem):
        raise DoesNotApply("needs one hidden layer")

    monkeypatch.setitem(score.METHODS, "shifted", shifted)
    monkeypatch.setitem(score.METHODS, "one layer", one_layer_only)
    return tmp_path, calls


def test_reference_predictive_and_names():
    arrays = {"test_x": 0, "test_f": 1, "test_noise_scale": 2, "grid_f": 3, "test_y": 4}
    assert score.reference_predictive(arrays) == {"f": 1, "noise_scale": 2}
    with pytest.raises(ValueError, match="no predictive at the points 'val'"):
        score.reference_predictive(arrays, "val")
    assert score.part_name("banana", "MILE, 10 chains", 3) == "banana__mile__10_chains__s3"
    assert score.part_name("p", "LA, α tuned", 0).isascii()  # file names stay ASCII
    banana, digits = (score.method_key(0, p) for p in ("banana", "digits"))
    assert not np.array_equal(banana, digits)
    assert not np.array_equal(banana, score.method_key(1, "banana"))


@pytest.mark.slow
def test_a_closer_fit_scores_closer_and_parts_resume(tiny):
    tmp, calls = tiny
    kw = dict(directory=tmp / "parts", profile="quick", reference_dir=tmp / "ref")
    near = score.score("tiny", "shifted", 0, {"shift": 0.0}, **kw)
    far = score.score("tiny", "shifted", 1, {"shift": 0.5}, **kw)
    assert near["applies"] and not near["read"] and calls == [0.0, 0.5]
    assert near["w2"] < 0.1 < far["w2"] and near["ks"] < far["ks"]
    assert far["w2"] == pytest.approx(0.5, rel=0.05)  # a shift of the whole law moves W2 by it
    assert near["flops"] > near["gradient_evaluations"] == 100.0
    assert len(near["grid"]["mean"]) == len(near["grid"]["sd"]) == 5
    again = score.score("tiny", "shifted", 0, {"shift": 0.0}, **kw)
    assert again["read"] and calls == [0.0, 0.5] and again["w2"] == near["w2"]
    assert again["settings"]["method_settings"] == {"shift": 0.0}
    moved = score.score("tiny", "shifted", 0, {"shift": 0.2}, **kw)  # other settings: computed
    assert not moved["read"] and calls == [0.0, 0.5, 0.2]
    skipped = score.score("tiny", "one layer", 0, {}, **kw)
    assert skipped == {**skipped, "applies": False, "reason": "needs one hidden layer"}
    with pytest.raises(ValueError, match="unknown method"):
        score.score("tiny", "HMC", 0, {}, **kw)


@pytest.mark.slow
def test_reference_floor_and_leaderboard(tiny):
    tmp, _ = tiny
    floor = score.reference_floor("tiny", num_draws=30, num_splits=10, reference_dir=tmp / "ref")
    assert 0 < floor["w2"] < 0.05 and floor["w2_sd"] > 0 and floor["rmse"] < 0.1
    kw = dict(directory=None, profile="quick", reference_dir=tmp / "ref")
    rows = [score.score("tiny", "shifted", s, {"shift": 0.1 * s}, **kw) for s in range(3)]
    rows.append(score.score("tiny", "one layer", 0, {}, **kw))
    lines = []
    board_rows = score.scoreboard(
        ["tiny"],
        {"shifted": {"shift": 0.1}, "one layer": {}},
        [0, 1],
        directory=tmp / "board",
        profile="quick",
        reference_dir=tmp / "ref",
        progress=lines.append,
    )
    assert len(board_rows) == 4 and lines[-1] == "[4/4] tiny · one layer · seed 1: computed"
    assert [r["settings"]["seed"] for r in board_rows] == [0, 1, 0, 1]
    board = score.leaderboard(rows, ["w2", "lppd", "agreement"])
    entry = board[("tiny", "shifted")]
    assert entry["seeds"] == 3 and "agreement" not in entry and ("tiny", "one layer") not in board
    mean, low, high = entry["w2"]
    assert low < mean < high and mean == pytest.approx(np.mean([r["w2"] for r in rows[:3]]))


def _second_reference(tmp, shift: float, chains: int = 3, draws: int = 40):
    """A reference of ``tiny`` by MAMS: sin x + ``shift`` with the fixture's noise."""
    prob, rng = _tiny(), np.random.default_rng(7)
    arrays = {"test_y": prob.y_test}
    for name, x in prob.points().items():
        f = np.sin(x[:, 0]) + shift + 0.05 * rng.normal(size=(chains, draws, len(x)))
        arrays |= {
            f"{name}_x": x,
            f"{name}_f": f.astype(np.float32),
            f"{name}_noise_scale": np.full((chains, draws), 0.1, np.float32),
        }
    store.write_reference(
        "tiny__mams", arrays, {"problem": "tiny"}, profile="quick", directory=tmp / "ref"
    )


def test_a_second_family_of_the_same_law_lies_within_the_floor(tiny):
    tmp, _ = tiny
    kw = dict(num_draws=30, num_splits=20, reference_dir=tmp / "ref")
    with pytest.raises(ValueError, match="no reference by mams"):
        score.family_distance("tiny", "mams", **kw)
    _second_reference(tmp, shift=0.0)
    same = score.family_distance("tiny", "mams", **kw)
    floor = score.reference_floor("tiny", num_draws=30, num_splits=20, reference_dir=tmp / "ref")
    assert same["floor_w2"] == pytest.approx(floor["w2"])  # the floor's own splits
    assert same["w2"] <= same["floor_w2_q95"] and same["w2_sd"] > 0
    assert abs(same["floor_energy"]) < same["floor_energy_q95"]  # unbiased: a floor near 0
    assert same["energy"] <= same["floor_energy_q95"]
    _second_reference(tmp, shift=0.1)  # a law shifted by one noise sd
    shifted = score.family_distance("tiny", "mams", **kw)
    assert shifted["w2"] > 3 * same["floor_w2_q95"]
    assert shifted["energy"] > 3 * same["floor_energy_q95"]
    assert score.second_references("tiny", tmp / "ref") == ["mams"]
    # a part: written once, read back while both references stay, recomputed when one changes
    saved = score.family_distance("tiny", "mams", directory=tmp / "val", profile="quick", **kw)
    assert (tmp / "val" / "tiny__mams.json").is_file()
    assert score.family_distance("tiny", "mams", directory=tmp / "val", **kw) == saved
    _second_reference(tmp, shift=0.0)
    again = score.family_distance("tiny", "mams", directory=tmp / "val", profile="quick", **kw)
    assert again == same and again != saved


def test_committed_rows_reads_matching_parts_only(tiny):
    tmp, calls = tiny
    kw = dict(directory=tmp / "parts", profile="quick", reference_dir=tmp / "ref")
    score.score("tiny", "shifted", 0, {"shift": 0.0}, **kw)
    score.score("tiny", "shifted", 1, {"shift": 0.3}, **kw)  # other settings than asked below
    rows, missing = score.committed_rows(
        ["tiny"], {"shifted": {"shift": 0.0}}, [0, 1, 2], tmp / "parts", tmp / "ref"
    )
    assert [r["settings"]["seed"] for r in rows] == [0] and len(calls) == 2  # nothing computed
    assert missing == ["tiny__shifted__s1", "tiny__shifted__s2"]
    assert rows[0]["settings"] == score.part_settings(
        "tiny", "shifted", 0, {"shift": 0.0}, rows[0]["settings"]["reference_sha256"]
    )


def test_committed_rows_reads_a_part_of_an_older_readable_version(tiny):
    """A part of version 2 (no energy distance) is read where its settings match but for the
    version; one of a version outside score.READABLE is still to run."""
    tmp, calls = tiny
    kw = dict(directory=tmp / "parts", profile="quick", reference_dir=tmp / "ref")
    new = score.score("tiny", "shifted", 0, {"shift": 0.0}, **kw)
    assert new["settings"]["version"] == score.VERSION == 3 and "energy" in new
    path = parts.part_path(tmp / "parts", score.part_name("tiny", "shifted", 0))
    stored = json.loads(path.read_text())
    for version, readable in ((2, True), (1, False)):
        old = {k: v for k, v in stored.items() if k != "energy"}
        old["settings"] = {**stored["settings"], "version": version}
        path.write_text(json.dumps(old))
        rows, missing = score.committed_rows(
            ["tiny"], {"shifted": {"shift": 0.0}}, [0], tmp / "parts", tmp / "ref"
        )
        assert (len(rows), len(missing)) == ((1, 0) if readable else (0, 1)) and len(calls) == 1
        if readable:
            assert "energy" not in rows[0] and rows[0]["w2"] == new["w2"]


def test_leaderboard_leaves_out_a_metric_that_a_seed_lacks():
    rows = [
        {"w2": 0.1 * s, "energy": 0.01 * s, "settings": {"problem": "p", "method": "m"}}
        for s in range(1, 4)
    ]
    del rows[1]["energy"]  # a part of version 2
    entry = score.leaderboard(rows, ["w2", "energy"])[("p", "m")]
    assert "energy" not in entry and entry["seeds"] == 3 and entry["w2"][0] == pytest.approx(0.2)


def test_leaderboard_of_a_constant_is_an_interval_of_width_zero():
    rows = [
        {"flops": 7.0, "w2": 0.1 * s, "settings": {"problem": "p", "method": "m"}}
        for s in range(1, 4)
    ]
    entry = score.leaderboard(rows, ["flops", "w2"])[("p", "m")]
    assert entry["flops"] == (7.0, 7.0, 7.0) and entry["w2"][1] < entry["w2"][2]


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_every_method_row_approximates_the_declared_posterior(profile):
    """One target per problem: each method that can tune the prior's precision (its function
    takes ``tune_prior``) says so in its row, holds α at the problem's in the row of its own
    name and tunes it only in a row labelled as tuned, which no claim compares."""
    cfg = profiles.settings("10_reference_posteriors", profile)
    assert set(cfg.methods) == set(score.METHODS)
    tuned = {"tuned prior", "learned prior"}
    for method, settings in cfg.methods.items():
        takes = "tune_prior" in inspect.signature(score.METHODS[method]).parameters
        labelled = any(method.endswith(", " + t) for t in tuned)
        if takes:
            assert settings.get("tune_prior") is labelled, method
        else:
            assert not labelled, method
        if labelled:
            assert method not in cfg.single_mode, method
            assert method.split(", ")[0] in cfg.methods  # its untuned row is scored beside it
