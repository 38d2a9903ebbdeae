"""The UCI regression benchmark of [SAP] §5, App. D.7 (Table 2): units and the table.

One *unit* is one (data set, split, method family) run: ``"laplace"`` (last-layer GGN
Laplace), ``"mfvi"`` (mean-field VI) or ``"mile"`` (a deep ensemble of 10 members, DE(10),
and the MILE chains started from it, BDE(1) and BDE(10)). :func:`run_unit` computes one
unit and caches it with :func:`bnn_posteriors.store.cache.cached`, so an interrupted table
resumes; :func:`run_table` runs many units with a progress bar and writes one small JSON
file per unit (metrics, settings, commit, machine, date, wall time).

Every method is scored on the test split, on the standardised scale, by

- ``lppd``: the LPPD (eq. 18) of the predictive as the authors configure it (Laplace:
  aleatoric variance 0.1; MFVI: observation noise σ = 0.1; DE: the members' training
  noise σ = 1; BDE: the sampled σ);
- ``lppd_val_noise``: the LPPD with the observation noise of the baselines refitted on
  the validation split (:func:`~bnn_posteriors.studies.ch08_benchmarks.scores.fit_noise`); for
  BDE the
  same as ``lppd``;
- ``lppd_authors``: the authors' evaluation
  (:func:`~bnn_posteriors.studies.ch08_benchmarks.scores.authors_lppd`) of the same predictive;
- ``rmse`` of the predictive mean.

The scores are :mod:`bnn_posteriors.studies.ch08_benchmarks.scores`; the summaries and tables
next to the
reference, :mod:`bnn_posteriors.studies.ch08_benchmarks.report`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.claims import paper_numbers as references
from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import metrics
from bnn_posteriors.site.settings_classes import BenchmarksSettings, MapLaplaceChoices
from bnn_posteriors.store import cache, parts, provenance
from bnn_posteriors.studies.ch08_benchmarks.scores import (  # the scores of one predictive
    authors_columns,
    authors_lppd,
    fit_noise,
    gaussian_scores,
    mixture_scores,
)

__all__ = [
    "DATASETS",
    "METHODS",
    "METHOD_LABELS",
    "METHODS_OF_UNIT",
    "REFERENCE",
    "RESULTS",
    "UNITS",
    "UNIT_KEYS",
    "authors_columns",
    "authors_lppd",
    "fit_noise",
    "gaussian_scores",
    "mixture_scores",
    "read_results",
    "result_path",
    "run_table",
    "run_unit",
    "unit_parts",
    "write_result",
]

DATASETS = ("airfoil", "bikesharing", "concrete", "energy")
RESULTS = "ch8_benchmark"  # the folder of the committed full-profile units under results/
UNITS = ("laplace", "mfvi", "mile")
# Version of each unit's computation, part of its cache key: bump it when the unit's
# numbers change (its code or anything it calls), not for unrelated edits.
UNIT_VERSIONS = {"laplace": "ch8-laplace-1", "mfvi": "ch8-mfvi-1", "mile": "ch8-mile-1"}
METHODS = ("laplace", "mfvi", "de", "bde1", "bde10")
METHOD_LABELS = {
    "laplace": "Laplace",
    "mfvi": "MFVI",
    "de": "DE(10)",
    "bde1": "BDE(1)",
    "bde10": "BDE(10)",
}
METHODS_OF_UNIT = {"laplace": ("laplace",), "mfvi": ("mfvi",), "mile": ("de", "bde1", "bde10")}

# [SAP] Table 2 (App. D.7): (mean, sd over 3 splits) of LPPD and RMSE, from paper_numbers.toml.
REFERENCE = references.sap_table2()

# The settings each unit depends on (its cache key); the rest of a config is ignored.
UNIT_KEYS = {
    "laplace": (
        "widths_hidden",
        "prior_scale",
        "map_steps",
        "map_learning_rate",
        "map_laplace",
        "map_sigma",
        "aleatoric_var",
    ),
    "mfvi": (
        "widths_hidden",
        "prior_scale",
        "mfvi_noise",
        "mfvi_steps",
        "mfvi_learning_rate",
        "mfvi_particles",
        "mfvi_init_scale",
        "mfvi_pred_samples",
    ),
    "mile": (
        "widths_hidden",
        "prior_scale",
        "de_members",
        "de_learning_rate",
        "de_weight_decay",
        "de_max_epochs",
        "de_batch_size",
        "de_patience",
        "de_noise",
        "bde_chains",
        "tuning_steps",
        "sampling_steps",
        "thinning",
        "mile_resumable",
    ),
}

# --------------------------------------------------------------------------- units


def _unit_key(seed: int, dataset: str, split: int, unit: str):
    key = jax.random.PRNGKey(seed)
    for part in (DATASETS.index(dataset) if dataset in DATASETS else 99, split, UNITS.index(unit)):
        key = jax.random.fold_in(key, part)
    return key


def _n_max(cfg: Mapping, dataset: str):
    n_max = cfg.get("n_max") or {}
    return n_max.get(dataset)


def unit_parts(dataset: str, split: int, unit: str, cfg: Mapping) -> dict:
    """The inputs that identify a unit (its cache key): data, split, seed and settings.

    ``cfg``: the chapter's settings as a mapping (their ``as_dict()``, as :func:`run_unit`
    passes them, or the dict of the full profile's that the chapter gives
    :func:`~bnn_posteriors.studies.ch08_benchmarks.report.committed_rows`).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    data.dataset_info(dataset)
    if isinstance(split, bool) or not isinstance(split, int) or split < 0:
        raise ValueError(f"split must be a non-negative integer (the split seed), got {split!r}")
    missing = [k for k in (*UNIT_KEYS[unit], "seed") if k not in cfg]
    if missing:
        raise ValueError(f"settings of unit {unit!r} lack {missing}")
    parts = {k: provenance.to_json(cfg[k]) for k in UNIT_KEYS[unit]}
    return {
        "dataset": dataset,
        "split": split,
        "unit": unit,
        "seed": int(cfg["seed"]),
        "n_max": _n_max(cfg, dataset),
        **parts,
    }


def _widths(split: data.Split, hidden) -> tuple[int, ...]:
    return (int(split.x_train.shape[1]), *(int(h) for h in hidden), 1)


def _laplace_unit(key, split: data.Split, s: Mapping) -> dict:
    from bnn_posteriors.inference import laplace, map_laplace

    x, y = jnp.asarray(split.x_train, jnp.float32), jnp.asarray(split.y_train, jnp.float32)
    delta = 1.0 / s["prior_scale"] ** 2
    choices = s["map_laplace"]
    if not isinstance(choices, MapLaplaceChoices):  # as_dict() makes the table a dict
        choices = MapLaplaceChoices(**choices)
    mode = map_laplace.fit_map(
        key,
        _widths(split, s["widths_hidden"]),
        x,
        y[:, None],
        choices,
        likelihood="gaussian",
        prior_precision=delta,
        num_steps=int(s["map_steps"]),
        learning_rate=s["map_learning_rate"],
        activation="relu",
        noise_scale=s["map_sigma"],
    )
    # the authors' evaluation fits the last layer's GGN with its own σ, not the MAP's
    post = map_laplace.fit_laplace(
        mode,
        x,
        y[:, None],
        choices,
        likelihood="gaussian",
        prior_precision=delta,
        activation="relu",
    )

    def predictive(x_eval):
        x_eval = jnp.asarray(x_eval, jnp.float32)
        mean = post.model_fn(post.mean, x_eval)[:, 0]
        epi = laplace.linearised_variance(post, x_eval)[:, 0, 0]
        return mean, epi

    mean, epi = predictive(split.x_test)
    mean_val, epi_val = predictive(split.x_val)
    sigma_val = fit_noise(split.y_val, mean_val, epi_val)
    scores = gaussian_scores(split.y_test, mean, epi + s["aleatoric_var"])
    scores["lppd_val_noise"] = float(metrics.lppd(split.y_test, mean, jnp.sqrt(epi + sigma_val**2)))
    scores["noise_val"] = sigma_val
    scores["final_loss"] = float(mode.trace[-1])
    return {"laplace": scores}


def _mfvi_unit(key, split: data.Split, s: Mapping) -> dict:
    from bnn_posteriors.inference import mean_field, vi
    from bnn_posteriors.models import nets
    from bnn_posteriors.models import numpyro_models as models

    widths = _widths(split, s["widths_hidden"])
    key_fit, key_pred = jax.random.split(key)
    key_init, key_steps = jax.random.split(key_fit)
    x, y = (jnp.asarray(v, jnp.float32) for v in (split.x_train, split.y_train))
    model_kwargs = dict(
        x=x, y=y, widths=widths, prior_scale=s["prior_scale"], noise_scale=s["mfvi_noise"]
    )
    q, losses = vi.fit_mfvi(
        key_steps,
        models.mlp_regression,
        model_kwargs,
        num_steps=int(s["mfvi_steps"]),
        learning_rate=s["mfvi_learning_rate"],
        schedule="constant",
        num_particles=int(s["mfvi_particles"]),
        init_scale=s["mfvi_init_scale"],
        init_loc=nets.sites(nets.mlp_init(key_init, widths, scheme="glorot")),
    )
    n_pred = int(s["mfvi_pred_samples"])
    f_test = mean_field.outputs(key_pred, q, split.x_test, n_pred)[..., 0]
    f_val = mean_field.outputs(key_pred, q, split.x_val, n_pred)[..., 0]
    mean, epi = f_test.mean(0), f_test.var(0)
    sigma_val = fit_noise(split.y_val, f_val.mean(0), f_val.var(0))
    scores = gaussian_scores(split.y_test, mean, epi + s["mfvi_noise"] ** 2)
    scores["lppd_val_noise"] = float(metrics.lppd(split.y_test, mean, jnp.sqrt(epi + sigma_val**2)))
    scores["noise_val"] = sigma_val
    scores["final_loss"] = float(np.mean(np.asarray(losses)[-100:]))
    return {"mfvi": scores}


def _mile_unit(
    key, split: data.Split, s: Mapping, progress: bool = False, cache: bool | Path = True
) -> dict:
    """DE, BDE(1) and BDE(10) of one split. With ``s["mile_resumable"]`` MILE runs chunked,
    with a progress bar (``progress``) and each chain's tuning and sampling cached in
    ``cache`` (the same chains as the one-program run, up to round-off)."""
    from bnn_posteriors.inference import ensembles, mile

    widths = _widths(split, s["widths_hidden"])
    key_de, key_bde = jax.random.split(key)
    params, info = ensembles.train_ensemble(
        key_de,
        split.x_train,
        split.y_train,
        split.x_val,
        split.y_val,
        widths=widths,
        n_members=int(s["de_members"]),
        learning_rate=s["de_learning_rate"],
        weight_decay=s["de_weight_decay"],
        max_epochs=int(s["de_max_epochs"]),
        batch_size=int(s["de_batch_size"]),
        patience=int(s["de_patience"]),
        noise_scale=s["de_noise"],
    )
    y_test = jnp.asarray(split.y_test)
    means = ensembles.predict(params, jnp.asarray(split.x_test, jnp.float32))  # (M, n)
    means_val = ensembles.predict(params, jnp.asarray(split.x_val, jnp.float32))
    sigma_val = fit_noise(split.y_val, means_val)
    de = {
        "lppd": float(metrics.lppd(y_test, means, s["de_noise"])),
        "lppd_val_noise": float(metrics.lppd(y_test, means, sigma_val)),
        "lppd_authors": authors_lppd(y_test, authors_columns(means)),
        "rmse": float(metrics.rmse(y_test, means.mean(0))),
        "noise_val": sigma_val,
        "epochs": [int(e) for e in np.asarray(info["epochs"])],
    }
    n_chains = int(s["bde_chains"])
    starts = mile.warm_start_positions(jax.tree.map(lambda a: a[:n_chains], params))
    resumable = bool(s["mile_resumable"])
    bde = mile.run_bde(
        key_bde,
        split.x_train,
        split.y_train,
        starts,
        widths=widths,
        prior_scale=s["prior_scale"],
        tuning_steps=int(s["tuning_steps"]),
        sampling_steps=int(s["sampling_steps"]),
        thinning=int(s["thinning"]),
        progress=progress and resumable,
        cache=cache if resumable else False,
    )
    bde_means, bde_sigma = mile.predict(bde["samples"], jnp.asarray(split.x_test, jnp.float32))
    bde10 = mixture_scores(y_test, bde_means, bde_sigma)
    bde1 = mixture_scores(y_test, bde_means[:1], bde_sigma[:1])
    bde1["lppd_single_chain_mean"] = float(np.mean(bde10["lppd_chains"]))
    diagnostics = {
        "step_size": [float(v) for v in bde["step_size"]],
        "L": [float(v) for v in bde["L"]],
        "tuning_divergences": [int(v) for v in bde["tuning_divergences"]],
        "sigma_mean": float(jnp.mean(bde_sigma)),
    }
    return {"de": de, "bde1": bde1, "bde10": bde10, "diagnostics": diagnostics}


_COMPUTE = {"laplace": _laplace_unit, "mfvi": _mfvi_unit, "mile": _mile_unit}


def run_unit(
    dataset: str,
    split: int,
    unit: str,
    cfg: BenchmarksSettings,
    *,
    directory: Path | str | None = None,
    progress: bool = False,
) -> dict:
    """One benchmark unit, cached: ``{"dataset", "split", "unit", "metrics", "wall_s", ...}``.

    ``cfg``: the chapter's settings (``profiles.settings("08_benchmarks")``); only the
    fields of :data:`UNIT_KEYS` ``[unit]``, ``seed`` and ``n_max`` enter the cache key (the
    unit's :func:`unit_parts`, also the ``settings`` of its JSON part). ``split`` is the split
    seed of :func:`bnn_posteriors.data.loaders.load_split` (70/10/20, standardised with the
    authors' convention). ``wall_s`` is the time the unit took when it was computed (not when
    it was read from the cache); ``cached`` says whether it was read.
    """
    parts = unit_parts(dataset, split, unit, cfg.as_dict())
    computed = []

    def compute():
        start = time.perf_counter()
        split_data = data.load_split(dataset, split, n_max=parts["n_max"])
        key = _unit_key(parts["seed"], dataset, split, unit)
        extra = {"progress": progress, "cache": directory or True} if unit == "mile" else {}
        result = _COMPUTE[unit](key, split_data, parts, **extra)
        computed.append(True)
        return {
            "metrics": {k: v for k, v in result.items() if k != "diagnostics"},
            "diagnostics": result.get("diagnostics", {}),
            "wall_s": time.perf_counter() - start,
            "n_train": int(split_data.x_train.shape[0]),
            "n_test": int(split_data.x_test.shape[0]),
            "date": provenance.now(),
        }

    out = cache.cached(f"ch8-{unit}", parts, compute, directory, version=UNIT_VERSIONS[unit])
    return {
        "dataset": dataset,
        "split": split,
        "unit": unit,
        **provenance.to_json(out),
        "settings": parts,
        "cached": not computed,
    }


# --------------------------------------------------------------------------- the table


def result_path(directory: Path | str, dataset: str, split: int, unit: str) -> Path:
    """File of one unit's result: ``<directory>/<dataset>_split<split>_<unit>.json``."""
    return parts.part_path(directory, f"{dataset}_split{split}_{unit}")


def write_result(row: Mapping, directory: Path | str, profile: str | None = None) -> Path:
    """Write one unit's result (a part of the table, with its ``settings``) with provenance as
    a small JSON file; returns its path."""
    path = result_path(directory, row["dataset"], row["split"], row["unit"])
    payload = {k: v for k, v in row.items() if k != "cached"}
    settings = cast(Mapping, row.get("settings"))  # write_part checks that it is a mapping
    return parts.write_part(path, payload, settings, profile=profile)


def read_results(directory: Path | str) -> list[dict]:
    """All unit results (``*.json``) of ``directory``, sorted by data set, split and unit."""
    rows = []
    for path in sorted(Path(directory).glob("*_split*_*.json")):
        row = parts.read_part(path)
        missing = {"dataset", "split", "unit", "metrics", "wall_s"} - set(row)
        if missing:
            raise ValueError(f"{path} is not a benchmark unit result: it lacks {sorted(missing)}")
        rows.append(row)
    order = {u: i for i, u in enumerate(UNITS)}
    return sorted(rows, key=lambda r: (r["dataset"], r["split"], order.get(r["unit"], 9)))


def run_table(
    cfg: BenchmarksSettings,
    *,
    datasets: Sequence[str] | None = None,
    splits: Sequence[int] | None = None,
    units: Sequence[str] | None = None,
    directory: Path | str | None = None,
    results_dir: Path | str | None = None,
    progress: bool = True,
    stream=None,
    skip_existing: bool = False,
) -> list[dict]:
    """Run every (data set, split, unit), split by split; returns their results (:func:`run_unit`).

    Defaults from ``cfg``: ``datasets``, ``splits``, all :data:`UNITS`. Cached units are
    read, not recomputed. With ``results_dir`` each unit's result is written there
    (:func:`write_result`) as soon as it is done; with ``skip_existing`` a unit whose
    result file is there with the same settings is read from it (resuming across code
    changes, which invalidate the cache). ``progress`` shows a tqdm bar on ``stream``
    (default stdout) with the current unit and its wall time.
    """
    values = cfg.as_dict()  # the settings as unit_parts reads them
    datasets = tuple(cfg.datasets if datasets is None else datasets)
    splits = tuple(cfg.splits if splits is None else splits)
    units = tuple(UNITS if units is None else units)
    for u in units:
        if u not in UNITS:
            raise ValueError(f"unknown unit {u!r}; the units are {UNITS}")
    jobs = [(d, s, u) for s in splits for d in datasets for u in units]  # split by split
    from tqdm.auto import tqdm

    rows = []
    bar = tqdm(total=len(jobs), disable=not progress, file=stream or sys.stdout, unit="unit")
    with bar:
        for dataset, split, unit in jobs:
            bar.set_description(f"{dataset} split {split} {unit}")
            path = None if results_dir is None else result_path(results_dir, dataset, split, unit)
            row = parts.resumed_part(
                path,
                unit_parts(dataset, split, unit, values),
                lambda d=dataset, s=split, u=unit: run_unit(
                    d, s, u, cfg, directory=directory, progress=progress
                ),
                profile=cfg.profile,
                reuse=skip_existing,
                mark="cached",
            )
            rows.append(row)
            bar.set_postfix(last=f"{row['wall_s']:.0f}s{' (cached)' if row['cached'] else ''}")
            bar.update()
    return rows
