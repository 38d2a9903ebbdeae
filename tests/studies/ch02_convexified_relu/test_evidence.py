"""Tests of chapter 02's evidence: value, part (the catalogue's rule) and gate of C2.1–C2.5."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.studies.ch02_convexified_relu import evidence


def reproduced(item: Evidence) -> bool:
    return item.verdict()[0]


def rule(item: Evidence) -> tuple:
    """The catalogue's rule of an Evidence's check and its bound: (rule, bound)."""
    entry = checking.catalogue_check(item.claim, item.part)
    return entry["rule"], entry.get("bound")


def dip(rate: float, ess: float, pairs: int = 64) -> tuple:
    return rate, np.full(pairs, 0.5), ess


def test_c2_1_reads_the_identity_and_fails_on_a_broken_one(cfg):
    gap = np.array([0.3, 1e-4, 2.0])
    pooled = {"gap": gap, "rel_identity": 1e-15, "rel_balanced": 1e-16, "max_change": 1e-16}
    identity, balanced = evidence.c2_1(pooled, cfg)
    assert (identity.claim, identity.part, balanced.part) == ("C2.1", "identity", "rebalanced")
    assert rule(identity) == rule(balanced) == ("less", 1e-9)
    assert identity.value == 1e-15 and balanced.value == [1e-16, 1e-16]
    assert identity.glue == {"lemma_draws": 3, "lemma_min_gap": 1e-4}
    assert "min (f − g)" in identity.table and reproduced(identity) and reproduced(balanced)
    broken, _ = evidence.c2_1({**pooled, "rel_identity": 0.1}, cfg)
    assert broken.value == 0.1 and not reproduced(broken)
    with pytest.raises(ValueError, match="no draws"):
        evidence.c2_1({**pooled, "gap": np.array([])}, cfg)


def test_c2_2_gates_on_the_ess_and_passes_mixed_unimodal_chains(cfg):
    item = evidence.c2_2({8: dip(0.95, 300.0), 64: dip(0.97, 150.0)}, cfg)
    assert (item.claim, item.part, rule(item)) == ("C2.2", "pass-rate", ("greater", 0.9))
    assert item.glue["dip_pass_pct"] == pytest.approx(90.0) and "bar is 90%" in item.says
    assert item.value == [0.95, 0.97] and item.gate.passed and reproduced(item)
    assert item.glue["dip_u_64"] == pytest.approx(97.0) and item.glue["ess_u_large"] == 150.0
    assert "95.0%" in item.table and "95% (H = 8) and 97% (H = 64)" in item.says
    unmixed = evidence.c2_2({8: dip(0.95, 300.0), 64: dip(0.5, 11.5)}, cfg)
    assert unmixed.value == [0.95, 0.5] and not reproduced(unmixed)
    assert not unmixed.gate.passed and "u at H = 64: 11.5" in unmixed.gate.why
    with pytest.raises(ValueError, match="two widths"):
        evidence.c2_2({8: dip(0.9, 1.0)}, dataclasses.replace(cfg, widths_hidden=(8,)))


def test_c2_3_decides_on_the_lower_ends_of_the_ratios(cfg):
    per_width = {
        8: {"size": (1.0, 0.9, 1.1), "spread": (0.5, 0.4, 0.6)},
        64: {"size": (0.5, 0.4, 0.6), "spread": (0.1, 0.05, 0.2)},
    }
    shrink = {"size": (2.0, 1.5, 2.5), "spread": (5.0, 3.0, 8.0)}
    item = evidence.c2_3(per_width, shrink, {8: 500.0, 64: 200.0}, cfg)
    assert (item.claim, item.part, rule(item)) == ("C2.3", "ratios", ("greater", 1.0))
    assert item.value == [1.5, 3.0] and reproduced(item) and item.gate.passed
    assert item.glue["shrink_spread_high"] == 8.0
    assert item.glue["shrink_interval_verdict"] == "the lower ends of both intervals lie above 1"
    assert item.glue["ess_gate_verdict"] == "above the 100 of the gate at both widths"
    assert "2.0000 [1.5000, 2.5000]" in item.table
    broken = evidence.c2_3(per_width, {**shrink, "size": (1.2, 0.8, 1.6)}, {8: 500, 64: 11}, cfg)
    assert broken.value == [0.8, 3.0] and not reproduced(broken) and not broken.gate.passed
    assert broken.glue["ess_gate_verdict"] == "below the 100 of the gate at 64 neurons"


def test_c2_4_checks_the_projections_of_one_pair(cfg):
    item = evidence.c2_4(dip(0.94, 120.0, pairs=32), np.array([3, 17]), cfg)
    assert (item.claim, item.part, item.value) == ("C2.4", "pass-rate", 0.94)
    assert rule(item) == ("greater", 0.9) and "bar is 90%" in item.says
    assert reproduced(item) and item.gate.passed and "u_3, u_17" in item.table
    broken = evidence.c2_4(dip(0.5, 5.0), [3, 17], cfg)
    assert broken.value == 0.5 and not reproduced(broken) and not broken.gate.passed


def test_c2_5_lists_both_layers_at_every_width(cfg):
    dips = {(w, k): dip(0.95, 200.0) for w in (8, 64) for k in ("W1", "w2")}
    item = evidence.c2_5(dips, cfg)
    assert (item.claim, item.part, rule(item)) == ("C2.5", "pass-rate", ("greater", 0.9))
    assert item.value == [0.95] * 4 and reproduced(item) and item.gate.passed
    broken = evidence.c2_5({**dips, (64, "w2"): dip(0.2, 3.0)}, cfg)
    assert broken.value[-1] == 0.2 and not reproduced(broken) and not broken.gate.passed
    with pytest.raises(ValueError, match="lacks"):
        evidence.c2_5({(8, "W1"): dip(0.9, 1.0)}, cfg)


def test_notes_glue_reads_the_committed_records_of_either_layout(cfg):
    full = dataclasses.replace(cfg, num_chains=10, max_tree_depth=10)
    gated = {
        "id": "C2.2",
        "value": [0.96, 0.4],
        "gate": {
            "why": (
                "the chains did not mix: median within-chain ESS of u at H = 8: 2958.2; "
                "u at H = 64: 11.5 (of 5000 draws per chain; the gate asks for at least 100)"
            )
        },
    }
    older = {"id": "C2.3", "value": [1.2, 0.9, 29.6, 0.115]}  # [lows..., ESS / min_ess ...]
    values = evidence.notes_glue(
        cfg,
        full,
        cfg,
        n_rows=1503,
        train_rows={"full": 1052, "quick": 280},
        records=[gated, older, {"id": "C2.2", "finding": "x", "value": 0}],
    )
    assert values["full_rate_64"] == pytest.approx(40.0) and values["full_ess_64"] == 11.5
    assert values["full_rho_a_low"] == 1.2 and values["full_ess_all_large"] == pytest.approx(11.5)
    assert values["full_rho_verdict"] == "not both above 1" and values["full_tree"] == 1023
    empty = evidence.notes_glue(
        cfg, full, cfg, n_rows=1, train_rows={"full": 1, "quick": 1}, records=[]
    )
    assert np.isnan(empty["full_rate_8"]) and empty["full_rho_verdict"] == "not both above 1"
    with pytest.raises(ValueError, match="train_rows"):
        evidence.notes_glue(cfg, full, cfg, n_rows=1, train_rows={"full": 1}, records=[])


def test_the_catalogue_bar_decides_and_is_cited(catalogue_rules, cfg):
    item = evidence.c2_2({8: dip(0.85, 300.0), 64: dip(0.87, 150.0)}, cfg)
    assert not reproduced(item)
    catalogue_rules({"C2.2": [{"part": "pass-rate", "rule": "greater", "bound": 0.8}]})
    assert reproduced(item)
    moved = evidence.c2_2({8: dip(0.85, 300.0), 64: dip(0.87, 150.0)}, cfg)
    assert moved.glue["dip_pass_pct"] == pytest.approx(80.0) and "bar is 80%" in moved.says
