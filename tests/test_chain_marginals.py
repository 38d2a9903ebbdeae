"""Tests of the per-chain marginal summaries ([SAP] Cor. E.2, Figs. 8–9; C2.2–C2.5)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors import diagnostics
from bnn_posteriors.studies import chain_marginals

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


def test_unimodality_gate_value_and_note():
    value, note = chain_marginals.unimodality_gate(
        [(0.9, None, 50.0), (0.45, None, 200.0)], 0.9, 100, 1000, "u"
    )
    np.testing.assert_allclose(value, [1.0, 0.5, 0.5, 2.0])
    assert note.startswith("u: [pass rate / 0.9") and "of 1000 draws" in note


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
