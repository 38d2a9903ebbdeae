import json

import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.store import committed as results


def test_provenance_names_commit_machine_and_date():
    p = results.provenance()
    assert {"commit", "machine", "cpu_count", "date", "python", "jax", "jax_devices"} <= set(p)
    assert p["date"].endswith("+00:00")


def test_results_dir_is_in_the_checkout():
    assert results.results_dir().name == "results"
    assert (results.results_dir().parent / "_toc.yml").is_file()


def test_plain_is_the_exact_json_conversion():
    tree = {"a": np.arange(3), "b": (np.float32(1.5), jnp.ones(2)), 3: float("nan")}
    out = results.plain(tree)
    assert out["a"] == [0, 1, 2] and out["b"] == [1.5, [1.0, 1.0]]
    assert np.isnan(out["3"])
    json.dumps(out)


def test_write_and_read_json(tmp_path):
    path = results.write_json(
        tmp_path / "sub" / "r.json", {"nll": np.float64(0.25)}, profile="full"
    )
    record = results.read_json(path)
    assert record["nll"] == 0.25 and record["profile"] == "full"
    assert "commit" in record["provenance"]
    with pytest.raises(TypeError, match="mapping"):
        results.write_json(tmp_path / "x.json", [1, 2], profile="full")


def test_read_json_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="full profile"):
        results.read_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"nll": 1}')
    with pytest.raises(ValueError, match="provenance"):
        results.read_json(bad)


def test_write_json_is_atomic_and_plain(tmp_path):
    path = results.write_json(
        tmp_path / "sub" / "r.json", {"a": np.arange(2), "b": np.nan}, profile=None
    )
    record = json.loads(path.read_text())
    assert record["a"] == [0, 1] and np.isnan(record["b"]) and record["profile"] is None
    assert path.read_text().startswith('{\n "a"')  # indent 1
    assert not list(tmp_path.glob("sub/*.tmp"))
