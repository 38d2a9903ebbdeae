"""One figure style for the whole book: colour-blind-safe colours, labelled axes."""

from __future__ import annotations

import sys
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.rcsetup import cycler  # what `mpl.cycler` names: a cycler with validated keys
from matplotlib.typing import RcKeyType

from bnn_posteriors.util.validate import positive_int

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

STYLE: dict[RcKeyType, Any] = {
    "figure.figsize": (7.0, 3.6),
    "figure.dpi": 110,
    "figure.constrained_layout.use": True,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "axes.prop_cycle": cycler(color=OKABE_ITO),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "font.size": 10,
    "axes.titlesize": 10,
    "legend.frameon": False,
    "image.cmap": "viridis",
}


INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def use_style() -> None:
    """Apply the book's matplotlib style (rcParams) for the rest of the session.

    In a Jupyter kernel it also selects the inline backend, so that a figure shown or
    glued (``myst_nb.glue``) has an ``image/png`` representation whatever ``MPLBACKEND``
    the environment sets: under ``MPLBACKEND=Agg`` (headless servers, CI) the kernel
    registers no figure formatter and a glued figure renders as its text
    ``<Figure size … with N Axes>``.
    """
    _use_inline_backend_in_a_kernel()
    mpl.rcParams.update(STYLE)  # after the switch: the inline backend applies its own rc


def _use_inline_backend_in_a_kernel() -> None:
    """``%matplotlib inline`` when running in an IPython kernel on another backend."""
    ipython = sys.modules.get("IPython")  # a plain script or test never imports IPython here
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return  # not a Jupyter kernel (plain Python, terminal IPython): keep the backend
    if mpl.rcParams["backend"] in (INLINE_BACKEND, "inline"):
        return
    shell.run_line_magic("matplotlib", "inline")


def sequential_colors(n: int, cmap: str = "viridis"):
    """``n`` colours along a perceptually uniform colormap, for an ordered sweep (e.g. depth)."""
    n = positive_int("n", n)
    return [mpl.colormaps[cmap](t) for t in np.linspace(0.0, 0.9, n)]


def chain_densities(axes, draws, labels) -> None:
    """Kernel density of each column of ``draws`` (chains, draws, k), one colour per chain.

    ``axes``: k matplotlib axes, one per column; ``labels``: k x-axis labels. Each panel
    spans the 0.5–99.5 % range of the pooled draws plus 10 % on either side.
    """
    from scipy import stats

    draws = np.asarray(draws)
    if draws.ndim != 3:
        raise ValueError(f"draws must be (chains, draws, k), got shape {draws.shape}")
    for ax, j, label in zip(axes, range(draws.shape[-1]), labels, strict=True):
        lo, hi = np.percentile(draws[..., j], [0.5, 99.5])
        grid = np.linspace(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 200)
        for c in range(draws.shape[0]):
            ax.plot(
                grid,
                stats.gaussian_kde(draws[c, :, j])(grid),
                color=OKABE_ITO[c % len(OKABE_ITO)],
                lw=1,
            )
        ax.set(xlabel=label, yticks=[])
