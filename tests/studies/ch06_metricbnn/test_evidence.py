"""Tests of chapter 06's evidence (``studies.ch06_metricbnn.evidence``) on synthetic results:
each function's value and part, the catalogue's rule for it, and a broken input that gives a
failing value."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.studies.ch06_metricbnn import evidence
from bnn_posteriors.studies.ch06_metricbnn import experiments as mbx


@pytest.fixture
def cfg(quick_cfg):
    """Chapter 6's quick settings with the sizes and gates the checks read set here."""
    return quick_cfg(
        num_particles=10, lin_gap_min_maps=40, straightness_threshold=0.9, banana_min_maps=25
    )


def passes(item) -> bool:
    """Whether the catalogue's rule for the item's part finds what it asks."""
    return item.verdict()[0]


def rule_of(item) -> tuple:
    """(rule, bound, finding) of the item's part in the claims catalogue."""
    entry = checking.catalogue_check(item.claim, item.part)
    return entry["rule"], entry.get("bound"), entry.get("finding")


def c61(rise=0.01, control=0.5):
    return {
        "max loss ratio - 1": rise,
        "control: max loss ratio - 1": control,
        "explained top-k": 0.9,
        "control: explained top-k": 0.9,
        "isotropic top-k": 0.005,
        "lambda_max": 300.0,
        "eta": 3e-3,
    }


def test_helpers_format_sizes_and_architectures():
    assert evidence.spaced(10000) == "10\u202f000"
    assert evidence.arch((1, 32, 32, 1)) == "2×32" and evidence.arch((2, 8, 4, 1)) == "8–4"
    with pytest.raises(ValueError, match="no hidden layer"):
        evidence.arch((1, 1))


def test_c6_1_band_refinement_and_low_dimension(cfg):
    band, refinement, low = evidence.c6_1(c61(), 10000, cfg)
    assert (band.claim, band.value, band.part) == ("C6.1", 0.01, "band")
    assert rule_of(band) == ("less", 0.1, None) and rule_of(refinement) == ("less", 0.1, None)
    assert refinement.value == pytest.approx(0.02) and refinement.part == "refinement"
    assert rule_of(low) == ("greater", 10.0, "low-dimensional")
    assert low.value == pytest.approx(180.0) and low.bound is None
    assert "band 10%" in band.says and "more than 90% is asked" in refinement.says
    assert all(passes(e) for e in (band, refinement, low))
    assert band.glue["ch6_c61_kept"] == pytest.approx(0.02) and "lambda_max" in band.table
    band, refinement, _ = evidence.c6_1(c61(rise=0.2, control=0.25), 10000, cfg)  # broken walk
    assert not passes(band) and not passes(refinement)


def test_c6_2_sampled_and_gated_linearised(cfg):
    ratios = {"MetricBNN samples": 3.0, "LA": 1.1, "Lin LA": 2.0, "MetricBNN posterior": 1.5}
    sampled, lin = evidence.c6_2(ratios, cfg)
    assert sampled.value == pytest.approx(1.9) and passes(sampled)
    assert rule_of(sampled) == ("greater", 0.0, None)
    assert rule_of(lin) == ("greater", 0.0, "linearised-la") and not lin.gate.passed
    assert evidence.c6_2(ratios, cfg, lin_maps=40)[1].gate.passed
    assert not passes(evidence.c6_2({**ratios, "LA": 4.0}, cfg)[0])


def summaries_of(gap, excess, straight):
    table = {
        "gap NLL: Gaussian - latent": np.asarray(gap),
        "mean loss ratio - 1": np.asarray(excess),
        "projected solutions: mean loss ratio - 1": np.asarray(excess),
        "straightness": np.asarray(straight),
    }
    summary = {k: diagnostics.replicate_summary(v) for k, v in table.items()}
    return table, {"this build": summary, "deciding (full profile)": summary}


def test_c6_3_and_c6_4_decide_on_the_intervals(cfg):
    per_map, summaries = summaries_of(
        [0.1, 0.12, 0.11, 0.09], [0.3, 0.35, 0.32, 0.31], [0.99, 0.98, 0.99, 0.97]
    )
    c63, c64 = evidence.c6_3_and_c6_4(per_map, summaries, cfg, "results/x.json")
    low = summaries["deciding (full profile)"]["gap NLL: Gaussian - latent"]["low"]
    assert c63.value == low and rule_of(c63) == ("greater", 0.0, None) and passes(c63)
    assert rule_of(c64) == ("greater", 0.0, None)
    excess_high = summaries["deciding (full profile)"]["mean loss ratio - 1"]["high"]
    assert c64.value[0] == pytest.approx(0.1 - excess_high)  # C6.1's band
    assert c63.committed == "results/x.json" and c63.glue["ch6_repeats"] == 4
    assert c64.value.shape == (2,) and not passes(c64)  # the loss excess is above the band
    assert "95% t-interval" in c63.table
    per_map, summaries = summaries_of(
        [0.1, -0.2, 0.15, -0.1], [0.01, 0.02, 0.01, 0.02], [0.99, 0.98, 0.99, 0.97]
    )
    c63, c64 = evidence.c6_3_and_c6_4(per_map, summaries, cfg, None)
    assert not passes(c63) and passes(c64)


def banana_probs(mb_conf=0.9, lin_ring=0.3, mb_ring=0.4):
    """Two-class probabilities of the three methods on 4 test points (labels 0, 0, 1, 1) and
    on 3 ring points: on the test points every method is right, the sampled LA 60 %
    confident, the linearised LA 80 %, MetricBNN ``mb_conf``; on the ring p(class 0) is 0.5
    for the sampled LA and ``*_ring`` for the others."""

    def on_test(p):  # right with confidence p
        return np.array([[p, 1 - p], [p, 1 - p], [1 - p, p], [1 - p, p]])

    def on_ring(p):
        return np.tile([p, 1 - p], (3, 1))

    return {
        "test": {"LA": on_test(0.6), "Lin LA": on_test(0.8), "MetricBNN": on_test(mb_conf)},
        "ring": {"LA": on_ring(0.5), "Lin LA": on_ring(lin_ring), "MetricBNN": on_ring(mb_ring)},
    }


LABELS = np.array([0, 0, 1, 1])


def test_banana_scores_entropy_nll_and_ece():
    scores = evidence.banana_scores(banana_probs(), LABELS)
    assert scores["LA"]["ring entropy"] == pytest.approx(np.log(2))
    assert scores["Lin LA"]["test NLL"] == pytest.approx(-np.log(0.8))
    # every point right at confidence 0.8 or 0.9: ECE = 1 - confidence
    assert scores["Lin LA"]["test ECE"] == pytest.approx(0.2)
    assert scores["MetricBNN"]["test ECE"] == pytest.approx(0.1)


def test_c6_5_decides_calibration_and_the_high_uncertainty_region(cfg):
    ece, nll, high = evidence.c6_5(banana_probs(), LABELS, cfg)
    assert [e.part for e in (ece, nll, high)] == ["ece", "nll", "high-uncertainty"]
    for item in (ece, nll, high):
        assert rule_of(item) == ("greater", 0.0, None)
    # MetricBNN right at 0.9: better calibrated than the LA at 0.6 (ECE 0.4) and the Lin LA at
    # 0.8 (ECE 0.2), so the margin is the smaller one, against the Lin LA
    assert ece.value == pytest.approx(0.1) and passes(ece) and passes(nll)
    # on the ring MetricBNN (p = 0.4) is more uncertain than the Lin LA (p = 0.3), but one MAP
    # cannot decide it: inconclusive until banana_min_maps MAPs
    assert high.value > 0 and passes(high) and not high.gate.passed
    one_map = dataclasses.replace(cfg, banana_min_maps=1)
    assert evidence.c6_5(banana_probs(), LABELS, one_map)[2].gate.passed
    assert not passes(evidence.c6_5(banana_probs(mb_ring=0.2), LABELS, one_map)[2])
    assert high.glue["ch6_ent_la_ring"] == pytest.approx(np.log(2)) and "test ECE" in high.table
    # MetricBNN less sure than the Lin LA where both are right: worse calibrated, fails
    worse = evidence.c6_5(banana_probs(mb_conf=0.7), LABELS, cfg)
    assert not passes(worse[0]) and not passes(worse[1]) and "not below" in worse[0].says


def uci_rows(mb=0.3, mb_seconds=1.0):
    return [
        (
            n,
            m,
            {"LA": 0.7, "Lin LA": 0.2, "MetricBNN": mb}[m],
            0.0,
            {"LA": 2.0, "Lin LA": 3.0, "MetricBNN": mb_seconds}[m],
            0.5,
        )
        for n in mbx.data.UCI_CLASSIFICATION
        for m in mbx.METHODS
    ]


def test_c6_6_decides_the_whole_sentence_in_three_parts():
    sampled, lin, efficiency = evidence.c6_6(uci_rows(), uci_rows(), None)
    assert sampled.value == 6 and rule_of(sampled) == ("greater", 4.5, None) and passes(sampled)
    assert lin.value == 0 and rule_of(lin) == ("greater", 4.5, None)
    assert not passes(lin)
    assert efficiency.value == 6 and rule_of(efficiency) == ("greater", 4.5, None)
    assert passes(efficiency)
    assert sampled.glue["ch6_wins_la"] == 6 and "Lin LA's (deciding run)" in sampled.table
    assert not passes(evidence.c6_6(uci_rows(mb=0.9), uci_rows(), None)[0])
    # MetricBNN slower than the faster LA (2 s) on every set: the efficiency part fails
    slow = evidence.c6_6(uci_rows(), uci_rows(mb_seconds=4.4), None)[2]
    assert slow.value == 0 and not passes(slow)
    assert sampled.glue["ch6_slower_max"] == pytest.approx(0.5)
    assert evidence.c6_6(uci_rows(), uci_rows(mb_seconds=4.4), None)[0].glue[
        "ch6_slower_min"
    ] == pytest.approx(2.2)
    # between the two LAs' times (2 s and 3 s): not faster than both
    assert evidence.c6_6(uci_rows(), uci_rows(mb_seconds=2.5), None)[2].value == 0
    # the paper's own Table 1 log times: MetricBNN below both LAs on 4 of the 6 sets
    assert sampled.glue["ch6_paper_faster"] == 4


def test_c6_7_decides_its_whole_sentence():
    nll = {"LA (last layer)": 0.5, "Lin LA (last layer)": 0.4, "MetricBNN": 0.3, "MAP": 0.3}
    mnist = {"nll": nll, "seconds": {"LA (last layer)": 40.0, "MetricBNN": 20.0}}
    # UCI: LA − MetricBNN = 0.7 − 0.3 = 0.4 on every set, more than MNIST's 0.2
    sampled, lin, pronounced, scalable, against_map = evidence.c6_7(
        mnist, mnist, uci_rows(), "results/x.json"
    )
    assert sampled.value == pytest.approx(0.2) and passes(sampled) and passes(lin)
    for item in (sampled, lin, pronounced, scalable):
        assert rule_of(item) == ("greater", 0.0, None)
    assert pronounced.value == pytest.approx(0.2 - 0.4) and not passes(pronounced)
    assert "not larger" in pronounced.says and pronounced.committed is None
    assert scalable.value == pytest.approx(np.log10(2)) and passes(scalable)
    assert scalable.committed == "results/x.json"
    assert rule_of(against_map) == ("greater", 0.01, "map") and "(0.01 nats)" in against_map.says
    assert not passes(against_map)
    assert sampled.glue["ch6_uci_gap"] == pytest.approx(0.4)
    # a larger gap on MNIST than on the UCI sets passes; MetricBNN slower than the LAs fails
    assert passes(evidence.c6_7(mnist, mnist, uci_rows(mb=0.65), None)[2])
    slow = {**mnist, "seconds": {"LA (last layer)": 40.0, "MetricBNN": 55.0}}
    assert not passes(evidence.c6_7(mnist, slow, uci_rows(), None)[3])
    worse = {**mnist, "nll": {**nll, "MetricBNN": 0.6}}
    assert not passes(evidence.c6_7(worse, mnist, uci_rows(), None)[0])


def cost_inputs(mb_growth=1.1, all_in_growth=3.0):
    rows = {
        "depth": [1, 2],
        "P": [100, 200],
        "LA": [1e6, 8e6],
        "MetricBNN": [1e9, mb_growth * 1e9],
        "MetricBNN, all P in": [2e9, all_in_growth * 2e9],
    }
    terms = [
        ({"eigh": 5e5, "ggn": 5e5}, {"autoencoder": 1e9}),
        ({"eigh": 7e6, "ggn": 1e6}, {"autoencoder": mb_growth * 1e9}),
    ]
    summary = {
        "growth": {"LA": 8.0, "MetricBNN": mb_growth, "MetricBNN, all P in": all_in_growth},
        "ratio": np.divide(rows["MetricBNN"], rows["LA"]),
        "crossing": {"size": 2000.0, "la": 1e11, "misfit": 1e-3},
        "cross_depth": 20.0,
    }
    return rows, terms, summary


def accuracy_rows(mb=(1.0, 1.2)):
    return {"depth": [1, 2], "P": [100, 200], "LA": [1.1, 1.1], "MetricBNN": list(mb)}


def test_c6_8_growth_accuracy_and_absolute_cost(quick_cfg):
    cost_cfg = quick_cfg(ae_components=64, depth_min_maps=40)
    growth, accuracy, absolute = evidence.c6_8(*cost_inputs(), accuracy_rows(), cost_cfg)
    # decided on the paper's encoder (all P in, 3-fold), not the principal directions' 1.1
    assert growth.value == pytest.approx(np.log10(8 / 3.0)) and passes(growth)
    assert rule_of(growth) == ("greater", 0.0, None)
    assert rule_of(absolute) == ("greater", 0.0, "absolute-cost") and not passes(absolute)
    assert growth.glue["ch6_cross_size"] == "2\u202f000" and "of which eigh" in growth.table
    assert not passes(evidence.c6_8(*cost_inputs(all_in_growth=20.0), accuracy_rows(), cost_cfg)[0])
    # MetricBNN's gap NLL 0.1 above the LA's at two hidden layers: the largest excess
    assert rule_of(accuracy) == ("less", 0.0, None)
    assert accuracy.value == pytest.approx(0.1) and not passes(accuracy)
    assert not accuracy.gate.passed and "2 hidden layers" in accuracy.says
    better = evidence.c6_8(*cost_inputs(), accuracy_rows(mb=(1.0, 1.05)), cost_cfg)[1]
    assert passes(better) and better.value == pytest.approx(-0.05)
    one_map = dataclasses.replace(cost_cfg, depth_min_maps=1)
    assert evidence.c6_8(*cost_inputs(), accuracy_rows(), one_map)[1].gate.passed


def test_the_catalogue_decides_the_same_evidence(catalogue_rules, cfg):
    """The bound is the catalogue's: changing it changes the verdict of the same Evidence."""
    band = evidence.c6_1(c61(rise=0.05), 10000, cfg)[0]
    assert passes(band)
    catalogue_rules(
        {
            "C6.1": [
                {"part": "band", "rule": "less", "bound": 0.01},
                {"part": "refinement", "rule": "less", "bound": 0.1},
                {
                    "part": "low-dimensional",
                    "rule": "greater",
                    "bound": 10.0,
                    "finding": "low-dimensional",
                },
            ]
        }
    )
    assert not passes(band)
    assert "band 1%" in evidence.c6_1(c61(rise=0.05), 10000, cfg)[0].says


def test_one_map_gate_decides_only_on_enough_maps():
    gate = evidence.one_map_gate(25, "measured on one MAP", per=" per depth")
    assert not gate.passed and "25 MAPs per depth" in gate.decide
    assert evidence.one_map_gate(1, "measured on one MAP").passed
