"""Tests of the committed reference files: round trip, provenance, and the hash check."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnn_posteriors.store import reference as ref

ARRAYS = {"test_f": np.arange(12, dtype=np.float32).reshape(2, 3, 2), "test_y": np.arange(2)}


def test_round_trip_keeps_arrays_record_and_provenance(tmp_path):
    path = ref.write_reference("toy", ARRAYS, {"wall_s": 1.5}, profile="quick", directory=tmp_path)
    assert path == tmp_path / "toy.json" and (tmp_path / "toy.npz").is_file()
    arrays, record = ref.read_reference("toy", tmp_path)
    assert set(arrays) == set(ARRAYS)
    for k, v in ARRAYS.items():
        np.testing.assert_array_equal(arrays[k], v)
        assert arrays[k].dtype == v.dtype
    assert record["wall_s"] == 1.5 and record["profile"] == "quick"
    assert {"commit", "date", "machine"} <= set(record["provenance"])
    assert record["sha256"] == ref.arrays_sha256(ARRAYS)


def test_hash_depends_on_values_dtype_shape_and_names():
    base = ref.arrays_sha256(ARRAYS)
    changed = [
        {**ARRAYS, "test_y": np.array([0, 2])},
        {**ARRAYS, "test_y": np.arange(2, dtype=np.int32)},
        {**ARRAYS, "test_f": ARRAYS["test_f"].reshape(3, 2, 2)},
        {"grid_f": ARRAYS["test_f"], "test_y": ARRAYS["test_y"]},
    ]
    assert len({base, *(ref.arrays_sha256(a) for a in changed)}) == 5


def test_changed_arrays_raise(tmp_path):
    ref.write_reference("toy", ARRAYS, {}, profile=None, directory=tmp_path)
    np.savez_compressed(tmp_path / "toy.npz", **{**ARRAYS, "test_y": np.array([0, 7])})
    with pytest.raises(ref.ReferenceIntegrityError, match="toy.npz have sha256 .* but"):
        ref.read_reference("toy", tmp_path)


def test_changed_record_hash_raises(tmp_path):
    meta = ref.write_reference("toy", ARRAYS, {}, profile=None, directory=tmp_path)
    record = json.loads(meta.read_text())
    record["sha256"] = "0" * 64
    meta.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="the file changed since the run"):
        ref.read_reference("toy", tmp_path)


def test_missing_files_and_bad_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="no result file"):
        ref.read_reference("toy", tmp_path)
    ref.write_reference("toy", ARRAYS, {}, profile=None, directory=tmp_path)
    (tmp_path / "toy.npz").unlink()
    with pytest.raises(FileNotFoundError, match="no reference arrays"):
        ref.read_reference("toy", tmp_path)
    with pytest.raises(ValueError, match="plain file stem"):
        ref.write_reference("../x", ARRAYS, {}, profile=None, directory=tmp_path)
    with pytest.raises(ValueError, match="no arrays"):
        ref.write_reference("toy", {}, {}, profile=None, directory=tmp_path)


def test_reference_dir_is_under_results():
    assert ref.reference_dir().parts[-2:] == ("results", "reference")
