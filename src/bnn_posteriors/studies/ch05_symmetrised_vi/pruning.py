"""Units that mean-field VI switches off ([SYM] §5, C5.3 and C5.4): which hidden units are
pruned (every outgoing weight indistinguishable from zero), what fraction of them, and how
close the pruned units' factors are to the prior, with the table chapter 5 shows; how the
collapse of plain MFVI grows with the width.

Each function takes a mean-field q of one hidden layer (a
:class:`bnn_posteriors.inference.mean_field.MeanField` by layer) whose leaves carry a leading
run axis.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from scipy import stats

from bnn_posteriors.inference.mean_field import MeanField, kl_per_unit
from bnn_posteriors.site import tables
from bnn_posteriors.util import validate


def pruned_units(q: MeanField, threshold: float = 2.0) -> np.ndarray:
    """Per run and hidden unit: True where the unit is pruned, i.e. *every* outgoing weight
    ``W1[j, k]`` has |μ| < ``threshold``·s under q (no output of the unit is distinguishable
    from zero; the signal-to-noise criterion of Blundell et al. (2015), per unit).

    q's leaves carry a leading run axis. Returns (R, H) booleans.
    """
    validate.positive("threshold", threshold, where="pruned_units")
    mu, s = q.loc[1]["W"], q.scale[1]["W"]
    return np.asarray(jnp.all(jnp.abs(mu) < threshold * s, axis=-1))


def pruned_fraction(q: MeanField, threshold: float = 2.0) -> np.ndarray:
    """Per run: the fraction of hidden units pruned by :func:`pruned_units`. Returns (R,).

    With one output this is the fraction of units whose outgoing weight has |μ| < 2 s.
    """
    return pruned_units(q, threshold).mean(axis=-1, dtype=np.float32)


def unit_pruning(q: MeanField, *, prior_scale: float = 1.0, threshold: float = 2.0) -> dict:
    """Per run: how many hidden units plain MFVI switched off, and how prior-like they are.

    ``pruned``: the fraction of units of :func:`pruned_units` (R,); ``kept``: the number of
    the others (R,); ``kl_pruned`` and ``kl_kept``: the mean over those units of the KL of a
    unit's whole factor u_j = (W₀[:, j], b₀[j], W₁[j, :]) to the prior N(0, ``prior_scale``²)
    per parameter, in nats (:func:`.mean_field.kl_per_unit`; NaN where there is no such
    unit). A pruned unit whose factor has reverted to the prior has KL ≈ 0 and is then
    (nearly) identical to every other such unit: n of them make q (nearly) invariant under
    their n! permutations. q's leaves carry a leading run axis.
    """
    pruned = pruned_units(q, threshold)
    n_params = q.loc[0]["W"].shape[-2] + 1 + q.loc[1]["W"].shape[-1]
    kl = np.asarray(kl_per_unit(q, prior_scale)) / n_params  # (R, H) nats per parameter
    with np.errstate(invalid="ignore"):
        kl_pruned = np.where(pruned, kl, 0).sum(-1) / pruned.sum(-1)
        kl_kept = np.where(~pruned, kl, 0).sum(-1) / (~pruned).sum(-1)
    return dict(
        pruned=pruned.mean(-1), kept=(~pruned).sum(-1), kl_pruned=kl_pruned, kl_kept=kl_kept
    )


def pruning_table(pruning: dict) -> str:
    """:func:`unit_pruning` per width as a Markdown table (:mod:`bnn_posteriors.site.tables`): mean
    ± sd over runs of the pruned fraction and of the units kept, mean KL per parameter of the
    pruned and of the kept units ("—" where no run has such a unit). ``pruning``: width → its
    result."""
    header = [
        "H",
        "pruned units",
        "units kept",
        "KL per parameter, pruned units (nats)",
        "KL per parameter, kept units (nats)",
    ]
    rows = []
    for w, p in pruning.items():
        kl = [
            tables.number(float(np.nanmean(p[k])), ".4f") if np.isfinite(p[k]).any() else "—"
            for k in ("kl_pruned", "kl_kept")
        ]
        rows.append(
            [
                w,
                tables.pm((np.mean(p["pruned"]), np.std(p["pruned"]))),
                tables.pm((np.mean(p["kept"]), np.std(p["kept"])), ".1f"),
                *kl,
            ]
        )
    return tables.markdown_table(header, rows, align="rrrrr")


def collapse_by_width(fits: dict, n_runs: int) -> dict:
    """Plain MFVI's collapse per width and its trend over widths ([SYM] §5, C5.3).

    ``fits``: width H → the result of :func:`.symmetrised_experiments.fit_width`, whose first
    ``n_runs`` runs are plain MFVI. Per width and run: the symmetry deficit log H! − I (the
    nats of I lost by units that collapse onto each other), the pruned fraction, ELBO(q) and
    the test log-likelihood. The trend is the least-squares slope of the per-run deficits
    on H with its 95 % t-interval: at H = 2 the deficit is 0 on every run and at H = 4 it
    varies between fits about as much as its mean, so a slope over all fits decides where
    step-by-step monotonicity of a few means cannot. Returns ``{"per_width": {H: {"deficit",
    "pruned", "elbo", "test_ll"}}, "slope", "slope_ci", "n_fits"}``.
    """
    n_runs = validate.positive_int("n_runs", n_runs, where="collapse_by_width")
    plain = slice(0, n_runs)
    per_width = {
        w: dict(
            deficit=math.lgamma(w + 1) - np.asarray(r["mi"][plain]),
            pruned=pruned_fraction(r["q"])[plain],
            elbo=np.asarray(r["elbo"][plain]),
            test_ll=np.asarray(r["test_ll"][plain]),
        )
        for w, r in fits.items()
    }
    h_all = np.repeat(np.array(list(per_width), dtype=float), n_runs)
    fit = stats.linregress(h_all, np.concatenate([b["deficit"] for b in per_width.values()]))
    half = stats.t.ppf(0.975, len(h_all) - 2) * fit.stderr
    ci = (float(fit.slope - half), float(fit.slope + half))
    return dict(per_width=per_width, slope=float(fit.slope), slope_ci=ci, n_fits=len(h_all))


def pruning_summary(pruning: dict) -> dict:
    """Per width, from :func:`unit_pruning` of each width (``pruning``: width → its result):
    the mean pruned fraction ``pruned`` (array), the mean KL per parameter of the pruned
    units ``kl_pruned`` (NaN where no run pruned one) and of the kept ones ``kl_kept``, and
    a one-line ``verdict`` on whether plain MFVI prunes units at these widths."""
    pruned = np.array([np.mean(p["pruned"]) for p in pruning.values()])
    kl_pruned = [
        float(np.nanmean(p["kl_pruned"])) if np.isfinite(p["kl_pruned"]).any() else math.nan
        for p in pruning.values()
    ]
    if not pruned.any():
        verdict = (
            "plain MFVI prunes no unit at these widths: every unit carries signal to some class"
        )
    elif pruned[-1] >= 0.5:
        verdict = "plain MFVI prunes units at these widths, most of them at the largest"
    else:
        verdict = "plain MFVI prunes some units at these widths"
    return dict(
        pruned=pruned,
        kl_pruned=kl_pruned,
        kl_kept=[float(np.nanmean(p["kl_kept"])) for p in pruning.values()],
        verdict=verdict,
    )
