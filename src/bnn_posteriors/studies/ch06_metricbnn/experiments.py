"""The experiments of [MBNN] §5 as units: Snelson's in-between gap (Figs. 2–3, the latent
posterior of §4.2 against the Gaussian of the solutions), the UCI classification table
(Table 1: LA, linearised LA and MetricBNN against one MAP per split), Banana's predictive
entropy (Fig. 4), MNIST (Table 2, with a last-layer LA) and, from the FLOP counts of
Fig. 5's depth sweep, the network size at which MetricBNN's count would fall below the LA's.

A unit trains its MAP, runs MetricBNN's Alg. 1 through a ``walk_fn`` (a
:func:`bnn_posteriors.inference.metricbnn.walk_and_embed` with the chapter's settings bound)
and returns numbers; the chapter decides the claims on them.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import cost, metrics
from bnn_posteriors.evaluation.predictive import class_probs
from bnn_posteriors.inference import laplace, map_estimate, map_laplace, metricbnn
from bnn_posteriors.models import cnn, nets
from bnn_posteriors.site.settings_classes import MapLaplaceChoices, MetricBNNSettings
from bnn_posteriors.store import cache as unit_cache
from bnn_posteriors.util.streams import name_word

_relu_net = partial(nets.mlp_apply, activation_name="relu")


# ----------------------------------------------------------------------------- settings

# [MBNN] Table 1's test NLL per data set: LA, Lin LA, MetricBNN (the order of METHODS)
PAPER_NLL = {
    "australian": (0.71, 0.69, 0.66),
    "breast_cancer": (0.73, 0.61, 0.57),
    "glass": (2.28, 3.59, 1.07),
    "ionosphere": (0.72, 0.42, 0.17),
    "vehicle": (0.80, 0.68, 0.69),
    "waveform": (0.88, 0.40, 0.30),
}
METHODS = ("LA", "Lin LA", "MetricBNN")
# [MBNN] Table 1's "Log Time" row (GPU), per data set in METHODS order
PAPER_LOG_TIME = {
    "australian": (1.88, 1.86, 1.66),
    "breast_cancer": (1.54, 1.52, 1.61),
    "glass": (1.56, 1.55, 1.64),
    "ionosphere": (1.88, 1.89, 1.76),
    "vehicle": (3.05, 3.05, 1.80),
    "waveform": (2.68, 2.68, 1.82),
}
PAPER_MNIST = {"LA": 2.42, "Lin LA": 0.96, "MetricBNN": 0.13}  # [MBNN] Table 2, MNIST NLL
APP_A = {"uci_epochs": 1000, "uci_batch": 32}  # [MBNN] App. A's training of the UCI MAPs
NUM_KEYS = 64  # the chapter splits its root key this many ways


def chapter_keys(root_key, cfg: MetricBNNSettings) -> dict:
    """The chapter's keys by use: the 64-way split of ``root_key`` taken in order.

    "map", "walk" (Snelson's MAP and walk), "la", "gaussian", "samples", "posterior" (the
    draws of C6.2), "banana" (4), "uci" (one per data set and split, data sets outer),
    "mnist" (4), "cost" (one per depth); besides, "curvature" = fold_in(root_key, 1) (the
    power iteration of η), "repeats" = fold_in(root_key, 200) (the MAPs of C6.3/C6.4) and
    "accuracy" (one per depth, the named stream "C6.8/accuracy").
    """
    counts = {
        "map": 1,
        "walk": 1,
        "la": 1,
        "gaussian": 1,
        "samples": 1,
        "posterior": 1,
        "banana": 4,
        "uci": len(data.UCI_CLASSIFICATION) * len(cfg.uci_seeds),
        "mnist": 4,
        "cost": len(cfg.depths),
    }
    if sum(counts.values()) > NUM_KEYS:
        raise ValueError(f"the chapter needs {sum(counts.values())} keys, more than {NUM_KEYS}")
    split = iter(jax.random.split(root_key, NUM_KEYS))
    keys: dict[str, Any] = {name: [next(split) for _ in range(n)] for name, n in counts.items()}
    for name in ("map", "walk", "la", "gaussian", "samples", "posterior"):
        keys[name] = keys[name][0]
    keys["curvature"] = jax.random.fold_in(root_key, 1)
    keys["repeats"] = jax.random.fold_in(root_key, 200)
    accuracy = jax.random.fold_in(root_key, name_word("C6.8/accuracy"))
    keys["accuracy"] = list(jax.random.split(accuracy, len(cfg.depths)))
    return keys


def walker(cfg: MetricBNNSettings) -> Callable:
    """Alg. 1, phases 1 and 2, with App. A's settings of ``cfg`` bound
    (:func:`metricbnn.walk_and_embed`); the call gives the key, loss, θ* and the budgets."""
    return partial(
        metricbnn.walk_and_embed,
        learning_rate=cfg.refine_learning_rate,
        num_refine=cfg.num_refine,
        num_particles=cfg.num_particles,
        latent_dim=cfg.latent_dim,
        hidden=cfg.ae_hidden,
        ae_batch=cfg.ae_batch,
        ae_learning_rate=cfg.ae_learning_rate,
        lam_plus=cfg.lam_plus,
        lam_minus=cfg.lam_minus,
        num_components=cfg.ae_components,
    )


# ----------------------------------------------------------------------------- Snelson's gap


@dataclass(frozen=True, eq=False)
class GapRegression:
    """Regression data with a held-out in-between gap ([MBNN] Figs. 2–3) and the network.

    x (n, d), y (n, 1): training data; x_gap (m, d), y_gap (m,): the gap; noise_scale: the fixed
    noise sd of the Gaussian likelihood; ``apply_fn(unravel(θ), x)`` → f(x; θ) (n, 1).
    """

    x: jax.Array
    y: jax.Array
    x_gap: jax.Array
    y_gap: np.ndarray
    noise_scale: float
    unravel: Callable
    apply_fn: Callable


def _output_sd(thetas, problem: GapRegression, x) -> np.ndarray:
    """Epistemic sd over samples of f(x; θ_s), per input: (n,)."""
    f = metricbnn.push_forward(thetas, problem.unravel, problem.apply_fn, x)
    return np.asarray(f)[..., 0].std(0)


def gap_ratio(thetas, problem: GapRegression) -> float:
    """Mean epistemic sd of f on the gap points / on the training points (C6.2).

    thetas: flat parameter samples (S, P) of an approximate posterior; above 1 when its
    predictive widens in the gap.
    """
    return float(
        _output_sd(thetas, problem, problem.x_gap).mean()
        / _output_sd(thetas, problem, problem.x).mean()
    )


def gap_nll(thetas, problem: GapRegression) -> float:
    """Negative LPPD (nats per point) of the gap points under the samples (S, P) (C6.3)."""
    f = np.asarray(
        metricbnn.push_forward(thetas, problem.unravel, problem.apply_fn, problem.x_gap)
    )[..., 0]
    return float(-metrics.lppd(jnp.asarray(problem.y_gap), f, problem.noise_scale))


def latent_posterior_metrics(
    rng_key,
    theta_map,
    trajectories,
    latent,
    problem: GapRegression,
    *,
    num_samples: int,
    gaussian=None,
) -> dict:
    """C6.3 and C6.4 on one MAP θ* (P,) with its trajectories (N, T, P) and latent model.

    The gap NLL of the Gaussian of the solutions minus that of the latent posterior
    ([MBNN] Fig. 3), the decoded samples' mean and max training-MSE ratio to the MAP's
    minus 1 (§4.2), the same for the solutions projected on the encoder's principal
    directions (what φ can represent), and the mean straightness of the latent
    trajectories θ* → θ_{i,T} (end-to-end distance / path length). ``rng_key`` is split
    into the Gaussian's key and the latent posterior's. ``gaussian``: the pair (mean, factor)
    of :func:`metricbnn.gaussian_of_samples` of the trajectories if the caller has it (its
    SVD is not run again); None: computed here.
    """
    train_mse = metricbnn.refinement_loss(
        problem.unravel,
        problem.apply_fn,
        problem.x,
        problem.y,
        likelihood="gaussian",
        regularised=False,
    )
    k_gauss, k_latent = jax.random.split(rng_key)
    if gaussian is None:
        gaussian = metricbnn.gaussian_of_samples(trajectories.reshape(-1, theta_map.size))
    g_mean, g_factor = gaussian
    decoded = metricbnn.latent_sample(latent, k_latent, num_samples)
    gauss = metricbnn.gaussian_sample(g_mean, g_factor, k_gauss, num_samples)
    mse = np.asarray(jax.lax.map(train_mse, decoded, batch_size=100)) / float(train_mse(theta_map))
    sols = trajectories.reshape(-1, theta_map.size)[::10]
    projected = theta_map + ((sols - theta_map) @ latent["basis"]) @ latent["basis"].T
    mse_proj = np.asarray(jax.lax.map(train_mse, projected, batch_size=100))
    start = jnp.broadcast_to(theta_map, (trajectories.shape[0], 1, theta_map.size))
    z_walk = metricbnn.to_latent(latent, jnp.concatenate([start, trajectories], axis=1))
    return {
        "gap NLL: Gaussian - latent": gap_nll(gauss, problem) - gap_nll(decoded, problem),
        "mean loss ratio - 1": float(mse.mean() - 1),
        "max loss ratio - 1": float(mse.max() - 1),
        "projected solutions: mean loss ratio - 1": float(
            mse_proj.mean() / float(train_mse(theta_map)) - 1
        ),
        "straightness": float(np.mean(metricbnn.straightness(z_walk))),
    }


def snelson_repeat(
    rng_key,
    problem: GapRegression,
    *,
    walk_fn,
    widths: Sequence[int],
    choices: MapLaplaceChoices,
    prior_precision: float,
    map_steps: int,
    map_learning_rate: float,
    refine_learning_rate: float,
    num_samples: int,
) -> dict:
    """The Snelson pipeline from a fresh initialisation: MAP, walk, autoencoder, metrics.

    ``rng_key`` is split in four: the MAP's initialisation (:func:`.map_laplace.fit_map` with
    ``choices``, the chapter's ``map_laplace``),
    the power iteration of the step size (:func:`metricbnn.stable_learning_rate`), Alg. 1
    (``walk_fn(key, loss, θ*, learning_rate=η)``, with ``loss`` the refinement loss of eq. 1
    on ``problem`` with ``prior_precision``) and :func:`latent_posterior_metrics`, whose dict
    it returns.
    """
    k_init, k_curv, k_walk, k_metrics = jax.random.split(rng_key, 4)
    mode = map_laplace.fit_map(
        k_init,
        widths,
        problem.x,
        problem.y,
        choices,
        likelihood="gaussian",
        prior_precision=prior_precision,
        num_steps=map_steps,
        learning_rate=map_learning_rate,
        activation="relu",
        noise_scale=problem.noise_scale,
    )
    th = ravel_pytree(mode.params)[0]
    loss = metricbnn.refinement_loss(
        problem.unravel,
        problem.apply_fn,
        problem.x,
        problem.y,
        likelihood="gaussian",
        noise_scale=problem.noise_scale,
        prior_precision=prior_precision,
    )
    lr = metricbnn.stable_learning_rate(loss, th, k_curv, refine_learning_rate)
    walk, ae, _ = walk_fn(k_walk, loss, th, learning_rate=lr)
    return latent_posterior_metrics(k_metrics, th, walk, ae, problem, num_samples=num_samples)


SNELSON_VERSION = "snelson-repeat-1"  # bump when a repeat's result can change (cache rule)


def snelson_repeats(
    rng_key,
    problem: GapRegression,
    repeats: Sequence[int],
    *,
    cache: bool | Path = False,
    **repeat_kw,
) -> list[dict]:
    """:func:`snelson_repeat` for each r in ``repeats`` with the key ``fold_in(rng_key, r)``.

    ``repeat_kw``: its settings (``walk_fn`` a partial of
    :func:`~bnn_posteriors.inference.metricbnn.walk_and_embed`, ``widths``, ...).
    ``cache`` (a folder, True for the default of :mod:`bnn_posteriors.store.cache`, False for
    none: :func:`~bnn_posteriors.store.cache.cache_location`): each
    repeat is a resumable unit, keyed on its key, the problem's data, its network and the
    settings, so an interrupted run keeps its finished repeats; a progress bar on stderr
    counts them (only then). Returns the metric dicts in the order of ``repeats``.
    """
    from tqdm.auto import tqdm

    directory = unit_cache.cache_location(cache)
    problem_parts = dict(
        x=np.asarray(problem.x),
        y=np.asarray(problem.y),
        x_gap=np.asarray(problem.x_gap),
        y_gap=np.asarray(problem.y_gap),
        noise_scale=float(problem.noise_scale),
        apply_fn=unit_cache.function_name(problem.apply_fn),
    )
    settings = {
        k: unit_cache.function_name(v)
        if callable(v)
        else dataclasses.asdict(v)
        if isinstance(v, MapLaplaceChoices)
        else v
        for k, v in repeat_kw.items()
    }
    out = []
    bar = tqdm(
        list(repeats), desc="Snelson MAPs", unit="MAP", file=sys.stderr, disable=directory is None
    )
    for r in bar:
        key = jax.random.fold_in(rng_key, r)

        def compute(key=key):
            return snelson_repeat(key, problem, **repeat_kw)

        if directory is None:
            out.append(compute())
            continue
        parts = dict(key=unit_cache.key_data(key), problem=problem_parts, settings=settings)
        unit = unit_cache.cached(
            "mbnn-snelson-repeat", parts, compute, directory, version=SNELSON_VERSION
        )
        out.append({k: float(v) for k, v in unit.items()})
    return out


# ----------------------------------------------------------------------------- UCI, Table 1


@dataclass(frozen=True, eq=False)
class UciFit:
    """One split of a UCI classification set through [MBNN] Table 1's pipeline, before
    prediction.

    ``params`` the MAP (pytree) and ``unravel`` (flat θ → pytree); ``posterior`` the
    full-GGN LA with the prior precision by the evidence; ``samples``: "LA" (sampled LA) and
    "MetricBNN" → θ_s (S, P); ``seconds``: "LA", "Lin LA", "MetricBNN" → wall time after the
    MAP of the fit and its draws; the split's x_train (n, d), y_train (n,), x_test, y_test.
    """

    params: Any
    unravel: Callable
    posterior: Any
    samples: dict
    seconds: dict
    x_train: jax.Array
    y_train: jax.Array
    x_test: jax.Array
    y_test: jax.Array


def uci_fit(
    name: str,
    seed: int,
    rng_key,
    *,
    hidden: Sequence[int],
    choices: MapLaplaceChoices,
    prior_precision: float,
    map_steps: int,
    map_learning_rate: float,
    num_samples: int,
    walk_fn,
) -> UciFit:
    """A ReLU MLP (``hidden`` widths) trained to its MAP on split ``seed`` of ``name``; then
    the LA with ``num_samples`` draws (:mod:`.map_laplace` with ``choices``: the chapter's
    full GGN, prior precision by the evidence), and
    MetricBNN (``walk_fn``, then ``num_samples`` latent-posterior draws). ``rng_key`` is split
    in four: initialisation, LA samples, Alg. 1, latent samples.
    """
    xtr, ytr, _, _, xte, yte = data.load_uci_classification(name, seed)
    xtr, xte = jnp.asarray(xtr, jnp.float32), jnp.asarray(xte, jnp.float32)
    ytr = jnp.asarray(ytr)
    widths = (xtr.shape[1], *hidden, int(ytr.max()) + 1)
    k_init, k_la, k_mb, k_s = jax.random.split(rng_key, 4)
    mode = map_laplace.fit_map(
        k_init,
        widths,
        xtr,
        ytr,
        choices,
        likelihood="categorical",
        prior_precision=prior_precision,
        num_steps=map_steps,
        learning_rate=map_learning_rate,
        activation="relu",
    )
    p_map = mode.params
    t_map, unr = ravel_pytree(p_map)
    t0 = time.perf_counter()
    post = map_laplace.fit_laplace(
        mode, xtr, ytr, choices, likelihood="categorical", prior_precision=prior_precision
    )
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    samples = {"LA": jax.block_until_ready(post.sample(k_la, num_samples))}
    seconds = {"LA": t_fit + time.perf_counter() - t0, "Lin LA": t_fit}
    t0 = time.perf_counter()
    loss = metricbnn.refinement_loss(
        unr, _relu_net, xtr, ytr, likelihood="categorical", prior_precision=prior_precision
    )
    _, latent, _ = walk_fn(k_mb, loss, t_map)
    samples["MetricBNN"] = jax.block_until_ready(metricbnn.latent_sample(latent, k_s, num_samples))
    seconds["MetricBNN"] = time.perf_counter() - t0
    return UciFit(p_map, unr, post, samples, seconds, xtr, ytr, xte, jnp.asarray(yte))


def uci_probs(fit: UciFit, x) -> dict:
    """Each method's predictive probabilities at x (m, d): method → (probs (m, C), seconds).

    "MAP" softmax f(x; θ̂); "LA" the sampled LA's mean over its draws; "Lin LA" the
    linearised LA; "MetricBNN" the mean over its draws; seconds: wall time of the prediction.
    """
    out = {"MAP": (np.asarray(jax.nn.softmax(_relu_net(fit.params, x))), 0.0)}
    predict = {
        "LA": lambda: class_probs(fit.samples["LA"], fit.unravel, _relu_net, x),
        "Lin LA": lambda: np.asarray(laplace.linearised_predictive(fit.posterior, x)),
        "MetricBNN": lambda: class_probs(fit.samples["MetricBNN"], fit.unravel, _relu_net, x),
    }
    for method, run in predict.items():
        t0 = time.perf_counter()
        probs = run()
        out[method] = (probs, time.perf_counter() - t0)
    return out


def uci_settings(cfg: MetricBNNSettings, walk) -> dict:
    """The keywords of :func:`uci_fit` from the chapter's settings ``cfg`` (``uci_hidden``,
    ``map_laplace``, ``prior_precision``, ``uci_map_steps``, ``map_learning_rate``,
    ``pred_samples``) and ``walk`` (:func:`walker`) with ``uci_steps``, ``uci_drift``,
    ``uci_ae_updates`` bound."""
    walk_fn = partial(
        walk, num_steps=cfg.uci_steps, drift=cfg.uci_drift, ae_updates=cfg.uci_ae_updates
    )
    return dict(
        hidden=cfg.uci_hidden,
        choices=cfg.map_laplace,
        prior_precision=cfg.prior_precision,
        map_steps=cfg.uci_map_steps,
        map_learning_rate=cfg.map_learning_rate,
        num_samples=cfg.pred_samples,
        walk_fn=walk_fn,
    )


def uci_run(name: str, seed: int, rng_key, **settings) -> dict:
    """One split of a UCI classification set ([MBNN] Table 1): method → (test NLL, seconds).

    :func:`uci_fit` with ``settings`` (its keywords), then :func:`uci_probs` on the test set.
    Seconds are wall time after the MAP (fit, draws and prediction); "MAP" is the MAP's own
    NLL (time 0).
    """
    fit = uci_fit(name, seed, rng_key, **settings)
    y = np.asarray(fit.y_test)
    return {
        m: (metrics.categorical_nll(probs, y), fit.seconds.get(m, 0.0) + sec)
        for m, (probs, sec) in uci_probs(fit, fit.x_test).items()
    }


def uci_runs(keys, cfg: MetricBNNSettings, walk) -> dict:
    """:func:`uci_run` on every split ``cfg.uci_seeds`` of every set of
    ``data.UCI_CLASSIFICATION`` (:func:`uci_settings` of ``cfg`` and ``walk``), with one key
    each (data sets outer). Returns data set → list of runs (one per split)."""
    keys = iter(keys)
    settings = uci_settings(cfg, walk)
    return {
        name: [uci_run(name, seed, next(keys), **settings) for seed in cfg.uci_seeds]
        for name in data.UCI_CLASSIFICATION
    }


def uci_table(runs: dict, paper_nll: dict, methods=("LA", "Lin LA", "MetricBNN")) -> list:
    """Rows (data set, method, mean NLL, sd NLL, mean seconds, paper NLL) over the splits.

    runs: data set → list of :func:`uci_run` results; paper_nll: data set → the paper's NLL
    per method in ``methods`` order (NaN for "MAP", which the paper does not report).
    """
    rows = []
    for name, splits in runs.items():
        for m in (*methods, "MAP"):
            nll = np.array([r[m][0] for r in splits])
            sec = np.array([r[m][1] for r in splits])
            paper = paper_nll[name][methods.index(m)] if m in methods else float("nan")
            rows.append((name, m, nll.mean(), nll.std(), sec.mean(), paper))
    return rows


def wins_over(table, rival: str, names: Sequence[str] = data.UCI_CLASSIFICATION) -> dict:
    """Data set → MetricBNN's mean NLL ≤ ``rival``'s; table rows (data set, method, NLL, ...)."""
    nll = {(r[0], r[1]): r[2] for r in table}
    return {n: bool(nll[(n, "MetricBNN")] <= nll[(n, rival)]) for n in names}


def faster_than(
    table, rivals: Sequence[str], names: Sequence[str] = data.UCI_CLASSIFICATION
) -> dict:
    """Data set → MetricBNN's mean time below every one of ``rivals``'; table rows (data set,
    method, mean NLL, sd NLL, mean seconds, ...) as :func:`uci_table` gives them."""
    seconds = {(r[0], r[1]): r[4] for r in table}
    return {n: all(seconds[(n, "MetricBNN")] < seconds[(n, m)] for m in rivals) for n in names}


# ----------------------------------------------------------------------------- Banana, MNIST


def banana_predictives(
    rng_keys,
    x,
    y,
    inputs: dict,
    *,
    widths: Sequence[int],
    choices: MapLaplaceChoices,
    prior_precision: float,
    map_steps: int,
    map_learning_rate: float,
    num_samples: int,
    walk_fn,
) -> dict:
    """Predictive class probabilities of the sampled LA, the linearised LA and MetricBNN
    ([MBNN] Fig. 4).

    A tanh MLP (``widths``) is trained to its MAP on the classes y (n,) of x (n, d); the LA
    (:mod:`.map_laplace` with ``choices``: the chapter's full GGN, prior precision by the
    evidence) and MetricBNN (``walk_fn``, then latent
    samples) predict each array of ``inputs`` (name → (m, d)). ``rng_keys``: four keys, for
    the initialisation, Alg. 1, the LA's samples and the latent samples. Returns
    name → method → posterior-mean class probabilities (m, C).
    """
    k_init, k_walk, k_la, k_mb = rng_keys
    tanh_net = partial(nets.mlp_apply, activation_name="tanh")
    mode = map_laplace.fit_map(
        k_init,
        widths,
        x,
        y,
        choices,
        likelihood="categorical",
        prior_precision=prior_precision,
        num_steps=map_steps,
        learning_rate=map_learning_rate,
        activation="tanh",
    )
    t_map, unravel = ravel_pytree(mode.params)
    post = map_laplace.fit_laplace(
        mode,
        x,
        y,
        choices,
        likelihood="categorical",
        prior_precision=prior_precision,
        activation="tanh",
    )
    loss = metricbnn.refinement_loss(
        unravel, tanh_net, x, y, likelihood="categorical", prior_precision=prior_precision
    )
    _, latent, _ = walk_fn(k_walk, loss, t_map)
    th_la = post.sample(k_la, num_samples)
    th_mb = metricbnn.latent_sample(latent, k_mb, num_samples)
    return {
        where: {
            "LA": class_probs(th_la, unravel, tanh_net, xs),
            "Lin LA": np.asarray(laplace.linearised_predictive(post, xs)),
            "MetricBNN": class_probs(th_mb, unravel, tanh_net, xs),
        }
        for where, xs in inputs.items()
    }


def banana_run(
    keys, x_train, y_train, x_test, cfg: MetricBNNSettings, walk
) -> tuple[dict, np.ndarray, float]:
    """:func:`banana_predictives` on a 61 × 61 grid over [-4.5, 4.5]², on a ring of radius
    ``cfg.ring_radius`` × the training data's largest radius (200 points) and on the test
    points. Returns ``(probabilities, grid axis (61,), ring radius)``: "grid", "ring" and
    "test" → method → (m, C)."""
    g = np.linspace(-4.5, 4.5, 61)
    grid = jnp.asarray(np.stack(np.meshgrid(g, g), -1).reshape(-1, 2), jnp.float32)
    radius = cfg.ring_radius * float(np.linalg.norm(x_train, axis=1).max())
    angles = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    ring = jnp.asarray(radius * np.stack([np.cos(angles), np.sin(angles)], 1), jnp.float32)
    probs = banana_predictives(
        list(keys),
        jnp.asarray(x_train, jnp.float32),
        jnp.asarray(y_train),
        {"grid": grid, "ring": ring, "test": jnp.asarray(x_test, jnp.float32)},
        widths=cfg.banana_widths,
        choices=cfg.map_laplace,
        prior_precision=cfg.prior_precision,
        map_steps=cfg.banana_map_steps,
        map_learning_rate=cfg.map_learning_rate * 10,
        num_samples=cfg.pred_samples,
        walk_fn=partial(
            walk,
            num_steps=cfg.banana_steps,
            drift=cfg.banana_drift,
            ae_updates=cfg.banana_ae_updates,
        ),
    )
    return probs, g, radius


def mnist_study(keys, x_train, y_train, x_test, y_test, cfg: MetricBNNSettings, walk) -> dict:
    """:func:`mnist_run` on the first ``cfg.mnist_n_train`` training images. Returns
    ``{"nll", "seconds", "num_params", "n_train", "n_test"}``."""
    x = jnp.asarray(x_train[: cfg.mnist_n_train], jnp.float32)
    y = jnp.asarray(y_train[: cfg.mnist_n_train])
    xt = jnp.asarray(x_test, jnp.float32)
    nll, seconds, num_params = mnist_run(
        list(keys),
        x,
        y,
        xt,
        y_test,
        choices=cfg.map_laplace,
        prior_precision=cfg.prior_precision,
        map_steps=cfg.mnist_map_steps,
        map_learning_rate=cfg.map_learning_rate * 3,
        num_samples=cfg.pred_samples,
        refine_n=cfg.mnist_refine_n,
        walk_fn=partial(
            walk, num_steps=cfg.mnist_steps, drift=cfg.mnist_drift, ae_updates=cfg.mnist_ae_updates
        ),
    )
    return {
        "nll": nll,
        "seconds": seconds,
        "num_params": num_params,
        "n_train": int(x.shape[0]),
        "n_test": int(xt.shape[0]),
    }


def mnist_run(
    rng_keys,
    x,
    y,
    x_test,
    y_test,
    *,
    choices: MapLaplaceChoices,
    prior_precision: float,
    map_steps: int,
    map_learning_rate: float,
    num_samples: int,
    refine_n: int,
    walk_fn,
):
    """[MBNN] Table 2 on an MNIST subset: test NLL of the CNN's MAP, its last-layer LA
    (sampled and linearised; the Laplace part of ``choices`` on the last layer) and MetricBNN
    on the whole network.

    x (n, 784), y (n,): flattened training images and labels; MetricBNN refines on the first
    ``refine_n`` of them with the prior precision scaled by refine_n/n (eq. 1 on a
    minibatch). ``rng_keys``: four keys, for the CNN's initialisation, the LA's samples,
    Alg. 1 and the latent samples. Returns ``(nll, seconds, num_params)``: method → NLL,
    wall time after the MAP of the LA and of MetricBNN, and the CNN's size P.
    """
    k_init, k_la, k_walk, k_mb = rng_keys
    p_map, _ = map_estimate.train_map(
        cnn.cnn_init(k_init),
        x,
        y,
        likelihood="categorical",
        apply_fn=cnn.cnn_apply,
        prior_precision=prior_precision,
        num_steps=map_steps,
        learning_rate=map_learning_rate,
    )
    t_map, unravel = ravel_pytree(p_map)
    nll = {}
    t0 = time.perf_counter()
    post = map_laplace.fit_laplace(  # Table 2's LA is the CNN's last layer's
        map_laplace.MapFit(p_map, None),
        x,
        y,
        dataclasses.replace(choices, subset="last_layer"),
        likelihood="categorical",
        prior_precision=prior_precision,
        apply_fn=cnn.cnn_apply,
        features_fn=cnn.cnn_features,
    )
    th_last = post.sample(k_la, num_samples)
    logits = jax.vmap(lambda t: post.model_fn(t, x_test))(th_last)
    nll["LA (last layer)"] = metrics.categorical_nll(
        np.asarray(jax.nn.softmax(logits, -1).mean(0)), y_test
    )
    nll["Lin LA (last layer)"] = metrics.categorical_nll(
        np.asarray(laplace.linearised_predictive(post, x_test)), y_test
    )
    t_la = time.perf_counter() - t0
    t0 = time.perf_counter()
    scaled_precision = prior_precision * refine_n / x.shape[0]
    loss = metricbnn.refinement_loss(
        unravel,
        cnn.cnn_apply,
        x[:refine_n],
        y[:refine_n],
        likelihood="categorical",
        prior_precision=scaled_precision,
    )
    _, latent, _ = walk_fn(k_walk, loss, t_map)
    th_mb = metricbnn.latent_sample(latent, k_mb, num_samples)
    nll["MetricBNN"] = metrics.categorical_nll(
        class_probs(th_mb, unravel, cnn.cnn_apply, x_test), y_test
    )
    t_mb = time.perf_counter() - t0
    nll["MAP"] = metrics.categorical_nll(
        np.asarray(jax.nn.softmax(cnn.cnn_apply(p_map, x_test))), y_test
    )
    return nll, {"LA (last layer)": t_la, "MetricBNN": t_mb}, int(t_map.size)


# ----------------------------------------------------------------------------- cost, Fig. 5

# The form of each term of cost.laplace_flops / cost.metricbnn_flops as a function of the
# network's size P at a fixed width (the depth grows): the degree of the polynomial fitted to
# its measured counts, or None for a term given in closed form.
_LA_DEGREES = {"ggn": 2, "eigh": None, "predictive": 3}  # n·P² of ΣJᵀΛJ; 9P³; 2P³ of Σ
_MB_DEGREES = {"walk": 1, "svd": 1, "autoencoder": 0, "predictive": 1}


def _term_models(sizes, counts, degrees, closed_form):
    """Per term: a function of P and the largest relative misfit at the measured sizes."""
    sizes = np.asarray(sizes, dtype=float)
    models, misfit = {}, 0.0
    for name, degree in degrees.items():
        measured = np.array([c[name] for c in counts], dtype=float)
        exact = closed_form.get(name, lambda p: 0.0 * p)
        if degree is None:
            models[name] = exact
            continue
        coefs = np.polyfit(sizes, measured - exact(sizes), degree)
        models[name] = lambda p, c=coefs, e=exact: np.polyval(c, p) + e(p)
        error = np.abs(models[name](sizes) - measured) / np.maximum(np.abs(measured), 1.0)
        misfit = max(misfit, float(np.max(error)))
    return models, misfit


def flops_crossing(
    sizes, terms, *, solutions: int, num_components: int, upper: float = 1e8
) -> dict:
    """The size P at which the full-GGN LA's FLOP count would overtake MetricBNN's
    (C6.8, [MBNN] Fig. 5), extrapolated from the counts of :func:`cost.flops_against_depth`.

    sizes: the networks' sizes P (one per depth); terms: per size the pair of term dicts
    ``(laplace_flops, metricbnn_flops)``. Each term is extended to larger P with the form
    its computation has at a fixed width: the LA's ``eigh`` is 9P³ exactly, its ``ggn`` a
    quadratic and its ``predictive`` a cubic in P; MetricBNN's ``svd`` is the thin SVD of
    the (``solutions``, P) matrix of solutions (:func:`cost.svd_flops`) plus a linear
    term (the projection), its ``walk`` and ``predictive`` are linear and its
    ``autoencoder`` constant in P (the principal directions cap the encoder's input at
    ``num_components``); MetricBNN's terms are fitted on the sizes P ≥ num_components only.
    Returns ``{"size": the smallest P above the measured ones where LA's count reaches
    MetricBNN's (NaN if none below upper), "misfit": the largest relative misfit of a
    fitted term at the measured sizes, "la", "metricbnn": the two extrapolated totals at
    that size (NaN if none)}``.
    """
    sizes = np.asarray(sizes, dtype=float)
    if sizes.ndim != 1 or sizes.size != len(terms):
        raise ValueError(
            f"need one pair of term dicts per size: {len(terms)} pairs, "
            f"sizes of shape {sizes.shape}"
        )
    capped = sizes >= num_components
    if np.count_nonzero(capped) < 3:
        raise ValueError(
            f"need at least 3 sizes P >= num_components ({num_components}) to fit "
            f"MetricBNN's terms, got {np.count_nonzero(capped)}"
        )
    la_models, la_misfit = _term_models(
        sizes, [t[0] for t in terms], _LA_DEGREES, {"eigh": cost.eigh_flops}
    )
    svd = np.vectorize(lambda p: cost.svd_flops(solutions, p))
    mb_models, mb_misfit = _term_models(
        sizes[capped],
        [t[1] for t, c in zip(terms, capped, strict=True) if c],
        _MB_DEGREES,
        {"svd": svd},
    )

    def gap(p):  # LA's count minus MetricBNN's
        return sum(f(p) for f in la_models.values()) - sum(f(p) for f in mb_models.values())

    grid = np.geomspace(sizes.max(), upper, 2000)
    above = np.nonzero(np.asarray(gap(grid)) >= 0)[0]
    out = {
        "misfit": max(la_misfit, mb_misfit),
        "size": float("nan"),
        "la": float("nan"),
        "metricbnn": float("nan"),
    }
    if above.size == 0:
        return out
    if above[0] == 0:
        lo = hi = grid[0]
    else:
        lo, hi = grid[above[0] - 1], grid[above[0]]
        for _ in range(100):  # bisection on the first sign change
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if gap(mid) >= 0 else (mid, hi)
    la_total = float(sum(f(hi) for f in la_models.values()))
    return {**out, "size": float(hi), "la": la_total, "metricbnn": la_total - float(gap(hi))}


def depth_map(key, problem: GapRegression, cfg: MetricBNNSettings, depth: int):
    """The MAP of C6.8's network with ``depth`` hidden layers: a tanh MLP
    1 → ``cfg.depth_width``^depth → 1 started with ``key`` and trained on ``problem``'s data
    (its noise, the prior precision and budget of ``cfg``; :func:`.map_laplace.fit_map` with the
    chapter's ``map_laplace``).

    Returns ``(mode, net)``: the :class:`.map_laplace.MapFit`, and ``net``, ``problem`` with
    this network's ``unravel`` and the
    tanh network that the MAP was trained as, so the LA, MetricBNN and the gap NLL read the
    parameters as the same network.
    """
    mode = map_laplace.fit_map(
        key,
        (problem.x.shape[1], *([cfg.depth_width] * depth), 1),
        problem.x,
        problem.y,
        cfg.map_laplace,
        likelihood="gaussian",
        prior_precision=cfg.prior_precision,
        num_steps=cfg.snelson_map_steps,
        learning_rate=cfg.map_learning_rate,
        activation="tanh",
        noise_scale=problem.noise_scale,
    )
    tanh_net = partial(nets.mlp_apply, activation_name="tanh")
    return mode, replace(problem, unravel=ravel_pytree(mode.params)[1], apply_fn=tanh_net)


def depth_accuracy(keys, problem: GapRegression, cfg: MetricBNNSettings, walk) -> dict:
    """[MBNN] Fig. 5's accuracy against depth (C6.8, "while preserving accuracy"): for each
    depth of ``cfg.depths`` (with its key of ``keys``), the tanh network's MAP
    (:func:`depth_map`), its sampled LA (full GGN,
    prior precision by the evidence) and MetricBNN (Alg. 1 with Snelson's settings, then
    latent samples), each scored by its NLL on the gap points (:func:`gap_nll`).

    ``walk``: :func:`walker` of the settings. Returns ``{"depth", "P", "LA", "MetricBNN"}`` of
    lists.
    """
    if len(keys) != len(cfg.depths):
        raise ValueError(f"need one key per depth: {len(keys)} keys, {len(cfg.depths)} depths")
    sigma, delta = problem.noise_scale, cfg.prior_precision
    rows: dict[str, list] = {"depth": [], "P": [], "LA": [], "MetricBNN": []}
    for key, depth in zip(keys, cfg.depths, strict=True):
        k_init, k_curv, k_walk, k_la, k_mb = jax.random.split(key, 5)
        mode, net = depth_map(k_init, problem, cfg, depth)
        theta = ravel_pytree(mode.params)[0]
        post = map_laplace.fit_laplace(
            mode,
            problem.x,
            problem.y,
            cfg.map_laplace,
            likelihood="gaussian",
            prior_precision=cfg.prior_precision,
            activation="tanh",
        )
        loss = metricbnn.refinement_loss(
            net.unravel,
            net.apply_fn,
            problem.x,
            problem.y,
            likelihood="gaussian",
            noise_scale=sigma,
            prior_precision=delta,
        )
        _, latent, _ = walk(
            k_walk,
            loss,
            theta,
            num_steps=cfg.snelson_steps,
            drift=cfg.snelson_drift,
            ae_updates=cfg.ae_updates,
            learning_rate=metricbnn.stable_learning_rate(
                loss, theta, k_curv, cfg.refine_learning_rate
            ),
        )
        rows["depth"].append(depth)
        rows["P"].append(int(theta.size))
        rows["LA"].append(gap_nll(post.sample(k_la, cfg.pred_samples), net))
        rows["MetricBNN"].append(
            gap_nll(metricbnn.latent_sample(latent, k_mb, cfg.pred_samples), net)
        )
    return rows


def cost_study(keys, problem: GapRegression, cfg: MetricBNNSettings) -> tuple[dict, list]:
    """:func:`cost.flops_against_depth` on Snelson's data at the depths ``cfg.depths`` and
    App. A's budgets of ``cfg``: ``(rows, terms)`` (one key per depth)."""
    return cost.flops_against_depth(
        list(keys),
        problem.x,
        problem.y,
        problem.x_gap,
        depths=cfg.depths,
        width=cfg.depth_width,
        noise_scale=problem.noise_scale,
        prior_precision=cfg.prior_precision,
        num_particles=cfg.num_particles,
        num_steps=cfg.cost_steps,
        num_refine=cfg.num_refine,
        ae_updates=cfg.cost_ae_updates,
        ae_batch=cfg.cost_ae_batch,
        latent_dim=cfg.latent_dim,
        hidden=cfg.ae_hidden,
        num_components=cfg.ae_components,
        num_samples=cfg.pred_samples,
    )


def cost_summary(rows: dict, terms: list, cfg: MetricBNNSettings) -> dict:
    """C6.8's numbers from :func:`cost_study`: ``growth`` (method → deepest / shallowest
    count), ``ratio`` (MetricBNN / LA per depth), ``crossing`` (:func:`flops_crossing`) and
    ``cross_depth`` (the hidden layers at the crossing, by the parameters per layer)."""
    if len(rows["P"]) < 2:
        raise ValueError(f"need counts at two depths at least, got {len(rows['P'])}")
    growth = {m: rows[m][-1] / rows[m][0] for m in ("LA", "MetricBNN", "MetricBNN, all P in")}
    ratio = np.array(rows["MetricBNN"]) / np.array(rows["LA"])
    crossing = flops_crossing(
        rows["P"],
        terms,
        solutions=cfg.num_particles * cfg.cost_steps,
        num_components=cfg.ae_components,
    )
    sizes, depths = np.array(rows["P"]), np.array(rows["depth"])
    per_layer = (sizes[-1] - sizes[0]) / (depths[-1] - depths[0])  # parameters per layer
    cross_depth = depths[0] + (crossing["size"] - sizes[0]) / per_layer
    return {"growth": growth, "ratio": ratio, "crossing": crossing, "cross_depth": cross_depth}
