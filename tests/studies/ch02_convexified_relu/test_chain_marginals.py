"""Tests of the per-chain marginal summaries ([SAP] Cor. E.2, Figs. 8–9; C2.2–C2.5)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.studies.ch02_convexified_relu import chain_marginals

RNG = np.random.default_rng(0)


def test_random_components_are_distinct_and_capped():
    picked = chain_marginals.random_components(np.random.default_rng(1), 10, 4)
    assert picked.shape == (4,) and len(set(picked)) == 4 and picked.max() < 10
    assert sorted(chain_marginals.random_components(np.random.default_rng(1), 3, 9)) == [0, 1, 2]
    with pytest.raises(ValueError, match="size"):
        chain_marginals.random_components(np.random.default_rng(1), 0, 2)


def test_random_projections_are_unit_directions():
    draws = RNG.normal(size=(2, 50, 2))
    proj = chain_marginals.random_projections(np.random.default_rng(2), draws, 5)
    angles = np.random.default_rng(2).uniform(0, np.pi, 5)
    np.testing.assert_allclose(proj[..., 0], draws @ [np.cos(angles[0]), np.sin(angles[0])])
    with pytest.raises(ValueError, match="axis of 2"):
        chain_marginals.random_projections(np.random.default_rng(2), draws[..., :1], 5)


def test_dip_pass_rate_separates_unimodal_from_bimodal():
    unimodal = RNG.normal(size=(3, 400, 2))
    signs = np.where(RNG.random((3, 400, 2)) < 0.5, -1.0, 1.0)
    bimodal = signs * 6.0 + 0.3 * RNG.normal(size=(3, 400, 2))
    rate, p, ess = chain_marginals.dip_pass_rate(unimodal, 0.05)
    assert rate >= 0.8 and p.shape == (3, 2)
    assert ess == diagnostics.within_chain_ess(unimodal)
    assert chain_marginals.dip_pass_rate(bimodal, 0.05)[0] == 0.0
    with pytest.raises(ValueError, match="alpha"):
        chain_marginals.dip_pass_rate(unimodal, 1.5)


def test_mixing_gate_fails_on_unmixed_chains_and_passes_on_mixed_ones():
    # A broken input: random walks (chains that drift, as the 64-neuron chains do) against
    # independent draws. Both pass the dip test's bar or not by chance; only the gate tells.
    mixed = RNG.normal(size=(4, 400, 3))
    drifting = np.cumsum(RNG.normal(size=(4, 400, 3)), axis=1)
    ess = {
        "mixed": diagnostics.within_chain_ess(mixed),
        "drifting": diagnostics.within_chain_ess(drifting),
    }
    assert ess["mixed"] > 100 > ess["drifting"]
    ok = chain_marginals.mixing_gate({"mixed": ess["mixed"]}, 100, 400)
    assert ok.passed and ok.why.startswith("the chains mix")
    bad = chain_marginals.mixing_gate(ess, 100, 400)
    assert not bad.passed and bad.why.startswith("the chains did not mix")
    assert "drifting: about" in bad.decide and "mixed: about" not in bad.decide
    np.testing.assert_allclose(
        list(chain_marginals.gate_ess(bad.why).values()), [ess["mixed"], ess["drifting"]], atol=0.05
    )
    with pytest.raises(ValueError, match="at least one"):
        chain_marginals.mixing_gate({}, 100, 400)
    with pytest.raises(ValueError, match="mixing gate"):
        chain_marginals.gate_ess("something else")


def test_a_failed_mixing_gate_makes_the_check_inconclusive(tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_CLAIMS_DIR", str(tmp_path))
    monkeypatch.setenv("BNN_CLAIMS_RECORD_ONLY", "1")
    gate = chain_marginals.mixing_gate({"u at H = 64": 11.5}, 100, 5000)
    record = claims.check("C2.2", [0.95, 0.95], part="pass-rate", gate=gate)
    assert record["reproduced"] and record["status"] == claims.INCONCLUSIVE
    assert "4.35e+04" in record["gate"]["decide"]  # 100 · 5000 / 11.5 draws per chain
    # Where the chains mix the rule decides, either way.
    mixed = chain_marginals.mixing_gate({"u at H = 8": 2958.2}, 100, 5000)
    for rates, status in (([0.95], claims.REPRODUCED), ([0.6], claims.NOT_REPRODUCED)):
        record = claims.check("C2.2", rates, part="pass-rate", gate=mixed)
        assert record["status"] == status


def test_committed_values_read_both_record_layouts():
    gate = chain_marginals.mixing_gate({"u at H = 8": 2958.2, "u at H = 64": 11.5}, 100, 5000)
    new = {"value": [0.956, 0.6], "gate": {"passed": False, "why": gate.why, "decide": "x"}}
    old = {"value": [1.0625, 0.666667, 29.582, 0.115], "gate": None}
    assert chain_marginals.committed_values(new, 2, 100) == ([0.956, 0.6], [2958.2, 11.5])
    measures, ess = chain_marginals.committed_values(old, 2, 100, bar=0.9)
    np.testing.assert_allclose(measures, [0.95625, 0.6], atol=1e-6)
    np.testing.assert_allclose(ess, [2958.2, 11.5])


def test_chain_summaries_size_and_spread():
    u = RNG.normal(size=(4, 30, 3, 2))
    abs_means, medians = chain_marginals.chain_summaries(u)
    flat = u.reshape(4, 30, 6)
    np.testing.assert_allclose(abs_means, np.abs(flat).mean(axis=(1, 2)))
    np.testing.assert_allclose(medians, np.median(flat, axis=1))
    assert chain_marginals.mean_size(abs_means) == np.mean(abs_means)
    assert chain_marginals.median_spread(np.ones((4, 6))) == 0.0


def test_shrinkage_intervals_bracket_the_estimates():
    summaries = {
        w: chain_marginals.chain_summaries(s * RNG.normal(size=(5, 40, 2, 2)))
        for w, s in ((8, 2.0), (64, 1.0))
    }
    per_width, shrink = chain_marginals.shrinkage_intervals(
        jax.random.key(0), summaries, 8, 64, num_resamples=200, level=0.9
    )
    assert set(per_width) == {8, 64} and set(shrink) == {"size", "spread"}
    for estimate, low, high in [*per_width[8].values(), *shrink.values()]:
        assert low <= high and np.isfinite(estimate)
    np.testing.assert_allclose(
        shrink["size"][0], per_width[8]["size"][0] / per_width[64]["size"][0]
    )
    assert chain_marginals.format_interval((1.0, 0.5, 2.0)) == "1.0000 [0.5000, 2.0000]"
