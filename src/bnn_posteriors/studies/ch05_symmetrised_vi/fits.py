"""The experiments of chapter 5 ([SYM]) as functions: data, fits over widths, the tests.

The chapter (``book/05_symmetrised_vi.md``) calls these and checks its claims on what they
return: the regression toy set and MNIST's pooled pixels, the orbit of random MLPs under G
(C5.1), paired plain/symmetrised fits per width with their ELBO, I and test scores
(:func:`evaluate`, :func:`fit_width`), the ELBO identity test (C5.2), I along the
separation of the units, the collapse statistics of plain MFVI (C5.3) and the gains of
symmetrised training (C5.4), with the Markdown tables the chapter shows. How many units plain
MFVI prunes is in :mod:`bnn_posteriors.studies.ch05_symmetrised_vi.pruning`.
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.infer import TraceMeanField_ELBO

from bnn_posteriors.evaluation import metrics
from bnn_posteriors.inference import mean_field, vi
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.inference.symmetrised import (
    _check_one_hidden,
    elbo_samples,
    fit_mean_field,
    infonce_bound,
    log_joint,
    log_ratios,
    mean_se,
    mutual_information,
)
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.models.symmetry import permutations
from bnn_posteriors.site import tables
from bnn_posteriors.store import cache as unit_cache
from bnn_posteriors.util import validate

GAINS = ("elbo", "post_hoc", "training", "test_ll", "accuracy")

# --------------------------------------------------------------------------- data


def toy_regression(rng_key, n: int, noise_scale: float = 0.2):
    """The regression toy set: x ~ U(−2, 2), y = sin 2x + x/2 + N(0, ``noise_scale``²).

    Returns x (n, 1), y (n,).
    """
    n = validate.positive_int("n", n, where="toy_regression")
    k_x, k_e = jax.random.split(rng_key)
    x = jax.random.uniform(k_x, (n, 1), minval=-2.0, maxval=2.0)
    return x, jnp.sin(2 * x[:, 0]) + 0.5 * x[:, 0] + noise_scale * jax.random.normal(k_e, (n,))


def pool_images(images, block: int):
    """Average 28×28 images (n, 784) over ``block``×``block`` pixel blocks: (n, (28/block)²)."""
    images = np.asarray(images)
    if 28 % block or images.ndim != 2 or images.shape[1] != 784:
        raise ValueError(
            f"need (n, 784) images and a block dividing 28, got {images.shape}, {block}"
        )
    side = 28 // block
    pooled = images.reshape(-1, side, block, side, block).mean(axis=(2, 4))
    return pooled.reshape(-1, side * side).astype(np.float32)


# --------------------------------------------------------------------------- C5.1


def orbit_summary(rng_key, widths, num_nets: int, *, num_points: int = 64, **model_kw) -> list:
    """For ``num_nets`` random MLPs of ``widths`` and random data: all |G| copies g·ω.

    Gaussian likelihood if ``widths[-1]`` is 1, else categorical; ``model_kw``: prior_scale,
    noise_scale, activation. Per net: ``size`` |G|, ``copies`` (enumerated), ``joint_change`` (the
    largest relative change of log p(y, g·ω) over G) and ``min_distance`` between two copies.
    """
    kind = "gaussian" if widths[-1] == 1 else "categorical"
    unflatten = nets.flatten(nets.mlp_init(rng_key, widths))[1]

    def joint_one(v, x, y):
        return log_joint(unflatten(v), x, y, likelihood=kind, **model_kw)

    joint = jax.jit(jax.vmap(joint_one, in_axes=(0, None, None)))
    out = []
    for key in jax.random.split(jax.random.fold_in(rng_key, widths[1]), num_nets):
        k_p, k_x, k_y = jax.random.split(key, 3)
        params = nets.mlp_init(k_p, widths)
        x = jax.random.normal(k_x, (num_points, widths[0]))
        y = (
            jax.random.normal(k_y, (num_points,))
            if kind == "gaussian"
            else jax.random.randint(k_y, (num_points,), 0, widths[-1])
        )
        orbit = permutations.permutation_orbit(params)
        flat = np.asarray(jax.vmap(lambda c: nets.flatten(c)[0])(orbit))
        joints = np.asarray(joint(flat, x, y))
        gaps = np.sqrt(np.sum((flat[:, None] - flat[None]) ** 2, axis=-1))
        out.append(
            dict(
                widths=tuple(widths),
                size=permutations.group_size(widths),
                copies=len(flat),
                joint_change=float(np.max(np.abs(joints - joints[0])) / abs(joints[0])),
                min_distance=float(gaps[np.triu_indices(len(flat), 1)].min()),
            )
        )
    return out


# --------------------------------------------------------------------------- fits


def evaluate(
    rng_key,
    q: MeanField,
    x,
    y,
    x_test,
    *,
    num_samples: int = 256,
    num_perms: int | None = None,
    prior_scale: float = 1.0,
    likelihood: str = "gaussian",
    noise_scale: float = 1.0,
    activation: str = "relu",
) -> dict:
    """ELBO(q), I (exact, or Î_K with K = ``num_perms``) and the predictive on ``x_test``.

    ``elbo``: NumPyro's ``TraceMeanField_ELBO`` of q as the guide of the model
    (:class:`.models.MLP`; closed-form KL, ``num_samples`` draws for the expected log-likelihood);
    ELBO(q_G) = ``elbo`` + ``mi`` (a lower bound when Î_K is used). ``predictive``:
    the Monte-Carlo predictive mean of the outputs (Gaussian: means (n_test,)) or of the
    class probabilities (categorical: (n_test, C)), and ``outputs`` the draws themselves
    (Gaussian only; for :func:`bnn_posteriors.evaluation.metrics.lppd`). q and q_G predict alike.
    """
    _check_one_hidden(q)
    x, y = map(jnp.asarray, validate.check_xy(x, y, where="evaluate", ndim=(2,)))
    if likelihood == "categorical":
        y = y.astype(jnp.int32)
    k_w, k_mi, k_f = jax.random.split(rng_key, 3)
    widths = (q.loc[0]["W"].shape[0], *(layer["W"].shape[1] for layer in q.loc))
    spec = models.MLP(
        widths, likelihood, activation, prior_scale=prior_scale, noise_scale=noise_scale
    )
    model, kwargs = spec.model, spec.kwargs(x, y)
    guide = vi.mean_field_guide(model, init_loc=nets.sites(q.loc), scale_transform="exp")
    numpyro.handlers.seed(guide, rng_seed=0)(**kwargs)  # the prototype: draws depend on k_w alone
    elbo = -TraceMeanField_ELBO(num_particles=num_samples).loss(
        k_w, mean_field.to_auto_normal(q), model, guide, **kwargs
    )
    if num_perms is None:
        mi = mutual_information(k_mi, q, num_samples)[0]
    else:
        mi = infonce_bound(k_mi, q, num_perms, num_samples)[0]
    f = mean_field.outputs(k_f, q, jnp.asarray(x_test), num_samples, activation=activation)
    out = {"elbo": elbo, "mi": mi}
    if likelihood == "categorical":
        out["predictive"] = jnp.mean(jax.nn.softmax(f, axis=-1), axis=0)
    else:
        out["predictive"], out["outputs"] = jnp.mean(f[..., 0], axis=0), f[..., 0]
    return out


FIT_VERSION = "symfit-2"  # bump when a fit's or its evaluation's numbers change


def fit_width(
    rng_keys,
    mi_weights,
    x,
    y,
    x_test,
    y_test,
    eval_key,
    *,
    width: int,
    fit: dict,
    eval_samples: int,
    chunk: int | None = None,
    cache: bool | Path = False,
    **model_kw,
) -> dict:
    """Runs of :func:`.symmetrised.fit_mean_field` (``fit``: its settings) at one width, scored.

    The network is (d_in, ``width``, 1) for a Gaussian likelihood, (d_in, ``width``, C) with
    C = max(y) + 1 classes for a categorical one; ``model_kw``: likelihood, prior_scale,
    noise_scale, activation. Every run is evaluated with ``eval_key`` (:func:`evaluate`).

    ``chunk``: fit the runs in consecutive groups of this many (vmapped within a group; None:
    all at once). ``cache`` (a folder, or True for the default of
    :mod:`bnn_posteriors.store.cache`; False: none): each group is a resumable unit, so a long
    run that is interrupted keeps its finished groups; a progress bar on stderr counts the
    groups.

    Returns per run (leading axis R): ``q``, ``elbo``, ``mi`` (exact I, or Î_K of
    :func:`.symmetrised.infonce_bound` with the K of ``fit["num_perms"]`` if given: the
    estimator the fit trained with) and ``test_ll`` per test point (Gaussian: the LPPD of
    :func:`bnn_posteriors.evaluation.metrics.lppd` on the first ``len(y_test)`` rows of
    ``x_test``, the
    other rows' output draws as ``extra``; categorical: −NLL of the predictive, and
    ``accuracy``).
    """
    n_runs = len(mi_weights)
    size = n_runs if chunk is None else validate.positive_int("chunk", chunk)
    if len(rng_keys) != n_runs:
        raise ValueError(f"fit_width: {len(rng_keys)} keys for {n_runs} mi_weights")
    args = (x, y, x_test, y_test, eval_key)
    settings = dict(width=width, fit=fit, eval_samples=eval_samples, **model_kw)
    groups = [slice(i, min(i + size, n_runs)) for i in range(0, n_runs, size)]
    directory = unit_cache.cache_location(cache)
    if directory is None and len(groups) == 1:
        return _fit_runs(rng_keys, mi_weights, *args, **settings)
    from tqdm.auto import tqdm

    outs = []
    for g in tqdm(groups, desc=f"fits at width {width}", unit="group", file=sys.stderr):

        def compute(g=g):
            out = _fit_runs(rng_keys[g], mi_weights[g], *args, **settings)
            return {**out, "q": {"loc": out["q"].loc, "scale": out["q"].scale}}  # cache: plain

        if directory is None:
            outs.append(compute())
            continue
        parts = dict(
            keys=unit_cache.key_data(rng_keys[g]),
            mi_weights=np.asarray(mi_weights[g]),
            data=[np.asarray(a) for a in args[:4]],
            eval_key=unit_cache.key_data(eval_key),
            settings=settings,
        )
        outs.append(
            unit_cache.cached("sym_fit_width", parts, compute, directory, version=FIT_VERSION)
        )
    outs = [{**out, "q": MeanField(**out["q"])} for out in outs]
    return jax.tree.map(lambda *a: np.concatenate([np.asarray(v) for v in a]), *outs)


def _fit_runs(
    rng_keys, mi_weights, x, y, x_test, y_test, eval_key, *, width, fit, eval_samples, **model_kw
) -> dict:
    categorical = model_kw.get("likelihood") == "categorical"
    widths = (np.shape(x)[1], width, int(np.max(y)) + 1 if categorical else 1)
    q, _ = fit_mean_field(rng_keys, x, y, mi_weights, widths=widths, **fit, **model_kw)
    perms = fit.get("num_perms")  # the fit's estimator of I scores it too
    ev = jax.jit(
        jax.vmap(
            lambda q: evaluate(
                eval_key, q, x, y, x_test, num_samples=eval_samples, num_perms=perms, **model_kw
            )
        )
    )(q)
    out = dict(q=q, elbo=np.asarray(ev["elbo"]), mi=np.asarray(ev["mi"]))
    n_test = len(y_test)
    if "outputs" in ev:
        noise_scale = model_kw.get("noise_scale", 1.0)
        outputs = ev["outputs"]
        out["test_ll"] = np.array(
            [float(metrics.lppd(y_test, o[:, :n_test], noise_scale)) for o in outputs]
        )
        out["extra"] = np.asarray(outputs[:, :, n_test:])
    else:
        probs = np.array(ev["predictive"], dtype=np.float64)  # a writable copy, also under x64
        probs /= probs.sum(-1, keepdims=True)
        out["test_ll"] = np.array([-metrics.categorical_nll(p, y_test) for p in probs])
        out["accuracy"] = np.array([metrics.accuracy(p, y_test) for p in probs])
    return out


def fits_table(fits: dict) -> str:
    """Per width, mean over seeds of ELBO(q), I, ELBO(q_G), test log-lik (and accuracy) of the
    plain (first half of the runs) and the symmetrised runs (second half) of :func:`fit_width`,
    as a Markdown table (:mod:`bnn_posteriors.site.tables`)."""
    acc = "accuracy" in next(iter(fits.values()))
    cols = ["ELBO(q)", "I", "ELBO(q_G)", "test log-lik"] + (["accuracy"] if acc else [])
    header = ["H", "log|G|"] + [f"{part}: {c}" for part in ("plain", "sym.") for c in cols]
    rows = []
    for width, r in fits.items():
        n, row = len(r["elbo"]) // 2, [width, f"{math.lgamma(width + 1):.2f}"]
        for part in (slice(0, n), slice(n, None)):
            e, i, t = r["elbo"][part].mean(), r["mi"][part].mean(), r["test_ll"][part].mean()
            row += [f"{e:.2f}", f"{i:.2f}", f"{e + i:.2f}", f"{t:.3f}"]
            row += [f"{r['accuracy'][part].mean():.3f}"] if acc else []
        rows.append(row)
    return tables.markdown_table(header, rows, align="r" * len(header))


# --------------------------------------------------------------------------- C5.2


@functools.partial(jax.jit, static_argnames=("num_samples", "fp_floor", "model_settings"))
def _identity_test(rng_key, q, x, y, *, num_samples, fp_floor, model_settings):
    kw = dict(model_settings)
    k1, k2, k3 = jax.random.split(rng_key, 3)
    e_q = elbo_samples(k1, q, x, y, num_samples, **kw)
    e_qg = elbo_samples(k1, q, x, y, num_samples, symmetrised=True, **kw)  # the same ω₀, g·ω₀
    e_qg_ind = elbo_samples(k2, q, x, y, num_samples, symmetrised=True, **kw)  # independent
    mi, mi_se = mutual_information(k3, q, num_samples)  # a third, independent set of draws
    (gap, gap_se), (a, a_se), (b, b_se) = mean_se(e_qg - e_q), mean_se(e_q), mean_se(e_qg_ind)
    z = (gap - mi) / jnp.sqrt(gap_se**2 + mi_se**2 + fp_floor**2)
    z_unpaired = (b - a - mi) / jnp.sqrt(a_se**2 + b_se**2 + mi_se**2 + fp_floor**2)
    kurtosis = jnp.mean((e_q - a) ** 4) / jnp.var(e_q) ** 2 - 3
    return dict(
        gap=gap,
        gap_se=gap_se,
        mi=mi,
        mi_se=mi_se,
        z=z,
        z_unpaired=z_unpaired,
        elbo_q=a,
        elbo_q_se=a_se,
        elbo_qg=b,
        elbo_qg_se=b_se,
        kurtosis=kurtosis,
    )


def identity_test(
    rng_key, q: MeanField, x, y, *, num_samples: int, fp_floor: float = 1e-4, **model_kw
):
    """One repeat of the test of ELBO(q_G) − ELBO(q) = I ([SYM] §4) on ``num_samples`` draws each.

    ``z``: (gap − I) / combined s.e. with the two ELBOs paired (the same ω₀; ``gap`` their
    mean difference) and I from independent draws; ``z_unpaired`` with the ELBOs from
    independent draws. The error combines the Monte-Carlo s.e. with ``fp_floor`` nats of
    float32 round-off (where the copies of q do not overlap, I = log|G| for every draw and
    both s.e. vanish). ``kurtosis``: excess kurtosis of the draws of ELBO(q). Values as floats.
    """
    _check_one_hidden(q)
    x, y = map(jnp.asarray, validate.check_xy(x, y, where="identity_test", ndim=(2,)))
    out = _identity_test(
        rng_key,
        q,
        x,
        y,
        num_samples=num_samples,
        fp_floor=float(fp_floor),
        model_settings=tuple(sorted(model_kw.items())),
    )
    return {k: float(v) for k, v in out.items()}


def separation_curve(rng_key, base: MeanField, separations, num_samples: int) -> np.ndarray:
    """I (exact over G) and its s.e. for q with unit means d·``base.loc``, d in ``separations``.

    The sds stay those of ``base``; d = 0 gives a symmetric q (I = 0). Returns (len, 2).
    """
    mi = jax.jit(mutual_information, static_argnums=2)
    rows = []
    for d in separations:
        q_d = MeanField(jax.tree.map(lambda v, d=d: d * v, base.loc), base.scale)
        rows.append([float(v) for v in mi(rng_key, q_d, num_samples)])
    return np.array(rows)


def separation_steps(curve, log_g: float, saturation: float = 0.01):
    """Steps of I along :func:`separation_curve` in standard errors, before saturation.

    I saturates at log|G| (exactly, in float32) once the copies stop overlapping; steps there
    are 0 up to round-off and say nothing about the trend, so only the points before the
    first with log|G| − I ≤ ``saturation``·log|G| count. Each step is divided by the two
    ends' s.e. combined as if independent (conservative: the separations share their draws).
    Returns ``(step_z (m − 1,), m)`` with m the number of unsaturated points.
    """
    curve = np.asarray(curve)
    saturated = log_g - curve[:, 0] <= saturation * log_g
    m = int(np.argmax(saturated)) if saturated.any() else len(saturated)
    return np.diff(curve[:m, 0]) / np.hypot(curve[: m - 1, 1], curve[1:m, 1]), m


def nearest_arrangement(q: MeanField, draws, perms) -> np.ndarray:
    """For each draw ω (leaves with a leading axis): the index into ``perms`` of argmax_g q(g·ω)."""
    return np.asarray(jax.jit(jax.vmap(lambda w: jnp.argmax(log_ratios(q, w, perms))))(draws))


# --------------------------------------------------------------------------- C5.3, C5.4


def gains(fits: dict) -> dict:
    """Symmetrised minus plain per seed and width: ELBO(q_G^sym) − ELBO(q^plain) (``elbo``),
    of which ``post_hoc`` = I of the plain fit (symmetrising it after training) and
    ``training`` the rest; ``test_ll`` and (if present) ``accuracy`` differences.
    ``fits``: width → :func:`fit_width`'s result (plain runs first, then symmetrised)."""
    out = {}
    for w, r in fits.items():
        n = len(r["elbo"]) // 2
        elbo_gain = (r["elbo"][n:] + r["mi"][n:]) - r["elbo"][:n]
        out[w] = dict(
            elbo=elbo_gain,
            post_hoc=r["mi"][:n],
            training=elbo_gain - r["mi"][:n],
            test_ll=r["test_ll"][n:] - r["test_ll"][:n],
        )
        if "accuracy" in r:
            out[w]["accuracy"] = r["accuracy"][n:] - r["accuracy"][:n]
    return out


def gains_table(g: dict) -> str:
    """:func:`gains` as a Markdown table: per width, mean ± sd over seeds of each gain."""
    keys = [k for k in GAINS if k in next(iter(g.values()))]
    rows = [[w, *(tables.pm((r[k].mean(), r[k].std())) for k in keys)] for w, r in g.items()]
    return tables.markdown_table(
        ["H", *(f"{k} gain" for k in keys)], rows, align="r" * (1 + len(keys))
    )


def mean_gains(g: dict) -> dict:
    """Mean over seeds of each gain of :func:`gains`, per width: name → (n_widths,)."""
    keys = [k for k in GAINS if k in next(iter(g.values()))]
    return {k: np.array([r[k].mean() for r in g.values()]) for k in keys}
