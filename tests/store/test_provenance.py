"""Tests of the one provenance record and the one JSON conversion."""

from __future__ import annotations

import json
import math
import subprocess

import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.store import committed as results
from bnn_posteriors.store import provenance


def test_git_commit_marks_a_modified_tree(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.txt").write_text("a")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    clean = provenance.git_commit(tmp_path)
    assert clean and not clean.endswith("+dirty")
    (tmp_path / "f.txt").write_text("b")
    provenance.git_commit.cache_clear()  # cached per process: one chapter run, one commit
    assert provenance.git_commit(tmp_path) == clean + "+dirty"
    assert provenance.git_commit(None) is None
    assert provenance.git_commit(tmp_path / "not-a-repo") is None


def test_provenance_parts():
    p = provenance.provenance()
    assert {"commit", "machine", "cpu_count", "date", "python", "jax", "jax_devices"} <= set(p)
    assert p["date"].endswith("+00:00") and provenance.now("microseconds").endswith("+00:00")
    assert "/" in provenance.host() and " " in provenance.host(" ")
    versions = provenance.versions()
    assert set(versions) == {"jax", "numpyro", "blackjax", "python"}
    assert provenance.versions(("no-such-package-xyz",))["no-such-package-xyz"] is None
    # one provenance: the result files and the claims use the same functions
    assert results.provenance is provenance.provenance
    assert claims.repo_root is provenance.repo_root
    assert (provenance.repo_root() / "_toc.yml").is_file()


def test_to_json_exact_keeps_every_number():
    tree = {"a": np.arange(3), "b": (np.float32(1.5), jnp.ones(2)), 3: float("nan"), "c": None}
    out = provenance.to_json(tree)
    assert out["a"] == [0, 1, 2] and out["b"] == [1.5, [1.0, 1.0]] and out["c"] is None
    assert math.isnan(out["3"])
    assert provenance.to_json(1 / 3) == 1 / 3 and provenance.to_json(np.float64(1 / 3)) == 1 / 3
    assert provenance.to_json(np.bool_(True)) is True
    json.dumps(out)


def test_to_json_rounded_is_strict_json():
    value = {"x": 1 / 3, "y": [np.nan, np.inf, -np.inf], "z": np.int64(7), "w": 1 + 2j}
    out = provenance.to_json(value, 6)
    assert out == {"x": 0.333333, "y": ["NaN", "Infinity", "-Infinity"], "z": 7, "w": [1.0, 2.0]}
    assert provenance.to_json(object(), 6).startswith("<object")
    json.dumps(out, allow_nan=False)
    assert claims.to_json(1 / 3) == 0.333333
    with pytest.raises(ValueError, match="significant"):
        provenance.to_json(1.0, 0)


def test_from_json_reads_the_non_finite_strings_of_to_json_back():
    written = provenance.to_json([1.5, float("nan"), float("inf"), -float("inf")], 6)
    assert written == [1.5, "NaN", "Infinity", "-Infinity"]
    back = provenance.from_json(written)
    assert back[0] == 1.5 and math.isnan(back[1]) and back[2:] == [math.inf, -math.inf]
    assert provenance.from_json("C1.1") == "C1.1" and provenance.from_json(None) is None
