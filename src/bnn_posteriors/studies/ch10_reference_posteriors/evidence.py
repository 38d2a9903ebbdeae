"""Chapter 10's claims: is one method's predictive closer to the reference posterior's than
another's, on every problem whose reference mixed?

Each claim compares the distance to the reference (:func:`distance_metric`: W2 in regression,
total variation in classification) of a method ``a`` with that of one or more methods ``b``,
seed by seed: the methods share a key per seed (:func:`.score.method_key`), so the log ratio
log d(a) − log d(b) is paired, and its 95 % Student-t interval over the seeds
(:func:`bnn_posteriors.evaluation.diagnostics.mean_interval`) gives an interval of the
geometric-mean ratio d(a)/d(b). "a is closer than b" is the bound 1, "a is competitive with b"
a bound above 1; each check's bound and rule are the claims catalogue's
(``claims/catalogue/10_reference_posteriors.toml``, the check's ``part``). Only problems whose
reference mixed in function space decide; on each,

- every interval below the bound: **reproduced**;
- some interval above it: **not reproduced**;
- otherwise (an interval straddles it, or nothing to compare): **inconclusive**, with the
  :class:`~bnn_posteriors.claims.checking.Gate` saying where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bnn_posteriors.claims.checking import Evidence, Gate, catalogue_check
from bnn_posteriors.evaluation import diagnostics, function_space
from bnn_posteriors.site import tables
from bnn_posteriors.store import reference as reference_store
from bnn_posteriors.studies.ch10_reference_posteriors import problems

LEVEL = 0.95


def distance_metric(row: Mapping) -> str:
    """The distance to the reference a claim decides on: ``"w2"`` for a regression part,
    ``"total_variation"`` for a classification part."""
    for metric in ("w2", "total_variation"):
        if metric in row:
            return metric
    raise ValueError(f"the part holds neither 'w2' nor 'total_variation': {sorted(row)}")


def mixing_verdict(problem: str, reference_dir=None, sampler: str = "nuts") -> dict:
    """Today's rule on the committed reference of ``problem`` by ``sampler``: whether it mixed
    at its test points (:func:`bnn_posteriors.evaluation.function_space.verdict` on the R-hat
    and ESS summaries of its record, the number of quantities counted from its arrays where
    an older record does not hold it). Returns the verdict with the record's summaries."""
    from bnn_posteriors.studies.ch10_reference_posteriors.build import stored_name

    arrays, record = reference_store.read_reference(stored_name(problem, sampler), reference_dir)
    summary, settings = record["mixing"]["test"], record["settings"]
    quantities = summary.get("num_quantities")
    if quantities is None:  # a record of the rule that did not count them
        if "test_probs" in arrays:
            quantities = int(np.prod(arrays["test_probs"].shape[2:]))
            quantities -= int(summary.get("constant_components", 0))
        else:
            quantities = int(arrays["test_f"].shape[2])
    judged = function_space.verdict(
        summary,
        num_chains=settings["num_chains"],
        num_draws=settings["num_kept"],
        num_quantities=max(quantities, 1),
    )
    return {**summary, **judged}


def mixed(problem: str, reference_dir=None) -> bool:
    """Whether the committed reference of ``problem`` mixed at its test points by the verdict
    its record stored (the rule of the day it was built: every R-hat ≤ 1.01 and every bulk
    ESS ≥ 400, :mod:`bnn_posteriors.evaluation.function_space`), which the chapter's text
    reports. The claims are decided on the problems :func:`validated` passes, by today's rule
    (:func:`mixing_verdict`)."""
    return bool(
        reference_store.read_reference(problem, reference_dir)[1]["mixing"]["test"]["mixed"]
    )


def within_floor(distance: Mapping) -> bool:
    """Whether a second reference's distance to the NUTS reference (a
    :func:`.score.family_distance`) lies within the NUTS reference's floor: its mean over the
    splits at most the floor's 95th percentile, on the problem's distance (W2 or total
    variation)."""
    metric = distance_metric(distance)
    return bool(distance[metric] <= distance[f"floor_{metric}_q95"])


def validated(
    problem: str, distances: Mapping[str, Mapping], reference_dir=None
) -> dict[str, bool | list[str]]:
    """Whether the NUTS reference of ``problem`` is validated: it mixed by today's rule, and
    every second reference of ``distances`` (sampler → :func:`.score.family_distance`)
    mixed and lies within its floor, all by today's rule (:func:`mixing_verdict`). Needs one
    second reference of another sampler family than NUTS. Returns ``{"validated",
    "reasons"}``."""
    from bnn_posteriors.inference.reference import FAMILY

    reasons = []
    if not mixing_verdict(problem, reference_dir)["mixed"]:
        reasons.append("the NUTS chains did not mix")
    if not any(FAMILY[sampler] != "NUTS" for sampler in distances):
        reasons.append("no reference of a second sampler family")
    for sampler, distance in distances.items():
        if not mixing_verdict(problem, reference_dir, sampler)["mixed"]:
            reasons.append(f"the {sampler} chains did not mix")
        if not within_floor(distance):
            reasons.append(f"the {sampler} reference lies outside the floor")
    return {"validated": not reasons, "reasons": reasons}


#: What a ratio compares: ``"distance"`` to the reference (:func:`distance_metric`), the
#: ``"energy"`` distance of the joint predictive over the test points (parts of scoring version
#: 3; :func:`.fidelity.energy_distance`) or the cost in ``"flops"`` (gradient evaluations × one
#: gradient's FLOPs + dense algebra), with its words.
QUANTITIES = {
    "distance": "distances to the reference",
    "energy": "energy distances of the joint predictive to the reference",
    "flops": "costs in FLOPs",
}


def distances(
    rows: Sequence[Mapping], problem: str, method: str, quantity: str = "distance"
) -> dict[int, float]:
    """Seed → distance to the reference of ``method`` on ``problem`` (the parts that apply),
    or another ``quantity`` of :data:`QUANTITIES` (``"flops"``: its cost)."""
    if quantity not in QUANTITIES:
        raise ValueError(f"quantity must be one of {sorted(QUANTITIES)}, got {quantity!r}")
    out = {}
    for row in rows:
        s = row["settings"]
        if s["problem"] == problem and s["method"] == method and row.get("applies", True):
            key = distance_metric(row) if quantity == "distance" else quantity
            if key in row:  # a part of scoring version 2 has no energy
                out[int(s["seed"])] = float(row[key])
    return out


def applies(rows: Sequence[Mapping], problem: str, method: str) -> bool:
    """False where a part records that ``method`` does not apply to ``problem``, else True
    (scored, or not yet run)."""
    return not any(
        r["settings"]["problem"] == problem
        and r["settings"]["method"] == method
        and not r.get("applies", True)
        for r in rows
    )


def ratio_interval(
    rows: Sequence[Mapping], problem: str, a: str, b: str, quantity: str = "distance"
) -> dict | None:
    """The geometric-mean ratio d(a)/d(b) over the seeds both methods have on ``problem`` and
    its 95 % t-interval (exp of the interval of the paired log ratios): ``{"n", "ratio",
    "low", "high"}``, or None with fewer than two paired seeds. ``quantity``: what d is
    (:data:`QUANTITIES`)."""
    da, db = distances(rows, problem, a, quantity), distances(rows, problem, b, quantity)
    seeds = sorted(set(da) & set(db))
    if len(seeds) < 2:
        return None
    values = np.array([[da[s], db[s]] for s in seeds])
    if not np.all(values > 0):
        raise ValueError(
            f"ratio_interval: {QUANTITIES[quantity]} of {a} and {b} on {problem} must be "
            f"positive for a ratio, got {values.min():.3g} (an estimate at its floor)"
        )
    logs = np.log(values[:, 0]) - np.log(values[:, 1])
    if np.ptp(logs) == 0.0:  # the same ratio on every seed (a cost fixed by the shapes)
        mean = low = high = float(logs[0])
    else:
        mean, low, high = diagnostics.mean_interval(logs, level=LEVEL)
    return {
        "n": len(seeds),
        "ratio": float(np.exp(mean)),
        "low": float(np.exp(low)),
        "high": float(np.exp(high)),
    }


def closer(
    claim: str,
    rows: Sequence[Mapping],
    a: str,
    others: Sequence[str],
    problem_names: Sequence[str],
    deciding: Sequence[str],
    *,
    part: str | None = None,
    says_what: str,
    committed: str | None = None,
    glue_prefix: str | None = None,
    quantity: str = "distance",
) -> Evidence:
    """The evidence that ``a``'s distance to the reference is below the bound times each of
    ``others``' on every problem of ``deciding`` (the problems whose reference is validated,
    a subset of ``problem_names``; the rest are shown but decide nothing). ``quantity``
    ``"flops"`` compares the methods' costs instead (:data:`QUANTITIES`).

    The rule and the bound are the catalogue's check ``part`` of ``claim``
    (:func:`.claims.checking.catalogue_check`; ``part`` may be left out when the claim has one
    check; a part that names a further finding decides that finding): the rule ``less``, the
    bound 1 for "closer", above 1 for "competitive". The value is the upper ends of the
    deciding intervals of d(a)/d(b); the gate fails when a pair that applies on a deciding
    problem has no scored seeds yet, when no interval decides, or when none lies above the
    bound and one straddles it. ``says_what``: the claim in a few words ("MILE with 10 chains
    is closer than each single-mode approximation"). ``glue_prefix``: glue each deciding
    interval's ratio and ends as ``<prefix>_<problem>_<b slug>`` (and its low, high).
    """
    if not others:
        raise ValueError("closer: give at least one method to compare with")
    if not set(deciding) <= set(problem_names):
        raise ValueError(
            f"closer: deciding problems {sorted(set(deciding) - set(problem_names))} "
            f"are not among the problems {list(problem_names)}"
        )
    entry = catalogue_check(claim, part)
    bound = entry.get("bound")
    if entry["rule"] != "less" or not isinstance(bound, int | float):
        raise ValueError(
            f"closer: the catalogue's check {entry['part']!r} of {claim} must be the rule "
            f"'less' with a fixed bound, got {entry['rule']!r} and {bound!r}"
        )
    if not (np.isfinite(bound) and bound > 0):
        raise ValueError(f"closer: bound must be a positive ratio, got {bound!r}")
    table_rows: list[list[str]] = []
    decided: list[tuple[str, str, dict]] = []
    pending: list[str] = []
    glue: dict[str, float] = {}
    for problem in problem_names:
        for b in others:
            r = ratio_interval(rows, problem, a, b, quantity)
            decides = problem in deciding and r is not None
            if r is None:
                cells = ["–", "–", "fewer than two paired seeds"]
                if problem in deciding and applies(rows, problem, a) and applies(rows, problem, b):
                    pending.append(f"{problem} vs {b}")
            else:
                side = (
                    "below" if r["high"] < bound else "above" if r["low"] > bound else "straddles"
                )
                cells = [
                    str(r["n"]),
                    f"{r['ratio']:.3g} [{r['low']:.3g}, {r['high']:.3g}]",
                    side if decides else "(not a deciding problem: shown only)",
                ]
            table_rows.append([problem, b, *cells])
            if r is not None and problem in deciding:
                decided.append((problem, b, r))
                if glue_prefix:
                    stem = f"{glue_prefix}_{problem}_{''.join(c for c in b.lower() if c.isalnum())}"
                    glue.update(
                        {stem: r["ratio"], f"{stem}_low": r["low"], f"{stem}_high": r["high"]}
                    )
    header = [
        "problem",
        f"{a} vs",
        "seeds",
        f"ratio of {QUANTITIES[quantity].split()[0]} ({LEVEL:.0%} interval)",
        f"against the bound {bound:g}",
    ]
    table = tables.markdown_table(header, table_rows)
    highs = np.array([r["high"] for _, _, r in decided])
    above = [f"{p} vs {b}" for p, b, r in decided if r["low"] > bound]
    straddle = [
        f"{p} vs {b} [{r['low']:.3g}, {r['high']:.3g}]"
        for p, b, r in decided
        if r["low"] <= bound <= r["high"]
    ]
    if pending:
        gate = Gate(
            False,
            f"scores still to run on a validated reference: {', '.join(pending)}",
            "the missing parts (bnn-posteriors scores --profile full)",
        )
        value = highs if decided else np.array([np.nan])
        labels = [f"{p}: {a} vs {b}" for p, b, _ in decided] if decided else ["no pair"]
    elif not decided:
        gate = Gate(
            False,
            f"no deciding problem (a validated reference, and what the claim needs of the "
            f"problem) where {a} and {', '.join(others)} both have scored seeds (problems: "
            f"{list(problem_names)}, deciding: {list(deciding)})",
            f"a deciding problem where {a} applies, and its scored seeds",
        )
        value = np.array([np.nan])
        labels = ["no pair"]
    else:
        gate = Gate(
            bool(above) or not straddle,
            "the intervals straddle the bound: " + "; ".join(straddle)
            if straddle
            else "every interval lies on one side of the bound",
            "more seeds (the interval narrows as 1/√n) or fits whose spread over seeds is smaller",
        )
        value = highs
        labels = [f"{p}: {a} vs {b}" for p, b, _ in decided]
    pairs = ", ".join(
        f"{p}/{b} {r['ratio']:.3g} [{r['low']:.3g}, {r['high']:.3g}]" for p, b, r in decided
    )
    note = (
        f"upper ends of the {LEVEL:.0%} t-intervals of the geometric-mean ratio of "
        f"{QUANTITIES[quantity]} d({a})/d(b) over paired seeds, on the deciding problems "
        f"({', '.join(deciding) or 'none'}): {pairs or 'none'}; "
        f"above the bound {bound:g}: {above or 'none'}"
    )
    verdict = (
        "holds" if decided and not above and not straddle else "fails" if above else "undecided"
    )
    says = (
        f"{says_what}: {verdict} on the deciding problems "
        f"({', '.join(deciding) or 'none'}); largest upper end "
        f"{highs.max():.3g} against the bound {bound:g}"
        if decided
        else f"{says_what}: no deciding problem"
    )
    return Evidence(
        claim,
        value,
        part=part,
        labels=labels,
        note=note,
        says=says,
        gate=gate,
        committed=committed,
        glue=glue,
        table=table,
    )


def constraints(problem: str) -> tuple[int, int]:
    """``(P, N·O)`` of ``problem``: the network's parameters (weights and biases) and the
    training outputs, the bound on the rank of the training Jacobian (chapter 9, C9.1)."""
    prob = problems.problem(problem)
    return prob.num_params, prob.num_constraints


def relative_gap(rows: Sequence[Mapping], problem: str, a: str, b: str) -> tuple[int, float | None]:
    """``(number of paired seeds, the largest |d(a) − d(b)| / d(b) over them)`` on ``problem``
    (None with no paired seed): how far ``a``'s distance to the reference lies from ``b``'s.
    The null-space LA reaches beyond the MAP's predictive only where this gap is more than
    the round-off of the distances (:func:`collapses`)."""
    da, db = distances(rows, problem, a), distances(rows, problem, b)
    seeds = sorted(set(da) & set(db))
    if not seeds:
        return 0, None
    return len(seeds), max(abs(da[s] - db[s]) / db[s] for s in seeds)


def collapses(
    claim: str,
    part: str,
    rows: Sequence[Mapping],
    a: str,
    b: str,
    problem_names: Sequence[str],
    *,
    committed: str | None = None,
) -> Evidence:
    """The evidence that ``a``'s distance to the reference equals ``b``'s, seed by seed, within
    a relative tolerance on every problem of ``problem_names`` whose training outputs
    outnumber the parameters (N·O ≥ P, so the Jacobian's null space is generically empty): the
    value is the largest relative difference per such problem, below the bound of the
    catalogue's check ``part`` of ``claim`` (a further finding, e.g. ``collapses-to-map``; the
    glue ``ch10_<part>_max`` holds the largest). With no such problem, or no paired seeds
    there, the gate fails."""
    table_rows, worst = [], {}
    for problem in problem_names:
        num_params, outputs = constraints(problem)
        seeds, gap = relative_gap(rows, problem, a, b)
        if outputs >= num_params and gap is not None:
            worst[problem] = gap
        table_rows.append(
            [
                problem,
                str(num_params),
                str(outputs),
                str(seeds),
                f"{gap:.2g}" if gap is not None else "–",
            ]
        )
    header = ["problem", "P", "N·O", "seeds", f"max |d({a}) − d({b})| / d({b})"]
    gate = Gate(
        bool(worst),
        f"{len(worst)} problems with N·O ≥ P and paired seeds",
        "a problem with N·O ≥ P whose two methods are scored",
    )
    value = np.array(list(worst.values())) if worst else np.array([np.nan])
    labels = list(worst) if worst else ["no problem with N·O ≥ P"]
    listed = ", ".join(f"{p} {v:.2g}" for p, v in worst.items()) or "none"
    return Evidence(
        claim,
        value,
        part=part,
        labels=labels,
        gate=gate,
        committed=committed,
        note=f"largest relative difference of the distances to the reference of {a} and {b} "
        f"over paired seeds, on the problems with N·O ≥ P: {listed}",
        says=f"where N·O ≥ P ({', '.join(worst) or 'none'}) {a} scores as {b} does, within "
        f"{max(worst.values()) if worst else float('nan'):.2g} (relative)",
        glue={f"ch10_{part.replace('-', '_')}_max": max(worst.values()) if worst else float("nan")},
        table=tables.markdown_table(header, table_rows),
    )
