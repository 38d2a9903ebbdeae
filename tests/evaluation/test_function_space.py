"""Tests of the function-space mixing diagnostics: chains in one law pass, chains stuck in
different modes fail."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.evaluation import function_space as fs

RNG = np.random.default_rng(0)


def _mixed_regression(chains=4, draws=500, n=3):
    return RNG.normal(size=(chains, draws, n)), np.exp(0.1 * RNG.normal(size=(chains, draws)))


def test_independent_draws_of_one_law_are_mixed():
    f, sigma = _mixed_regression()
    m = fs.mixing({"f": f, "noise_scale": sigma})
    assert m["mixed"] and m["reasons"] == []
    assert m["max_rhat"] < 1.01 and m["min_ess"] > 1000
    assert m["max_between_sd_ratio"] < 0.15  # ≈ 1/√500 / √2 for iid draws


def test_two_chains_stuck_in_different_modes_are_flagged():
    f, sigma = _mixed_regression(chains=2, draws=200)
    f[0] += 3.0  # chain 0 sits in a mode 3 sd away from chain 1's at every point
    m = fs.mixing({"f": f, "noise_scale": sigma})
    assert not m["mixed"]
    assert m["max_rhat"] > 1.5 and m["max_between_sd_ratio"] > 0.9
    assert any(r.startswith("max_rhat") for r in m["reasons"])
    full = fs.regression_mixing(f, sigma)
    assert full["rhat"].shape == (3,) and full["between_sd_ratio"].shape == (3,)


def test_a_stuck_noise_scale_alone_is_flagged():
    f, sigma = _mixed_regression()
    sigma[0] *= 3.0
    m = fs.mixing({"f": f, "noise_scale": sigma})
    assert not m["mixed"] and any(r.startswith("noise_scale_rhat") for r in m["reasons"])


def _probs(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_classification_modes_disagree_in_total_variation():
    logits = 0.3 * RNG.normal(size=(2, 300, 5, 3))
    mixed = fs.mixing({"probs": _probs(logits)})
    assert mixed["mixed"] and mixed["max_tv_overall"] < 0.05 and mixed["min_agreement"] >= 0.6
    logits[0, ..., 0] += 4.0  # chain 0 predicts class 0, chain 1 does not
    stuck = fs.mixing({"probs": _probs(logits)})
    assert not stuck["mixed"] and stuck["max_rhat"] > 1.5 and stuck["mean_tv"] > 0.3


def test_saturated_probabilities_have_no_rhat_and_are_counted():
    probs = _probs(0.3 * RNG.normal(size=(2, 50, 4, 2)))
    probs[:, :, 0] = [1.0, 0.0]  # point 0 certain in every draw
    full = fs.classification_mixing(probs)
    assert full["constant_components"] == 2 and np.isfinite(full["max_rhat"])
    assert np.isnan(full["rhat"][0]) and np.isfinite(full["rhat"][1:]).all()


@pytest.mark.parametrize(
    ("predictive", "message"),
    [
        ({"g": np.zeros((2, 5, 3))}, "holds 'probs' or 'f' and 'noise_scale'"),
        ({"probs": np.ones((1, 5, 3, 2)) / 2}, "at least 2 chains"),
        ({"probs": np.ones((2, 5, 3)) / 2}, r"probs must have 4 axes"),
        ({"f": np.zeros((2, 5, 3)), "noise_scale": np.ones((2, 4))}, "noise_scale must be"),
    ],
)
def test_bad_predictives_are_rejected(predictive, message):
    with pytest.raises(ValueError, match=message):
        fs.mixing(predictive)


def test_exact_draws_over_many_quantities_pass_the_rule_that_counts_them():
    """Over 2 000 quantities of exact independent draws (digits' 200 test points × 10 classes,
    16 chains × 100 stored draws), the largest R-hat exceeds 1.01 on most runs; the bound of
    that many quantities passes every run, and matches the largest R-hat's median."""
    rng = np.random.default_rng(1)
    largest = [
        float(np.max(fs.diagnostics.rhat(rng.standard_normal((16, 100, 2000))))) for _ in range(5)
    ]
    bound = fs.rhat_bound(16, 100, 2000)
    assert sum(r > fs.RHAT_MAX for r in largest) >= 3  # the rule of one quantity fails them
    assert max(largest) < bound  # the rule that counts them passes every run
    assert abs(np.median(largest) - fs.rhat_bound(16, 100, 2000, level=0.5)) < 0.001
    summary = {"max_rhat": max(largest), "min_ess": 1500.0}
    assert fs.verdict(summary, num_chains=16, num_draws=100, num_quantities=2000)["mixed"]
    judged = fs.verdict(summary, num_chains=16, num_draws=100, num_quantities=1)
    assert not judged["mixed"] and judged["rhat_bound"] == fs.RHAT_MAX


def test_rhat_bound_grows_with_the_quantities_and_shrinks_with_the_draws():
    assert fs.rhat_bound(16, 100, 1) < fs.rhat_bound(16, 100, 100) < fs.rhat_bound(16, 100, 2000)
    assert fs.rhat_bound(16, 1000, 2000) < fs.rhat_bound(16, 100, 2000)
    m = fs.mixing({"probs": _probs(0.3 * RNG.normal(size=(4, 100, 50, 2)))})
    assert m["num_quantities"] == 100 and m["rhat_bound"] == max(
        fs.RHAT_MAX, fs.rhat_bound(4, 100, 100)
    )
    with pytest.raises(ValueError, match="num_chains"):
        fs.rhat_bound(1, 100, 10)
    with pytest.raises(ValueError, match="level must lie in"):
        fs.rhat_bound(4, 100, 10, level=1.0)
