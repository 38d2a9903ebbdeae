"""Tests of the figure style and the sequential colours."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.colors as mcolors
import pytest

from bnn_posteriors import plotting


@pytest.fixture
def restore_rcparams():
    """Undo the style change after the test."""
    with mpl.rc_context():
        yield


def test_use_style_sets_rcparams(restore_rcparams):
    mpl.rcParams.update(mpl.rcParamsDefault)
    assert mpl.rcParams["axes.prop_cycle"].by_key()["color"][0] != "#0072B2"
    plotting.use_style()
    colors = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    assert colors[0] == "#0072B2"
    assert tuple(colors) == plotting.OKABE_ITO
    assert mpl.rcParams["axes.spines.top"] is False
    assert mpl.rcParams["axes.grid"] is True
    assert tuple(mpl.rcParams["figure.figsize"]) == (7.0, 3.6)


def test_okabe_ito_colours_are_distinct_valid_hex():
    assert len(set(plotting.OKABE_ITO)) == len(plotting.OKABE_ITO) == 8
    for color in plotting.OKABE_ITO:
        assert mcolors.is_color_like(color)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_sequential_colors_gives_n_rgba_tuples(n):
    colors = plotting.sequential_colors(n)
    assert len(colors) == n
    for c in colors:
        assert len(c) == 4
        assert all(0.0 <= v <= 1.0 for v in c)


def test_sequential_colors_follow_the_colormap():
    colors = plotting.sequential_colors(3, cmap="magma")
    cmap = mpl.colormaps["magma"]
    assert colors[0] == cmap(0.0)
    assert colors[1] == cmap(0.45)
    assert colors[2] == cmap(0.9)
    assert len(set(colors)) == 3


@pytest.mark.parametrize("n", [0, -1, 2.0, "3", None])
def test_sequential_colors_rejects_bad_n(n):
    with pytest.raises(ValueError, match="n must be a positive integer"):
        plotting.sequential_colors(n)
