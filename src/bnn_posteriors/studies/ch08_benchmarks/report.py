"""Chapter 8's report of the benchmark: summaries, margins and tables next to [SAP] Table 2.

The units of :mod:`bnn_posteriors.studies.ch08_benchmarks.run` give one row per (data set,
split, unit);
:func:`summarise` turns them into mean ± split-sd per data set and method,
:func:`differences` compares a method with the reference (:data:`REFERENCE`, [SAP]
Table 2 from ``paper_numbers.toml``), :func:`ranking_margins` decides C8.1 and
:func:`authors_gaps` C8.3. The ``*_table`` functions return Markdown tables
(:func:`bnn_posteriors.site.tables.markdown_table`) of the same numbers for the chapter;
:func:`table_figure` draws ours against the reference.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from bnn_posteriors.claims import paper_numbers as references
from bnn_posteriors.site import plotting, tables
from bnn_posteriors.studies.ch08_benchmarks import run as benchmark
from bnn_posteriors.studies.ch08_benchmarks.run import DATASETS, METHOD_LABELS, METHODS, UNITS

REFERENCE = benchmark.REFERENCE
BASELINES = ("laplace", "mfvi")


def summarise(rows: Iterable[Mapping]) -> dict:
    """Mean and sd (ddof 1, as pandas) over splits: {dataset: {method: {metric: (mean, sd, n)}}}.

    ``rows``: unit results (:func:`bnn_posteriors.studies.ch08_benchmarks.run.run_unit`), each with
    ``dataset`` and ``metrics`` ({method: {metric: value}}); non-numeric metrics are skipped.
    """
    values: dict = {}
    for row in rows:
        for method, scores in row["metrics"].items():
            for metric, value in scores.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    by_metric = values.setdefault(row["dataset"], {}).setdefault(method, {})
                    by_metric.setdefault(metric, []).append(float(value))
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


def committed_rows(directory: Path | str, full_cfg: Mapping) -> tuple[list[dict], list[dict]]:
    """All committed unit results of ``directory`` and those whose settings are ``full_cfg``'s."""
    directory = Path(directory)
    rows = benchmark.read_results(directory) if directory.is_dir() else []
    keep = [
        row
        for row in rows
        if row["settings"]
        == benchmark.unit_parts(row["dataset"], row["split"], row["unit"], full_cfg)
    ]
    return rows, keep


def complete_units(rows: Sequence[Mapping], splits: Sequence[int]) -> list[dict]:
    """The rows of every (data set, unit) whose results exist for all ``splits``.

    A mean ± sd over splits is only compared with Table 2 once all splits are in: the units
    of a long run that is still going are left out, not averaged over fewer splits.
    """
    have: dict = {}
    for r in rows:
        have.setdefault((r["dataset"], r["unit"]), set()).add(r["split"])
    done = {key for key, got in have.items() if set(splits) <= got}
    return [dict(r) for r in rows if (r["dataset"], r["unit"]) in done and r["split"] in splits]


def lppd_key(scores: Mapping) -> str:
    """The LPPD shown for a method: with validation noise where the method has one."""
    return "lppd_val_noise" if "lppd_val_noise" in scores else "lppd"


def best_lppd(scores: Mapping) -> float:
    """The better of a method's two correct LPPDs (as configured, with validation noise)."""
    return max(scores[k][0] for k in ("lppd", "lppd_val_noise") if k in scores)


def ranking_margins(summary: Mapping) -> tuple[dict, dict]:
    """C8.1 per data set: BDE(10) − best other method; BDE(1) − best of Laplace/MFVI.

    Data sets without all five methods are left out. Returns ``(margins, single)``:
    ``margins[dataset]`` a float, ``single[dataset]`` the pair (first chain, average
    single chain) of BDE(1)'s margin over the baselines.
    """
    margins, single = {}, {}
    for dataset, s in summary.items():
        if not set(METHODS) <= set(s):
            continue  # a data set whose units are not all there yet
        others = max(best_lppd(s[m]) for m in ("laplace", "mfvi", "de", "bde1"))
        abi = max(best_lppd(s[m]) for m in BASELINES)
        margins[dataset] = s["bde10"]["lppd"][0] - others
        single[dataset] = (
            s["bde1"]["lppd"][0] - abi,
            s["bde1"]["lppd_single_chain_mean"][0] - abi,
        )
    return margins, single


def ranking_clauses(summary: Mapping) -> dict:
    """C8.1's other statements, per data set with all five methods (each baseline at the
    better of its two correct LPPDs, :func:`best_lppd`), each positive where it holds:

    - ``laplace_last``: the lowest LPPD of the other methods minus Laplace's ("Laplace …
      ranking last in terms of LPPD");
    - ``mfvi_lppd``, ``mfvi_rmse``: MFVI's LPPD minus Laplace's and MFVI's RMSE minus
      Laplace's ("in contrast, MFVI provides improved uncertainty quantification but
      sacrifices predictive accuracy");
    - ``single_chain``: BDE(1)'s average single-chain LPPD minus the best of Laplace, MFVI
      and DE ("BDEs achieve the highest performance among all methods, even with a single
      chain");
    - ``ten_lppd``, ``ten_rmse``: BDE(10)'s LPPD minus BDE(1)'s and BDE(1)'s RMSE minus
      BDE(10)'s ("improved predictive accuracy and uncertainty quantification when
      ensembling 10 chains").

    Returns ``{name: {dataset: value}}``.
    """
    out: dict = {
        k: {}
        for k in ("laplace_last", "mfvi_lppd", "mfvi_rmse", "single_chain", "ten_lppd", "ten_rmse")
    }
    for dataset, s in summary.items():
        if not set(METHODS) <= set(s):
            continue  # a data set whose units are not all there yet
        lppd = {m: best_lppd(s[m]) for m in ("laplace", "mfvi", "de", "bde1", "bde10")}
        rmse = {m: s[m]["rmse"][0] for m in ("laplace", "mfvi", "bde1", "bde10")}
        others = [v for m, v in lppd.items() if m != "laplace"]
        out["laplace_last"][dataset] = min(others) - lppd["laplace"]
        out["mfvi_lppd"][dataset] = lppd["mfvi"] - lppd["laplace"]
        out["mfvi_rmse"][dataset] = rmse["mfvi"] - rmse["laplace"]
        out["single_chain"][dataset] = s["bde1"]["lppd_single_chain_mean"][0] - max(
            lppd[m] for m in ("laplace", "mfvi", "de")
        )
        out["ten_lppd"][dataset] = s["bde10"]["lppd"][0] - s["bde1"]["lppd"][0]
        out["ten_rmse"][dataset] = rmse["bde1"] - rmse["bde10"]
    return out


CLAUSE_LABELS = {
    "laplace_last": "lowest other LPPD − Laplace's",
    "mfvi_lppd": "MFVI's LPPD − Laplace's",
    "mfvi_rmse": "MFVI's RMSE − Laplace's",
    "single_chain": "BDE(1) single-chain LPPD − best of Laplace, MFVI, DE",
    "ten_lppd": "BDE(10)'s LPPD − BDE(1)'s",
    "ten_rmse": "BDE(1)'s RMSE − BDE(10)'s",
}


def clauses_table(clauses: Mapping) -> str:
    """C8.1's statements (:func:`ranking_clauses`) as a table: one row per statement, one
    column per data set; a statement holds where its value is positive."""
    datasets = list(next(iter(clauses.values())))
    rows = [(CLAUSE_LABELS[k], *(f"{v[d]:+.3f}" for d in datasets)) for k, v in clauses.items()]
    return tables.markdown_table(("statement (holds where > 0)", *datasets), rows)


def authors_gaps(summary: Mapping, datasets: Sequence[str]) -> dict:
    """C8.3: the authors' evaluation of our predictions against Table 2, on ``datasets``.

    Returns ``max_gap`` (max |authors' evaluation − reference| over Laplace and MFVI),
    ``gain`` (smallest LPPD with validation noise − authors' evaluation, same methods) and
    ``de_gaps`` ({dataset: authors' evaluation of DE − reference} on every data set of
    ``summary`` with DE units).
    """
    gaps = [
        abs(summary[d][m]["lppd_authors"][0] - REFERENCE[d][m]["lppd"][0])
        for d in datasets
        for m in BASELINES
    ]
    gain = min(
        summary[d][m]["lppd_val_noise"][0] - summary[d][m]["lppd_authors"][0]
        for d in datasets
        for m in BASELINES
    )
    de_gaps = {
        d: summary[d]["de"]["lppd_authors"][0] - REFERENCE[d]["de"]["lppd"][0]
        for d in summary
        if "de" in summary[d]
    }
    return {"max_gap": float(max(gaps)), "gain": float(gain), "de_gaps": de_gaps}


def described_gaps(summary: Mapping, datasets: Sequence[str]) -> dict:
    """C8.3: the LPPD of the predictive [SAP] §5 describes against Table 2, on ``datasets``.

    The described predictive is a Gaussian whose variance is the variance over the posterior
    samples' predictions plus the small observation noise the authors configure (the
    ``lppd`` of a unit, column "correct"). Returns ``gaps`` ({(dataset, method): described
    LPPD − reference} for Laplace and MFVI), ``max_gap`` (the largest |gap|) and ``min_gap``
    (the smallest |gap|).
    """
    missing = [d for d in datasets if d not in summary]
    if missing:
        raise ValueError(f"described_gaps: no summary of the data sets {missing}")
    gaps = {
        (d, m): float(summary[d][m]["lppd"][0] - REFERENCE[d][m]["lppd"][0])
        for d in datasets
        for m in BASELINES
    }
    sizes = [abs(g) for g in gaps.values()]
    return {"gaps": gaps, "max_gap": max(sizes), "min_gap": min(sizes)}


def wall_times(rows: Iterable[Mapping]) -> dict:
    """{unit: {dataset: [wall seconds of each split]}} of unit results."""
    out: dict = {}
    for r in rows:
        out.setdefault(r["unit"], {}).setdefault(r["dataset"], []).append(r["wall_s"])
    return out


# --------------------------------------------------------------------------- tables


def settings_table(keys: Sequence[str], full_cfg: Mapping, quick_cfg: Mapping) -> str:
    """The budgets of [SAP] (``paper_numbers.toml``) next to the full and quick profiles'."""
    paper = references.sap_budgets()
    rows = [(k, paper[k], full_cfg[k], quick_cfg[k]) for k in keys]
    return tables.markdown_table(("setting", "paper", "full (here)", "quick"), rows)


def table2(summary: Mapping) -> str:
    """Table 2: our LPPD and RMSE (mean ± split-sd) next to the reference, per data set."""
    rows = []
    for dataset in DATASETS:
        for method in METHODS:
            if method not in summary.get(dataset, {}):
                continue
            s, ref = summary[dataset][method], REFERENCE[dataset][method]
            cells = (s[lppd_key(s)], ref["lppd"], s["rmse"], ref["rmse"])
            rows.append((dataset, METHOD_LABELS[method], *(tables.pm(c) for c in cells)))
    header = ("data", "method", "LPPD ours", "LPPD ref", "RMSE ours", "RMSE ref")
    return tables.markdown_table(header, rows, align="llrrrr")


def margins_table(margins: Mapping, single: Mapping, live: Mapping) -> str:
    """C8.1's margins per data set; ``live`` the quick table's BDE(10) margins (not checked)."""
    rows = [
        (
            d,
            f"{margins[d]:+.2f}",
            f"{single[d][0]:+.2f}",
            f"{single[d][1]:+.2f}",
            f"{live[d]:+.2f}" if d in live else "—",
        )
        for d in margins
    ]
    header = (
        "data",
        "BDE(10) − best other",
        "BDE(1) first chain − best of Laplace/MFVI",
        "average chain − best of Laplace/MFVI",
        "quick table (not checked)",
    )
    return tables.markdown_table(header, rows, align="lrrrr")


def differences_table(summary: Mapping, sd_flag: float) -> tuple[str, dict]:
    """C8.2: BDE(10) ours − reference per data set and metric; (table, {(dataset, metric): z}).

    A row is flagged where |z| exceeds ``sd_flag``, which the chapter reads from C8.2's bound in
    the claims catalogue (:func:`.checking.catalogue_check`)."""
    rows, z_values = [], {}
    for metric in ("lppd", "rmse"):
        for dataset, d in differences(summary, metric, "bde10").items():
            z_values[(dataset, metric)] = d["z"]
            rows.append(
                (
                    dataset,
                    metric,
                    tables.pm((d["ours"], d["ours_sd"])),
                    tables.pm((d["reference"], d["reference_sd"])),
                    f"{d['difference']:+.3f}",
                    f"{d['z']:+.1f}",
                    "flagged" if abs(d["z"]) > sd_flag else "",
                )
            )
    header = ("data", "metric", "ours", "reference", "difference", "in split-sds", "")
    return tables.markdown_table(header, rows, align="llrrrrl"), z_values


def authors_table(summary: Mapping, datasets: Sequence[str]) -> str:
    """C8.3: the authors' evaluation of our baselines and DE, the reference, the correct LPPDs."""
    rows = []
    for dataset in datasets:
        for method in (*BASELINES, "de"):
            if method not in summary[dataset]:
                continue
            s = summary[dataset][method]
            rows.append(
                (
                    dataset,
                    METHOD_LABELS[method],
                    f"{s['lppd_authors'][0]:.3f}",
                    f"{REFERENCE[dataset][method]['lppd'][0]:.3f}",
                    f"{s['lppd'][0]:.3f}",
                    f"{s['lppd_val_noise'][0]:.3f}",
                )
            )
    header = ("data", "method", "authors' evaluation", "reference", "correct", "val noise")
    return tables.markdown_table(header, rows, align="llrrrr")


def cost_table(rows: Sequence[Mapping]) -> str:
    """Wall time per unit kind of the committed units: count, mean and max seconds."""
    times, out = wall_times(rows), []
    for unit in UNITS:
        per = [t for ts in times.get(unit, {}).values() for t in ts]
        if per:
            out.append((unit, len(per), f"{np.mean(per):.1f}", f"{np.max(per):.1f}"))
    return tables.markdown_table(("unit", "units", "mean [s]", "max [s]"), out, align="lrrr")


# --------------------------------------------------------------------------- figure


def table_figure(summary: Mapping, title: str):
    """Ours (circles) against Table 2 (squares): LPPD and RMSE per data set and method."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(10, 4.8))
    x = np.arange(len(METHODS))
    labels = [METHOD_LABELS[m] for m in METHODS]
    for j, dataset in enumerate(DATASETS):
        for i, (metric, label) in enumerate((("lppd", "LPPD (↑)"), ("rmse", "RMSE (↓)"))):
            ax = axes[i, j]
            ref = [REFERENCE[dataset][m][metric] for m in METHODS]
            ax.errorbar(
                x + 0.15,
                [r[0] for r in ref],
                yerr=[r[1] for r in ref],
                fmt="s",
                color=plotting.OKABE_ITO[1],
                label="reference (Table 2)",
            )
            if dataset in summary:
                ours = []
                for m in METHODS:
                    s = summary[dataset].get(m)
                    key = (lppd_key(s) if metric == "lppd" else "rmse") if s else None
                    ours.append(s[key] if s else (np.nan, np.nan, 0))
                ax.errorbar(
                    x - 0.15,
                    [o[0] for o in ours],
                    yerr=[o[1] for o in ours],
                    fmt="o",
                    color=plotting.OKABE_ITO[0],
                    label="ours",
                )
            ax.set_xticks(x, labels, rotation=45, fontsize=7)
            if i == 0:
                ax.set_title(dataset)
            if j == 0:
                ax.set_ylabel(label)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def baselines_figure(summary: Mapping, datasets: Sequence[str], profile: str):
    """C8.3: Laplace and MFVI LPPD, the authors' evaluation (crosses) and the correct one."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.4))
    x = np.arange(len(datasets))
    for k, (method, key, label) in enumerate(
        (
            ("laplace", "lppd_authors", "Laplace, authors' evaluation"),
            ("laplace", "lppd_val_noise", "Laplace, correct"),
            ("mfvi", "lppd_authors", "MFVI, authors' evaluation"),
            ("mfvi", "lppd_val_noise", "MFVI, correct"),
        )
    ):
        vals = [summary[d][method][key] for d in datasets]
        ax.errorbar(
            x + 0.1 * (k - 1.5),
            [v[0] for v in vals],
            yerr=[v[1] for v in vals],
            fmt="o" if "correct" in label else "x",
            color=plotting.OKABE_ITO[k],
            label=label,
        )
    for k, method in enumerate(BASELINES):
        refs = [REFERENCE[d][method]["lppd"][0] for d in datasets]
        ax.plot(x, refs, "k_", ms=14, label="Table 2 (Laplace, MFVI)" if k == 0 else None)
    ax.set_xticks(x, datasets)
    ax.set(
        ylabel="test LPPD", title=f"baselines: the same predictions, two evaluations ({profile})"
    )
    ax.legend(fontsize=7, ncol=2)
    return fig


def cost_figure(rows: Sequence[Mapping]):
    """Wall time of one unit (mean over splits) per data set and unit kind, log scale."""
    import matplotlib.pyplot as plt

    times = wall_times(rows)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x = np.arange(len(DATASETS))
    for k, unit in enumerate(UNITS):
        vals = [np.mean(times.get(unit, {}).get(d, [np.nan])) for d in DATASETS]
        ax.bar(x + 0.27 * (k - 1), vals, width=0.27, label=unit, color=plotting.OKABE_ITO[k])
    ax.set_xticks(x, DATASETS)
    ax.set_yscale("log")
    ax.set(ylabel="wall time per unit [s]", title="full profile (committed), 2-core CPU")
    ax.legend(fontsize=8)
    return fig
