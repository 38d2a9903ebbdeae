"""Tests of chapter 01's evidence: small synthetic results in, the checks' values and parts out.

Each test feeds an evidence function a result that reproduces its claim (judged by the
catalogue's rule of the check's part, :func:`claims.checking.verdict`) and a broken one that
does not.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.site import profiles
from bnn_posteriors.studies.ch01_narrow_networks import evidence


def reproduces(item: Evidence) -> bool:
    return item.verdict()[0]


def rule(item: Evidence) -> tuple:
    """The catalogue's rule of an Evidence's check: (rule, bound, tol, rtol)."""
    entry = checking.catalogue_check(item.claim, item.part)
    return entry["rule"], entry.get("bound"), entry.get("tol"), entry.get("rtol")


def test_settings_glue_names_the_settings_the_prose_cites():
    cfg = dataclasses.replace(
        profiles.settings("01_narrow_networks", "quick"),
        n_obs=50,
        sigma=0.1,
        tau=1.0,
        sigmas_weak=(1.0, 3.0),
        depths_g=(2, 3, 5),
        depths_vi=(1, 2, 10),
        depths_mcmc=(1, 8),
        num_chains=2,
        num_samples=100,
        target_acceptance_rate=0.9,
        svi_steps=500,
        svi_particles=4,
    )
    glue = evidence.settings_glue(cfg)
    assert glue["sigmas_weak"] == "1 and 3" and glue["depths_g"] == "2, 3, 5"
    assert glue["sigma_weak_1"] == 1.0 and glue["sigma_weak_2"] == 3.0
    assert glue["sigma_plot"] == 3.0 and glue["depth_vi_max"] == 10
    assert glue["depth_mcmc_max"] == 8 and glue["draws_total"] == 400
    with pytest.raises(ValueError, match="sigmas_weak is empty"):
        evidence.settings_glue(dataclasses.replace(cfg, sigmas_weak=()))


def test_c1_1_takes_the_largest_deviation():
    item = evidence.c1_1_evidence({2: 1e-16, 3: 3e-16})
    assert (item.claim, item.value, item.part, item.bound) == ("C1.1", 3e-16, "orbit", None)
    assert rule(item) == ("approx", 0.0, 1e-12, None)
    assert item.glue == {"orbit_dev_max": 3e-16} and "3.0e-16" in item.table
    assert reproduces(item)
    assert not reproduces(evidence.c1_1_evidence({2: 1e-16, 3: 1e-3}))
    with pytest.raises(ValueError, match="orbit_dev is empty"):
        evidence.c1_1_evidence({})


def _penalty(patterns_at_3=4, gap=1e-9, patterns_at_2=2, sign=1):
    row = dict(magnitude_gap=gap, rel_gap=1e-9, zero_starts=0, beta_sign=sign)
    return {
        (2, 0.5): dict(row, patterns=patterns_at_2),
        (3, 0.5): dict(row, patterns=patterns_at_3, zero_starts=3),
    }


def test_c1_2_c1_3_count_sign_patterns_and_gaps():
    found, magnitude, even, gap = evidence.c1_2_c1_3_evidence(_penalty())
    assert [e.claim for e in (found, magnitude, even, gap)] == ["C1.2", "C1.2", "C1.2", "C1.3"]
    assert (found.part, magnitude.part, even.part, gap.part) == (
        "sign-patterns",
        "magnitude",
        "even-depth",
        "minima",
    )
    assert rule(found) == ("true", None, None, None) and np.all(found.value)
    assert rule(magnitude) == ("less", 1e-6, None, None)
    assert rule(even) == ("approx", None, 0.5, None)
    assert rule(gap) == ("approx", 0.0, 1e-6, None)
    assert found.glue == {"c12_zero_starts": 3} and len(found.table.splitlines()) == 4
    assert all(reproduces(e) for e in (found, magnitude, gap))
    # the parenthesis "(or 2^L if L is even and sgn = 1)": 2 patterns at L = 2, not 4
    assert list(even.value) == [2] and list(even.bound) == [4] and not reproduces(even)
    assert "the parenthesis counts 4 = 2^L: only the sign vectors" in even.says
    assert checking.part_lock("C1.2", "even-depth") == "not reproduced"
    assert checking.part_lock("C1.2", "sign-patterns") == "reproduced"
    # a minimiser set with 2^L patterns at the even depth would reproduce the parenthesis
    assert reproduces(evidence.c1_2_c1_3_evidence(_penalty(patterns_at_2=4))[2])
    broken = evidence.c1_2_c1_3_evidence(_penalty(patterns_at_3=8, gap=1e-3))
    assert list(broken[0].value) == [True, False]
    assert not reproduces(broken[0]) and not reproduces(broken[1])
    with pytest.raises(ValueError, match="even depth with a positive slope"):
        evidence.c1_2_c1_3_evidence(_penalty(sign=-1))


def test_c1_7_compares_minima_minimisers_and_local_minima():
    local = [(0.0, 95.0), (0.5, 1.0)]
    minima = {
        3: dict(
            min_w=1.0,
            min_g=1.0 + 1e-9,
            beta_of_w=0.5,
            beta_g=0.5 + 1e-7,
            local_w=[(0.0, 95.0), (0.5, 1.0 + 1e-9)],
            local_g=local,
        )
    }
    gap, where, locals_ = evidence.c1_7_evidence(minima)
    assert gap.claim == where.claim == locals_.claim == "C1.7"
    assert gap.value == pytest.approx(1e-9, rel=1e-6)
    assert rule(gap) == ("approx", 0.0, 1e-6, None)
    assert rule(where) == ("approx", 0.0, 1e-5, None)
    assert rule(locals_)[:2] == ("less", 1e-6) and locals_.value == [pytest.approx(1e-9)]
    assert all(reproduces(e) for e in (gap, where, locals_))
    assert locals_.glue["c1_7_local_counts"] == "2 at L = 3" and "(0.000000, 95" in locals_.table
    far = evidence.c1_7_evidence(
        {2: {**minima[3], "min_g": 1.1, "beta_g": 0.6, "local_w": [(0.5, 1.2)]}}
    )
    assert not any(reproduces(e) for e in far)
    # a local minimum that one side lacks (the origin missed by random starts) fails it
    missed = evidence.c1_7_evidence({3: {**minima[3], "local_w": [(0.5, 1.0)]}})[2]
    assert missed.value == [math.inf] and not reproduces(missed)


def test_c1_8_compares_the_lasso_modes():
    lasso = {"data prior": dict(tau=1.0, closed=0.5, numerical=0.5 + 1e-8)}
    item = evidence.c1_8_evidence({**lasso, "thresholded": dict(tau=0.1, closed=0.0, numerical=0)})
    assert item.claim == "C1.8" and item.value.shape == (2,) and reproduces(item)
    assert rule(item) == ("approx", 0.0, 1e-6, None)
    assert "thresholded" in item.table
    broken = evidence.c1_8_evidence({"x": dict(tau=1.0, closed=0.0, numerical=0.1)})
    assert not reproduces(broken)


def test_c1_9_reads_the_curvature_the_ratio_and_its_limit():
    far = (10, 100, 1000)
    shape = {
        "min_second_diff": {2: 1e-6, 3: -0.1, 5: -0.2},
        "ratio_g1_g2": [3.0, 2.0, 1.0],
        "limit_depths": far,
        "ratio_limit": [1.0, 0.1, 0.01],  # like 1/L: to 0
    }
    concave, convex, ratio, limit = evidence.c1_9_evidence((2, 3, 5), shape)
    assert list(concave.value) == [True, True] and convex.value == 1e-6
    assert rule(concave)[0] == "true" and rule(convex)[:2] == ("greater", 0.0)
    assert rule(ratio)[0] == "decreasing" and rule(limit)[:2] == ("greater", 2.0)
    assert all(reproduces(e) for e in (concave, convex, ratio, limit))
    assert limit.value == pytest.approx([10.0, 10.0]) and limit.glue["c1_9_limit_depth"] == 1000
    # a ratio that decreases at every depth but levels off at a positive floor fails the limit
    floor = evidence.c1_9_evidence((2, 3, 5), {**shape, "ratio_limit": [1.0, 0.55, 0.51]})[3]
    assert not reproduces(floor)
    broken = {
        "min_second_diff": {2: -1.0, 3: 0.1},
        "ratio_g1_g2": [1.0, 2.0],
        "limit_depths": far,
        "ratio_limit": [1.0, 1.0, 1.0],
    }
    assert not any(reproduces(e) for e in evidence.c1_9_evidence((2, 3), broken))
    with pytest.raises(ValueError, match="lacks depth"):
        evidence.c1_9_evidence((3,), {**shape, "min_second_diff": {3: -1.0}, "ratio_g1_g2": [1.0]})
    with pytest.raises(ValueError, match="one ratio per limit depth"):
        evidence.c1_9_evidence((2, 3, 5), {**shape, "ratio_limit": [1.0]})


def test_c1_4_kl_within_four_standard_errors():
    kl = dict(mu=[0.9, -1.2], s=[0.3, 0.5], closed=1.0, mc=1.02, se=0.01)
    item = evidence.c1_4_kl_evidence(kl)
    # the Monte-Carlo KL 2 standard errors above the closed form, held within 4 of 0
    assert item.value == pytest.approx(2.0) and item.part == "kl" and item.bound is None
    assert rule(item) == ("approx", 0.0, 4.0, None) and reproduces(item)
    assert "0.9, -1.2" in item.table
    assert not reproduces(evidence.c1_4_kl_evidence({**kl, "mc": 1.1}))
    assert not reproduces(evidence.c1_4_kl_evidence({**kl, "mc": 0.95}))
    assert reproduces(evidence.c1_4_kl_evidence({**kl, "mc": 0.961}))
    with pytest.raises(ValueError, match="standard error must be positive"):
        evidence.c1_4_kl_evidence({**kl, "se": 0.0})


def test_c1_4_c1_5_on_the_main_fit_and_the_collapse_depths():
    depths = (1, 2, 3)
    main = dict(
        nu=np.array([0.9, 0.8, 0.7]),
        kl_share=np.array([0.1, 0.2, 0.3]),
        ratio=np.array([1.0, 1.0 + 1e-6, 1.0]),
    )
    weak = dict(nu=np.array([0.5, 0.0, 0.0]), kl_share=main["kl_share"], ratio=main["ratio"])
    ratio, individual, nu, share = evidence.c1_4_c1_5_evidence(depths, {0.1: main, 1.0: weak}, 0.1)
    assert (ratio.claim, nu.claim, share.claim) == ("C1.4", "C1.5", "C1.5")
    assert ratio.value == 1.0 + 1e-6 and all(reproduces(e) for e in (ratio, nu, share))
    # |mu_l| = |nu|^(1/L): 0.9, 0.894, 0.888 — shrinking towards about 0.88, not 0
    assert individual.part == "individual-means" and rule(individual) == ("less", 0.1, None, None)
    assert individual.value == pytest.approx(
        evidence.aitken_limit([0.9, 0.8**0.5, 0.7 ** (1 / 3)]) / 0.9
    )
    assert not reproduces(individual) and "is not 0" in individual.says
    collapsing = dict(main, nu=np.array([0.9, 0.1, 0.001]))  # |mu_l| 0.9, 0.32, 0.1 → ~0
    assert reproduces(evidence.c1_4_c1_5_evidence(depths, {0.1: collapsing}, 0.1)[1])
    assert rule(ratio) == ("less", 1.05, None, None)
    assert (rule(nu)[0], rule(share)[0]) == ("non-increasing", "increasing")
    assert ratio.glue["collapse_main"] == "none up to L = 3"
    assert ratio.glue["collapse_weak_1"] == "L = 2"
    broken = dict(
        nu=np.array([0.7, 0.8, 0.9]),
        kl_share=np.array([0.3, 0.2, 0.1]),
        ratio=np.array([1.0, 2.0, 1.0]),
    )
    found = evidence.c1_4_c1_5_evidence(depths, {0.1: broken}, 0.1)
    assert not any(reproduces(e) for e in (found[0], found[2], found[3]))
    with pytest.raises(ValueError, match="no fit for the chapter's sigma"):
        evidence.c1_4_c1_5_evidence(depths, {1.0: weak}, 0.1)


def test_aitken_limit_extrapolates_a_geometric_sequence():
    assert evidence.aitken_limit([1.5, 1.25, 1.125]) == pytest.approx(1.0)  # 1 + 2^-k
    assert evidence.aitken_limit([3.0, 2.0, 1.0]) == 1.0  # steps that do not shrink: last term
    with pytest.raises(ValueError, match="at least 3 terms"):
        evidence.aitken_limit([1.0, 0.5])


def test_svi_summary_tables_svi_against_the_exact_fit():
    svi = {2: dict(nu=0.81, elbo=-10.0, ratio=1.2), 3: dict(nu=0.7, elbo=-11.0, ratio=1.5)}
    shown = evidence.svi_summary(svi, (1, 2, 3), [0.9, 0.8, 0.7])
    table, glue = shown.table, shown.glue
    assert glue == {"svi_ratio_max": 1.5} and "0.8000" in table and len(table.splitlines()) == 4
    with pytest.raises(ValueError, match="lacks depth"):
        evidence.svi_summary({4: svi[2]}, (1, 2, 3), [0.9, 0.8, 0.7])


def _nuts(exact, mean, ks_8=0.01):
    runs = {}
    for i, depth in enumerate((1, 2, 8)):
        runs[depth] = dict(
            exact=exact[i],
            mean=mean[i],
            mcse=0.01,
            rhat=1.001,
            divergences=i,
            ks=(0.2, 0.1, ks_8)[i],
        )
    return runs


def test_c1_6_rate_passes_a_constant_rate_and_fails_a_power_law_or_a_floor():
    depths = [8, 16, 24, 32]
    exponential = np.exp(-0.25 * np.array(depths))
    power_law = np.array(depths, dtype=float) ** -2.0
    floor = 0.1 + np.exp(-0.25 * np.array(depths))

    def suppression(prob):
        rate = (-np.diff(np.log(prob)) / np.diff(depths)).tolist()
        return {"depths": depths, "prob": prob.tolist(), "rate": rate}

    passing = evidence.c1_6_rate_evidence(suppression(exponential), 2.0)
    assert passing.part == "exponential-rate" and passing.value == pytest.approx(1.0)
    assert rule(passing)[:2] == ("at-least", 0.5) and reproduces(passing)
    assert passing.glue["c1_6_rate_depth_last"] == 32 and "−Δ log P / ΔL" in passing.table
    assert not reproduces(evidence.c1_6_rate_evidence(suppression(power_law), 2.0))
    assert not reproduces(evidence.c1_6_rate_evidence(suppression(floor), 2.0))
    with pytest.raises(ValueError, match="two rates"):
        evidence.c1_6_rate_evidence({"depths": [1, 2], "prob": [0.5, 0.4], "rate": [0.2]}, 2.0)


def test_c1_6_checks_the_exact_curve_nuts_ks_and_rhat():
    items = evidence.c1_6_evidence(_nuts([0.9, 0.85, 0.8], [0.9, 0.851, 0.799]))
    assert [e.claim for e in items] == ["C1.6"] * 4 and all(reproduces(e) for e in items)
    decreasing, z, ks, rhat = items
    assert decreasing.value == [0.9, 0.85, 0.8] and z.value == pytest.approx(0.1)
    assert (ks.value, ks.part, ks.bound) == (0.1, "ks", 0.01) and rhat.value == 1.001
    assert "bound_measured" in checking.catalogue_check("C1.6", "ks")
    assert rule(ks)[0] == "greater" and rule(z)[:2] == ("less", 4.0)
    assert rule(decreasing)[0] == "decreasing" and rule(rhat)[:2] == ("less", 1.05)
    assert decreasing.glue["ks_2"] == 0.1 and decreasing.glue["divergences_total"] == 3
    assert decreasing.glue["exact_step_max"] == pytest.approx(0.05)
    broken = evidence.c1_6_evidence(_nuts([0.9, 0.95, 0.8], [0.9, 0.5, 0.8], ks_8=0.5))
    assert not any(reproduces(e) for e in broken[:3])
    with pytest.raises(ValueError, match="lacks depth"):
        evidence.c1_6_evidence({1: _nuts([1, 1, 1], [1, 1, 1])[1]})


def test_the_catalogue_decides_the_check(catalogue_rules):
    item = evidence.c1_6_evidence(_nuts([0.9, 0.85, 0.8], [0.9, 0.851, 0.799]))[3]
    assert (item.part, item.value) == ("rhat", 1.001) and reproduces(item)
    catalogue_rules({"C1.6": [{"part": "rhat", "rule": "less", "bound": 1.0}]})
    assert not reproduces(item)
