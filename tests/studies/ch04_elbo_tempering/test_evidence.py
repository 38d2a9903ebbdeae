"""Tests of chapter 4's evidence on hand-made fits: values, and the catalogue checks (part,
rule, bound) they are decided by."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.studies.ch04_elbo_tempering import evidence, regression


def passes(item: Evidence) -> bool:
    """Whether the catalogue's rule for ``item``'s part holds for its value (the check's outcome
    before its gate)."""
    return item.verdict()[0]


def rule(item: Evidence) -> tuple:
    """The catalogue's rule of ``item``'s check: (rule, bound, finding)."""
    entry = checking.catalogue_check(item.claim, item.part)
    return entry["rule"], entry.get("bound"), entry.get("finding")


def test_reading_the_fits_and_a_clear_error_on_bad_input(toy):
    fits = toy.fake_fits()
    assert evidence.names(fits) == ["syn_set", "con_set"]
    assert evidence.repeats(fits) == 3 and evidence.widths(fits) == (4, 8, 16)
    with pytest.raises(ValueError, match="fits must be"):
        evidence.names({})


def test_overviews_glue_the_sizes_and_tabulate(capsys, toy):
    fits = toy.fake_fits()
    o = evidence.fits_overview(fits, toy.fake_splits(), 0.0, n_max=40)
    assert o.glue["p_train"] == 20 and o.glue["train_pct"] == 50 and o.glue["repeats"] == 3
    assert o.glue["max_loc_last"] == pytest.approx(1.16) and "| syn_set | 4 |" in o.table
    mc = evidence.mc_overview(
        {"kl": 1.0, "expected_log_lik": -2.0},
        {"kl": 1.0, "expected_log_lik": -2.0},
        num_particles=10,
    )
    assert "| KL(q‖P₀) | 1.0000 | 1.0000 |" in mc.table
    o.show()  # glues and displays without a kernel


def test_prior_advantage_is_the_elbo_above_the_prior(toy):
    fit = toy.fake_fits()["syn_set", 0]
    prior = regression.elbo_terms(regression.prior_q(3, 8), fit["x"], fit["y"], noise_scale=1.0)
    for row in fit["rows"]:
        row["elbo"] = float(prior["elbo"]) + 3.0
    o = evidence.prior_advantage(fit, 8, noise_scale=1.0)
    assert o.glue["elbo_advantage_64"] == pytest.approx(3.0, abs=1e-4)


def test_c41_collapse_reproduces_and_a_rising_tail_fails(toy):
    limit, monotone = evidence.c41_evidence(toy.fake_fits())
    assert (limit.part, monotone.part) == ("limit", "monotone-kl")
    assert limit.bound is None and monotone.bound is None
    assert passes(limit) and passes(monotone)
    np.testing.assert_allclose(limit.value[:4], [0.1, 0.1, 0.01, 0.0], atol=1e-12)
    assert rule(limit) == ("less", [1.0, 1.0, 0.1, 0.05] * 2, None)
    assert rule(monotone) == ("less", 1.0, "monotone-kl") and limit.glue["n_second"] == 8
    assert (limit.glue["c41_fraction_pct"], limit.glue["c41_rmse_pct"]) == (10.0, 5.0)
    assert limit.glue["kl_last_syn"] == pytest.approx(0.101)
    rising, not_monotone = evidence.c41_evidence(toy.fake_fits(kl_untempered=(1.0, 2.0, 4.0)))
    assert not passes(rising) and not passes(not_monotone)
    assert "rises at one step too" in not_monotone.says


def _scatter_exponents(by_p, spread=0.01):
    """``by_p`` with D's exponent over p moved by spread·(r − 1) on split r (the splits'
    scatter around one rate)."""
    return {
        (name, r): {
            m: {**t, "expected_loss": t["expected_loss"] * m ** (spread * (r - 1))}
            for m, t in terms.items()
        }
        for (name, r), terms in by_p.items()
    }


def test_c42_bounds_hold_on_linear_terms_and_fail_on_a_faster_data_term(toy):
    fits = toy.fake_fits()
    by_p = _scatter_exponents(toy.fake_by_p(fits))
    bound, linear = evidence.c42_evidence(fits, by_p, toy.PS, p_width=16, n_max=40)
    assert passes(bound) and bound.gate.passed and passes(linear)
    assert (
        all(v < 0 for v in linear.value)
        and "(linear;" in linear.says
        and bound.glue["c42_syn_D_p_growth"] == "linear"
    )
    assert bound.glue["c42_con_D_p_whole_lo"] < 1 < bound.glue["c42_con_D_p_whole_hi"]
    # a slightly faster data term (slope 1.05 on every split): within the tail bound, but not
    # linear over the whole range
    steep = _scatter_exponents(toy.fake_by_p(fits, d_over_p=lambda m: 0.2 * m**1.05))
    bound, linear = evidence.c42_evidence(fits, steep, toy.PS, p_width=16, n_max=40)
    assert passes(bound) and not passes(linear) and "(faster than linear;" in linear.says
    assert (bound.part, linear.part, bound.bound, linear.bound) == (
        "tail",
        "data-term-linear",
        None,
        None,
    )
    assert rule(bound) == ("less", [1.1, 0.1, 1.1] * 2, None) and bound.glue["c42_tol"] == 0.1
    assert rule(linear) == ("at-most", 0.0, "data-term-linear") and bound.glue["c42_p_last"] == 20
    assert bound.glue["c42_syn_KL_N"] == pytest.approx(1.0, abs=0.01)
    fast = toy.fake_by_p(fits, d_over_p=lambda m: 0.01 * m**1.5)
    bound, linear = evidence.c42_evidence(fits, fast, toy.PS, p_width=16, n_max=40)
    assert not passes(bound) and not passes(linear)
    assert linear.value == pytest.approx([0.5, 0.5], abs=0.01)  # 1.5 on every split


def test_c43_gain_and_change_per_set_in_order(toy):
    checks = evidence.c43_evidence(toy.fake_fits(), tau=0.1)
    assert [c.part for c in checks] == ["gain", "settles"] * 2
    assert [rule(c) for c in checks[:2]] == [("greater", 0.3, None), ("less", 0.1, None)]
    assert checks[0].value == pytest.approx(0.5) and checks[1].value == 0.0
    assert all(passes(c) for c in checks) and checks[0].glue["tau"] == 0.1
    assert checks[0].glue["c43_gain_pct"] == 30.0


def test_c43_is_decided_by_the_catalogue_bound(toy, catalogue_rules):
    """The same evidence fails when the catalogue asks for a larger gain, which the prose cites."""
    checks = evidence.c43_evidence(toy.fake_fits(), tau=0.1)
    assert passes(checks[0])
    catalogue_rules(
        {
            "C4.3": [
                {"part": "gain", "rule": "greater", "bound": 0.6},
                {"part": "settles", "rule": "less", "bound": 0.1},
            ]
        }
    )
    assert not passes(checks[0]) and passes(checks[1])
    assert evidence.c43_evidence(toy.fake_fits(), tau=0.1)[0].glue["c43_gain_pct"] == 60.0


def sweep():
    return [
        {"eta": eta, "accuracy": 0.9, "nll": nll, "ece": 0.01, "confidence": 0.8}
        for eta, nll in ((0.01, 0.3), (0.05, 0.2), (1.0, 0.4))
    ]


def test_mnist_overview_ranks_the_balanced_temperature():
    o = evidence.mnist_overview(
        sweep(), [0.01, 0.05, 1.0], 0.05, n_train=90, n_test=10, n_weights=100, width=5, ece_bins=15
    )
    assert o.glue["mnist_total"] == 100 and o.glue["mnist_best_eta"] == 0.05
    assert o.glue["mnist_n_beat_bal"] == 0 and o.glue["mnist_n_beat_one"] == 2
    with pytest.raises(ValueError, match="eta = 1"):
        evidence.mnist_overview(
            sweep()[:2],
            [0.01, 0.05],
            0.05,
            n_train=90,
            n_test=10,
            n_weights=100,
            width=5,
            ece_bins=15,
        )


def comparison():
    """What :func:`.mnist.balanced_against_one` returns: eta_N ahead on two folds of 10."""
    return {
        "d_acc": 0.01,
        "d_nll": 0.05,
        "ci_acc": (0.0, 0.02),
        "ci_nll": (0.01, 0.1),
        "per_fold": [(0.01, 0.04), (0.02, 0.06)],
    }


def test_c44_both_differences_positive_and_a_loss_fails():
    cmp = comparison()
    item = evidence.c44_evidence(cmp, sweep(), 0.05, num_folds=2, n_pooled=20)
    assert item.part == "pooled" and rule(item) == ("greater", 0.0, None) and passes(item)
    np.testing.assert_allclose(item.value, [0.01, 0.05])
    assert item.glue["mnist_nll_bal"] == 0.2 and item.glue["d_acc_fold_min"] == 0.01
    assert not passes(
        evidence.c44_evidence({**cmp, "d_acc": -0.01}, sweep(), 0.05, num_folds=2, n_pooled=20)
    )


def test_comparison_table_has_a_row_per_fold_and_the_pooled_row():
    cmp = comparison()
    table = evidence.comparison_table(cmp, 20)
    assert "| fold 1 | 0.0200 | 0.0600 |" in table
    assert "all 20 images (95 % paired bootstrap) | 0.0100 [0.0000, 0.0200]" in table


def test_c44_deeper_is_its_own_part_and_a_loss_fails():
    deep = {
        **comparison(),
        "depth": 3,
        "n_weights": 1000,
        "eta_bal": 0.09,
        "sweep": [{"probs": np.zeros((10, 10))}],
    }
    item = evidence.c44_deeper_evidence(deep, width=5, num_folds=2)
    assert item.part == "deeper" and rule(item) == ("greater", 0.0, None) and passes(item)
    assert "all 20 images" in item.table and "3 hidden layers of 5 units" in item.table
    assert item.glue["deep_depth"] == 3 and "is ahead of" in item.says
    worse = evidence.c44_deeper_evidence({**deep, "d_nll": -0.02}, width=5, num_folds=2)
    assert not passes(worse) and "not ahead of" in worse.says
    behind = evidence.c44_deeper_evidence(
        {**deep, "d_acc": -0.01, "d_nll": -0.02}, width=5, num_folds=2
    )
    assert behind.glue["deep_standing"] == "behind" and not passes(behind)


def test_c45_gap_like_one_over_n_reproduces_and_a_flat_gap_fails(toy):
    fits = toy.fake_fits()
    tail, full = evidence.c45_evidence(
        fits, toy.fake_by_p(fits), toy.fake_fam(), toy.PS, toy.FAMILY, p_width=16
    )
    assert passes(tail) and tail.gate.passed and passes(full)
    np.testing.assert_allclose(full.value, [-1.0, -1.0], atol=1e-9)
    assert tail.glue["gap_slope"] == pytest.approx(-1.0) and tail.glue["c45_bound"] == -0.8
    assert (tail.part, full.part) == ("tail", "full-range-slope")
    assert rule(tail) == ("less", -0.8, None) and rule(full) == ("less", -0.8, "full-range-slope")
    flat = toy.fake_fits(gap=lambda n: 1.0)
    tail, full = evidence.c45_evidence(
        flat, toy.fake_by_p(flat), toy.fake_fam(), toy.PS, toy.FAMILY, p_width=16
    )
    assert not passes(tail) and not passes(full)


def test_c41_c42_refuse_a_catalogue_bound_they_cannot_read(toy, catalogue_rules):
    """The prose and the notes read the C4.1 and C4.2 bounds by their layout; another fails."""
    catalogue_rules(
        {
            "C4.1": [
                {"part": "limit", "rule": "less", "bound": [1.0, 1.0, 0.1, 0.05]},
                {"part": "monotone-kl", "rule": "less", "bound": 1.0, "finding": "monotone-kl"},
            ],
            "C4.2": [
                {"part": "tail", "rule": "less", "bound": [1.2, 0.1, 1.2] * 2},
                {"part": "data-term-linear", "rule": "at-most", "bound": 0.0},
            ],
        }
    )
    fits = toy.fake_fits()
    with pytest.raises(ValueError, match="'limit' has bounds"):
        evidence.c41_evidence(fits)
    with pytest.raises(ValueError, match="'tail' has bounds"):
        evidence.c42_evidence(fits, toy.fake_by_p(fits), toy.PS, p_width=16, n_max=40)
