"""Snelson's in-between gap ([MBNN] §4, Figs. 2–3): the MAP, MetricBNN's walk from it, the
control walk without refinement (C6.1), the approximate posteriors (C6.2) and the repeats of
the whole pipeline over MAPs (C6.3, C6.4).

Each function takes the chapter's settings ``cfg``
(:func:`bnn_posteriors.site.profiles.settings`) and the keys it names, and returns numbers;
the chapter shows them and :mod:`.evidence` turns them into checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.inference import laplace, map_laplace, metricbnn
from bnn_posteriors.models import nets
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import MetricBNNSettings
from bnn_posteriors.studies.ch06_metricbnn import experiments

LEVEL = 0.95  # of the t-intervals over MAPs (C6.3, C6.4)
X_GRID = (-1.0, 7.0, 241)  # the inputs of Fig. 2's panels: linspace(start, stop, num)


@dataclass(frozen=True, eq=False)
class SnelsonWalk:
    """The MAP θ* (P,) of Snelson's network and MetricBNN's walk from it (Alg. 1).

    ``problem``: the data and network (:class:`experiments.GapRegression`); ``loss``: the
    refinement loss of eq. 1; ``train_mse``: the training MSE of a flat θ; ``lam_max`` and
    ``eta``: the MAP's largest Hessian eigenvalue and the refinement step used; ``paths``
    (N, T, P) and ``solutions`` (N·T, P): the walk; ``latent``: the autoencoder;
    ``mse_map`` and ``mse_paths`` (N·T,): the training MSE at θ* and at each solution.
    """

    problem: experiments.GapRegression
    params_map: Any
    theta_map: jax.Array
    loss: Any
    train_mse: Any
    lam_max: Any
    eta: Any
    paths: jax.Array
    latent: dict
    solutions: jax.Array
    mse_map: float
    mse_paths: np.ndarray

    @property
    def n_params(self) -> int:
        """P, the number of the network's parameters."""
        return int(self.theta_map.size)

    @cached_property
    def gaussian(self) -> tuple:
        """The Gaussian of the solutions, (mean (P,), factor (P, r)), computed once
        (:func:`metricbnn.gaussian_of_samples`): C6.2 and C6.3 both read it."""
        return metricbnn.gaussian_of_samples(self.solutions)


def fit_and_walk(keys: dict, x_tr, y_tr, x_gap, y_gap, cfg: MetricBNNSettings, walk) -> SnelsonWalk:
    """Train Snelson's ReLU MAP (eq. 1), cap the refinement step at 1/λ_max and walk.

    ``keys``: ``"map"`` (the initialisation), ``"curvature"`` (the power iteration) and
    ``"walk"`` (Alg. 1); x_tr (n, 1), y_tr (n,), x_gap (m, 1), y_gap (m,): the data;
    ``walk``: :func:`experiments.walker` of the settings.
    """
    x = jnp.asarray(x_tr, jnp.float32)
    y = jnp.asarray(y_tr, jnp.float32)[:, None]
    sigma, delta = cfg.snelson_sigma, cfg.prior_precision
    relu_net = partial(nets.mlp_apply, activation_name="relu")
    params_map = map_laplace.fit_map(
        keys["map"],
        cfg.snelson_widths,
        x,
        y,
        cfg.map_laplace,
        likelihood="gaussian",
        prior_precision=delta,
        num_steps=cfg.snelson_map_steps,
        learning_rate=cfg.map_learning_rate,
        activation="relu",
        noise_scale=sigma,
    ).params
    theta_map, unravel = ravel_pytree(params_map)
    loss = metricbnn.refinement_loss(
        unravel, relu_net, x, y, likelihood="gaussian", noise_scale=sigma, prior_precision=delta
    )
    train_mse = metricbnn.refinement_loss(
        unravel, relu_net, x, y, likelihood="gaussian", regularised=False
    )
    lam_max = metricbnn.max_curvature(loss, theta_map, keys["curvature"])
    eta = metricbnn.stable_learning_rate(
        loss, theta_map, keys["curvature"], cfg.refine_learning_rate, lam_max=lam_max
    )
    paths, latent, _ = walk(
        keys["walk"],
        loss,
        theta_map,
        num_steps=cfg.snelson_steps,
        drift=cfg.snelson_drift,
        ae_updates=cfg.ae_updates,
        learning_rate=eta,
    )
    solutions = paths.reshape(-1, theta_map.size)
    problem = experiments.GapRegression(
        x, y, jnp.asarray(x_gap, jnp.float32), y_gap, sigma, unravel, relu_net
    )
    return SnelsonWalk(
        problem,
        params_map,
        theta_map,
        loss,
        train_mse,
        lam_max,
        eta,
        paths,
        latent,
        solutions,
        float(train_mse(theta_map)),
        np.asarray(jax.lax.map(train_mse, solutions, batch_size=100)),
    )


def walk_table(run: SnelsonWalk) -> list[tuple[str, str]]:
    """Rows (quantity, value) of the walk: P, solutions, λ_max, η, the MAP's and the
    solutions' largest training MSE."""
    return [
        ("parameters P", str(run.n_params)),
        ("solutions N·T", str(run.solutions.shape[0])),
        ("λ_max at the MAP", f"{float(run.lam_max):.4g}"),
        ("refinement step η", f"{float(run.eta):.3g}"),
        ("training MSE at the MAP", f"{run.mse_map:.4f}"),
        ("largest training MSE along the trajectories", f"{run.mse_paths.max():.4f}"),
    ]


def control_measures(run: SnelsonWalk, key_walk, cfg: MetricBNNSettings) -> dict:
    """C6.1's measures: the walk's and a control walk's (same directions, M = 0) largest
    training-loss ratio to the MAP's minus 1, and the variance fraction of the top N/2
    principal components of each against an isotropic share; with λ_max and η.

    ``key_walk``: the walk's key; the control walks with the first half of its split.
    """
    n_params, solutions = run.n_params, run.solutions
    k_pc = cfg.num_particles // 2
    stride = max(1, solutions.shape[0] // 1000)  # at most ~1000 solutions for the SVD
    control, _ = metricbnn.sample_trajectories(
        run.loss,
        run.theta_map,
        jax.random.split(key_walk)[0],
        num_particles=cfg.num_particles,
        num_steps=cfg.snelson_steps,
        num_refine=0,
        drift=cfg.snelson_drift,
    )
    control = control.reshape(-1, n_params)
    mse_control = np.asarray(jax.lax.map(run.train_mse, control, batch_size=100))
    return {
        "max loss ratio - 1": float(run.mse_paths.max() / run.mse_map - 1),
        "control: max loss ratio - 1": float(mse_control.max() / run.mse_map - 1),
        "explained top-k": float(metricbnn.explained_variance(solutions[::stride], k_pc)),
        "control: explained top-k": float(metricbnn.explained_variance(control[::stride], k_pc)),
        "isotropic top-k": k_pc / n_params,
        "lambda_max": run.lam_max,
        "eta": run.eta,
    }


@dataclass(frozen=True, eq=False)
class Posteriors:
    """The approximate posteriors of Snelson's MAP (C6.2, Figs. 2–3).

    ``la``: the LA (prior precision by the evidence); ``draws``: method → flat samples
    (S, P); ``x_grid`` (G, 1) and ``pred_grid``: method → f on the grid (S, G);
    ``lin_mean``, ``lin_var`` (G, 1): the linearised LA's predictive; ``ratios``: method →
    sd(gap) / sd(data) (with "Lin LA"); ``nll_gap``: method → the gap NLL (nats per point).
    """

    la: Any
    draws: dict
    x_grid: jax.Array
    pred_grid: dict
    lin_mean: Any
    lin_var: Any
    ratios: dict
    nll_gap: dict


def posteriors(keys: dict, run: SnelsonWalk, cfg: MetricBNNSettings) -> Posteriors:
    """The sampled LA, the Gaussian of the solutions, the solutions and the latent posterior
    (``cfg.pred_samples`` each, from ``keys`` "la", "gaussian", "samples", "posterior"), and
    the linearised LA; their predictive on a grid and their widening in the gap."""
    problem, solutions, s = run.problem, run.solutions, cfg.pred_samples
    post = map_laplace.fit_laplace(
        map_laplace.MapFit(run.params_map, problem.noise_scale),
        problem.x,
        problem.y,
        cfg.map_laplace,
        likelihood="gaussian",
        prior_precision=cfg.prior_precision,
    )
    gauss_mean, gauss_factor = run.gaussian
    draws = {
        "LA": post.sample(keys["la"], s),
        "Gaussian of samples": metricbnn.gaussian_sample(
            gauss_mean, gauss_factor, keys["gaussian"], s
        ),
        "MetricBNN samples": solutions[
            jax.random.choice(keys["samples"], solutions.shape[0], (s,))
        ],
        "MetricBNN posterior": metricbnn.latent_sample(run.latent, keys["posterior"], s),
    }
    x_grid = jnp.linspace(*X_GRID)[:, None]
    pred_grid = {
        m: np.asarray(metricbnn.push_forward(t, problem.unravel, problem.apply_fn, x_grid))[..., 0]
        for m, t in draws.items()
    }
    lin_mean, lin_var = laplace.linearised_predictive(post, x_grid)
    lin_gap_var = laplace.linearised_variance(post, problem.x_gap)[:, 0, 0]
    lin_train_var = laplace.linearised_variance(post, problem.x)[:, 0, 0]
    ratios = {m: experiments.gap_ratio(t, problem) for m, t in draws.items()}
    ratios["Lin LA"] = float(np.sqrt(lin_gap_var).mean() / np.sqrt(lin_train_var).mean())
    nll_gap = {m: experiments.gap_nll(t, problem) for m, t in draws.items()}
    return Posteriors(post, draws, x_grid, pred_grid, lin_mean, lin_var, ratios, nll_gap)


def per_map_metrics(repeat_key, run: SnelsonWalk, cfg: MetricBNNSettings, walk) -> dict:
    """C6.3/C6.4's metrics on ``cfg.snelson_repeats`` MAPs: this MAP first, then the whole
    pipeline again from fresh initialisations (:func:`experiments.snelson_repeats`, keys
    ``fold_in(repeat_key, r)``). Returns metric → values (one per MAP)."""
    per_map = [
        experiments.latent_posterior_metrics(
            repeat_key,
            run.theta_map,
            run.paths,
            run.latent,
            run.problem,
            num_samples=cfg.pred_samples,
            gaussian=run.gaussian,
        )
    ]
    per_map += experiments.snelson_repeats(
        repeat_key,
        run.problem,
        range(1, cfg.snelson_repeats),
        cache=cfg.cache,
        walk_fn=partial(
            walk, num_steps=cfg.snelson_steps, drift=cfg.snelson_drift, ae_updates=cfg.ae_updates
        ),
        widths=cfg.snelson_widths,
        choices=cfg.map_laplace,
        prior_precision=cfg.prior_precision,
        map_steps=cfg.snelson_map_steps,
        map_learning_rate=cfg.map_learning_rate,
        refine_learning_rate=cfg.refine_learning_rate,
        num_samples=cfg.pred_samples,
    )
    return {k: np.array([m[k] for m in per_map]) for k in per_map[0]}


def summaries(per_map: dict, committed: dict | None, level: float = LEVEL) -> dict:
    """The replicate summaries (:func:`diagnostics.replicate_summary`) of each metric, for
    "this build" (``per_map``) and for the MAPs that decide C6.3/C6.4, "deciding (full
    profile)": the committed full run's ``snelson.per_map``, or ``per_map`` itself when
    ``committed`` is None (the full profile's own build)."""
    if not per_map:
        raise ValueError("per_map holds no metrics")
    decided = (
        per_map
        if committed is None
        else {k: np.asarray(v) for k, v in committed["snelson"]["per_map"].items()}
    )
    return {
        label: {k: _summary(v, level) for k, v in table.items()}
        for label, table in (("this build", per_map), ("deciding (full profile)", decided))
    }


def _summary(values, level: float) -> dict:
    """:func:`diagnostics.replicate_summary` of the values; of a single MAP (the quick
    build), its value with NaN for the interval and the sd, which one MAP cannot give."""
    values = np.asarray(values, dtype=np.float64)
    if values.size != 1:
        return diagnostics.replicate_summary(values, level=level)
    v = float(values[0])
    return {"mean": v, "low": np.nan, "high": np.nan, "sd": np.nan, "n": 1, "per MAP": [v]}


def summary_table(by_label: dict, level: float = LEVEL) -> tuple[tuple, list]:
    """The header and rows (MAPs, quantity, mean, t-interval, sd) of :func:`summaries`."""
    rows = [
        (
            f"{label} ({m['n']} MAP{'s' if m['n'] > 1 else ''})",
            k,
            f"{m['mean']:.4f}",
            f"[{m['low']:.4f}, {m['high']:.4f}]" if m["n"] > 1 else "—",
            tables.number(m["sd"], ".4f"),
        )
        for label, by_key in by_label.items()
        for k, m in by_key.items()
    ]
    return ("MAPs", "quantity", "mean", f"{level:.0%} t-interval", "sd"), rows
