"""Chapter 10's tables: how the references mixed, and the leaderboard of each problem."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bnn_posteriors.inference.reference import FAMILY
from bnn_posteriors.site import tables
from bnn_posteriors.store import reference as reference_store
from bnn_posteriors.studies.ch10_reference_posteriors import evidence, score
from bnn_posteriors.studies.ch10_reference_posteriors.evidence import distance_metric

# the ranking distance first, then the other distances to the reference, then the test scores
REGRESSION = ("w2", "w1", "ks", "energy", "lppd", "rmse")
CLASSIFICATION = ("total_variation", "agreement", "energy", "lppd", "accuracy", "ece")
LABELS = {
    "w2": "W2 ↓",
    "w1": "W1 ↓",
    "ks": "KS ↓",
    "energy": "energy ↓",
    "total_variation": "TV ↓",
    "agreement": "agreement ↑",
    "lppd": "test LPPD ↑",
    "rmse": "RMSE ↓",
    "accuracy": "accuracy ↑",
    "ece": "ECE ↓",
}


def metrics_of(row: Mapping) -> tuple[str, ...]:
    """The metrics a part of this kind holds: regression's or classification's."""
    return REGRESSION if distance_metric(row) == "w2" else CLASSIFICATION


def mixing_table(
    problem_names: Sequence[str], floors: Mapping[str, Mapping], reference_dir=None
) -> str:
    """One row per reference: its network, chains × stored draws, the function-space R-hat and
    ESS at the test points (and whether they pass), divergences, the mean number of leapfrog
    steps per draw, its wall time and its floor with its sd over the splits (``floors``:
    problem → :func:`.score.reference_floor`, a method's number of draws of half its chains
    against the other half)."""
    rows = []
    for name in problem_names:
        record = reference_store.read_reference(name, reference_dir)[1]
        test, stats, s = record["mixing"]["test"], record["stats"], record["settings"]
        floor = floors.get(name)
        if floor is None:
            floor_cell = "–"
        else:
            metric = "w2" if "w2" in floor else "total_variation"
            floor_cell = (
                f"{LABELS[metric].split()[0]} {floor[metric]:.3f} ± {floor[metric + '_sd']:.3f}"
            )
        rows.append(
            [
                name,
                "–".join(str(w) for w in record["model"]["widths"]),
                f"{s['num_chains']} × {s['num_samples']} (keep {s['num_kept']})",
                f"{test['max_rhat']:.3f}",
                f"{test['min_ess']:.0f}",
                "yes" if test["mixed"] else "no: " + "; ".join(test["reasons"]),
                str(int(np.sum(stats["divergences"]))),
                f"{np.mean(stats['mean_num_steps']):.0f}",
                f"{record['wall_s']:.0f}",
                floor_cell,
            ]
        )
    header = [
        "problem",
        "network",
        "chains × draws",
        "max R-hat",
        "min ESS",
        "mixed",
        "divergences",
        "leapfrog steps / draw",
        "wall time (s)",
        "floor",
    ]
    return tables.markdown_table(header, rows)


def family_table(distances: Mapping[tuple[str, str], Mapping], reference_dir=None) -> str:
    """One row per second reference: ``distances`` maps (problem, sampler) to
    :func:`.score.family_distance`. Its sampler and family, whether its own chains mixed
    (today's rule, :func:`.evidence.mixing_verdict`), its integration steps per draw, its
    distance to the NUTS reference at the methods' number of draws (mean ± sd over the
    splits), the NUTS reference's floor on the same splits (mean and 95th percentile),
    whether the distance lies within it (:func:`.evidence.within_floor`), and the energy
    distance of the joint draws to NUTS beside its floor's 95th percentile (a further view,
    which decides nothing)."""
    rows = []
    for (problem, sampler), d in distances.items():
        record = score.committed_reference(problem, reference_dir, sampler=sampler)[1]
        own = evidence.mixing_verdict(problem, reference_dir, sampler)
        metric = distance_metric(d)
        rows.append(
            [
                problem,
                f"{sampler} ({FAMILY[sampler]})",
                "yes" if own["mixed"] else "no: " + "; ".join(own["reasons"]),
                f"{np.mean(record['stats']['mean_num_steps']):.0f}",
                f"{LABELS[metric].split()[0]} {d[metric]:.4f} ± {d[metric + '_sd']:.4f}",
                f"{d['floor_' + metric]:.4f}",
                f"{d['floor_' + metric + '_q95']:.4f}",
                "yes" if evidence.within_floor(d) else "no",
                (f"{d['energy']:.4f} ({d['floor_energy_q95']:.4f})" if "energy" in d else "–"),
            ]
        )
    header = [
        "problem",
        "second reference",
        "its chains mixed",
        "steps / draw",
        "distance to NUTS",
        "floor",
        "floor, 95th pct.",
        "within",
        "energy to NUTS (floor, 95th pct.)",
    ]
    return tables.markdown_table(header, rows)


def leaderboard_table(
    rows: Sequence[Mapping],
    problem: str,
    floor: Mapping | None = None,
    missing: Sequence[str] = (),
    *,
    compact: bool = False,
) -> str:
    """The leaderboard of ``problem``: per method the mean and 95 % t-interval over seeds of
    each metric (:func:`.score.leaderboard`), its cost in GFLOPs, ordered by the distance to
    the reference; methods that do not apply are listed with the reason, the reference's own
    floor and scores come last (``floor``), and ``missing`` parts are counted.

    ``compact``: the interval of the ranking distance only, the other metrics as their means,
    and the seeds said once below the table where every method has the same number (a table
    that fits the text column; the full one goes in a dropdown)."""
    mine = [r for r in rows if r["settings"]["problem"] == problem]
    applied = [r for r in mine if r.get("applies", True)]
    if not applied:
        return f"No scored part of {problem} yet."
    metrics = metrics_of(applied[0])
    board = score.leaderboard(applied, (*metrics, "flops"))
    order = sorted(board, key=lambda key: board[key][metrics[0]][0])
    out = []
    for key in order:
        entry = board[key]
        cells = [key[1]]
        for i, m in enumerate(metrics):
            if m not in entry:  # parts of an older version (score.READABLE)
                cells.append("–")
                continue
            mean, low, high = entry[m]
            bare = np.isnan(low) or (compact and i > 0)
            cells.append(f"{mean:.3f}" if bare else f"{mean:.3f} [{low:.3f}, {high:.3f}]")
        cells += [f"{entry['flops'][0] / 1e9:.3g}", str(entry["seeds"])]
        out.append(cells)
    seeds = {entry["seeds"] for entry in board.values()}
    one_count = compact and len(seeds) == 1
    if one_count:  # the seeds column says the same on every row: said once, below
        out = [cells[:-1] for cells in out]
    blank = [""] * (len(metrics) + (0 if one_count else 1))
    for method, reason in sorted(
        {(r["settings"]["method"], r["reason"]) for r in mine if not r.get("applies", True)}
    ):
        out.append([method, f"does not apply: {reason}", *blank])
    if floor is not None:
        out.append(
            [
                "*reference (half vs half)*",
                *[f"{floor[m]:.3f}" if m in floor else "" for m in metrics],
                *blank[len(metrics) - 1 :],
            ]
        )
    header = ["method", *(LABELS[m] for m in metrics), "GFLOPs", *([] if one_count else ["seeds"])]
    table = tables.markdown_table(header, out)
    if one_count:
        table += f"\nEach method over {seeds.pop()} seeds.\n"
    if missing:
        table += f"\n\n{len(missing)} parts of {problem} still to run."
    return table


def ranking(rows: Sequence[Mapping], problem_names: Sequence[str]) -> dict[str, list[str]]:
    """Per problem, the methods that apply, closest to the reference first (by the mean over
    seeds of the distance: W2 or total variation)."""
    applied = [r for r in rows if r.get("applies", True)]
    out: dict[str, list[str]] = {}
    for problem in problem_names:
        mine = [r for r in applied if r["settings"]["problem"] == problem]
        if not mine:
            out[problem] = []
            continue
        metric = distance_metric(mine[0])
        board = score.leaderboard(mine, (metric,))
        out[problem] = [m for _, m in sorted((v[metric][0], k[1]) for k, v in board.items())]
    return out


def live_table(live: Sequence[Mapping], rows: Sequence[Mapping], profile: str) -> str:
    """This build's scores (``live``: the parts of one seed, computed now under ``profile``)
    beside the committed full-profile mean of the same problem and method (``rows``)."""
    out = []
    for row in live:
        s = row["settings"]
        metric = distance_metric(row)
        board = score.leaderboard(
            [
                r
                for r in rows
                if r["settings"]["problem"] == s["problem"]
                and r["settings"]["method"] == s["method"]
                and r.get("applies", True)
            ],
            (metric,),
        )
        entry = board.get((s["problem"], s["method"]))
        committed = "–" if entry is None else f"{entry[metric][0]:.3f}"
        out.append([s["problem"], s["method"], LABELS[metric], f"{row[metric]:.3f}", committed])
    header = ["problem", "method", "distance", f"this build ({profile})", "committed mean (full)"]
    return tables.markdown_table(header, out)
