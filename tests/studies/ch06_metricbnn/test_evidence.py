"""Tests of chapter 06's evidence (``studies.ch06_metricbnn.evidence``) on synthetic results:
each function's value and part, the catalogue's rule for it, and a broken input that gives a
failing value."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.studies.ch06_metricbnn import evidence
from bnn_posteriors.studies.ch06_metricbnn import experiments as mbx

CFG = SimpleNamespace(num_particles=10, lin_gap_min_maps=40, straightness_threshold=0.9)


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


def test_c6_1_band_refinement_and_low_dimension():
    band, refinement, low = evidence.c6_1(c61(), 10000, CFG)
    assert (band.claim, band.value, band.part) == ("C6.1", 0.01, "band")
    assert rule_of(band) == ("less", 0.1, None) and rule_of(refinement) == ("less", 0.1, None)
    assert refinement.value == pytest.approx(0.02) and refinement.part == "refinement"
    assert rule_of(low) == ("greater", 10.0, "low-dimensional")
    assert low.value == pytest.approx(180.0) and low.bound is None
    assert "band 10%" in band.says and "more than 90% is asked" in refinement.says
    assert all(passes(e) for e in (band, refinement, low))
    assert band.glue["ch6_c61_kept"] == pytest.approx(0.02) and "lambda_max" in band.table
    band, refinement, _ = evidence.c6_1(c61(rise=0.2, control=0.25), 10000, CFG)  # broken walk
    assert not passes(band) and not passes(refinement)


def test_c6_2_sampled_and_gated_linearised():
    ratios = {"MetricBNN samples": 3.0, "LA": 1.1, "Lin LA": 2.0, "MetricBNN posterior": 1.5}
    sampled, lin = evidence.c6_2(ratios, CFG)
    assert sampled.value == pytest.approx(1.9) and passes(sampled)
    assert rule_of(sampled) == ("greater", 0.0, None)
    assert rule_of(lin) == ("greater", 0.0, "linearised-la") and not lin.gate.passed
    assert evidence.c6_2(ratios, CFG, lin_maps=40)[1].gate.passed
    assert not passes(evidence.c6_2({**ratios, "LA": 4.0}, CFG)[0])


def summaries_of(gap, excess, straight):
    table = {
        "gap NLL: Gaussian - latent": np.asarray(gap),
        "mean loss ratio - 1": np.asarray(excess),
        "projected solutions: mean loss ratio - 1": np.asarray(excess),
        "straightness": np.asarray(straight),
    }
    summary = {k: diagnostics.replicate_summary(v) for k, v in table.items()}
    return table, {"this build": summary, "deciding (full profile)": summary}


def test_c6_3_and_c6_4_decide_on_the_intervals():
    per_map, summaries = summaries_of(
        [0.1, 0.12, 0.11, 0.09], [0.3, 0.35, 0.32, 0.31], [0.99, 0.98, 0.99, 0.97]
    )
    c63, c64 = evidence.c6_3_and_c6_4(per_map, summaries, CFG, "results/x.json")
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
    c63, c64 = evidence.c6_3_and_c6_4(per_map, summaries, CFG, None)
    assert not passes(c63) and passes(c64)


def test_c6_5_ring_entropy():
    ent = {
        w: {"LA": np.full(3, 0.69), "Lin LA": np.full(3, 0.6), "MetricBNN": np.full(3, 0.4)}
        for w in ("ring", "test")
    }
    item = evidence.c6_5(ent)
    assert item.value == pytest.approx(-0.29) and not passes(item)
    assert rule_of(item) == ("greater", 0.0, None)
    assert item.glue["ch6_ent_la_test"] == pytest.approx(0.69)
    ent["ring"]["MetricBNN"] = np.full(3, 0.7)
    assert passes(evidence.c6_5(ent))


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


def test_c6_7_mnist_orderings():
    nll = {"LA (last layer)": 0.5, "Lin LA (last layer)": 0.4, "MetricBNN": 0.3, "MAP": 0.3}
    sampled, lin, against_map = evidence.c6_7(nll, nll, "results/x.json")
    assert sampled.value == pytest.approx(0.2) and passes(sampled) and passes(lin)
    assert rule_of(sampled) == ("greater", 0.0, None)
    assert rule_of(lin) == ("greater", 0.0, "linearised-la")
    assert rule_of(against_map) == ("greater", 0.01, "map") and "(bound 0.01 nats)" in (
        against_map.says
    )
    assert not passes(against_map)
    assert not passes(evidence.c6_7({**nll, "MetricBNN": 0.6}, nll, None)[0])


def cost_inputs(mb_growth=1.1):
    rows = {"depth": [1, 2], "P": [100, 200], "LA": [1e6, 8e6], "MetricBNN": [1e9, mb_growth * 1e9]}
    terms = [
        ({"eigh": 5e5, "ggn": 5e5}, {"autoencoder": 1e9}),
        ({"eigh": 7e6, "ggn": 1e6}, {"autoencoder": mb_growth * 1e9}),
    ]
    summary = {
        "growth": {"LA": 8.0, "MetricBNN": mb_growth},
        "ratio": np.divide(rows["MetricBNN"], rows["LA"]),
        "crossing": {"size": 2000.0, "la": 1e11, "misfit": 1e-3},
        "cross_depth": 20.0,
    }
    return rows, terms, summary


def test_c6_8_growth_and_absolute_cost():
    growth, absolute = evidence.c6_8(*cost_inputs())
    assert growth.value == pytest.approx(np.log10(8 / 1.1)) and passes(growth)
    assert rule_of(growth) == ("greater", 0.0, None)
    assert rule_of(absolute) == ("greater", 0.0, "absolute-cost") and not passes(absolute)
    assert growth.glue["ch6_cross_size"] == "2\u202f000" and "of which eigh" in growth.table
    assert not passes(evidence.c6_8(*cost_inputs(mb_growth=20.0))[0])


def test_the_catalogue_decides_the_same_evidence(catalogue_rules):
    """The bound is the catalogue's: changing it changes the verdict of the same Evidence."""
    band = evidence.c6_1(c61(rise=0.05), 10000, CFG)[0]
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
    assert "band 1%" in evidence.c6_1(c61(rise=0.05), 10000, CFG)[0].says
