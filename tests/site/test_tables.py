"""Tests of the small Markdown table renderer."""

from __future__ import annotations

import pytest

from bnn_posteriors.site import tables


def test_markdown_table_layout_and_escaping():
    text = tables.markdown_table(["a", "b|c"], [[1, "x\ny"], ["|", 2.5]])
    assert text == "| a | b\\|c |\n|---|---|\n| 1 | x y |\n| \\| | 2.5 |\n"
    aligned = tables.markdown_table(["a", "b", "c"], [], align="lrc")
    assert aligned.splitlines()[1] == "|:--|--:|:-:|"


def test_markdown_table_rejects_bad_shapes():
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        tables.markdown_table(["a", "b"], [[1]])
    with pytest.raises(ValueError, match="align"):
        tables.markdown_table(["a", "b"], [], align="l")
    with pytest.raises(ValueError, match="at least one column"):
        tables.markdown_table([], [])


def test_number_and_pm():
    assert tables.number(None) == "—" and tables.number(float("nan")) == "—"
    assert tables.number(0.12345, ".3g") == "0.123"
    assert tables.pm((1.0, 0.25, 3)) == "1.000 ± 0.250"
    assert tables.pm((1.0, float("nan"), 1)) == "1.000"


def test_number_list():
    assert tables.number_list([0.12345, -1.0], "+.2f") == "+0.12, -1.00"
    assert tables.number_list([1.0, float("nan")]) == "1.000, —"
    assert tables.number_list([]) == ""


def test_glue_values_glues_python_numbers(monkeypatch):
    import myst_nb
    import numpy as np

    calls = []
    monkeypatch.setattr(
        myst_nb, "glue", lambda name, value, display: calls.append((name, value, display))
    )
    tables.glue_values({"a": np.float64(0.5), "b": np.int64(3), "c": "text"})
    assert calls == [("a", 0.5, False), ("b", 3, False), ("c", "text", False)]
    assert type(calls[0][1]) is float and type(calls[1][1]) is int


def test_overview_glues_its_values_and_displays_its_table(monkeypatch):
    import IPython.display
    import myst_nb

    glued, shown = [], []
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.append((name, value)))
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj.data))
    tables.Overview("| a |\n|---|\n| 1 |", {"n": 3}).show()
    assert glued == [("n", 3)] and shown == ["| a |\n|---|\n| 1 |"]
    tables.Overview(None, {"m": 1}).show()
    assert glued[-1] == ("m", 1) and len(shown) == 1
