import json

import numpy as np
import pytest

from bnn_posteriors.store import committed, parts


def test_part_path_names_a_json_file_and_checks_the_name(tmp_path):
    assert parts.part_path(tmp_path, "airfoil_split1_mile") == tmp_path / "airfoil_split1_mile.json"
    assert parts.part_path(str(tmp_path), "seed7_chains2.x").name == "seed7_chains2.x.json"
    for bad in ("", "a/b", "a b", None):
        with pytest.raises(ValueError, match="part name"):
            parts.part_path(tmp_path, bad)


def test_committed_dir_is_a_folder_of_results_or_none():
    assert parts.committed_dir(None) is None
    assert parts.committed_dir("ch8_benchmark") == committed.results_dir() / "ch8_benchmark"
    with pytest.raises(ValueError, match="non-empty"):
        parts.committed_dir(" ")


def test_read_part_reads_only_equal_settings(tmp_path):
    path = tmp_path / "part.json"
    assert parts.read_part(path, {"a": 1}) is None  # no file
    with pytest.raises(FileNotFoundError, match="no result file"):
        parts.read_part(path, required=True)
    parts.write_part(path, {"value": 2.5}, {"a": 1}, profile="full")
    assert parts.read_part(path, {"a": 1})["value"] == 2.5
    assert parts.read_part(path, {"a": 2}) is None
    assert parts.read_part(path, {"a": 2}, required=True) is None  # there, other settings
    assert parts.read_part(path)["settings"] == {"a": 1}  # no settings: read as it is
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a result file"):
        parts.read_part(tmp_path / "bad.json", {"a": 1})


def test_write_part_stores_settings_profile_and_provenance(tmp_path):
    path = parts.write_part(
        tmp_path / "sub" / "p.json", {"x": np.arange(2)}, {"seed": 3}, profile="quick"
    )
    record = json.loads(path.read_text())
    assert record["x"] == [0, 1] and record["settings"] == {"seed": 3}
    assert record["profile"] == "quick" and "commit" in record["provenance"]
    # a payload that holds its settings keeps them in place; other settings are an error
    parts.write_part(path, {"settings": {"seed": 3}, "x": 1}, {"seed": 3}, profile=None)
    assert list(json.loads(path.read_text()))[:2] == ["settings", "x"]
    with pytest.raises(ValueError, match="other settings"):
        parts.write_part(path, {"settings": {"seed": 4}}, {"seed": 3}, profile=None)
    with pytest.raises(TypeError, match="mapping"):
        parts.write_part(path, [1], {"seed": 3}, profile=None)
    with pytest.raises(TypeError, match="settings must be a mapping"):
        parts.write_part(path, {"x": 1}, None, profile=None)


def test_resumed_part_reads_a_matching_part_and_computes_otherwise(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"value": len(calls)}

    path = tmp_path / "p.json"
    first = parts.resumed_part(path, {"a": 1}, compute, profile="full")
    assert first == {"value": 1, "read": False} and len(calls) == 1
    assert "read" not in json.loads(path.read_text())  # the mark is not written
    again = parts.resumed_part(path, {"a": 1}, compute, profile="full")
    assert again["read"] and again["value"] == 1 and len(calls) == 1
    other = parts.resumed_part(path, {"a": 2}, compute, profile="full")  # settings changed
    assert other == {"value": 2, "read": False}
    assert parts.read_part(path, {"a": 2})["value"] == 2
    forced = parts.resumed_part(path, {"a": 2}, compute, profile=None, reuse=False)
    assert forced["value"] == 3
    # no path: computed, nothing written; a compute that sets the mark keeps it
    own = parts.resumed_part(
        None, {"a": 1}, lambda: {"v": 0, "cached": True}, profile=None, mark="cached"
    )
    assert own == {"v": 0, "cached": True}
    with pytest.raises(TypeError, match="callable"):
        parts.resumed_part(path, {"a": 1}, None, profile=None)


def test_committed_parts_are_all_the_parts_or_none(tmp_path):
    named = {"one": {"seed": 1}, "two": {"seed": 2}}
    assert parts.committed_parts(None, named) is None
    assert parts.committed_parts(tmp_path, named) is None  # none yet
    parts.write_part(parts.part_path(tmp_path, "one"), {"v": 1}, {"seed": 1}, profile="full")
    assert parts.committed_parts(tmp_path, named) is None  # one of two
    parts.write_part(parts.part_path(tmp_path, "two"), {"v": 2}, {"seed": 9}, profile="full")
    assert parts.committed_parts(tmp_path, named) is None  # two has other settings
    parts.write_part(parts.part_path(tmp_path, "two"), {"v": 2}, {"seed": 2}, profile="full")
    assert [p["v"] for p in parts.committed_parts(tmp_path, named)] == [1, 2]
    assert parts.committed_parts(tmp_path, {}) == []
