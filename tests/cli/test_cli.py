"""Tests of the bnn-posteriors command line (bnn_posteriors.cli.main)."""

from __future__ import annotations

import json

import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.cli import main as cli

CHAPTER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A tiny chapter

```{code-cell} ipython3
import os
print(1 + 1, os.environ["BNN_PROFILE"], os.environ.get("BNN_SEED"))
```
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Records go to tmp_path (no committed ones); profile and seed come from the arguments."""
    monkeypatch.setenv("BNN_CLAIMS_DIR", str(tmp_path / "claims"))
    monkeypatch.setattr(claims, "committed_claims_dir", lambda: None)
    monkeypatch.delenv("BNN_PROFILE", raising=False)
    monkeypatch.delenv("BNN_SEED", raising=False)


def test_claims_prints_a_table(capsys, catalogue_rules):
    catalogue_rules({"C1.1": [{"part": "p", "rule": "true"}]})
    claims.check("C1.1", True)
    assert cli.main(["claims"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["claim", "quick", "full"]
    assert any(line.startswith("C1.1   reproduced") for line in lines)
    assert any(line.startswith("C8.3 ") for line in lines)
    assert "quick: 1 reproduced" in out
    assert max(len(line) for line in lines) <= cli.WIDTH


def test_claims_one_profile(capsys):
    assert cli.main(["claims", "--profile", "full"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:2] == ["claim", "full"]
    assert "quick:" not in out and "full: 0 reproduced" in out


def test_claims_unknown_profile(capsys):
    assert cli.main(["claims", "--profile", "nope"]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_claims_unknown_profile_in_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("BNN_PROFILE", "bogus")
    assert cli.main(["claims"]) == 2
    assert "'bogus'" in capsys.readouterr().err


def test_run_missing_file(tmp_path, capsys):
    assert cli.main(["run", str(tmp_path / "missing.md")]) == 2
    assert "missing.md" in capsys.readouterr().err


def test_run_unknown_profile(tmp_path, capsys):
    chapter = tmp_path / "chapter.md"
    chapter.write_text(CHAPTER)
    assert cli.main(["run", str(chapter), "--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and "quick" in err


@pytest.mark.slow
def test_run_executes_a_chapter(tmp_path, capsys):
    chapter = tmp_path / "chapter.md"
    chapter.write_text(CHAPTER)
    out = tmp_path / "executed"
    code = cli.main(["run", str(chapter), "--profile", "full", "--seed", "5", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    target = out / "full" / "chapter.ipynb"
    assert str(target) in capsys.readouterr().out
    notebook = json.loads(target.read_text())
    (cell,) = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert "".join(cell["outputs"][0]["text"]).strip() == "2 full 5"


def test_run_failing_cell(tmp_path, capsys):
    chapter = tmp_path / "broken.md"
    chapter.write_text(CHAPTER.replace("print(1 + 1", "raise RuntimeError('boom'); print(1"))
    assert cli.main(["run", str(chapter), "--out", str(tmp_path / "executed")]) == 1
    assert "boom" in capsys.readouterr().err
    assert (tmp_path / "executed" / "quick" / "broken.ipynb").is_file()


def test_benchmark_writes_one_result_per_unit(tmp_path, monkeypatch, capsys):
    """The benchmark sub-command on a tiny fake unit: progress, JSON files, resumable."""
    from bnn_posteriors.store import cache
    from bnn_posteriors.studies.ch08_benchmarks import run as benchmark

    calls = []

    def fake(key, split, s):
        calls.append(1)
        return {"laplace": {"lppd": 0.5, "rmse": 0.2}}

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    import numpy as np

    z = np.zeros((2, 1))
    split = benchmark.data.Split(
        "fake", "full", z, z[:, 0], z, z[:, 0], z, z[:, 0], np.zeros(1), np.ones(1), 0.0, 1.0, {}
    )
    monkeypatch.setattr(benchmark.data, "load_split", lambda name, seed, n_max=None: split)
    monkeypatch.setitem(benchmark._COMPUTE, "laplace", fake)
    monkeypatch.setattr(benchmark, "_unit_key", lambda *a: None)
    out = tmp_path / "results"
    argv = [
        "benchmark",
        "--datasets",
        "airfoil",
        "energy",
        "--splits",
        "1",
        "--units",
        "laplace",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "airfoil" in text and "(computed)" in text and "2 units" in text
    assert sorted(p.name for p in out.glob("*.json")) == [
        "airfoil_split1_laplace.json",
        "energy_split1_laplace.json",
    ]
    assert json.loads((out / "energy_split1_laplace.json").read_text())["profile"] == "quick"
    assert cli.main(argv) == 0 and len(calls) == 2  # second run reads the cache
    assert "(cached)" in capsys.readouterr().out
    assert cli.main(["benchmark", "--units", "nuts", "--out", str(out)]) == 2


def test_run_refuses_a_chapter_of_another_checkout(tmp_path, capsys):
    # an editable install imports one checkout: a chapter of a second worktree would run that
    # checkout's code and record that checkout's commit
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    chapter = tmp_path / "book" / "chapter.md"
    chapter.parent.mkdir()
    chapter.write_text(CHAPTER)
    assert cli.main(["run", str(chapter)]) == 2
    err = capsys.readouterr().err
    assert f"belongs to the book at {tmp_path.resolve()}" in err
    assert f"PYTHONPATH={tmp_path.resolve() / 'src'}" in err
    from bnn_posteriors.site import execute

    assert execute.foreign_book(execute.repo_root() / "book" / "01_narrow_networks.md") is None
