"""Tests of the multi-file data sets of [MBNN]: Snelson, Banana, UCI classification."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bnn_posteriors.data import fetch as data_fetch
from bnn_posteriors.data import loaders as data

_ROW = (
    '[[file]]\nname = "a"\npath = "uci/a.data"\nsource = "{source}"\nremote = "data/a.data"\n'
    'rows = 3\ncols = 2\ntask = "{task}"\nsha256 = "00"\n'
)

SHARED = Path(
    os.environ.get(data.ENV_DATA) or Path(__file__).resolve().parents[3] / "shared" / "data"
)


@pytest.fixture
def shared(monkeypatch, tmp_path):
    if not (SHARED / "toy" / "banana" / "banana.csv").is_file():
        pytest.skip(f"shared toy data not found at {SHARED}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(data.ENV_DATA, str(SHARED))
    return SHARED


def test_registry_urls_and_hashes():
    for name in (*data.UCI_CLASSIFICATION, "snelson", "banana"):
        for info in data.dataset_files(name):
            assert info.name == name and len(info.sha256) == 64
            assert info.url.startswith(data.RAW_HOST)
            assert info.url.endswith(f"/data/{info.subdir.split('/', 1)[1]}/{info.filename}")
    assert [f.part for f in data.dataset_files("australian")] == [
        "x_train",
        "x_test",
        "y_train",
        "y_test",
    ]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('[[file]]\nname = "a"\n', "must have the keys"),
        (_ROW.format(source="nowhere", task="regression"), "unknown source"),
        (_ROW.format(source="s", task="ranking"), "task must be"),
        (_ROW.format(source="s", task="regression") * 2, "given twice"),
    ],
)
def test_registry_rejects_bad_rows(text, match):
    with pytest.raises(ValueError, match=match):
        data_fetch.parse_registry('[sources]\ns = "https://x"\n' + text)


def test_registry_parses_a_row():
    text = '[sources]\ns = "https://x/repo"\n' + _ROW.format(source="s", task="regression")
    (info,) = data_fetch.parse_registry(text)["a"]
    assert (info.subdir, info.filename, info.url) == ("uci", "a.data", "https://x/repo/data/a.data")
    assert (info.n_rows, info.n_cols, info.part, info.delimiter) == (3, 2, "", None)


def test_snelson_splits(shared):
    x_tr, y_tr, x_te, y_te = data.load_snelson()
    assert x_tr.shape == (150, 1) and y_tr.shape == (150,) and x_te.shape == (50, 1)
    x_tr, y_tr, x_te, y_te = data.load_snelson(in_between=True)
    assert len(x_tr) + len(x_te) == 200
    assert np.all((x_te >= 1.5) & (x_te <= 3.0))
    assert not np.any((x_tr >= 1.5) & (x_tr <= 3.0))


def test_banana(shared):
    x_tr, y_tr, x_va, y_va, x_te, y_te = data.load_banana()
    assert x_tr.shape == (265, 2) and set(np.unique(y_tr)) == {0, 1}
    n_all = len(data.load_banana(n_train=None)[0])  # sklearn: floor(0.7 * 5300) = 3709
    assert n_all == 3709 and len(x_va) + len(x_te) + n_all == 5300


@pytest.mark.parametrize("name", data.UCI_CLASSIFICATION)
def test_uci_classification(shared, name):
    x_tr, y_tr, x_va, y_va, x_te, y_te = data.load_uci_classification(name, seed=0)
    x, y = data.load_uci_classification_table(name)
    assert len(y_tr) + len(y_va) + len(y_te) == len(y) and len(y_tr) == int(0.7 * len(y))
    assert y.min() == 0 and np.issubdtype(y.dtype, np.integer)
    np.testing.assert_allclose(x_tr.mean(0), 0, atol=1e-10)
    assert x_tr.shape[1] == x.shape[1]


def test_corrupt_file_and_bad_names(shared, tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(SHARED / "toy", copy / "toy")
    target = copy / "toy" / "banana" / "banana.csv"
    target.chmod(0o644)
    target.write_text(target.read_text().replace("1", "2", 1))
    monkeypatch.setenv(data.ENV_DATA, str(copy))
    with pytest.raises(data.DataIntegrityError, match="sha256"):
        data.load_banana()
    with pytest.raises(ValueError, match="unknown"):
        data.load_uci_classification("iris", 0)
    with pytest.raises(ValueError, match="unknown data set 'iris'"):
        data.dataset_files("iris")
    with pytest.raises(ValueError, match="seed"):
        data.load_uci_classification("glass", -1)
