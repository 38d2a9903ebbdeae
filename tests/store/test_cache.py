from functools import partial

import numpy as np
import pytest

from bnn_posteriors.store import cache, provenance


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_cache_dir_env_takes_precedence(tmp_cache):
    assert cache.cache_dir() == tmp_cache


def test_cache_dir_default_is_in_the_checkout(monkeypatch):
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    assert cache.cache_dir().parts[-2:] == ("_build", "cache")
    assert cache.cache_dir().parent.parent == provenance.repo_root()


def test_cache_location_decodes_the_cache_argument(tmp_cache, tmp_path):
    assert cache.cache_location(False) is None and cache.cache_location(None) is None
    assert cache.cache_location(True) == tmp_cache
    assert cache.cache_location(tmp_path / "units") == tmp_path / "units"
    assert cache.cache_location(str(tmp_path)) == tmp_path
    with pytest.raises(ValueError, match="empty"):
        cache.cache_location("")
    with pytest.raises(TypeError, match="True, False or a folder"):
        cache.cache_location(1)


def test_code_version_is_a_stable_hex_digest():
    assert cache.code_version() == cache.code_version()
    assert len(cache.code_version()) == 16
    int(cache.code_version(), 16)


def test_function_name_names_a_partial_with_its_arguments():
    assert cache.function_name(np.mean) == {"func": "numpy.mean"}
    named = cache.function_name(partial(np.sum, axis=0))
    assert named == {"func": {"func": "numpy.sum"}, "args": [], "keywords": {"axis": 0}}
    assert named != cache.function_name(partial(np.sum, axis=1))


def test_fingerprint_hashes_arrays_and_keeps_scalars():
    a = np.arange(6.0).reshape(2, 3)
    fp = cache.fingerprint({"b": 1, "a": a, "c": (0.5, "x", None)})
    assert list(fp) == ["a", "b", "c"]
    assert fp["a"]["shape"] == [2, 3] and fp["a"]["dtype"] == "float64"
    assert fp["c"] == [0.5, "x", None]
    assert cache.fingerprint(np.float32(2.0)) == 2.0
    assert cache.fingerprint(a) != cache.fingerprint(a + 1)
    assert cache.fingerprint(a) != cache.fingerprint(a.astype(np.float32))
    with pytest.raises(TypeError, match="cannot fingerprint"):
        cache.fingerprint(object())


def test_key_data_of_typed_and_raw_keys():
    import jax

    raw = jax.random.PRNGKey(3)
    np.testing.assert_array_equal(cache.key_data(raw), np.asarray(raw))
    np.testing.assert_array_equal(cache.key_data(jax.random.key(3)), np.asarray(raw))
    assert cache.key_data(jax.random.split(jax.random.key(3), 4)).shape == (4, 2)


def test_computation_version_tags_declared_and_fallback_versions():
    assert cache.computation_version("mile-1") == "v:mile-1"
    assert cache.computation_version(None) == f"code:{cache.code_version()}"
    with pytest.raises(ValueError, match="non-empty"):
        cache.computation_version("  ")
    with pytest.raises(TypeError, match="version must be a string"):
        cache.computation_version(1)


def test_unit_key_depends_on_inputs_and_version_not_on_the_source(monkeypatch):
    parts = {"seed": 1, "x": np.ones(3)}
    key = cache.unit_key("chain", parts, "chain-1")
    # a docstring edit changes the package's source SHA: a versioned key stays
    monkeypatch.setattr(cache, "code_version", lambda: "0123456789abcdef")
    assert cache.unit_key("chain", parts, "chain-1") == key
    # a new version of the computation or different inputs give a new key
    assert cache.unit_key("chain", parts, "chain-2") != key
    assert cache.unit_key("chain", {"seed": 2, "x": np.ones(3)}, "chain-1") != key
    assert cache.unit_key("chain", {"seed": 1, "x": np.zeros(3)}, "chain-1") != key
    # no declared version: the key follows the source (the safe fallback)
    fallback = cache.unit_key("chain", parts)
    monkeypatch.setattr(cache, "code_version", lambda: "fedcba9876543210")
    assert cache.unit_key("chain", parts) != fallback
    assert cache.unit_key("chain", parts, "chain-1") == key


def test_cached_with_a_version_survives_source_edits(tmp_cache, monkeypatch):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(2.0)}

    cache.cached("unit", {"seed": 0}, compute, version="unit-1")
    monkeypatch.setattr(cache, "code_version", lambda: "0123456789abcdef")
    cache.cached("unit", {"seed": 0}, compute, version="unit-1")
    assert len(calls) == 1 and cache.is_cached("unit", {"seed": 0}, version="unit-1")
    assert not cache.is_cached("unit", {"seed": 0}, version="unit-2")
    assert not cache.is_cached("unit", {"seed": 0})  # the unversioned unit is another unit
    cache.cached("unit", {"seed": 0}, compute, version="unit-2")
    assert len(calls) == 2
    path = cache.unit_path("unit", {"seed": 0}, version="unit-2")
    assert path.exists() and path != cache.unit_path("unit", {"seed": 0}, version="unit-1")


def test_unit_key_depends_on_name_and_parts():
    parts = {"seed": 1, "x": np.ones(3)}
    key = cache.unit_key("chain", parts)
    assert key == cache.unit_key("chain", {"x": np.ones(3), "seed": 1})
    assert key != cache.unit_key("chain", {"seed": 2, "x": np.ones(3)})
    assert key != cache.unit_key("member", parts)
    with pytest.raises(ValueError, match="unit name"):
        cache.unit_key("a/b", parts)
    with pytest.raises(TypeError, match="parts must be a dict"):
        cache.unit_key("chain", [1, 2])


def test_save_load_round_trip(tmp_path):
    tree = {
        "params": [{"W": np.ones((2, 3)), "b": np.zeros(3)}, {"W": np.arange(3.0)}],
        "pair": (np.int32(3), 2.5),
        "name": "airfoil",
        "none": None,
        "flag": True,
    }
    path = cache.save(tmp_path / "u.npz", tree)
    back = cache.load(path)
    np.testing.assert_array_equal(back["params"][0]["W"], tree["params"][0]["W"])
    np.testing.assert_array_equal(back["params"][1]["W"], tree["params"][1]["W"])
    assert back["pair"] == (3, 2.5) and isinstance(back["pair"], tuple)
    assert back["name"] == "airfoil" and back["none"] is None and back["flag"] is True
    with pytest.raises(TypeError, match="cannot cache"):
        cache.save(tmp_path / "v.npz", {"f": object()})
    with pytest.raises(TypeError, match="keys"):
        cache.save(tmp_path / "w.npz", {1: np.ones(1)})


def test_cached_computes_once(tmp_cache):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(4.0)}

    first = cache.cached("unit", {"seed": 0}, compute)
    second = cache.cached("unit", {"seed": 0}, compute)
    assert len(calls) == 1
    np.testing.assert_array_equal(first["x"], second["x"])
    assert cache.is_cached("unit", {"seed": 0})
    assert not cache.is_cached("unit", {"seed": 1})
    cache.cached("unit", {"seed": 1}, compute)
    assert len(calls) == 2


def test_corrupt_or_unfinished_unit_is_recomputed(tmp_cache):
    calls = []

    def compute():
        calls.append(1)
        return np.arange(3.0)

    cache.cached("unit", {}, compute)
    path = cache.unit_path("unit", {})
    path.write_bytes(path.read_bytes()[:-7] + b"garbage")
    assert not cache.is_cached("unit", {})
    with pytest.warns(cache.CacheWarning, match="checksum"):
        np.testing.assert_array_equal(cache.cached("unit", {}, compute), np.arange(3.0))
    assert len(calls) == 2
    path.with_name(path.name + ".sha256").unlink()
    with pytest.warns(cache.CacheWarning, match="no checksum"):
        cache.cached("unit", {}, compute)
    assert len(calls) == 3
    assert cache.is_cached("unit", {})


def test_cached_rejects_non_callables(tmp_cache):
    with pytest.raises(TypeError, match="callable"):
        cache.cached("unit", {}, 3)


def test_explicit_directory(tmp_path):
    cache.cached("unit", {"a": 1}, lambda: {"y": 1.0}, directory=tmp_path / "d")
    assert cache.is_cached("unit", {"a": 1}, directory=tmp_path / "d")
    assert cache.unit_path("unit", {"a": 1}, tmp_path / "d").parent == tmp_path / "d" / "unit"
