"""One figure style for the whole book: colour-blind-safe colours, labelled axes."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

# Okabe & Ito (2008), safe for the common colour-vision deficiencies.
OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # green
    "#D55E00",  # vermillion
    "#CC79A7",  # purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)

STYLE = {
    "figure.figsize": (7.0, 3.6),
    "figure.dpi": 110,
    "figure.constrained_layout.use": True,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "axes.prop_cycle": mpl.cycler(color=OKABE_ITO),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "font.size": 10,
    "axes.titlesize": 10,
    "legend.frameon": False,
    "image.cmap": "viridis",
}


def use_style() -> None:
    """Apply the book's matplotlib style (rcParams) for the rest of the session."""
    mpl.rcParams.update(STYLE)


def sequential_colors(n: int, cmap: str = "viridis"):
    """``n`` colours along a perceptually uniform colormap, for an ordered sweep (e.g. depth)."""
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return [mpl.colormaps[cmap](t) for t in np.linspace(0.0, 0.9, n)]
