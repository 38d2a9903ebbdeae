"""Chapter 5's summaries of [SYM] built on :mod:`.symmetrised_experiments`: the repeats of the
ELBO identity and the curves of I and its bound Î_K (C5.2), where NUTS draws sit among the
permuted copies of q, and the paired gains of symmetrised training with the test of
whether a data set can decide them (C5.4).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.claims.checking import Gate
from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.inference import mcmc, mean_field
from bnn_posteriors.inference import symmetrised as sym
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.models.symmetry import permutations
from bnn_posteriors.site import tables
from bnn_posteriors.studies.ch05_symmetrised_vi import fits as sx
from bnn_posteriors.util.validate import positive_int


def identity_repeats(
    rng_key, q: MeanField, x, y, *, repeats: int, num_samples: int, fp_floor: float, **model_kw
) -> dict:
    """:func:`sx.identity_test` repeated: repeat 0 with ``rng_key``, repeat r with
    ``fold_in(rng_key, r)``. Returns each of its values as an array over the repeats."""
    keys = [rng_key] + [jax.random.fold_in(rng_key, r) for r in range(1, repeats)]
    runs = [
        sx.identity_test(k, q, x, y, num_samples=num_samples, fp_floor=fp_floor, **model_kw)
        for k in keys
    ]
    return {name: np.array([r[name] for r in runs]) for name in runs[0]}


def mi_curves(
    rng_key,
    q: MeanField,
    *,
    width: int,
    separations: Sequence[float],
    ks: tuple,
    infonce_samples: int,
    num_samples: int,
) -> dict:
    """I along the separation of the units, and the bound Î_K of the fit ``q`` (C5.2).

    A base q of ``width`` units with random means (keys ``fold_in(rng_key, 0..1)``) gives
    :func:`sx.separation_curve` (key 2) and its unsaturated steps; ``q`` gives Î_K for each
    K of ``ks`` with its s.e. (key 3), the gap Î_K − I paired on the same draws (key 4) and
    the exact I (key 3). Returns ``separation`` (len, 2), ``step_z``, ``unsaturated``,
    ``infonce`` (K, 2), ``infonce_z`` ((Î_K − I) / s.e.) and ``mi`` (I, s.e.).
    """
    base = mean_field.init(rng_key, (1, width, 1), loc_scale=1.0, init_scale=0.3)
    base.loc[0]["b"] = jax.random.normal(jax.random.fold_in(rng_key, 1), (width,))
    separation = sx.separation_curve(jax.random.fold_in(rng_key, 2), base, separations, num_samples)
    curve = jax.jit(sym.infonce_curve, static_argnums=(2, 3), static_argnames="paired")
    key_3, key_4 = jax.random.fold_in(rng_key, 3), jax.random.fold_in(rng_key, 4)
    infonce = np.stack([np.asarray(v) for v in curve(key_3, q, ks, infonce_samples)], 1)
    gap_k = np.stack([np.asarray(v) for v in curve(key_4, q, ks, infonce_samples, paired=True)], 1)
    step_z, unsaturated = sx.separation_steps(separation, math.lgamma(width + 1))
    return {
        "separation": separation,
        "step_z": step_z,
        "unsaturated": unsaturated,
        "infonce": infonce,
        "infonce_z": gap_k[:, 0] / gap_k[:, 1],
        "mi": [float(v) for v in sym.mutual_information(key_3, q, num_samples)],
    }


def nuts_arrangements(
    rng_key,
    q: MeanField,
    x,
    y,
    *,
    width: int,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    target_acceptance_rate: float,
    **model_kw,
) -> dict:
    """NUTS on the one-hidden-layer network, and which permuted copy g·q fits each draw best.

    ``model_kw``: activation, prior and noise scales of :func:`models.mlp_regression`. Draws
    of q and of q_G from ``fold_in(rng_key, 1)`` (q_G: g·ω₀ for the same ω₀) as many as
    NUTS's. Returns ``draws`` (chains, draws, ...), ``stats``, ``q_draws``, ``qg_draws``,
    ``moved`` (share of draws best matched by g ≠ e), ``chain_modes`` (each chain's most
    frequent arrangement) and ``stay`` (the mean share of a chain's draws in its own).
    """
    draws, stats = mcmc.nuts(
        rng_key,
        models.mlp_regression,
        dict(x=x, y=y, widths=(1, width, 1), **model_kw),
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        target_acceptance_rate=target_acceptance_rate,
    )
    flat = [
        {k: draws[f"{k}{i}"].reshape(-1, *draws[f"{k}{i}"].shape[2:]) for k in "Wb"}
        for i in range(2)
    ]
    n_draw = num_chains * num_samples
    k_draws = jax.random.fold_in(rng_key, 1)
    group = permutations.permutation_group(width)
    nearest = sx.nearest_arrangement(q, flat, group)
    per_chain = nearest.reshape(num_chains, num_samples)
    modes = [int(np.bincount(c, minlength=len(group)).argmax()) for c in per_chain]
    return {
        "draws": draws,
        "stats": stats,
        "q_draws": mean_field.sample(jax.random.split(k_draws)[0], q, n_draw),
        "qg_draws": sym.sample_symmetrised(k_draws, q, n_draw),
        "moved": float(np.mean(nearest != 0)),
        "chain_modes": modes,
        "stay": float(np.mean([np.mean(c == m) for c, m in zip(per_chain, modes, strict=True)])),
    }


def mi_ceiling(width: int, num_perms: int | None = None) -> float:
    """The most the estimator of I can read for a width-``width`` layer: log|G| = log H! for
    the exact I, min(log K, log H!) for [SYM]'s bound Î_K with K = ``num_perms``."""
    log_g = math.lgamma(width + 1)
    return log_g if num_perms is None else min(math.log(num_perms), log_g)


def mi_gradient_norm(
    rng_key, q: MeanField, *, num_draws: int = 64, num_perms: int | None = None
) -> np.ndarray:
    """Per run: the Euclidean norm of the gradient of the symmetrisation term of the objective
    (:func:`.symmetrised.mi_term`, exact I or Î_K with K = ``num_perms``) with respect to all
    the variational parameters (means and log sds) of ``q``, whose leaves carry a leading run
    axis (R, ...). Zero where I is saturated: then training with it changes nothing. (R,)."""

    def one(q_run):
        grad = jax.grad(lambda p: sym.mi_term(rng_key, p, num_draws, num_perms))(q_run)
        return jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grad)))

    return np.asarray(jax.jit(jax.vmap(one))(q))


def symmetrised_gains(
    fits: dict, *, n_train: int, num_perms: int | None = None, level: float = 0.95
) -> dict:
    """C5.4 on one data set: "improved predictions and a higher ELBO" ([SYM], abstract) read as
    symmetrised ≥ plain at every width and > at the largest, on paired seeds.

    ``fits``: width → :func:`sx.fit_width` (the plain runs first, then the symmetrised ones
    with the same keys); ``num_perms``: None if I is exact, else the K of Î_K the fits used.
    Per width, the ``level`` bootstrap interval (:func:`diagnostics.paired_interval`) of the
    mean of the paired gains of
    :func:`sx.gains` in ``elbo`` (ELBO(q_G^sym) − ELBO(q^plain)), ``training`` (its part
    beyond symmetrising the plain fit after training, ELBO(q_G^sym) − ELBO(q_G^plain)) and
    ``test_ll`` (per test point), each (W, 3) rows [mean, low, high]. ``better``: the low
    ends of ``training`` and ``test_ll`` at the largest width; ``not_worse``: their high ends
    at every width. The ELBO is compared by its part from training: ``elbo`` adds the plain
    fit's own I, which symmetrising that fit after training gains without training at all.
    In ``better`` and ``not_worse`` it is divided by the ``n_train`` training points, as the
    test log-likelihood is per test point, so that one tie of float32 round-off serves both
    (an ELBO of tens of nats has a float32 spacing of about 4e-6 nats).
    The checks' rules and bounds are the claims catalogue's (C5.4's parts ``better`` and
    ``not-worse``: no width where the symmetrised method is worse beyond the
    seed-to-seed noise, and a difference within float32 round-off of 0 counts as a tie).

    Whether the data set can decide: symmetrisation can only correct units that plain MFVI
    merges, and the objective sees them only through its estimator of I. ``deficit``: per
    width the mean over the plain fits of ceiling − I (:func:`mi_ceiling`: log|G| exact, log K
    for Î_K), 0 where no two units overlap or where Î_K sits at log K; ``decidable``: the
    deficit at the largest width is at least log 2, the deficit of one pair of identical
    units. ``saturation`` (largest |I − ceiling| over every fit, plain and symmetrised),
    ``elbo_minus_ceiling`` (largest |ELBO gain − ceiling| over the seeds) and ``largest_tie``
    (largest |test_ll gain| of a seed) describe the largest width, for the gate's reason.
    """
    n_train = positive_int("n_train", n_train)
    gain = sx.gains(fits)
    widths = list(fits)
    elbo = np.stack([diagnostics.paired_interval(gain[w]["elbo"], level) for w in widths])
    test_ll = np.stack([diagnostics.paired_interval(gain[w]["test_ll"], level) for w in widths])
    training = np.stack([diagnostics.paired_interval(gain[w]["training"], level) for w in widths])
    ceilings = np.array([mi_ceiling(w, num_perms) for w in widths])
    deficit = np.array(
        [
            c - np.mean(fits[w]["mi"][: len(gain[w]["elbo"])])
            for w, c in zip(widths, ceilings, strict=True)
        ]
    )
    last, c_last = widths[-1], ceilings[-1]
    return dict(
        widths=tuple(widths),
        num_perms=num_perms,
        elbo=elbo,
        training=training,
        test_ll=test_ll,
        level=level,
        n_train=n_train,
        better=np.array([training[-1, 1] / n_train, test_ll[-1, 1]]),
        not_worse=np.concatenate([training[:, 2] / n_train, test_ll[:, 2]]),
        ceiling=ceilings,
        deficit=deficit,
        decidable=bool(deficit[-1] >= math.log(2)),
        saturation=float(np.max(np.abs(np.asarray(fits[last]["mi"]) - c_last))),
        elbo_minus_ceiling=float(np.max(np.abs(gain[last]["elbo"] - c_last))),
        largest_tie=float(np.max(np.abs(gain[last]["test_ll"]))),
    )


def decidability_gate(reading: Mapping, grad_norm, *, reference: str = "") -> Gate:
    """The gate of a C5.4 check: can the data set of ``reading`` (:func:`symmetrised_gains`)
    decide whether symmetrised training helps? It can where the plain fits at the largest
    width merge units as the objective's estimator of I sees them (``reading["decidable"]``).

    ``grad_norm``: :func:`mi_gradient_norm` at those plain fits; ``reference``: words that
    follow it, e.g. the norm where the plain fits do merge units. The reason names what was
    measured: how close I (or Î_K) is to its ceiling, the gradient, the ELBO gain against the
    ceiling and how far apart the paired runs end.
    """
    w, c, d = reading["widths"][-1], reading["ceiling"][-1], reading["deficit"][-1]
    k = reading["num_perms"]
    name, ceiling = (
        ("the exact I", f"log|G| = log {w}! = {c:.3f}")
        if k is None
        else (f"Î_K (K = {k})", f"log K = {c:.3f}")
    )
    grad = f"{float(np.mean(grad_norm)):.1e}{reference}"
    if reading["decidable"]:
        why = (
            f"at H = {w} the plain fits merge units that the objective can see: {name} is "
            f"{d:.2f} nats below its ceiling {ceiling} on average, at least the log 2 of one "
            f"pair of identical units (gradient norm of the term {grad})"
        )
    elif reading["saturation"] < 1e-3:
        why = (
            f"at H = {w} the symmetrisation term is saturated: {name} of every plain and "
            f"symmetrised fit is within {reading['saturation']:.1e} nats of its ceiling "
            f"{ceiling}, so its gradient at the plain fits has norm {grad}, the ELBO gain "
            f"equals the ceiling to {reading['elbo_minus_ceiling']:.1e} nats and the paired "
            f"runs end at the same q (largest test-log-lik gain of a seed "
            f"{reading['largest_tie']:.1e} nats per point)"
        )
    else:
        why = (
            f"at H = {w} the plain fits merge too few units for the symmetrisation term to "
            f"act on: {name} is {d:.2f} nats below its ceiling {ceiling} on average, less "
            f"than the log 2 of one pair of identical units (gradient norm {grad})"
        )
    decide = (
        f"widths at which the plain fits merge units as the objective's estimator of I "
        f"sees them (ceiling − I ≥ log 2 nats): the exact I up to H = "
        f"{permutations.MAX_EXACT_WIDTH}, beyond that an estimator of I that does not "
        f"saturate at log K (Î_K needs K of the order of |G| = H!)"
    )
    return Gate(passed=bool(reading["decidable"]), why=why, decide=decide)


def gains_interval_table(reading: Mapping) -> str:
    """:func:`symmetrised_gains` as a Markdown table: per width the plain fits' deficit
    (ceiling − I) and the mean [interval] over paired seeds of the ELBO gain, of its part from
    training and of the test-log-likelihood gain per point."""
    pct = f"{100 * reading['level']:.0f}%"
    header = [
        "H",
        "plain: ceiling − I",
        f"ELBO gain [{pct}]",
        f"from training [{pct}]",
        f"test log-lik gain [{pct}]",
    ]
    rows = []
    for i, w in enumerate(reading["widths"]):
        cells = [
            f"{m:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]"
            for key, d in (("elbo", 2), ("training", 2), ("test_ll", 4))
            for m, lo, hi in [reading[key][i]]
        ]
        rows.append([w, f"{reading['deficit'][i]:.2f}", *cells])
    return tables.markdown_table(header, rows, align="rrrrr")


def committed_gains(record: dict | None) -> dict:
    """The MNIST gains of a committed C5.4 record of the old reading (before the toy set
    decided C5.4): ``test_ll`` (its value) and ``elbo`` (read from its note, "MNIST ELBO
    [...]"); NaN arrays where there is no such record or note."""
    if record is None:
        return {"test_ll": np.array([np.nan]), "elbo": np.array([np.nan])}
    match = re.search(r"MNIST ELBO \[([^\]]*)\]", record.get("note", ""))
    elbo = [float(v) for v in match.group(1).split(",")] if match else [np.nan]
    return {
        "test_ll": np.atleast_1d(np.asarray(record["value"], dtype=float)),
        "elbo": np.array(elbo),
    }
