"""The prior-scale study of [SAP] App. D.6 (Fig. 12, claim C7.6), one cell at a time.

A *cell* is one (data set, depth): a deep ensemble of warm starts is trained once, and every
scale s of the grid runs one MILE chain from each warm start, all scales of the cell in one
vectorised :func:`bnn_posteriors.inference.mile.run_bde` call (one prior scale per chain),
so chain k at scale s and at scale 1 share their start (paired differences).

At the paper's budget a cell takes tens of minutes on a CPU, and the study more hours than
one session of a machine lasts. So each finished cell can be written to a results folder
(:func:`prior_scale_study` with ``results_dir``), committed with its provenance, and read
back by any later run whose settings for that cell are the same: the study resumes across
machines, cell by cell, where the unit cache (per chain) resumes only on one machine.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.inference import ensembles, mile
from bnn_posteriors.site.settings_classes import SamplingInPracticeSettings
from bnn_posteriors.store import parts, provenance
from bnn_posteriors.studies.ch07_sampling_in_practice.permuted_starts import ensemble_settings
from bnn_posteriors.util.validate import positive_int

# Version of a cell's computation: bump it when an edit can change a cell's result (its keys,
# the ensemble's training, what a cell stores); MILE's own version is part of the settings.
CELL_VERSION = "prior-scale-cell-1"


def cell_key(seed: int, dataset: str, depth: int):
    """The key of cell (``dataset``, ``depth``) under ``seed``: independent of the other cells."""
    key = jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(dataset.encode()))
    return jax.random.fold_in(key, positive_int("depth", depth))


def cell_settings(
    seed: int,
    dataset: str,
    depth: int,
    grid: Sequence[float],
    *,
    n_chains: int,
    split_seed: int,
    n_max: int | None,
    tuning_steps: int,
    sampling_steps: int,
    thinning: int,
    width: int = 16,
    **ensemble_kwargs,
) -> dict:
    """Everything that decides a cell's result, as plain JSON values (a result file's key).

    ``ensemble_kwargs`` go to :func:`ensembles.train_ensemble`; ``version`` names this
    module's and MILE's versions of the computation.
    """
    data.dataset_info(dataset)
    return provenance.to_json(
        {
            "seed": int(seed),
            "dataset": dataset,
            "depth": positive_int("depth", depth),
            "grid": [float(s) for s in grid],
            "n_chains": positive_int("n_chains", n_chains),
            "split_seed": int(split_seed),
            "n_max": n_max,
            "tuning_steps": positive_int("tuning_steps", tuning_steps),
            "sampling_steps": positive_int("sampling_steps", sampling_steps),
            "thinning": positive_int("thinning", thinning),
            "width": positive_int("width", width),
            "ensemble": dict(sorted(ensemble_kwargs.items())),
            "version": f"{CELL_VERSION}/{mile.CACHE_VERSION}",
        }
    )


def prior_scale_cell(settings: dict, *, cache: bool | Path = False, progress: bool = False) -> dict:
    """Test LPPD and RMSE of MILE with prior N(0, s²) for every s of the cell's grid.

    ``settings`` from :func:`cell_settings`. The ensemble of ``n_chains`` members uses
    :func:`cell_key` and the chains ``fold_in`` of it with 1; networks have ``depth`` hidden
    layers of ``width`` units. ``cache`` and ``progress`` go to :func:`mile.run_bde`.
    Returns ``{"settings", "lppd", "rmse", "chain_lppd", "wall_s"}``: per scale the test
    LPPD of the cell's ensemble of chains and the RMSE of its mean; per warm start k and
    scale the LPPD of chain k alone (n_chains, len(grid)); the wall time in seconds.
    """
    start = time.perf_counter()
    s = settings
    grid = np.asarray(s["grid"])
    sp = data.load_split(s["dataset"], s["split_seed"], n_max=s["n_max"])
    widths = (sp.x_train.shape[1], *(s["width"],) * s["depth"], 1)
    key = cell_key(s["seed"], s["dataset"], s["depth"])
    warm, _ = ensembles.train_ensemble(
        key,
        sp.x_train,
        sp.y_train,
        sp.x_val,
        sp.y_val,
        widths=widths,
        n_members=s["n_chains"],
        **s["ensemble"],
    )
    starts = mile.warm_start_positions(warm)
    out = mile.run_bde(  # chain i * n_chains + k: scale grid[i], warm start k
        jax.random.fold_in(key, 1),
        sp.x_train,
        sp.y_train,
        jax.tree.map(lambda a: jnp.concatenate([a] * len(grid)), starts),
        widths=widths,
        prior_scale=np.repeat(grid, s["n_chains"]),
        tuning_steps=s["tuning_steps"],
        sampling_steps=s["sampling_steps"],
        thinning=s["thinning"],
        cache=cache,
        progress=progress,
    )
    m, sd = (np.asarray(a) for a in mile.predict(out["samples"], sp.x_test))
    m = m.reshape(len(grid), s["n_chains"], *m.shape[1:])
    sd = sd.reshape(len(grid), s["n_chains"], -1)
    return {
        "settings": s,
        "lppd": [float(metrics.lppd(sp.y_test, m[i], sd[i][..., None])) for i in range(len(grid))],
        "rmse": [float(metrics.rmse(sp.y_test, m[i].mean(axis=(0, 1)))) for i in range(len(grid))],
        "chain_lppd": [
            [float(metrics.lppd(sp.y_test, m[i, k], sd[i, k][:, None])) for i in range(len(grid))]
            for k in range(s["n_chains"])
        ],
        "wall_s": time.perf_counter() - start,
    }


def cell_name(settings: dict) -> str:
    """Name of one cell's part: ``<dataset>_depth<depth>_seed<seed>``."""
    return f"{settings['dataset']}_depth{settings['depth']}_seed{settings['seed']}"


def cell_path(directory: Path | str, settings: dict) -> Path:
    """File of one cell's result: ``<directory>/<dataset>_depth<depth>_seed<seed>.json``."""
    return parts.part_path(directory, cell_name(settings))


def chapter_arguments(cfg: SamplingInPracticeSettings) -> dict:
    """The study's arguments from chapter 7's settings (``profiles.settings``).

    The grid is the paper's scales followed by the Glorot scale; the warm starts are
    trained with the chapter's ensemble settings (``de_*``).
    """
    return dict(
        seed=cfg.seed,
        datasets=cfg.prior_datasets,
        depths=cfg.prior_depths,
        grid=(*cfg.scales, cfg.glorot_scale),
        n_chains=cfg.prior_chains,
        split_seed=cfg.split_seed,
        n_max=cfg.prior_n_max,
        tuning_steps=cfg.prior_tuning_steps,
        sampling_steps=cfg.prior_sampling_steps,
        thinning=cfg.thinning,
        **ensemble_settings(cfg),
    )


def committed_cells(cfg: SamplingInPracticeSettings) -> list[dict] | None:
    """The committed cells of chapter 7's settings ``cfg`` (a profile with ``prior_results``),
    read from ``results/``; None unless every (data set, depth) cell is there with ``cfg``'s
    settings. The quick profile decides C7.6 on the full profile's cells so."""
    args = chapter_arguments(cfg)
    directory = chapter_results_dir(cfg)
    if directory is None:
        return None
    seed, datasets, depths, grid = (args.pop(k) for k in ("seed", "datasets", "depths", "grid"))
    settings = [cell_settings(seed, n, d, grid, **args) for n in datasets for d in depths]
    cells = parts.committed_parts(directory, {cell_name(s): s for s in settings})
    return None if cells is None else [{**cell, "read": True} for cell in cells]


def chapter_results_dir(cfg: SamplingInPracticeSettings) -> Path | None:
    """Folder of the committed cells of the profile (``prior_results`` under ``results/``)."""
    return parts.committed_dir(cfg.prior_results)


def prior_scale_study(
    seed: int,
    datasets: Sequence[str],
    depths: Sequence[int],
    grid: Sequence[float],
    *,
    cache: bool | Path = False,
    results_dir: Path | str | None = None,
    profile: str | None = None,
    progress: bool = False,
    report: Callable[[dict], None] | None = None,
    **settings,
) -> list[dict]:
    """Every cell (data set, depth) of the study, data set by data set: a list of cells.

    ``settings``: the keyword arguments of :func:`cell_settings` (chain count, split,
    budgets, width, the ensemble's). With ``results_dir`` a cell whose file there holds
    the same settings is read from it (``"read": True``), and every computed cell is
    written there (with ``profile`` and provenance) as soon as it is done. ``report`` is
    called with each cell, read or computed (a progress line). Cells are
    :func:`prior_scale_cell`'s dicts.
    """
    cells = []
    for name in datasets:
        for depth in depths:
            s = cell_settings(seed, name, depth, grid, **settings)
            cell = parts.resumed_part(
                None if results_dir is None else cell_path(results_dir, s),
                s,
                lambda s=s: prior_scale_cell(s, cache=cache, progress=progress),
                profile=profile,
            )
            if report is not None:
                report(cell)
            cells.append(cell)
    return cells


def scale_comparison(rng, cells: Sequence[dict], n_ranked: int, *, num_resamples: int) -> dict:
    """The scales of the cells compared ([SAP] Fig. 12): ranks and paired differences.

    ``cells`` from :func:`prior_scale_study` (one grid, containing 1); the first
    ``n_ranked`` scales of the grid (the paper's) are ranked per cell by LPPD (1 = best)
    and by RMSE. Per scale s, Δ_s = LPPD(1) − LPPD(s) of each (cell, warm start) pair,
    with its mean and 95 % bootstrap interval over the pairs
    (:func:`diagnostics.paired_interval`, percentile, ``rng`` a NumPy Generator). Returns ``grid``,
    ``lppd`` and ``rmse`` (cells, grid), ``ranks`` and ``rmse_ranks`` (cells, n_ranked),
    ``avg_rank``, ``delta``, ``low``, ``high``, ``median`` (grid,), ``n_pairs``,
    ``position_of_1`` (the place of scale 1 among the average LPPD ranks), and per scale the
    lowest single-chain LPPD ``worst_lppd`` and the index of its cell ``worst_cell``.
    """
    grid = list(cells[0]["settings"]["grid"])
    lppd, rmse = (np.array([c[k] for c in cells]) for k in ("lppd", "rmse"))  # (cells, grid)
    ranks = np.argsort(np.argsort(-lppd[:, :n_ranked], axis=1), axis=1) + 1
    rmse_ranks = np.argsort(np.argsort(rmse[:, :n_ranked], axis=1), axis=1) + 1
    avg_rank = ranks.mean(axis=0)
    one = grid.index(1.0)
    pairs = np.concatenate([c["chain_lppd"] for c in cells])  # (cell x warm start, grid)
    diff = pairs[:, [one]] - pairs
    delta, low, high = diagnostics.paired_interval(
        diff, method="percentile", n_resamples=num_resamples, rng=rng
    )
    cell_of_pair = np.concatenate([[i] * len(c["chain_lppd"]) for i, c in enumerate(cells)])
    return {
        "grid": grid,
        "lppd": lppd,
        "rmse": rmse,
        "ranks": ranks,
        "rmse_ranks": rmse_ranks,
        "avg_rank": avg_rank,
        "delta": delta,
        "low": low,
        "high": high,
        "n_pairs": len(diff),
        "position_of_1": int(np.argsort(np.argsort(avg_rank))[one]) + 1,
        "median": np.median(diff, axis=0),
        "worst_lppd": pairs.min(axis=0),
        "worst_cell": cell_of_pair[pairs.argmin(axis=0)],
    }


# The clauses of [SAP] App. D.6 as rank statements on the statistic of Fig. 12, in the order
# of :func:`rank_clauses`'s columns (per metric: LPPD, then RMSE).
RANK_CLAUSES = ("robust", "very small", "very large", "Glorot")


def cell_ranks(values, *, higher_is_better: bool) -> np.ndarray:
    """Rank of each scale within each cell (1 = best): ``values`` (cells, scales) → same shape.

    Ties get the lower (better) place of their order of appearance, as ``argsort`` gives it.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values must be shaped (cells, scales), got {values.shape}")
    order = -values if higher_is_better else values
    return np.argsort(np.argsort(order, axis=1, kind="stable"), axis=1, kind="stable") + 1


def three_way(low, high) -> dict:
    """The three outcomes of a conjunction of statements, each with an interval (low, high)
    of a statistic that is positive when the statement holds.

    A statement is *supported* when its interval lies above 0 and *contradicted* when it lies
    below 0. The conjunction is ``"reproduced"`` when all are supported, ``"not reproduced"``
    when one is contradicted, else ``"inconclusive"``. ``decided``: whether the evidence
    decides the conjunction (a ``claims.Gate``'s ``passed``): all statements decided, or one
    contradicted. Returns ``{"supported", "contradicted", "decided", "outcome"}``.
    """
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    supported, contradicted = low > 0, high < 0
    decided = bool(np.all(supported | contradicted) or np.any(contradicted))
    outcome = (
        "not reproduced"
        if np.any(contradicted)
        else "reproduced"
        if np.all(supported)
        else "inconclusive"
    )
    return {
        "supported": supported,
        "contradicted": contradicted,
        "decided": decided,
        "outcome": outcome,
    }


def rank_clauses(
    rng,
    cells: Sequence[dict],
    n_ranked: int,
    *,
    small: float = 0.1,
    large: float = 10.0,
    glorot: float = 0.25,
    mild: Sequence[float] = (),
    num_resamples: int = 2000,
) -> dict:
    """[SAP] App. D.6's three clauses decided on Fig. 12's statistic: ranks of the scales by
    the LPPD and by the RMSE of each cell's sampled predictive (1 = best).

    ``cells`` from :func:`prior_scale_study`; the first ``n_ranked`` scales of their grid are
    the paper's (K of them), and the grid holds 1, ``small``, ``large`` and ``glorot``. Per
    cell and metric, scale 1's *rank advantage* over

    - the middle rank (K + 1)/2, the average rank of a scale with no systematic advantage
      ("N(0, 1) is a robust choice": positive when scale 1 ranks in the upper half),
    - ``small`` and ``large`` (rank(s) − rank(1) among the paper's K scales: "clear
      deterioration" when positive),
    - ``glorot`` (rank(glorot) − rank(1) among the K scales and ``glorot``: "too small",
      not better than 1, when positive),
    - each of ``mild`` (rank(s) − rank(1) among the K scales: "small deviations do not seem to
      harm", the harm when positive), in columns after the eight others.

    Each column's mean over cells is its difference of average ranks (Fig. 12 shows average
    ranks); its 95 % percentile bootstrap interval resamples whole cells
    (:func:`diagnostics.paired_interval`, percentile, ``rng`` a NumPy Generator). Returns
    ``clauses`` and ``metrics`` (the column labels, 2 × 4 columns: LPPD first, then the
    ``mild`` columns: for each metric one per scale, labelled "mild <s>"), ``advantage``
    (cells, 8 + 2·len(mild)),
    ``mean``, ``low``, ``high`` (8,), ``ranks`` {metric: (cells, K)}, ``glorot_ranks``
    {metric: (cells, K + 1)}, ``depth_rank_1`` {metric: {depth: scale 1's average rank over
    the cells of that depth}}, and :func:`three_way`'s decision of the conjunction of the
    first eight columns.
    """
    grid = [float(s) for s in cells[0]["settings"]["grid"]]
    if any([float(s) for s in c["settings"]["grid"]] != grid for c in cells):
        raise ValueError("all cells must share one grid of scales")
    for s in (1.0, small, large, glorot, *mild):
        if s not in grid:
            raise ValueError(f"scale {s:g} is not in the cells' grid {grid}")
    k = positive_int("n_ranked", n_ranked)
    ranked = grid[:k]
    if glorot in ranked or {1.0, small, large, *mild} - set(ranked):
        raise ValueError(
            f"the first {k} scales {ranked} must hold 1, {small:g}, {large:g} and the mild "
            f"scales {list(mild)} but not the Glorot scale {glorot:g}"
        )
    with_glorot = [*range(k), grid.index(glorot)]
    columns, mild_columns, ranks, glorot_ranks, depth_rank_1 = [], [], {}, {}, {}
    depths = np.array([c["settings"]["depth"] for c in cells])
    for metric, higher in (("LPPD", True), ("RMSE", False)):
        values = np.array([c[metric.lower()] for c in cells])  # (cells, grid)
        r = cell_ranks(values[:, :k], higher_is_better=higher)
        rg = cell_ranks(values[:, with_glorot], higher_is_better=higher)
        one = ranked.index(1.0)
        columns += [
            (k + 1) / 2 - r[:, one],
            r[:, ranked.index(small)] - r[:, one],
            r[:, ranked.index(large)] - r[:, one],
            rg[:, -1] - rg[:, one],
        ]
        mild_columns += [r[:, ranked.index(s)] - r[:, one] for s in mild]
        ranks[metric], glorot_ranks[metric] = r, rg
        depth_rank_1[metric] = {
            int(d): float(r[depths == d, one].mean()) for d in sorted(set(depths.tolist()))
        }
    advantage = np.stack(columns + mild_columns, axis=1).astype(float)  # (cells, 8 + 2·mild)
    mean, low, high = diagnostics.paired_interval(
        advantage, method="percentile", n_resamples=num_resamples, rng=rng
    )
    return {
        "clauses": [*RANK_CLAUSES, *RANK_CLAUSES, *[f"mild {s:g}" for s in mild] * 2],
        "metrics": ["LPPD"] * len(RANK_CLAUSES)
        + ["RMSE"] * len(RANK_CLAUSES)
        + ["LPPD"] * len(mild)
        + ["RMSE"] * len(mild),
        "advantage": advantage,
        "mean": mean,
        "low": low,
        "high": high,
        "ranks": ranks,
        "glorot_ranks": glorot_ranks,
        "depth_rank_1": depth_rank_1,
        "middle": (k + 1) / 2,
        "n_cells": len(cells),
        **three_way(low[: 2 * len(RANK_CLAUSES)], high[: 2 * len(RANK_CLAUSES)]),
    }
