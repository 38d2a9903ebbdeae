"""Tests of the figure style and the sequential colours."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.colors as mcolors
import pytest

from bnn_posteriors.site import plotting


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


_KERNEL_CELLS = (
    "import matplotlib\nimport matplotlib.pyplot as plt\nfrom myst_nb import glue\n"
    "backend_before = matplotlib.get_backend()\n"
    "from bnn_posteriors.site import plotting\nplotting.use_style()",
    "fig, ax = plt.subplots()\nax.plot([0, 1], [1, 0])\nglue('fig-test', fig, display=False)\n"
    "plt.close(fig)",
    "fig, ax = plt.subplots()\nax.plot([0, 1])\nfig",
    "print(backend_before)",
)


@pytest.mark.slow
def test_use_style_gives_figures_an_image_in_a_kernel_under_mplbackend_agg(monkeypatch):
    """Under MPLBACKEND=Agg a glued or shown figure still has image/png, not '<Figure size'."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("myst_nb")
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the kernel inherits the environment
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in _KERNEL_CELLS]
    )
    nbclient.NotebookClient(notebook, kernel_name="python3", timeout=120).execute()
    outputs = [output for cell in notebook.cells for output in cell.outputs]

    assert outputs[-1]["output_type"] == "stream" and outputs[-1]["text"].strip() == "Agg", (
        "the kernel did not start on the Agg backend, so the test proves nothing"
    )
    streams = [o for o in outputs if o["output_type"] == "stream"]
    assert all(o["name"] == "stdout" for o in streams), f"stderr output: {streams}"
    glued = [o for o in outputs if "application/papermill.record/text/plain" in o.get("data", {})]
    assert len(glued) == 1
    assert "application/papermill.record/image/png" in glued[0]["data"]
    shown = [o for o in outputs if o["output_type"] in ("execute_result", "display_data")]
    assert len(shown) >= 2
    for output in shown:
        # a page shows text/plain ('<Figure size 770x396 with 1 Axes>') only without an image
        mimes = {mime.removeprefix("application/papermill.record/") for mime in output["data"]}
        assert "image/png" in mimes, f"a figure without an image: {output['data']}"
    assert not any("<Figure size" in o["text"] for o in streams)


def test_chain_densities_one_curve_per_chain():
    import matplotlib.pyplot as plt
    import numpy as np

    draws = np.random.default_rng(0).normal(size=(3, 100, 2))
    fig, axes = plt.subplots(1, 2)
    plotting.chain_densities(axes, draws, ["a", "b"])
    assert [len(ax.lines) for ax in axes] == [3, 3] and axes[1].get_xlabel() == "b"
    assert axes[0].lines[1].get_color() == plotting.OKABE_ITO[1]
    plt.close(fig)
    with pytest.raises(ValueError, match="chains, draws, k"):
        plotting.chain_densities(axes, draws[0], ["a", "b"])
