"""Tests of chapter 10's tables and figures on synthetic references and scored parts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bnn_posteriors.models.numpyro_models import MLP  # noqa: E402
from bnn_posteriors.store import reference as store  # noqa: E402
from bnn_posteriors.studies.ch10_reference_posteriors import (  # noqa: E402
    evidence,
    figures,
    problems,
    report,
)

AXIS = np.linspace(-1, 1, 3, dtype=np.float32)
GRID2 = np.stack(np.meshgrid(AXIS, AXIS), axis=-1).reshape(-1, 2)
GRID1 = np.linspace(-1, 1, 7, dtype=np.float32)[:, None]


def _problem_1d() -> problems.Problem:
    x = np.linspace(-1, 1, 6, dtype=np.float32)[:, None]
    return problems.Problem(
        "r1", "1-D", MLP((1, 3, 1), activation="tanh"), x, x[:, 0], x[:2], x[:2, 0], GRID1
    )


def _problem_2d() -> problems.Problem:
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1], np.int32)
    spec = MLP((2, 3, 2), likelihood="categorical", activation="tanh")
    return problems.Problem("c2", "2-D", spec, GRID2, y, GRID2[:4], y[:4], GRID2)


def _record(widths, mixed):
    return {
        "model": {"widths": list(widths)},
        "wall_s": 12.0,
        "settings": {"num_chains": 2, "num_samples": 10, "num_kept": 5},
        "stats": {"divergences": [1, 2], "mean_num_steps": [3.0, 5.0]},
        "mixing": {
            "test": {
                "mixed": mixed,
                "max_rhat": 1.2 if not mixed else 1.001,
                "min_ess": 50.0,
                "reasons": [] if mixed else ["max_rhat 1.2 > 1.01"],
            }
        },
    }


@pytest.fixture
def refs(tmp_path, monkeypatch):
    monkeypatch.setitem(problems.PROBLEMS, "r1", _problem_1d)
    monkeypatch.setitem(problems.PROBLEMS, "c2", _problem_2d)
    rng = np.random.default_rng(0)
    r1 = {
        "test_f": rng.normal(size=(2, 5, 2)),
        "test_noise_scale": np.full((2, 5), 0.1),
        "grid_x": GRID1,
        "grid_f": rng.normal(size=(2, 5, 7)),
        "grid_noise_scale": np.full((2, 5), 0.1),
    }
    p = rng.dirichlet([1, 1], size=(2, 5, 9))
    c2 = {"test_probs": p[:, :, :4], "grid_x": GRID2, "grid_probs": p}
    store.write_reference("r1", r1, _record((1, 3, 1), True), profile="quick", directory=tmp_path)
    store.write_reference("c2", c2, _record((2, 3, 2), False), profile="quick", directory=tmp_path)
    return tmp_path, {"r1": r1, "c2": c2}


def _rows():
    rows = []
    for s in range(3):
        for m, d in (("MAP", 0.5), ("MFVI", 0.2)):
            rows.append(
                {
                    "applies": True,
                    "w2": d + 0.01 * s,
                    "ks": d / 2,
                    "lppd": -1.0,
                    "rmse": 0.3,
                    "flops": 1e9,
                    "grid": {"mean": [0.0] * 7, "sd": [1.0] * 7},
                    "settings": {"problem": "r1", "method": m, "seed": s},
                }
            )
            rows.append(
                {
                    "applies": True,
                    "total_variation": d / 5,
                    "agreement": 0.9,
                    "lppd": -0.5,
                    "accuracy": 0.8,
                    "ece": 0.05,
                    "flops": 2e9,
                    "grid": {"probs1": [0.5] * 9},
                    "settings": {"problem": "c2", "method": m, "seed": s},
                }
            )
        rows.append(
            {
                "applies": False,
                "reason": "needs one hidden layer",
                "settings": {"problem": "r1", "method": "symmetrised VI", "seed": s},
            }
        )
    return rows


def test_mixing_table(refs):
    tmp, _ = refs
    table = report.mixing_table(["r1", "c2"], {"r1": {"w2": 0.03, "w2_sd": 0.004}}, tmp)
    lines = table.splitlines()
    assert (
        len(lines) == 4
        and "| r1 | 1–3–1 | 2 × 10 (keep 5) | 1.001 | 50 | yes | 3 | 4 | 12 | W2 0.030 ± 0.004 |"
        in table
    )
    assert "no: max_rhat 1.2 > 1.01" in lines[3] and lines[3].endswith("| – |")


def test_family_table_says_whether_the_second_reference_lies_within_the_floor(refs):
    tmp, arrays = refs
    good = _record((1, 3, 1), True)
    good["settings"] = {"num_chains": 2, "num_kept": 5}
    good["mixing"]["test"]["min_ess"] = 500.0  # today's rule: ESS ≥ 400, R-hat ≤ its bound
    for name in ("r1", "r1__mams"):
        store.write_reference(name, arrays["r1"], good, profile="quick", directory=tmp)
    near = {"w2": 0.031, "w2_sd": 0.01, "floor_w2": 0.03, "floor_w2_q95": 0.05}
    table = report.family_table({("r1", "mams"): near}, tmp)
    row = "| r1 | mams (MAMS) | yes | 4 | W2 0.0310 ± 0.0100 | 0.0300 | 0.0500 | yes | – |"
    assert row in table
    joint = near | {"energy": 0.0012, "floor_energy_q95": 0.0021}
    assert "| yes | 0.0012 (0.0021) |" in report.family_table({("r1", "mams"): joint}, tmp)
    assert evidence.within_floor(near) and not evidence.within_floor(near | {"w2": 0.06})
    with pytest.raises(ValueError, match="no reference by nuts_dense"):
        report.family_table({("r1", "nuts_dense"): near}, tmp)
    assert evidence.validated("r1", {"mams": near}, tmp) == {"validated": True, "reasons": []}
    assert evidence.validated("r1", {"mams": near | {"w2": 0.06}}, tmp)["reasons"] == [
        "the mams reference lies outside the floor"
    ]
    assert evidence.validated("c2", {}, tmp)["reasons"] == [
        "the NUTS chains did not mix",
        "no reference of a second sampler family",
    ]


def test_leaderboard_table_orders_by_distance():
    rows = _rows()
    table = report.leaderboard_table(
        rows, "r1", {"w2": 0.03, "ks": 0.02, "lppd": -0.9, "rmse": 0.3}, missing=["r1__x__s0"]
    )
    body = table.splitlines()
    assert body[2].startswith("| MFVI | 0.210 [") and body[3].startswith("| MAP |")
    assert (
        "does not apply: needs one hidden layer" in table and "*reference (half vs half)*" in table
    )
    assert table.endswith("1 parts of r1 still to run.")
    assert "W1 ↓" in body[0] and "energy ↓" in body[0]
    assert body[2].split(" | ")[4] == "–"  # no energy in the parts: left blank
    assert "TV ↓" in report.leaderboard_table(
        rows, "c2"
    ) and "No scored part" in report.leaderboard_table(rows, "zz")
    # compact: the distance keeps its interval, every other metric shows its mean alone
    compact = report.leaderboard_table(rows, "r1", {"w2": 0.03}, compact=True).splitlines()
    assert compact[0] == table.splitlines()[0].removesuffix(" seeds |")  # seeds said once
    first = compact[2].split(" | ")
    assert first[1].count("[") == 1 and all("[" not in cell for cell in first[2:])
    assert len({line.count("|") for line in compact if line.startswith("|")}) == 1
    seeds = {r["settings"]["seed"] for r in rows if r["settings"]["problem"] == "r1"}
    assert compact[-1] == f"Each method over {len(seeds)} seeds."


@pytest.mark.filterwarnings("error")  # a warning would land in the chapter's output as stderr
def test_figures(refs):
    _, arrays = refs
    rows = _rows()
    fig = figures.fidelity_vs_cost(rows, ["r1", "c2"], {"r1": {"w2": 0.03}})
    assert len(fig.axes) == 2 and fig.axes[0].get_xscale() == "log"
    plt.close(fig)
    # wrapped: three problems two a row leave the last panel empty and hidden
    fig = figures.fidelity_vs_cost(rows, ["r1", "c2", "zz"], {}, columns=2)
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert len(fig.axes) == 4 and titles == ["r1", "c2", "zz: no scored parts"]
    plt.close(fig)
    fig = figures.regression_bands(
        arrays["r1"], rows, "r1", ["MAP", "MFVI", "NUTS"], seed=0, ncols=2
    )
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["MAP", "MFVI"]
    plt.close(fig)
    fig = figures.probability_maps(arrays["c2"], rows, "c2", ["MFVI"], seed=1)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["reference", "MFVI"]
    plt.close(fig)
    with pytest.raises(ValueError, match="not square"):
        figures.probability_maps(
            {
                **arrays["c2"],
                "grid_x": GRID2[:8],
                "grid_probs": arrays["c2"]["grid_probs"][:, :, :8],
            },
            rows,
            "c2",
            ["MFVI"],
            seed=1,
        )


def test_ranking_orders_the_methods_by_mean_distance():
    rows = _rows()
    assert report.ranking(rows, ["r1", "c2", "zz"]) == {
        "r1": ["MFVI", "MAP"],
        "c2": ["MFVI", "MAP"],
        "zz": [],
    }


def test_live_table_sits_beside_the_committed_mean():
    rows = _rows()
    live = [
        dict(rows[0], w2=0.7),
        {**rows[1], "settings": {**rows[1]["settings"], "method": "new"}},
    ]
    table = report.live_table(live, rows, "quick")
    assert (
        "| r1 | MAP | W2 ↓ | 0.700 | 0.510 |" in table
        and "| c2 | new | TV ↓ | 0.100 | – |" in table
    )
