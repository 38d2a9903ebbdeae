"""Tests of chapter 03's evidence: value, catalogue check (part, rule, bound), glue and gate of
C3.1–C3.7."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.studies.ch03_symmetries import evidence


def reproduced(item: Evidence) -> bool:
    """Whether the catalogue's rule for ``item``'s part holds for its value (before its gate)."""
    return item.verdict()[0]


def rule(item: Evidence) -> tuple:
    """The catalogue's rule of ``item``'s check: (rule, bound, tol, finding)."""
    entry = checking.catalogue_check(item.claim, item.part)
    return entry["rule"], entry.get("bound"), entry.get("tol"), entry.get("finding")


def symmetry_changes(relu_flip: float) -> dict:
    changes = {pair: [1e-16, 3e-16] for pair in evidence.INVARIANT}
    return changes | {("relu", "sign flip"): [relu_flip, 2.0]}


def test_c3_1_reads_the_invariances_and_the_relu_sign_flip():
    invariant, flip = evidence.c3_1(symmetry_changes(0.4))
    assert (invariant.claim, invariant.part, flip.part) == ("C3.1", "invariant", "relu-flip")
    assert rule(invariant) == ("less", 1e-5, None, None)
    assert invariant.value == 3e-16 and flip.value == 0.4
    assert rule(flip) == ("greater", 1e-2, None, None) and flip.bound is None
    assert "largest change" in invariant.table and reproduced(invariant) and reproduced(flip)
    _, broken = evidence.c3_1(symmetry_changes(1e-15))
    assert broken.value == 1e-15 and not reproduced(broken)
    with pytest.raises(ValueError, match="lacks"):
        evidence.c3_1({("relu", "permutation"): [0.0]})


def test_c3_2_reads_the_largest_sign_flip_gap():
    item = evidence.c3_2({"gaussian": 0.0, "laplace": 4e-16}, 10_000)
    assert (item.claim, item.part) == ("C3.2", "sign-flip")
    assert rule(item) == ("approx", 0.0, 1e-12, None)
    assert item.value == 4e-16 and reproduced(item)
    assert item.note.startswith("Gaussian and Laplace priors, 10 000 random draws of 6 weights")
    broken = evidence.c3_2({"gaussian": 0.0, "laplace": 0.3}, 10)
    assert broken.value == 0.3 and not reproduced(broken)
    with pytest.raises(ValueError, match="no prior"):
        evidence.c3_2({}, 10)


def test_c3_3_reads_the_roots_and_the_gap_away_from_them():
    roots, away = evidence.c3_3([True, True], [0.2, 0.01])
    assert (roots.part, away.part) == ("roots", "away")
    assert rule(roots) == ("true", None, None, None) and rule(away) == ("greater", 0.0, None, None)
    assert away.value == 0.01 and reproduced(roots) and reproduced(away)
    assert "| 2 |" in roots.table
    broken, zero = evidence.c3_3([True, False], [0.2, 0.0])
    assert not reproduced(broken) and zero.value == 0.0 and not reproduced(zero)
    with pytest.raises(ValueError, match="one entry per case"):
        evidence.c3_3([True], [0.1, 0.2])


def counterexample(c_num: float) -> dict:
    c_star = 0.8 / np.sqrt(1.06)
    return {
        "c_star": c_star,
        "c_num": c_num,
        "numeric": np.array([c_num, 1.0]),
        "excluded_gap": 0.2,
        "h_at": {"closed form": 0.0, "numerical": 1e-9, "paper's 0.77754": 3e-6},
        "swap_gap": {"gaussian": 1e-16, "laplace": 2e-16},
        "swap_root": {"gaussian": c_star, "laplace": 0.8 / 1.4},
        "norm_l2": float(np.sqrt(1.06)),
    }


def test_c3_4_reads_the_root_of_h_and_its_swap_identity():
    ce = dict(w1=0.5, w2=0.8, b1=0.9)
    items = evidence.c3_4(counterexample(0.777029), ce, 0.77754)
    assert [i.claim for i in items] == ["C3.4"] * 5
    assert [i.part for i in items] == ["root", "closed-form", "excluded", "swap-gap", "swap-root"]
    assert items[0].value == 0.777029 and rule(items[0]) == ("approx", 0.777, 1e-4, None)
    assert rule(items[1]) == ("approx", 0.0, 1e-4, None)
    assert rule(items[2]) == ("greater", 0.05, None, None) and items[3].value == 2e-16
    assert rule(items[3]) == ("approx", 0.0, 1e-12, None)
    assert rule(items[4]) == ("approx", 0.0, 1e-4, None)
    assert all(reproduced(i) for i in items)
    assert items[0].glue["h_paper"] == 3e-6 and items[0].glue["w2_abs"] == 0.8
    assert "| h(c) (paper's 0.77754) | 3.00e-06 |" in items[0].table
    assert items[0].glue["swap_root_laplace"] == 0.8 / 1.4
    broken = evidence.c3_4(counterexample(0.9), ce, 0.77754)
    assert broken[0].value == 0.9 and not reproduced(broken[0]) and not reproduced(broken[1])
    with pytest.raises(ValueError, match="paper's root"):
        evidence.c3_4(counterexample(0.777), ce, 0.7)


def test_c3_5_reads_the_largest_log_prior_change_of_each_scaling():
    printed, corrected = evidence.c3_5([0.3, 0.5], [0.0, 2e-16], depth=6)
    assert (printed.claim, printed.value, printed.part) == ("C3.5", 0.5, "printed")
    assert (corrected.value, corrected.part) == (2e-16, "corrected") and reproduced(corrected)
    assert rule(printed)[:3] == rule(corrected)[:3] == ("approx", 0.0, 1e-12)
    assert checking.catalogue_check("C3.5", "corrected")["finding"] == "corrected"
    assert not reproduced(printed) and "up to 0.5" in printed.says
    assert reproduced(evidence.c3_5([0.0], [0.0], depth=6)[0])  # an invariant print would pass
    assert corrected.note.endswith("2 random depth-6 chains")
    assert not reproduced(evidence.c3_5([0.5], [0.0, 0.5], depth=6)[1])
    with pytest.raises(ValueError, match="must hold draws"):
        evidence.c3_5([0.1], [], depth=6)


def fit(svi_nu: float, mass: float, changes: int = 0) -> dict:
    return {"svi_nu": svi_nu, "nuts_mass": mass, "sign_changes": changes, "exact_abs_beta": 0.3}


def test_c3_6_reads_the_four_parts_of_the_claim(cfg):
    fits = {1.0: fit(0.7, 1.0), 0.1: fit(0.6, 1.0), 0.01: fit(0.4, 0.9), 0.001: fit(0.0, 0.8)}
    item = evidence.c3_6(fits, 150, 0.75, 0.004, cfg)
    assert (item.claim, item.part, item.bound) == ("C3.6", "four-parts", None)
    np.testing.assert_allclose(item.value, [0.0, 0.2, 1 - 0.7 / 0.75, 0.0])
    assert rule(item) == ("less", [0.05, 0.5, 0.5, 1.0], None, None)
    assert reproduced(item) and item.glue["svi_nu_tau01"] == 0.4 and item.glue["n_train"] == 150
    assert "| yes |" in item.table
    collapsed = {**fits, 0.001: fit(0.0, 0.1)}  # the posterior collapses with MFVI
    broken = evidence.c3_6(collapsed, 150, 0.75, 0.004, cfg)
    assert broken.value[1] == pytest.approx(0.9) and not reproduced(broken)
    with pytest.raises(ValueError, match="must hold"):
        evidence.c3_6({1.0: fit(0.7, 1.0)}, 150, 0.75, 0.004, cfg)


def scan_and_summary(plain_progress: float) -> tuple[dict, dict, float]:
    tau2_c = 0.01
    above = {0.011: {"plain": np.full(3, 0.1), "adjusted": np.full(3, 0.12), "nu_star": 0.2}}
    scan = {
        0.001: {
            "plain": np.zeros(3),
            "adjusted": np.full(3, 1e-3),
            "theta0": np.full(3, 1e-4),
            "nu_star": 0.0,
        },
        **above,
    }
    trapped = [0.011] if plain_progress < 0.5 else []
    summary = {
        "trap": {
            "above": above,
            "progress": {0.011: plain_progress},
            "n_short": {"plain": 1, "adjusted": 0},
            "jitter": [0.09, 0.1, 0.11],
        },
        "gain": {
            "trapped": trapped,
            "at": [0.011],
            "adjusted": np.array([0.6]),
            "plain": np.array([plain_progress]),
        },
        "grad_zero": np.array([0.5, 2.0, 1.5]),
        "grad_plain": 0.0,
    }
    return scan, summary, tau2_c


def test_c3_7_gates_on_a_trap_and_records_the_further_findings(cfg):
    scan, summary, tau2_c = scan_and_summary(0.9)
    claim, breaks, collapse = evidence.c3_7(scan, summary, tau2_c, 0.75, cfg)
    assert (claim.claim, claim.part) == ("C3.7", "two-weight-trap")
    assert rule(claim) == ("greater", 0.5, None, "two-weight-trap") and claim.bound is None
    assert not claim.gate.passed and "not trapped" in claim.gate.why
    assert claim.says.startswith("no trap to escape")
    assert claim.glue["grad_zero_n"] == 3 and claim.glue["adjusted_gain_at"] == pytest.approx(1.1)
    assert claim.glue["n_runs_above"] == 3 and "1 of 3" in claim.table
    assert rule(breaks) == ("greater", 0.0, None, "breaks-fixed-point")
    assert rule(collapse) == ("greater", None, None, "fig2-collapse")
    assert "bound_measured" in checking.catalogue_check("C3.7", "fig2-collapse")
    assert reproduced(breaks) and collapse.bound == 0.375 and not reproduced(collapse)
    scan, summary, tau2_c = scan_and_summary(0.2)
    trapped, _, _ = evidence.c3_7(scan, summary, tau2_c, 0.75, cfg)
    assert trapped.gate.passed and trapped.says.startswith("plain MFVI is trapped at")
    summary["grad_zero"] = np.array([0.5, 0.0])  # a prior that keeps the fixed point
    _, broken, _ = evidence.c3_7(scan, summary, tau2_c, 0.75, cfg)
    assert not reproduced(broken)
    with pytest.raises(ValueError, match="smallest tau2"):
        evidence.c3_7({0.011: scan[0.011]}, summary, tau2_c, 0.75, cfg)


def _trap(plain, adjusted, nu_star=1.0):
    return {"plain": np.array(plain), "adjusted": np.array(adjusted), "nu_star": nu_star}


def test_c3_7_deep_trap_decides_better_and_ensures_apart():
    trap = {0.1: _trap([0, 0, 0, 0], [1, 1, 0, 0]), 1.0: _trap([0, 0, 0, 0], [1, 1, 1, 1])}
    better, ensures = evidence.c3_7_deep_trap(trap, 3)
    assert (better.part, ensures.part) == ("trap-better", "trap-ensures")
    assert better.gate.passed and ensures.gate.passed
    assert better.value == [0.5, 1.0] and ensures.value == [0.5, 1.0]
    assert rule(better)[:2] == ("greater", 0.0) and rule(ensures)[:2] == ("at-least", 1.0)
    assert reproduced(better) and not reproduced(ensures)
    assert "does not ensure it: at σ0 = 0.1 only 0.5" in ensures.says
    assert ensures.glue == {} and better.glue["trap_ensures_min_sigma0"] == 0.1
    assert "2 of 4" in better.table
    every = evidence.c3_7_deep_trap({1.0: _trap([0, 0], [1, 1])}, 3)
    assert all(reproduced(e) for e in every) and "Every adjusted run" in every[1].says
    # no better than plain: both runs escape on their own, or neither does
    worse = evidence.c3_7_deep_trap({0.1: _trap([0, 0], [0, 0])}, 3)
    assert not any(reproduced(e) for e in worse)
    # no trap (the median plain run reaches the optimum): inconclusive, not decided
    free = evidence.c3_7_deep_trap({0.1: _trap([1, 1, 0], [1, 1, 1])}, 3)
    assert not free[0].gate.passed and "no trap" in free[0].gate.why
    with pytest.raises(ValueError, match="no σ0"):
        evidence.c3_7_deep_trap({}, 3)


def test_c3_6_is_decided_by_the_catalogue_bound(catalogue_rules, cfg):
    """The same evidence changes its verdict (and its table) when the catalogue's bound does."""
    fits = {1.0: fit(0.7, 1.0), 0.1: fit(0.6, 1.0), 0.01: fit(0.4, 0.9), 0.001: fit(0.0, 0.8)}
    item = evidence.c3_6(fits, 150, 0.75, 0.004, cfg)
    assert reproduced(item)
    stricter = [0.05, 0.1, 0.5, 1.0]
    catalogue_rules({"C3.6": [{"part": "four-parts", "rule": "less", "bound": stricter}]})
    assert not reproduced(item)  # NUTS's mass at |beta| <= 0.05, 0.2, is now above its bound
    assert "| no |" in evidence.c3_6(fits, 150, 0.75, 0.004, cfg).table
    catalogue_rules({"C3.6": [{"part": "four-parts", "rule": "less", "bound": [0.05, 0.5]}]})
    with pytest.raises(ValueError, match="4 parts but its catalogue check has 2 bounds"):
        evidence.c3_6(fits, 150, 0.75, 0.004, cfg)
