"""The figures of chapter 03: each function takes computed results and returns a Figure.

The chapter glues each figure (``glue("fig-…", fig, display=False)``) and closes it; the
style is the book's (:func:`bnn_posteriors.site.plotting.use_style`, Okabe–Ito colours).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Ellipse

from bnn_posteriors.models.symmetry import priors as symmetry
from bnn_posteriors.site import plotting
from bnn_posteriors.theory import narrow_network as theory

ELLIPSE_SD = 2  # the MFVI ellipse of :func:`hyperbola` reaches this many sds of q


def counterexample_h(ce: dict, c_star: float, paper_root: float, c_range=(0.6, 1.05)):
    """h(c) of App. B.2 (cf. [SAP] Fig. 6) on ``c_range`` for the weights ``ce`` (w1, w2,
    b1), its root ``c_star`` (dashed) and the value ``paper_root`` marked by the authors."""
    low, high = c_range
    if not low < high:
        raise ValueError(f"c_range must be (low, high) with low < high, got {c_range}")
    cs = np.linspace(low, high, 4001)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(cs, symmetry.counterexample_h(cs, **ce), color=plotting.OKABE_ITO[0])
    ax.axhline(0, color="k", lw=0.8)
    ax.axvline(c_star, color=plotting.OKABE_ITO[3], ls="--", label=f"root c* = {c_star:.5f}")
    ax.axvline(paper_root, color=plotting.OKABE_ITO[1], ls=":", label=f"Fig. 6 marks {paper_root}")
    title = rf"$h(c)$ for $w_1={ce['w1']:g},\ w_2={ce['w2']:g},\ b_1={ce['b1']:g}$"
    ax.set(xlabel="c", ylabel="h(c)", title=title)
    ax.legend()
    return fig


def hyperbola(fits: dict, beta_hat: float, ellipse_sd: float = ELLIPSE_SD):
    """[SAP] Fig. 2: NUTS draws of (w1, w2) per chain, the hyperbola w1 w2 = β̂ and the MFVI
    mean with its ``ellipse_sd``-sd ellipse, one panel per τ² of ``fits``
    (:func:`.runs.figure2_fits`)."""
    if not fits:
        raise ValueError("fits holds no prior variance")
    fig, axes = plt.subplots(1, len(fits), figsize=(11, 3.2), squeeze=False)
    axes = axes[0]
    num_chains = next(iter(fits.values()))["w"].shape[0]
    chain_colors = plotting.sequential_colors(num_chains)
    w1_line = np.linspace(-3, 3, 600)
    for ax, (tau2, r) in zip(axes, fits.items(), strict=True):
        for k in range(num_chains):
            ax.scatter(r["w"][k, ::3, 0], r["w"][k, ::3, 1], s=2, color=chain_colors[k], alpha=0.5)
        with np.errstate(divide="ignore"):
            hyper = np.where(np.abs(w1_line) > 0.05, beta_hat / w1_line, np.nan)
        ax.plot(w1_line, hyper, "--", color="k", lw=0.8)
        width, height = 2 * ellipse_sd * np.asarray(r["svi_s"])
        mfvi = Ellipse(r["svi_mu"], width, height, fill=False, color=plotting.OKABE_ITO[3], lw=1.5)
        ax.add_patch(mfvi)
        ax.plot(*r["svi_mu"], "x", color=plotting.OKABE_ITO[3], ms=8)
        lim = 2.5 if tau2 >= 0.1 else 1.0
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), xlabel="$w_1$", title=rf"$\tau^2$ = {tau2:g}")
    axes[0].set_ylabel("$w_2$")
    return fig


def adjusted_prior(scan: dict, x, y, sigma: float, tau2_c: float, beta_hat: float):
    """|μ1 μ2| of the plain and adjusted-prior SVI runs of ``scan`` (:func:`.runs.adjusted_runs`)
    against τ²/τ²_c, with the plain MFVI optimum ν* and β̂ (Prop. B.5)."""
    if tau2_c <= 0:
        raise ValueError(f"tau2_c must be positive, got {tau2_c}")
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    ratio = np.geomspace(0.1, 2.0, 300)
    nu_opt = [
        abs(theory.mfvi_two_layer_optimum(x, y, sigma, np.sqrt(r * tau2_c))["nu"]) for r in ratio
    ]
    ax.plot(ratio, nu_opt, color="k", lw=1, label=r"plain optimum $\nu^*$")
    styles = (("plain", "o", plotting.OKABE_ITO[0]), ("adjusted", "^", plotting.OKABE_ITO[3]))
    for offset, (name, marker, color) in zip((0.985, 1.015), styles, strict=True):
        for n, (tau2, r) in enumerate(scan.items()):
            ax.scatter(
                np.full(r[name].size, offset * tau2 / tau2_c),
                r[name],
                marker=marker,
                s=18,
                facecolors="none",
                edgecolors=color,
                label=f"{name} SVI runs" if n == 0 else None,
            )
    ax.axhline(beta_hat, color="k", ls="--", lw=0.8, label=r"least squares $\hat\beta$")
    ax.axvline(1.0, color="k", ls=":", lw=0.8)
    ax.set(xscale="log", xlabel=r"$\tau^2/\tau^2_c$", ylabel=r"$|\mu_1\mu_2|$", ylim=(-0.03, 1.05))
    ax.legend(loc="center left", fontsize=8)
    return fig
