"""Tests of the [SAP] App. D.6 prior-scale study (``studies.prior_scale_study``)."""

import json
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from bnn_posteriors.cli import main as cli
from bnn_posteriors.site import profiles
from bnn_posteriors.studies.ch07_sampling_in_practice import prior_scales as study

TINY = dict(
    n_chains=2,
    split_seed=0,
    n_max=None,
    tuning_steps=40,
    sampling_steps=10,
    thinning=5,
    width=4,
    max_epochs=3,
    batch_size=8,
)


def fake_split(name, seed, n_max=None):
    rng = np.random.default_rng(len(name) + seed)
    x = rng.normal(size=(36, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
    return SimpleNamespace(
        x_train=x[:20], y_train=y[:20], x_val=x[20:28], y_val=y[20:28], x_test=x[28:], y_test=y[28:]
    )


@pytest.mark.slow
def test_a_cell_scores_every_scale_with_paired_chains(monkeypatch):
    monkeypatch.setattr(study.data, "load_split", fake_split)
    grid = (0.5, 1.0)
    (cell,) = study.prior_scale_study(0, ("energy",), (1,), grid, **TINY)
    assert cell["settings"]["grid"] == [0.5, 1.0] and cell["read"] is False
    assert all(np.isfinite(cell["lppd"])) and min(cell["rmse"]) > 0
    per_chain = np.array(cell["chain_lppd"])
    assert per_chain.shape == (2, len(grid)) and np.all(np.isfinite(per_chain))
    # the ensemble of a scale's chains scores at least the mean of its single chains
    # (log of a mean of densities ≥ mean of the logs, per test point)
    assert cell["lppd"][1] >= per_chain[:, 1].mean() - 1e-6


def test_cells_are_keyed_by_seed_data_set_and_depth():
    keys = [study.cell_key(s, d, h) for s in (0, 1) for d in ("airfoil", "energy") for h in (1, 2)]
    assert len({tuple(np.asarray(jax.random.key_data(k)).ravel()) for k in keys}) == len(keys)
    same = study.cell_key(0, "energy", 2), study.cell_key(0, "energy", 2)
    np.testing.assert_array_equal(*(jax.random.key_data(k) for k in same))


@pytest.mark.slow
def test_committed_cells_are_read_back_and_other_settings_recomputed(tmp_path, monkeypatch):
    monkeypatch.setattr(study.data, "load_split", fake_split)
    computed = []
    real = study.prior_scale_cell
    monkeypatch.setattr(
        study, "prior_scale_cell", lambda s, **kw: computed.append(s) or real(s, **kw)
    )
    # two cells of one shape (two data sets, one depth): MILE's programs compile once
    first = study.prior_scale_study(
        1, ("airfoil", "energy"), (1,), (1.0,), results_dir=tmp_path, profile="full", **TINY
    )
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert files == ["airfoil_depth1_seed1.json", "energy_depth1_seed1.json"]
    assert [study.cell_name(c["settings"]) for c in first] == [f[:-5] for f in files]
    assert study.cell_path(tmp_path, first[0]["settings"]) == tmp_path / files[0]
    record = json.loads((tmp_path / files[0]).read_text())
    assert record["profile"] == "full" and "commit" in record["provenance"]
    again = study.prior_scale_study(
        1, ("airfoil", "energy"), (1,), (1.0,), results_dir=tmp_path, **TINY
    )
    assert len(computed) == 2 and all(c["read"] for c in again)
    assert [c["chain_lppd"] for c in again] == [c["chain_lppd"] for c in first]
    assert first[0]["chain_lppd"] != first[1]["chain_lppd"]  # two cells, two results
    other = {**TINY, "split_seed": 1}  # other settings: the file does not count
    (cell,) = study.prior_scale_study(1, ("energy",), (1,), (1.0,), results_dir=tmp_path, **other)
    assert len(computed) == 3 and not cell["read"] and cell["settings"]["split_seed"] == 1


def test_settings_reject_unknown_data_sets_and_bad_counts():
    with pytest.raises(ValueError, match="unknown|data set"):
        study.cell_settings(0, "no-such-set", 1, (1.0,), **TINY)
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        study.cell_settings(0, "energy", 0, (1.0,), **TINY)


def test_chapter_arguments_follow_the_profiles():
    quick, full = (profiles.settings("07_sampling_in_practice", p) for p in ("quick", "full"))
    args = study.chapter_arguments(full)
    assert args["grid"] == (*full.scales, full.glorot_scale)
    assert args["tuning_steps"] == 50_000 and args["n_chains"] == 10
    assert study.chapter_results_dir(quick) is None
    assert study.chapter_results_dir(full).name == "ch7_prior_scale"


def test_the_command_writes_cells_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(study.data, "load_split", fake_split)
    tiny = {
        **study.chapter_arguments(profiles.settings("07_sampling_in_practice", "quick")),
        **TINY,
        "grid": (1.0,),
        "learning_rate": 0.01,
    }
    monkeypatch.setattr(study, "chapter_arguments", lambda cfg: dict(tiny))
    computed = []

    def cell(s, **kw):  # the command's part: writing and resuming (cells: the tests above)
        computed.append(s)
        return {
            "settings": s,
            "lppd": [-1.0],
            "rmse": [0.5],
            "chain_lppd": [[-1.0]] * 2,
            "wall_s": 0.25,
        }

    monkeypatch.setattr(study, "prior_scale_cell", cell)
    argv = ["prior-scales", "--datasets", "energy", "--depths", "1", "--out", str(tmp_path)]
    assert cli.main(argv) == 0
    assert "(computed)" in capsys.readouterr().out and len(computed) == 1
    assert len(list(tmp_path.glob("energy_depth1_seed*.json"))) == 1  # written as it is done
    assert cli.main(argv) == 0
    assert "(read)" in capsys.readouterr().out and len(computed) == 1
    assert cli.main(["prior-scales", "--profile", "bogus"]) == 2
    assert cli.main(["prior-scales", "--datasets", "no-such-set", "--out", str(tmp_path)]) == 2


def test_committed_cells_hold_the_full_profiles_settings():
    """Every committed cell is one the full profile reads back (same settings, same version)."""
    full = profiles.settings("07_sampling_in_practice", "full")
    folder = study.chapter_results_dir(full)
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    arguments = study.chapter_arguments(full)
    for path in files:
        record = json.loads(path.read_text())
        s = record["settings"]
        assert s["dataset"] in arguments["datasets"] and s["depth"] in arguments["depths"]
        kw = {k: v for k, v in arguments.items() if k not in ("seed", "datasets", "depths", "grid")}
        expected = study.cell_settings(full.seed, s["dataset"], s["depth"], arguments["grid"], **kw)
        assert s == expected, path.name
        assert study.cell_path(folder, s) == path and record["profile"] == "full"
        assert "+dirty" not in record["provenance"]["commit"]
        per_chain = np.array(record["chain_lppd"])
        assert per_chain.shape == (full.prior_chains, len(arguments["grid"]))
        assert np.all(np.isfinite(per_chain)) and len(record["lppd"]) == len(arguments["grid"])


def test_scale_comparison_ranks_and_pairs_the_scales():
    settings = {"grid": [10.0, 1.0, 0.1, 0.25]}
    cells = [  # scale 1 best by LPPD in both cells, 0.1 worst; chain 0 of cell 0 is an outlier
        {
            "settings": settings,
            "lppd": [0.2, 0.5, -0.5, 0.4],
            "rmse": [0.3, 0.2, 0.6, 0.25],
            "chain_lppd": [[0.1, 0.6, -0.4, 1.6], [0.3, 0.4, -0.6, 0.1]],
        },
        {
            "settings": settings,
            "lppd": [0.0, 0.3, -0.2, 0.1],
            "rmse": [0.4, 0.3, 0.5, 0.35],
            "chain_lppd": [[0.0, 0.3, -0.2, 0.2], [0.1, 0.3, -0.1, 0.0]],
        },
    ]
    out = study.scale_comparison(np.random.default_rng(0), cells, 3, num_resamples=500)
    np.testing.assert_array_equal(out["ranks"], [[2, 1, 3], [2, 1, 3]])
    np.testing.assert_array_equal(out["rmse_ranks"], [[2, 1, 3], [2, 1, 3]])
    assert out["position_of_1"] == 1 and out["n_pairs"] == 4 and out["grid"] == settings["grid"]
    np.testing.assert_allclose(out["delta"], [0.275, 0.0, 0.725, -0.075])
    assert out["low"][2] > 0 and out["low"][1] == out["high"][1] == 0
    assert out["low"][3] < 0  # the outlier pair: Glorot not shown worse
    np.testing.assert_allclose(out["median"], [0.25, 0.0, 0.75, 0.2])
    np.testing.assert_allclose(out["worst_lppd"], [0.0, 0.3, -0.6, 0.0])
    np.testing.assert_array_equal(out["worst_cell"], [1, 1, 0, 1])


@pytest.mark.slow
def test_committed_cells_are_all_the_cells_or_none(tmp_path, monkeypatch):
    monkeypatch.setattr(study.data, "load_split", fake_split)
    tiny = {
        **study.chapter_arguments(profiles.settings("07_sampling_in_practice", "quick")),
        **TINY,
        "grid": (1.0,),
        "learning_rate": 0.01,
        "datasets": ("energy",),
        "depths": (1, 2),
    }
    monkeypatch.setattr(study, "chapter_arguments", lambda cfg: dict(tiny))
    monkeypatch.setattr(study, "chapter_results_dir", lambda cfg: tmp_path)
    cfg = profiles.settings("07_sampling_in_practice", "full")
    assert study.committed_cells(cfg) is None  # no cell yet
    study.prior_scale_study(**{**tiny, "depths": (1,)}, results_dir=tmp_path, profile="full")
    assert study.committed_cells(cfg) is None  # one of two cells
    made = study.prior_scale_study(**tiny, results_dir=tmp_path, profile="full")
    cells = study.committed_cells(cfg)
    assert [c["chain_lppd"] for c in cells] == [c["chain_lppd"] for c in made]
    assert all(c["read"] for c in cells)
    monkeypatch.setattr(study, "chapter_results_dir", lambda cfg: None)
    assert study.committed_cells(cfg) is None


def rank_cells(lppd_rows, rmse_rows=None, grid=(10.0, 1.0, 0.1, 0.25), depths=None):
    """Cells with only what the rank clauses read (grid, depth, LPPD, RMSE per scale)."""
    rmse_rows = [[-v for v in row] for row in lppd_rows] if rmse_rows is None else rmse_rows
    depths = [1 + i % 2 for i in range(len(lppd_rows))] if depths is None else depths
    return [
        {"settings": {"grid": list(grid), "depth": d}, "lppd": list(a), "rmse": list(b)}
        for a, b, d in zip(lppd_rows, rmse_rows, depths, strict=True)
    ]


def test_cell_ranks_put_the_best_scale_first():
    np.testing.assert_array_equal(
        study.cell_ranks([[0.2, 0.5, -0.5]], higher_is_better=True), [[2, 1, 3]]
    )
    np.testing.assert_array_equal(
        study.cell_ranks([[0.2, 0.5, -0.5]], higher_is_better=False), [[2, 3, 1]]
    )
    with pytest.raises(ValueError, match="cells, scales"):
        study.cell_ranks([0.2, 0.5], higher_is_better=True)


def test_three_way_decides_a_conjunction_only_when_the_evidence_does():
    assert study.three_way([1, 2], [3, 4])["outcome"] == "reproduced"
    out = study.three_way([1, -2], [3, 4])  # one statement undecided, none contradicted
    assert out["outcome"] == "inconclusive" and not out["decided"]
    out = study.three_way([-1, -2], [3, -1])  # one contradicted decides, whatever the rest
    assert out["outcome"] == "not reproduced" and out["decided"]


def test_rank_clauses_reproduce_when_scale_1_ranks_best_and_glorot_below_it():
    # grid (paper's 10, 1, 0.1; then Glorot 0.25): scale 1 first, Glorot between 1 and 10
    cells = rank_cells([[0.2 + 0.01 * i, 0.5, -0.5, 0.3] for i in range(6)])
    out = study.rank_clauses(np.random.default_rng(0), cells, 3, num_resamples=500)
    assert out["middle"] == 2.0 and out["n_cells"] == 6
    # advantage over the middle rank 2, over 0.1 (rank 3), 10 (rank 2), Glorot (rank 2 of 4)
    np.testing.assert_allclose(out["mean"], [1, 2, 1, 1] * 2)
    assert out["outcome"] == "reproduced" and out["decided"]
    assert out["depth_rank_1"] == {"LPPD": {1: 1.0, 2: 1.0}, "RMSE": {1: 1.0, 2: 1.0}}


def test_rank_clauses_fail_when_scale_1_ranks_last():
    """The broken input of the chapter's check: scale 1 last in every cell."""
    cells = rank_cells([[0.6, -0.9, 0.4, 0.5] for _ in range(6)])
    out = study.rank_clauses(np.random.default_rng(0), cells, 3, num_resamples=500)
    np.testing.assert_allclose(out["mean"][:4], [-1, -1, -2, -2])
    assert out["contradicted"][0] and out["outcome"] == "not reproduced" and out["decided"]


def test_rank_clauses_are_inconclusive_when_glorot_ranks_on_both_sides_of_1():
    better = [[0.2, 0.5, -0.5, 0.6]] * 3  # Glorot first: 1 second
    worse = [[0.2, 0.5, -0.5, 0.3]] * 3
    out = study.rank_clauses(
        np.random.default_rng(0), rank_cells(better + worse), 3, num_resamples=500
    )
    assert out["low"][3] < 0 < out["high"][3] and out["outcome"] == "inconclusive"
    assert not out["decided"] and out["supported"][:3].all()


def test_the_small_deviations_add_columns_after_the_eight_clauses():
    """The harm rank(s) − rank(1) of each ``mild`` scale, after the eight columns, which
    (and whose intervals) do not change; the conjunction stays that of the eight."""
    # grid (10, 1, 0.1; Glorot): 10 beats 1 in half of the cells
    values = [[0.2 + 0.7 * (i % 2), 0.5, -0.5, 0.3] for i in range(6)]
    plain = study.rank_clauses(np.random.default_rng(0), rank_cells(values), 3, num_resamples=500)
    out = study.rank_clauses(
        np.random.default_rng(0), rank_cells(values), 3, mild=(10.0,), num_resamples=500
    )
    for key in ("mean", "low", "high"):
        np.testing.assert_allclose(out[key][:8], plain[key])
    assert out["clauses"][8:] == ["mild 10", "mild 10"] and out["metrics"][8:] == ["LPPD", "RMSE"]
    np.testing.assert_allclose(out["mean"][8:], [0.0, 0.0])  # +1 and -1 in alternate cells
    assert out["low"][8] < 0 < out["high"][8] and out["outcome"] == plain["outcome"]


def test_rank_clauses_reject_grids_without_the_scales():
    cells = rank_cells([[0.2, 0.5, -0.5, 0.3]] * 2)
    with pytest.raises(ValueError, match="not in the cells' grid"):
        study.rank_clauses(np.random.default_rng(0), cells, 3, glorot=0.3)
    with pytest.raises(ValueError, match="must hold 1"):
        study.rank_clauses(np.random.default_rng(0), cells, 4)
    with pytest.raises(ValueError, match="not in the cells' grid"):
        study.rank_clauses(np.random.default_rng(0), cells, 3, mild=(0.5,))


def test_the_committed_cells_decide_the_rank_clauses_as_locked():
    """The 8 committed cells: scale 1 robust, 0.1 and 10 worse, no harm from 0.5 and 2, no
    evidence of benefit from the Glorot scale (and none that it is worse)."""
    full = profiles.settings("07_sampling_in_practice", "full")
    cells = study.committed_cells(full)
    if cells is None:
        pytest.skip("the committed cells of results/ch7_prior_scale/ are not all there")
    out = study.rank_clauses(
        np.random.default_rng([full.seed, 76]),
        cells,
        len(full.scales),
        glorot=full.glorot_scale,
        mild=full.mild_scales,
        num_resamples=full.n_boot_pairs,
    )
    assert out["n_cells"] == 8 and out["supported"][[0, 1, 2, 4, 5, 6]].all()
    # no evidence that the Glorot scale is beneficial, none that it is worse
    assert out["low"][3] < 0 < out["high"][3] and out["outcome"] == "inconclusive"
    assert (out["high"][[3, 7]] >= 0).all()
    assert (out["low"][8:] <= 0).all()  # no evidence of harm from 0.5 and 2
