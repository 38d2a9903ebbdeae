"""Tests of ``bnn-posteriors scores``: one real scored part against a committed reference,
read back by a second run, and a clear error for an unknown method."""

from __future__ import annotations

import json

import pytest

from bnn_posteriors.cli.main import main


@pytest.mark.slow
def test_scores_writes_a_part_and_resumes(tmp_path, capsys):
    argv = [
        "scores",
        "--profile",
        "quick",
        "--problems",
        "banana",
        "--methods",
        "MAP",
        "--seeds",
        "0",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    assert "[1/1] banana · MAP · seed 0: computed" in capsys.readouterr().out
    (part,) = tmp_path.glob("*.json")
    record = json.loads(part.read_text())
    assert part.name == "banana__map__s0.json" and record["applies"]
    assert 0.5 < record["agreement"] <= 1 and 0 <= record["total_variation"] < 0.5
    assert main(argv) == 0
    assert "seed 0: read" in capsys.readouterr().out


def test_scores_rejects_an_unknown_method(capsys):
    assert main(["scores", "--profile", "quick", "--methods", "HMC"]) == 2
    assert "unknown methods ['HMC']" in capsys.readouterr().err


def test_scores_names_an_unknown_problem(capsys):
    # once a FileNotFoundError traceback from the reference store
    assert main(["scores", "--profile", "quick", "--problems", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown reference problem 'nope'" in err and "snelson_gap" in err
