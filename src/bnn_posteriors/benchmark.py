"""The UCI regression benchmark of [SAP] §5, App. D.7 (Table 2): units, evaluation, table.

One *unit* is one (data set, split, method family) run: ``"laplace"`` (last-layer GGN
Laplace), ``"mfvi"`` (mean-field VI) or ``"mile"`` (a deep ensemble of 10 members, DE(10),
and the MILE chains started from it, BDE(1) and BDE(10)). :func:`run_unit` computes one
unit and caches it with :func:`bnn_posteriors.cache.cached`, so an interrupted table
resumes; :func:`run_table` runs many units with a progress bar and writes one small JSON
file per unit (metrics, settings, commit, machine, date, wall time).

Every method is scored on the test split, on the standardised scale, by

- ``lppd``: the LPPD (eq. 18) of the predictive as the authors configure it (Laplace:
  aleatoric variance 0.1; MFVI: observation noise σ = 0.1; DE: the members' training
  noise σ = 1; BDE: the sampled σ);
- ``lppd_val_noise``: the LPPD with the observation noise of the baselines refitted on
  the validation split (:func:`fit_noise`); for BDE the same as ``lppd``;
- ``lppd_authors``: the authors' evaluation (:func:`authors_lppd`) of the same predictive;
- ``rmse`` of the predictive mean.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm
from scipy import special

from bnn_posteriors import cache, data, metrics, results

DATASETS = ("airfoil", "bikesharing", "concrete", "energy")
UNITS = ("laplace", "mfvi", "mile")
METHODS = ("laplace", "mfvi", "de", "bde1", "bde10")
METHOD_LABELS = {
    "laplace": "Laplace",
    "mfvi": "MFVI",
    "de": "DE(10)",
    "bde1": "BDE(1)",
    "bde10": "BDE(10)",
}
METHODS_OF_UNIT = {"laplace": ("laplace",), "mfvi": ("mfvi",), "mile": ("de", "bde1", "bde10")}

# [SAP] Table 2 (App. D.7): (mean, sd over 3 splits) of LPPD and RMSE, standardised scale.
REFERENCE = {
    "airfoil": {
        "laplace": {"lppd": (-1.056, 0.003), "rmse": (0.237, 0.013)},
        "mfvi": {"lppd": (-0.975, 0.004), "rmse": (0.276, 0.009)},
        "de": {"lppd": (-0.293, 0.096), "rmse": (0.269, 0.016)},
        "bde1": {"lppd": (0.016, 0.293), "rmse": (0.184, 0.016)},
        "bde10": {"lppd": (0.665, 0.062), "rmse": (0.152, 0.014)},
    },
    "bikesharing": {
        "laplace": {"lppd": (-1.046, 0.001), "rmse": (0.252, 0.006)},
        "mfvi": {"lppd": (-0.990, 0.005), "rmse": (0.318, 0.018)},
        "de": {"lppd": (-0.223, 0.181), "rmse": (0.253, 0.015)},
        "bde1": {"lppd": (-0.060, 0.096), "rmse": (0.262, 0.018)},
        "bde10": {"lppd": (0.226, 0.043), "rmse": (0.229, 0.016)},
    },
    "concrete": {
        "laplace": {"lppd": (-1.131, 0.036), "rmse": (0.482, 0.100)},
        "mfvi": {"lppd": (-0.998, 0.007), "rmse": (0.350, 0.025)},
        "de": {"lppd": (-0.510, 0.189), "rmse": (0.297, 0.032)},
        "bde1": {"lppd": (0.042, 0.056), "rmse": (0.270, 0.034)},
        "bde10": {"lppd": (0.080, 0.061), "rmse": (0.258, 0.037)},
    },
    "energy": {
        "laplace": {"lppd": (-1.046, 0.004), "rmse": (0.065, 0.008)},
        "mfvi": {"lppd": (-0.945, 0.002), "rmse": (0.126, 0.007)},
        "de": {"lppd": (1.561, 0.101), "rmse": (0.050, 0.001)},
        "bde1": {"lppd": (1.947, 0.047), "rmse": (0.041, 0.003)},
        "bde10": {"lppd": (2.204, 0.024), "rmse": (0.032, 0.002)},
    },
}

# The settings each unit depends on (its cache key); the rest of a config is ignored.
UNIT_KEYS = {
    "laplace": (
        "widths_hidden", "prior_scale", "map_steps", "map_learning_rate", "map_weight_decay",
        "map_sigma", "ggn_sigma", "aleatoric_var",
    ),
    "mfvi": (
        "widths_hidden", "prior_scale", "mfvi_noise", "mfvi_steps", "mfvi_learning_rate",
        "mfvi_particles", "mfvi_init_scale", "mfvi_pred_samples",
    ),
    "mile": (
        "widths_hidden", "prior_scale", "de_members", "de_learning_rate", "de_weight_decay",
        "de_max_epochs", "de_batch_size", "de_patience", "de_noise", "bde_chains",
        "tuning_steps", "sampling_steps", "thinning",
    ),
}  # fmt: skip

NOISE_GRID = np.exp(np.linspace(np.log(1e-3), np.log(10.0), 401))  # σ of fit_noise


# --------------------------------------------------------------------------- evaluation


def _check_y(y) -> jax.Array:
    y = jnp.asarray(y)
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"y must have shape (n,) with n ≥ 1, got {y.shape}")
    if not bool(jnp.all(jnp.isfinite(y))):
        raise ValueError("y must be finite")
    return y


def pointwise_lppd(y, mean, scale) -> jax.Array:
    """log((1/M) Σ_m N(y_i | mean_{m,i}, scale_{m,i}²)) per test point: (n,).

    ``mean``, ``scale``: (..., n); the leading axes are the M mixture components
    (members, chains × samples); ``scale`` broadcasts and must be positive.
    """
    y = _check_y(y)
    mean = jnp.asarray(mean)
    if mean.ndim == 0 or mean.shape[-1] != y.shape[0]:
        raise ValueError(f"mean must end in the {y.shape} axis of y, got {mean.shape}")
    scale = jnp.broadcast_to(jnp.asarray(scale), mean.shape)
    if bool(jnp.any(~(scale > 0))):
        raise ValueError("predictive scales must be positive")
    return _pointwise(y, mean, scale)


def _pointwise(y, mean, scale):
    logp = norm.logpdf(y, mean, scale).reshape(-1, y.shape[0])
    return logsumexp(logp, axis=0) - jnp.log(logp.shape[0])


def authors_lppd(y, lvals) -> float:
    """The LPPD as the authors' public code computes it (``pointwise_lppd`` + ``lppd``).

    ``lvals`` (..., n, k): the leading axes are mixture components; column 0 is the
    location and column 1 is read as a **log scale**: Normal(loc=lvals[..., 0],
    scale=clip(exp(lvals[..., 1]), 1e-6, 1e6)). With k = 1 (a mean-regression network
    that outputs only the mean) JAX clamps the index 1 to 0, so the scale is exp(mean).
    Their Laplace and MFVI scripts put the predictive *variance* into column 1.
    """
    y = _check_y(y)
    lvals = jnp.asarray(lvals)
    if lvals.ndim < 2 or lvals.shape[-2] != y.shape[0]:
        raise ValueError(f"lvals must have shape (..., {y.shape[0]}, k), got {lvals.shape}")
    loc = lvals[..., 0]
    scale = jnp.clip(jnp.exp(lvals[..., 1]), 1e-6, 1e6)  # index 1 clamps to 0 when k = 1
    return float(jnp.mean(pointwise_lppd(y, loc, scale)))


def authors_columns(mean, second=None) -> jax.Array:
    """The authors' prediction array: (..., n, 2) = [mean, second] or (..., n, 1) = [mean]."""
    mean = jnp.asarray(mean)
    if second is None:
        return mean[..., None]
    second = jnp.broadcast_to(jnp.asarray(second), mean.shape)
    return jnp.stack([mean, second], axis=-1)


def fit_noise(y_val, mean_val, epistemic_var=0.0, grid=NOISE_GRID) -> float:
    """Observation noise σ maximising the validation LPPD of Σ_m N(mean_m, var_m + σ²)/M.

    ``mean_val`` (..., n_val) (mixture components in front), ``epistemic_var`` broadcasts
    to it; σ is chosen on ``grid`` (default 401 log-spaced values in [0.001, 10]).
    Computed in NumPy (no compilation per shape).
    """
    y = np.asarray(_check_y(y_val), dtype=np.float64)
    mean = np.asarray(mean_val, dtype=np.float64)
    if mean.ndim == 0 or mean.shape[-1] != y.shape[0]:
        raise ValueError(f"mean_val must end in the {y.shape} axis of y_val, got {mean.shape}")
    var = np.broadcast_to(np.asarray(epistemic_var, dtype=np.float64), mean.shape)
    if np.any(var < 0):
        raise ValueError("epistemic_var must be non-negative")
    mean, var = mean.reshape(-1, y.shape[0]), var.reshape(-1, y.shape[0])
    sq = (y - mean) ** 2  # (M, n)
    scores = []
    for sigma in np.asarray(grid, dtype=np.float64):
        total = var + sigma**2
        logp = -0.5 * (np.log(2 * np.pi * total) + sq / total)
        scores.append(np.mean(special.logsumexp(logp, axis=0) - np.log(logp.shape[0])))
    return float(np.asarray(grid)[int(np.argmax(scores))])


def gaussian_scores(y, mean, var, authors_var=None) -> dict:
    """Scores of a Gaussian predictive N(mean, var) (n,): ``lppd``, ``rmse``, ``lppd_authors``.

    ``authors_var`` is what the authors' code puts into the scale column (default ``var``).
    """
    y = _check_y(y)
    mean, var = jnp.asarray(mean), jnp.asarray(var)
    if mean.shape != y.shape or var.shape != y.shape:
        raise ValueError(f"mean {mean.shape} and var {var.shape} must have y's shape {y.shape}")
    second = var if authors_var is None else authors_var
    return {
        "lppd": float(metrics.lppd(y, mean, jnp.sqrt(var))),
        "rmse": float(metrics.rmse(y, mean)),
        "lppd_authors": authors_lppd(y, authors_columns(mean, second)),
    }


def summarise(rows: Iterable[Mapping]) -> dict:
    """Mean and sd (ddof 1, as pandas) over splits: {dataset: {method: {metric: (mean, sd, n)}}}.

    ``rows``: unit results (:func:`run_unit`), each with ``dataset`` and ``metrics``
    ({method: {metric: value}}).
    """
    values: dict = {}
    for row in rows:
        for method, scores in row["metrics"].items():
            for metric, value in scores.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    values.setdefault(row["dataset"], {}).setdefault(method, {}).setdefault(
                        metric, []
                    ).append(float(value))
    out: dict = {}
    for dataset, by_method in values.items():
        for method, by_metric in by_method.items():
            for metric, vals in by_metric.items():
                a = np.asarray(vals)
                sd = float(a.std(ddof=1)) if a.size > 1 else float("nan")
                out.setdefault(dataset, {}).setdefault(method, {})[metric] = (
                    float(a.mean()),
                    sd,
                    int(a.size),
                )
    return out


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
    """The inputs that identify a unit (its cache key): data, split, seed and settings."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    data.dataset_info(dataset)
    if isinstance(split, bool) or not isinstance(split, int) or split < 0:
        raise ValueError(f"split must be a non-negative integer (the split seed), got {split!r}")
    missing = [k for k in (*UNIT_KEYS[unit], "seed") if k not in cfg]
    if missing:
        raise ValueError(f"settings of unit {unit!r} lack {missing}")
    parts = {k: _plain(cfg[k]) for k in UNIT_KEYS[unit]}
    return {
        "dataset": dataset,
        "split": split,
        "unit": unit,
        "seed": int(cfg["seed"]),
        "n_max": _n_max(cfg, dataset),
        **parts,
    }


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _widths(split: data.Split, hidden) -> tuple[int, ...]:
    return (int(split.x_train.shape[1]), *(int(h) for h in hidden), 1)


def _laplace_unit(key, split: data.Split, s: Mapping) -> dict:
    from bnn_posteriors.inference import ensembles, laplace

    widths = _widths(split, s["widths_hidden"])
    x, y = jnp.asarray(split.x_train, jnp.float32), jnp.asarray(split.y_train, jnp.float32)
    params0 = ensembles.glorot_init(key, widths)
    params, trace = laplace.train_map(
        params0, x, y[:, None], likelihood="regression", sigma=s["map_sigma"],
        prior_precision=1.0 / s["prior_scale"] ** 2, num_steps=int(s["map_steps"]),
        learning_rate=s["map_learning_rate"], weight_decay=s["map_weight_decay"],
    )  # fmt: skip
    post = laplace.laplace(
        params, x, y[:, None], likelihood="regression", sigma=s["ggn_sigma"],
        prior_precision=1.0 / s["prior_scale"] ** 2, subset="last_layer",
    )  # fmt: skip

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
    scores["final_loss"] = float(trace[-1])
    return {"laplace": scores}


def _mfvi_unit(key, split: data.Split, s: Mapping) -> dict:
    from bnn_posteriors.inference import mfvi

    widths = _widths(split, s["widths_hidden"])
    key_fit, key_pred = jax.random.split(key)
    fit = mfvi.fit_mfvi_regression(
        key_fit, split.x_train, split.y_train, widths=widths, noise=s["mfvi_noise"],
        prior_scale=s["prior_scale"], num_steps=int(s["mfvi_steps"]),
        learning_rate=s["mfvi_learning_rate"], num_particles=int(s["mfvi_particles"]),
        init_scale=s["mfvi_init_scale"],
    )  # fmt: skip
    n_pred = int(s["mfvi_pred_samples"])
    f_test = mfvi.mfvi_output_samples(key_pred, fit, split.x_test, n_pred)
    f_val = mfvi.mfvi_output_samples(key_pred, fit, split.x_val, n_pred)
    mean, epi = f_test.mean(0), f_test.var(0)
    sigma_val = fit_noise(split.y_val, f_val.mean(0), f_val.var(0))
    scores = gaussian_scores(split.y_test, mean, epi + s["mfvi_noise"] ** 2)
    scores["lppd_val_noise"] = float(metrics.lppd(split.y_test, mean, jnp.sqrt(epi + sigma_val**2)))
    scores["noise_val"] = sigma_val
    scores["final_loss"] = float(np.mean(np.asarray(fit["losses"])[-100:]))
    return {"mfvi": scores}


def _mixture_scores(y, means, sigmas) -> dict:
    """LPPD and RMSE of the BDE mixture: ``means`` (K, S, n), ``sigmas`` (K, S)."""
    y64 = np.asarray(y, dtype=np.float64)
    m64, s64 = np.asarray(means, dtype=np.float64), np.asarray(sigmas, dtype=np.float64)
    logp = (
        -0.5 * np.log(2 * np.pi)
        - np.log(s64)[..., None]
        - 0.5 * ((y64 - m64) / s64[..., None]) ** 2
    )
    per_chain = special.logsumexp(logp, axis=1) - np.log(logp.shape[1])  # (K, n)
    pooled = special.logsumexp(per_chain, axis=0) - np.log(per_chain.shape[0])
    lvals = jnp.stack([means, jnp.broadcast_to(jnp.log(sigmas)[..., None], means.shape)], -1)
    return {
        "lppd": float(np.mean(pooled)),
        "lppd_val_noise": float(np.mean(pooled)),
        "lppd_authors": authors_lppd(y, lvals),
        "rmse": float(np.sqrt(np.mean((y64 - m64.mean(axis=(0, 1))) ** 2))),
        "lppd_chains": [float(v) for v in per_chain.mean(axis=1)],
    }


def _mile_unit(key, split: data.Split, s: Mapping, progress: bool = False) -> dict:
    from bnn_posteriors.inference import ensembles, mile

    widths = _widths(split, s["widths_hidden"])
    key_de, key_bde = jax.random.split(key)
    params, info = ensembles.train_ensemble(
        key_de, split.x_train, split.y_train, split.x_val, split.y_val, widths=widths,
        n_members=int(s["de_members"]), learning_rate=s["de_learning_rate"],
        weight_decay=s["de_weight_decay"], max_epochs=int(s["de_max_epochs"]),
        batch_size=int(s["de_batch_size"]), patience=int(s["de_patience"]),
        noise=s["de_noise"],
    )  # fmt: skip
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
    bde = mile.run_bde(
        key_bde, split.x_train, split.y_train, starts, widths=widths,
        prior_scale=s["prior_scale"], tuning_steps=int(s["tuning_steps"]),
        sampling_steps=int(s["sampling_steps"]), thinning=int(s["thinning"]),
        progress=progress,
    )  # fmt: skip
    bde_means, bde_sigma = mile.predict(bde["samples"], jnp.asarray(split.x_test, jnp.float32))
    bde10 = _mixture_scores(y_test, bde_means, bde_sigma)
    bde1 = _mixture_scores(y_test, bde_means[:1], bde_sigma[:1])
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
    cfg: Mapping,
    *,
    directory: Path | str | None = None,
    progress: bool = False,
) -> dict:
    """One benchmark unit, cached: ``{"dataset", "split", "unit", "metrics", "wall_s", ...}``.

    ``cfg``: the chapter's settings (``profiles.settings("08_benchmarks")`` as a mapping or
    a namespace); only the keys of :data:`UNIT_KEYS` ``[unit]``, ``seed`` and ``n_max``
    enter the cache key. ``split`` is the split seed of :func:`bnn_posteriors.data.load_split`
    (70/10/20, standardised with the authors' convention). ``wall_s`` is the time the unit
    took when it was computed (not when it was read from the cache); ``cached`` says
    whether it was read.
    """
    cfg = vars(cfg) if not isinstance(cfg, Mapping) else cfg
    parts = unit_parts(dataset, split, unit, cfg)
    computed = []

    def compute():
        start = time.perf_counter()
        split_data = data.load_split(dataset, split, n_max=parts["n_max"])
        key = _unit_key(parts["seed"], dataset, split, unit)
        extra = {"progress": progress} if unit == "mile" else {}
        result = _COMPUTE[unit](key, split_data, parts, **extra)
        computed.append(True)
        return {
            "metrics": {k: v for k, v in result.items() if k != "diagnostics"},
            "diagnostics": result.get("diagnostics", {}),
            "wall_s": time.perf_counter() - start,
            "n_train": int(split_data.x_train.shape[0]),
            "n_test": int(split_data.x_test.shape[0]),
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }

    out = cache.cached(f"ch8-{unit}", parts, compute, directory)
    return {
        "dataset": dataset,
        "split": split,
        "unit": unit,
        **results.plain(out),
        "settings": parts,
        "cached": not computed,
    }


# --------------------------------------------------------------------------- the table


def result_path(directory: Path | str, dataset: str, split: int, unit: str) -> Path:
    """File of one unit's result: ``<directory>/<dataset>_split<split>_<unit>.json``."""
    return Path(directory) / f"{dataset}_split{split}_{unit}.json"


def write_result(row: Mapping, directory: Path | str, profile: str | None = None) -> Path:
    """Write one unit's result with provenance as a small JSON file; returns its path."""
    path = result_path(directory, row["dataset"], row["split"], row["unit"])
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**row, "profile": profile, "provenance": results.provenance()}
    record.pop("cached", None)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, allow_nan=True) + "\n")
    tmp.replace(path)
    return path


def read_results(directory: Path | str) -> list[dict]:
    """All unit results (``*.json``) of ``directory``, sorted by data set, split and unit."""
    rows = []
    for path in sorted(Path(directory).glob("*_split*_*.json")):
        row = json.loads(path.read_text())
        missing = {"dataset", "split", "unit", "metrics", "wall_s"} - set(row)
        if missing:
            raise ValueError(f"{path} is not a benchmark unit result: it lacks {sorted(missing)}")
        rows.append(row)
    order = {u: i for i, u in enumerate(UNITS)}
    return sorted(rows, key=lambda r: (r["dataset"], r["split"], order.get(r["unit"], 9)))


def run_table(
    cfg: Mapping,
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
    cfg = vars(cfg) if not isinstance(cfg, Mapping) else cfg
    datasets = tuple(cfg["datasets"] if datasets is None else datasets)
    splits = tuple(cfg["splits"] if splits is None else splits)
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
            row = None
            path = None if results_dir is None else result_path(results_dir, dataset, split, unit)
            if skip_existing and path is not None and path.exists():
                old = json.loads(path.read_text())
                if old.get("settings") == unit_parts(dataset, split, unit, cfg):
                    row = {**old, "cached": True}
            if row is None:
                row = run_unit(dataset, split, unit, cfg, directory=directory)
                if results_dir is not None:
                    write_result(row, results_dir, cfg.get("profile"))
            rows.append(row)
            bar.set_postfix(last=f"{row['wall_s']:.0f}s{' (cached)' if row['cached'] else ''}")
            bar.update()
    return rows


def differences(summary: Mapping, metric: str = "lppd", method: str = "bde10") -> dict:
    """Ours minus reference per data set, in units of the larger split-sd of the two.

    Returns {dataset: {"ours", "ours_sd", "reference", "reference_sd", "difference",
    "z"}} where z = difference / max(ours_sd, reference_sd) (NaN if both are 0 or NaN).
    """
    out = {}
    for dataset, by_method in summary.items():
        if method not in by_method or dataset not in REFERENCE:
            continue
        ours, ours_sd, _ = by_method[method][metric]
        ref, ref_sd = REFERENCE[dataset][method][metric.replace("_val_noise", "")]
        scale = np.nanmax([ours_sd, ref_sd])
        diff = ours - ref
        z = diff / scale if scale and math.isfinite(scale) and scale > 0 else float("nan")
        out[dataset] = {
            "ours": ours,
            "ours_sd": ours_sd,
            "reference": ref,
            "reference_sd": ref_sd,
            "difference": diff,
            "z": float(z),
        }
    return out
