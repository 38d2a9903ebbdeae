"""Tests of chapter 10's claim evidence: paired ratios of distances to the reference, the three
outcomes of a comparison on the validated references, and the null-space LA's collapse onto the MAP.

Each claim is seen to fail: reversed distances give "not reproduced", a straddling interval or
no validated reference "inconclusive"."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.store import reference as store
from bnn_posteriors.studies.ch10_reference_posteriors import evidence, problems

SEEDS = range(5)


def _row(problem, method, seed, value, metric="w2"):
    return {
        "applies": True,
        metric: value,
        "settings": {"problem": problem, "method": method, "seed": seed},
    }


def _rows(ratios: dict, base=0.5, metric="w2", spread=0.02):
    """Rows of method "B" (distance ``base`` ± a little) and "A" at ``ratio`` × B's, per problem
    (``ratios``: problem → ratio or list of per-seed ratios)."""
    rng = np.random.default_rng(1)
    rows = []
    for problem, ratio in ratios.items():
        for s in SEEDS:
            b = base * (1 + spread * rng.normal())
            r = ratio[s] if isinstance(ratio, list) else ratio * (1 + spread * rng.normal())
            rows += [_row(problem, "B", s, b, metric), _row(problem, "A", s, r * b, metric)]
    return rows


@pytest.fixture
def record_only(tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_CLAIMS_DIR", str(tmp_path))
    monkeypatch.setenv("BNN_CLAIMS_RECORD_ONLY", "1")


def _status(item: evidence.Evidence) -> str:
    return claims.show_and_check(item)[0]["status"]


def test_distance_metric_distances_and_ratio_interval():
    assert evidence.distance_metric({"w2": 1.0, "ks": 0.1}) == "w2"
    assert evidence.distance_metric({"total_variation": 0.1}) == "total_variation"
    with pytest.raises(ValueError, match="neither 'w2' nor 'total_variation'"):
        evidence.distance_metric({"lppd": -1.0})
    rows = _rows({"p": 0.5}) + [
        {"applies": False, "reason": "n/a", "settings": {"problem": "p", "method": "A", "seed": 9}}
    ]
    assert sorted(evidence.distances(rows, "p", "A")) == list(SEEDS)
    r = evidence.ratio_interval(rows, "p", "A", "B")
    assert (
        r["n"] == 5
        and r["low"] < r["ratio"] < r["high"]
        and r["ratio"] == pytest.approx(0.5, rel=0.05)
    )
    assert evidence.ratio_interval(rows, "p", "A", "C") is None  # no paired seeds


def test_closer_decides_on_the_validated_problems_only(record_only):
    kw = dict(says_what="A is closer than B")
    closer = evidence.closer(
        "C10.2",
        _rows({"p": 0.3, "q": 0.4}),
        "A",
        ["B"],
        ["p", "q"],
        ["p", "q"],
        glue_prefix="t",
        **kw,
    )
    assert _status(closer) == claims.REPRODUCED and set(closer.glue) >= {"t_p_b", "t_q_b_high"}
    # broken: A farther than B on one validated problem -> not reproduced
    reversed_ = evidence.closer(
        "C10.2", _rows({"p": 0.3, "q": 2.0}), "A", ["B"], ["p", "q"], ["p", "q"], **kw
    )
    assert _status(reversed_) == claims.NOT_REPRODUCED
    # ... unless that problem's reference did not mix: shown, not deciding
    shown = evidence.closer(
        "C10.2", _rows({"p": 0.3, "q": 2.0}), "A", ["B"], ["p", "q"], ["p"], **kw
    )
    assert _status(shown) == claims.REPRODUCED and "shown only" in shown.table
    # a tie whose interval straddles 1 -> inconclusive, and the gate says where
    tie = evidence.closer(
        "C10.2", _rows({"p": [0.8, 1.2, 0.9, 1.1, 1.0]}), "A", ["B"], ["p"], ["p"], **kw
    )
    assert _status(tie) == claims.INCONCLUSIVE and "straddle" in tie.gate.why
    # no validated problem where both apply -> inconclusive
    none = evidence.closer("C10.4", _rows({"p": 0.3}), "A", ["B"], ["p"], [], **kw)
    assert _status(none) == claims.INCONCLUSIVE and "no deciding problem" in none.gate.why


def test_closer_with_a_bound_and_several_others(record_only, catalogue_rules):
    rows = _rows({"p": 1.1})  # A 10 % farther than B: competitive within 1.25, not closer
    kw = dict(says_what="A is competitive with B")
    kw5 = dict(kw, part="competitive")
    assert claims.catalogue_check("C10.5", "competitive")["bound"] == 1.25
    competitive = evidence.closer("C10.5", rows, "A", ["B"], ["p"], ["p"], part="competitive", **kw)
    assert _status(competitive) == claims.REPRODUCED and "the bound 1.25" in competitive.table
    assert (
        _status(evidence.closer("C10.5", _rows({"p": 1.6}), "A", ["B"], ["p"], ["p"], **kw5))
        == claims.NOT_REPRODUCED
    )
    # against several methods: one that is closer than A fails the claim
    more = rows + [_row("p", "C", s, 0.1) for s in SEEDS]
    c5 = evidence.closer("C10.5", more, "A", ["B", "C"], ["p"], ["p"], **kw5)
    assert _status(c5) == claims.NOT_REPRODUCED and "p vs C" in c5.note
    with pytest.raises(ValueError, match="at least one method"):
        evidence.closer("C10.1", rows, "A", [], ["p"], ["p"], part="closer", **kw)
    with pytest.raises(ValueError, match="not among the problems"):
        evidence.closer("C10.1", rows, "A", ["B"], ["p"], ["q"], part="closer", **kw)
    with pytest.raises(ValueError, match="name one: part="):  # C10.1 has two checks
        evidence.closer("C10.1", rows, "A", ["B"], ["p"], ["p"], **kw)
    catalogue_rules({"C10.5": [{"part": "competitive", "rule": "less", "bound": 0.0}]})
    with pytest.raises(ValueError, match="positive ratio"):
        evidence.closer("C10.5", rows, "A", ["B"], ["p"], ["p"], **kw5)
    catalogue_rules({"C10.5": [{"part": "competitive", "rule": "greater", "bound": 1.25}]})
    with pytest.raises(ValueError, match="must be the rule 'less' with a fixed bound"):
        evidence.closer("C10.5", rows, "A", ["B"], ["p"], ["p"], **kw5)


def test_closer_compares_costs_in_flops_with_the_quantity_flops(record_only):
    """C10.5's part ``scalability``: A's cost below B's reproduces it, above B's does not; the
    distances play no part in it."""
    rows = _rows({"p": 0.5})  # A closer than B...
    for row in rows:  # ...but three times B's cost, seed by seed
        row["flops"] = (
            3e9 * (1 + 0.01 * row["settings"]["seed"]) if row["settings"]["method"] == "A" else 1e9
        )
    kw = dict(says_what="A costs less than B", part="scalability", quantity="flops")
    costly = evidence.closer("C10.5", rows, "A", ["B"], ["p"], ["p"], **kw)
    assert _status(costly) == claims.NOT_REPRODUCED and "costs in FLOPs" in costly.note
    assert "ratio of costs" in costly.table
    for row in rows:
        row["flops"] /= 9.0 if row["settings"]["method"] == "A" else 1.0
    assert _status(evidence.closer("C10.5", rows, "A", ["B"], ["p"], ["p"], **kw)) == (
        claims.REPRODUCED
    )
    for row in rows:  # a cost fixed by the shapes: the same ratio on every seed, a point
        row["flops"] = 2e9 if row["settings"]["method"] == "A" else 1e9
    point = evidence.ratio_interval(rows, "p", "A", "B", "flops")
    assert point["n"] == len(SEEDS) and point["low"] == point["ratio"] == point["high"]
    assert point["ratio"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="quantity must be one of"):
        evidence.distances(rows, "p", "A", quantity="seconds")


def test_the_catalogues_bound_decides_the_same_evidence(record_only, catalogue_rules):
    """C10.5's evidence for a ratio of about 1.1 reproduces under the catalogue's bound 1.25
    and not under the bound 1: the check reads its bound from the catalogue."""
    item = evidence.closer(
        "C10.5", _rows({"p": 1.1}), "A", ["B"], ["p"], ["p"], says_what="A is competitive",
        part="competitive",
    )  # fmt: skip
    assert item.part == "competitive" and item.bound is None  # a fixed bound, the catalogue's

    def passes() -> bool:
        return claims.verdict(
            item.claim, item.value, part=item.part, bound=item.bound, labels=item.labels
        )[0]

    assert passes()
    catalogue_rules({"C10.5": [{"part": "competitive", "rule": "less", "bound": 1.0}]})
    assert not passes()


def _tiny(n: int, widths: tuple) -> problems.Problem:
    x = np.linspace(-1, 1, n, dtype=np.float32)[:, None]
    return problems.Problem(
        f"tiny{n}", "tiny", MLP(widths, activation="tanh"), x, x[:, 0], x[:2], x[:2, 0]
    )


def test_constraints_and_the_collapse_onto_the_map(record_only, monkeypatch):
    monkeypatch.setitem(problems.PROBLEMS, "wide", lambda: _tiny(4, (1, 8, 1)))  # P 25 > N·O 4
    monkeypatch.setitem(problems.PROBLEMS, "narrow", lambda: _tiny(40, (1, 3, 1)))  # P 10 < 40
    assert evidence.constraints("wide") == (25, 4) and evidence.constraints("narrow") == (10, 40)
    same = [
        _row(p, m, s, 0.3 + 0.01 * s)
        for p in ("wide", "narrow")
        for m in ("NS", "MAP")
        for s in SEEDS
    ]
    item = evidence.collapses("C10.3", "collapses-to-map", same, "NS", "MAP", ["wide", "narrow"])
    assert _status(item) == claims.REPRODUCED and "narrow" in item.says and "wide" not in item.says
    assert item.part == "collapses-to-map" and "ch10_collapses_to_map_max" in item.glue
    entry = claims.catalogue_check("C10.3", item.part)
    assert (entry["rule"], entry["bound"], entry["finding"]) == ("less", 0.05, "collapses-to-map")
    # broken: the null-space LA differs from the MAP where N·O ≥ P
    moved = [dict(r, w2=r["w2"] * 1.5) if r["settings"]["method"] == "NS" else r for r in same]
    assert evidence.relative_gap(same, "wide", "NS", "MAP") == (len(SEEDS), 0.0)
    assert evidence.relative_gap(moved, "wide", "NS", "MAP") == (len(SEEDS), pytest.approx(0.5))
    assert evidence.relative_gap(same, "wide", "NS", "other") == (0, None)
    assert (
        _status(
            evidence.collapses("C10.3", "collapses-to-map", moved, "NS", "MAP", ["wide", "narrow"])
        )
        == claims.NOT_REPRODUCED
    )
    # only wide problems: nothing to decide
    assert (
        _status(evidence.collapses("C10.3", "collapses-to-map", same, "NS", "MAP", ["wide"]))
        == claims.INCONCLUSIVE
    )


def test_mixing_verdict_judges_the_reference_record_by_todays_rule(tmp_path):
    """The record's R-hat and ESS are judged again with the bound of its number of quantities:
    a largest R-hat of 1.012 over 2 000 probabilities (16 chains × 100 draws) passes, over 4
    regression outputs it does not, whatever verdict the record stored."""
    settings = {"num_chains": 16, "num_kept": 100}
    for name, arrays, summary in (
        ("probs", {"test_probs": np.zeros((16, 100, 200, 10))}, {"constant_components": 0}),
        ("f", {"test_f": np.zeros((16, 100, 4))}, {"noise_scale_rhat": 1.001}),
        ("stuck", {"test_f": np.zeros((16, 100, 4))}, {"max_rhat": 1.3}),
    ):
        summary = {"max_rhat": 1.012, "min_ess": 1300.0, "mixed": name == "f", **summary}
        store.write_reference(
            name,
            arrays,
            {"mixing": {"test": summary}, "settings": settings},
            profile="quick",
            directory=tmp_path,
        )
    verdict = evidence.mixing_verdict("probs", tmp_path)
    assert verdict["mixed"] and verdict["num_quantities"] == 2000
    assert verdict["rhat_bound"] > 1.012
    assert evidence.mixing_verdict("f", tmp_path)["reasons"] == ["max_rhat 1.0120 > 1.0100"]
    assert not evidence.mixing_verdict("stuck", tmp_path)["mixed"]
    # the chapter's gate until the second references: the verdict the record stored
    assert evidence.mixed("f", tmp_path) and not evidence.mixed("probs", tmp_path)


def test_closer_waits_for_parts_still_to_run(record_only):
    rows = _rows({"p": 0.3}) + [_row("q", "B", s, 0.5) for s in SEEDS]  # A not scored on q
    item = evidence.closer(
        "C10.1", rows, "A", ["B"], ["p", "q"], ["p", "q"], part="closer", says_what="A"
    )
    assert _status(item) == claims.INCONCLUSIVE and "still to run" in item.gate.why
    na = [
        {"applies": False, "reason": "n/a", "settings": {"problem": "q", "method": "A", "seed": 0}}
    ]
    assert not evidence.applies(na, "q", "A") and evidence.applies(na, "p", "A")
    item = evidence.closer(
        "C10.1", rows + na, "A", ["B"], ["p", "q"], ["p", "q"], part="closer", says_what="A"
    )
    assert _status(item) == claims.REPRODUCED  # A does not apply on q: decided on p
    nuts = evidence.closer(
        "C10.1", rows + na, "A", ["B"], ["p", "q"], ["p", "q"], part="nuts-same-cost", says_what="A"
    )
    record = claims.show_and_check(nuts)[0]
    assert (record["part"], record["finding"]) == ("nuts-same-cost", "nuts-same-cost")


def test_closer_on_the_joint_energy_is_its_own_quantity(record_only):
    """C10.3's further finding ``joint-closer``: A closer than B per point but farther on the
    energy of the joint predictive is not reproduced on the energy; a part of scoring version 2
    (no energy) is left out, and a non-positive energy (at its floor) has no ratio."""
    rows = _rows({"p": 0.5}, metric="total_variation")
    for row in rows:
        row["energy"] = (2.0 if row["settings"]["method"] == "A" else 1.0) * (
            1 + 0.01 * row["settings"]["seed"] ** 2
        )
    kw = dict(says_what="A's joint predictive is closer", part="joint-closer", quantity="energy")
    farther = evidence.closer("C10.3", rows, "A", ["B"], ["p"], ["p"], **kw)
    assert _status(farther) == claims.NOT_REPRODUCED and "ratio of energy" in farther.table
    for row in rows:
        row["energy"] /= 4.0 if row["settings"]["method"] == "A" else 1.0
    assert _status(evidence.closer("C10.3", rows, "A", ["B"], ["p"], ["p"], **kw)) == (
        claims.REPRODUCED
    )
    del rows[0]["energy"]  # a version-2 part
    assert len(evidence.distances(rows, "p", rows[0]["settings"]["method"], "energy")) == 4
    rows[3]["energy"] = -1e-4  # A on seed 1, paired with B
    with pytest.raises(ValueError, match="must be positive for a ratio"):
        evidence.ratio_interval(rows, "p", "A", "B", "energy")
