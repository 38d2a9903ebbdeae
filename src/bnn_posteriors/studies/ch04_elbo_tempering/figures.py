"""The figures of chapter 4: each takes the computed fits and returns a matplotlib Figure.

``fits`` is ``{(name, r): fit}`` of :func:`.regression.fit_over_widths`, ``by_p`` the fits
over p of :func:`.regression.fit_over_p`, ``fam`` the fixed-ν terms of
:func:`.regression.fixed_nu_terms`; the book's style comes from
:func:`bnn_posteriors.site.plotting.use_style`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from bnn_posteriors.site import plotting
from bnn_posteriors.studies.ch04_elbo_tempering import regression
from bnn_posteriors.studies.ch04_elbo_tempering.evidence import names, widths
from bnn_posteriors.studies.ch04_elbo_tempering.regression import columns, fitted_q

COLORS = plotting.OKABE_ITO
TEMPERED = r"$\eta_N = \tau p/N$"


def kl_rmse(fits: Mapping) -> Figure:
    """KL(q*‖P0) (log-log) and the test RMSE over N, η = 1 and η_N, split 0 (C4.1)."""
    ns = np.array(widths(fits))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for k, name in enumerate(names(fits)):
        c = COLORS[k]
        axes[0].loglog(
            ns, columns(fits, name, "kl", False)[0], "o-", color=c, label=f"{name}, $\\eta = 1$"
        )
        axes[0].loglog(
            ns, columns(fits, name, "kl", True)[0], "s--", color=c, label=rf"{name}, {TEMPERED}"
        )
        axes[1].semilogx(
            ns, columns(fits, name, "rmse", False)[0], "o-", color=c, label=f"{name}, $\\eta = 1$"
        )
        axes[1].semilogx(
            ns, columns(fits, name, "rmse", True)[0], "s--", color=c, label=rf"{name}, $\eta_N$"
        )
        axes[1].axhline(fits[name, 0]["rmse_prior"], color=c, lw=0.8, ls=":")
    axes[0].set(xlabel="neurons $N$", ylabel=r"KL$(q^*\|P_0)$", title="KL of the fitted $q$")
    axes[1].set(
        xlabel="neurons $N$",
        ylabel="test RMSE (standardised $y$)",
        title="test RMSE; dotted: predicting the prior mean 0",
    )
    axes[0].legend(fontsize=8)
    return fig


def predictive(fits: Mapping, *, noise_scale: float, lim: float = 2.2) -> Figure:
    """Predictive mean ± 2 sd (with the noise) of the first set, split 0, for every width."""
    name, ns = names(fits)[0], widths(fits)
    fit = fits[name, 0]
    grid = jnp.linspace(-lim, lim, 200)[:, None]
    grid_x = regression.pad_inputs(grid, fit["x"].shape[1])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3), sharey=True)
    for ax, tempered in zip(axes, (False, True), strict=True):
        ax.scatter(fit["x"][:, 0], fit["y"], s=6, color="0.6", label="training data")
        for c, n in zip(plotting.sequential_colors(len(ns)), ns, strict=True):
            mean, var = regression.moments(fitted_q(fits, name, n, tempered), grid_x)
            sd = np.sqrt(np.asarray(var[:, 0]) + noise_scale**2)
            ax.plot(grid[:, 0], mean[:, 0], color=c, label=f"N = {n}")
            ax.fill_between(
                grid[:, 0], mean[:, 0] - 2 * sd, mean[:, 0] + 2 * sd, color=c, alpha=0.08
            )
        ax.set(xlabel="x (standardised)", title=TEMPERED if tempered else r"$\eta = 1$")
    axes[0].set_ylabel("y (standardised)")
    axes[1].legend(fontsize=8)
    return fig


def terms(fits: Mapping, by_p: Mapping, fam: Mapping, ps, family_widths, *, p_width: int) -> Figure:
    """The KL term and D of the fitted tempered q* over N and over p, and for a fixed ν (C4.2)."""
    ns, sets, p = np.array(widths(fits)), names(fits), regression.common_p(fits)
    ps = np.asarray(ps)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    d_over_p = None
    for k, name in enumerate(sets):
        t, _, _ = regression.term_slopes(fits, by_p, name, ns, ps)
        c, d_over_p = COLORS[k], t["D over p"]
        axes[0].loglog(ns, t["KL over N"], "o-", color=c, label=f"(1) KL, {name}")
        axes[0].loglog(ns, t["D over N"], "s--", color=c, label=f"(2) $D$, {name}")
        axes[1].loglog(ps, t["KL over p"], "o-", color=c, label=f"(1) KL, {name}")
        axes[1].loglog(ps, t["D over p"], "s--", color=c, label=f"(2) $D$, {name}")
    if d_over_p is None:
        raise ValueError("terms: fits holds no data set")
    axes[1].loglog(ps, d_over_p[-1] * ps / ps[-1], "k:", lw=0.8, label=r"$\propto p$")
    axes[2].loglog(family_widths, fam["kl"], "o-", color=COLORS[0], label="(1) KL")
    axes[2].loglog(family_widths, fam["expected_loss"], "s--", color=COLORS[0], label="(2) $D$")
    axes[0].set(xlabel="neurons $N$", title=rf"fitted $q^*$, $\eta_N$ (p = {p})")
    axes[1].set(xlabel="observations $p$", title=rf"fitted $q^*$, {TEMPERED} (N = {p_width})")
    axes[2].set(xlabel="neurons $N$", title=r"illustration: neurons i.i.d. from a fixed $\nu$")
    axes[1].set_xticks(ps, [str(int(m)) for m in ps])
    axes[1].xaxis.set_minor_locator(plt.NullLocator())
    for ax, loc in zip(axes, ("best", "center left", "best"), strict=True):
        ax.legend(fontsize=7, loc=loc)
    return fig


def balanced(fits: Mapping) -> Figure:
    """ELBO / p over N for both temperatures, and predicted against observed test values of
    the last set at the largest width (C4.3)."""
    ns, sets = np.array(widths(fits)), names(fits)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3))
    for k, name in enumerate(sets):
        for tempered, mk, ls in ((False, "o", "-"), (True, "s", "--")):
            lab = TEMPERED if tempered else r"$\eta = 1$"
            elbo_p = columns(fits, name, "elbo", tempered)[0] / fits[name, 0]["p"]
            axes[0].semilogx(ns, elbo_p, mk + ls, color=COLORS[k], label=f"{name}, {lab}")
    con = fits[sets[-1], 0]
    for tempered, c in ((False, COLORS[3]), (True, COLORS[2])):
        mean, _ = regression.moments(fitted_q(fits, sets[-1], ns[-1], tempered), con["x_test"])
        axes[1].scatter(
            con["y_test"],
            mean[:, 0],
            s=8,
            color=c,
            label=r"$\eta_N$" if tempered else r"$\eta = 1$",
        )
    lims = [float(con["y_test"].min()), float(con["y_test"].max())]
    axes[1].plot(lims, lims, "k:", lw=0.8)
    axes[0].set(xlabel="neurons $N$", ylabel=r"ELBO$_\eta^N / p$", title="normalised ELBO")
    axes[1].set(
        xlabel="observed y (test, standardised)",
        ylabel="predictive mean",
        title=f"{sets[-1]}, N = {ns[-1]}",
    )
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=8)
    return fig


def mnist(sweep: Sequence[Mapping], etas, eta_bal: float) -> Figure:
    """Test accuracy, NLL, ECE and confidence against the temperature η (C4.4)."""
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.0))
    for ax, key, label in zip(
        axes,
        ("accuracy", "nll", "ece", "confidence"),
        ("accuracy", "NLL", "ECE", "confidence"),
        strict=True,
    ):
        ax.semilogx(etas, [r[key] for r in sweep], "o-", color=COLORS[0])
        ax.axvline(1.0, color=COLORS[3], label=r"$\eta = 1$")
        ax.axvline(eta_bal, color=COLORS[2], ls="--", label=r"$\eta_N = p/N$")
        ax.set(xlabel=r"temperature $\eta$", title=label)
    axes[0].legend(fontsize=8)
    return fig


def gap(fits: Mapping, by_p: Mapping, fam: Mapping, ps, family_widths) -> Figure:
    """The gap ELBO − F̃ over N for a fixed ν and along the fitted tempered q* (C4.5)."""
    ns, family_widths = np.array(widths(fits)), np.asarray(family_widths)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.loglog(family_widths, fam["gap"], "o-", label=r"neurons i.i.d. from a fixed $\nu$")
    for k, name in enumerate(names(fits)):
        g = regression.gap_summary(fits, by_p, name, ns, ps)
        ax.loglog(ns, g["gap"], "s--", color=COLORS[k + 1], label=f"fitted $\\eta_N$, {name}")
    ax.loglog(
        family_widths,
        fam["gap"][0] * family_widths[0] / family_widths,
        "k:",
        lw=0.8,
        label=r"$\propto 1/N$",
    )
    ax.set(
        xlabel="neurons $N$",
        ylabel=r"$|\mathrm{ELBO}^N_\eta - \tilde F^N_\eta|$",
        title=f"gap to the limit functional (p = {regression.common_p(fits)})",
    )
    ax.legend(fontsize=8)
    return fig
