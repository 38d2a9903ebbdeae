"""Tests of the replicate intervals, chain-level statistics and bootstraps of
bnn_posteriors.evaluation.diagnostics ([MBNN] repeats, [SAP] §4.2-4.3 and App. D.6)."""

import math

import jax
import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.evaluation import diagnostics, metrics


def test_replicate_summary_extends_mean_interval():
    values = np.array([0.1, 0.3, -0.2, 0.4])
    summary = diagnostics.replicate_summary(values)
    assert (summary["mean"], summary["low"], summary["high"]) == diagnostics.mean_interval(values)
    assert summary["sd"] == pytest.approx(np.std(values, ddof=1))
    assert summary["n"] == 4 and summary["per MAP"] == values.tolist()


def test_rhat_and_ess_of_a_scalar():
    draws = np.random.default_rng(0).normal(size=(4, 500))
    rhat, ess = diagnostics.rhat_and_ess(draws)
    assert isinstance(rhat, float) and rhat < 1.01
    assert ess == pytest.approx(float(diagnostics.ess(draws)))
    with pytest.raises(ValueError, match="scalar"):
        diagnostics.rhat_and_ess(draws[..., None])


def test_active_units_counts_units_on_for_some_input():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    position = {
        "W0": np.array([[1.0, -1.0, 0.0], [0.0, -1.0, 1.0]]),
        "b0": np.array([0.0, 0.5, -2.0]),
    }
    assert diagnostics.active_units(position, x) == 1  # unit 0 only
    position["b0"] = np.array([0.0, 2.0, -0.5])
    assert diagnostics.active_units(position, x) == 3


def test_w2_ratio_bootstrap_matches_its_parts():
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(4, 1, 6))
    means = centres + 0.3 * rng.normal(size=(4, 5, 6))  # 4 chains, 5 samples, 6 inputs
    sigmas = np.full((4, 5), 0.2)
    key = jax.random.PRNGKey(3)
    w2, within, between, low, high = diagnostics.w2_ratio_bootstrap(
        key, means, sigmas, num_resamples=200
    )
    np.testing.assert_allclose(
        w2, metrics.w2_squared_gaussian(means.reshape(20, 6), sigmas.reshape(-1))
    )
    ratio = metrics.within_between_ratio(within, between)[0]
    assert 0 < low <= ratio <= high < 1  # within-chain distances are smaller
    _, expected_low, expected_high = diagnostics.chain_bootstrap(
        key,
        (np.arange(4),),
        lambda idx: metrics.within_between_ratio(within, between, idx)[0],
        num_resamples=200,
    )
    assert (low, high) == (expected_low, expected_high)
    with pytest.raises(ValueError, match="chains >= 2"):
        diagnostics.w2_ratio_bootstrap(key, means[0], sigmas[0])


def test_ks_weighted_is_within_one_grid_step_of_scipy_with_repeated_chains():
    draws = np.random.default_rng(2).normal(size=(3, 50, 2)) * 1.3  # not N(0, 1)
    ecdf = diagnostics.chain_ecdf(draws, grid_size=2_000)
    assert ecdf.shape == (3, 1_999) and np.all(np.diff(ecdf, axis=1) >= 0)
    top = np.float32(stats.norm.ppf(1 - 1 / 2_000))  # the last grid point
    assert np.array_equal(ecdf[:, -1], np.mean(draws.astype(np.float32) <= top, axis=(1, 2)))
    step = 1 / 2_000
    exact = metrics.ks_to_normal(draws)
    grid = diagnostics.ks_weighted(ecdf, np.ones(3, dtype=int))
    assert exact - step - 1e-9 <= grid <= exact + 1e-9
    counts = np.array([2, 0, 1])  # chain 0 twice, chain 2 once
    pooled = np.concatenate([draws[0], draws[0], draws[2]]).ravel()
    exact = stats.kstest(pooled, "norm").statistic
    grid = diagnostics.ks_weighted(ecdf, counts)
    assert exact - step - 1e-9 <= grid <= exact + 1e-9
    rows = diagnostics.ks_weighted(ecdf, np.array([[1, 1, 1], [2, 0, 1]]))  # one per row
    assert rows.shape == (2,) and rows[1] == pytest.approx(grid, abs=1e-15)
    # a coarse grid can only see less: the distance grows with G towards the exact one
    coarse = diagnostics.ks_weighted(diagnostics.chain_ecdf(draws, grid_size=10), counts)
    assert coarse <= grid + 1e-12
    with pytest.raises(ValueError, match="counts has 2 chains"):
        diagnostics.ks_weighted(ecdf, np.ones(2))
    with pytest.raises(ValueError, match="grid_size must be an integer ≥ 2"):
        diagnostics.chain_ecdf(draws, grid_size=1)
    with pytest.raises(ValueError, match="shaped \\(chains, samples"):
        diagnostics.chain_ecdf(np.zeros(5))


def test_ks_gap_and_its_bootstrap():
    assert diagnostics.ks_gap([0.3, 0.1, 0.2, 0.4]) == pytest.approx(0.3 - 0.15)
    columns = diagnostics.ks_gap([np.array([0.3, 0.1]), np.array([0.1, 0.1]), np.array([0.4, 0.5])])
    assert columns == pytest.approx([0.2, 0.0])
    with pytest.raises(ValueError, match="3 kernels"):
        diagnostics.ks_gap([0.1, 0.2])
    rng = np.random.default_rng(4)
    layers = [rng.normal(size=(6, 40)) * s for s in (2.0, 1.0, 1.0, 2.0)]  # outer ones wider
    ecdfs = [diagnostics.chain_ecdf(w) for w in layers]
    low, high = diagnostics.ks_gap_bootstrap(np.random.default_rng(5), ecdfs, 6, num_resamples=100)
    point = diagnostics.ks_gap([metrics.ks_to_normal(w) for w in layers])
    assert 0 < low <= point + 1 / diagnostics.KS_GRID and point <= high
    again = diagnostics.ks_gap_bootstrap(np.random.default_rng(5), ecdfs, 6, num_resamples=100)
    assert again == (low, high)
    same = [diagnostics.chain_ecdf(rng.normal(size=(6, 40))) for _ in range(4)]  # no gap
    low, high = diagnostics.ks_gap_bootstrap(np.random.default_rng(5), same, 6, num_resamples=100)
    assert low < 0.0


def test_paired_interval_percentile_resamples_the_same_rows_for_every_column():
    rng = np.random.default_rng(6)
    diffs = np.stack([rng.normal(1.0, 0.5, 400), rng.normal(0.0, 0.5, 400)], axis=1)
    mean, low, high = diagnostics.paired_interval(
        diffs, method="percentile", n_resamples=500, rng=np.random.default_rng(7)
    )
    np.testing.assert_allclose(mean, diffs.mean(0))
    assert low[0] > 0.8 and high[0] < 1.2  # ± 2 · 0.5/√400 = 0.05 around the mean
    assert low[1] < 0 < high[1] or abs(mean[1]) > 0.05
    np.testing.assert_allclose(high - low, 4 * 0.5 / 20, rtol=0.25)
    # paired: the rows drawn are those of a hand-written percentile bootstrap on one stream
    idx = np.random.default_rng(7).integers(0, 400, size=(500, 400))
    boot = np.quantile(diffs[idx].mean(axis=1), [0.025, 0.975], axis=0)
    np.testing.assert_allclose([low, high], boot, atol=1e-12)
    # a constant column (the reference against itself) has an interval of zero width
    with_zero = np.concatenate([diffs, np.zeros((400, 1))], axis=1)
    out = diagnostics.paired_interval(with_zero, method="percentile", n_resamples=500, rng=7)
    np.testing.assert_array_equal(out[:, 2], 0.0)
    np.testing.assert_allclose(out[:, :2], [mean, low, high], atol=1e-12)
    with pytest.raises(ValueError, match="pairs >= 2"):
        diagnostics.paired_interval(diffs[:1], method="percentile")
    with pytest.raises(ValueError, match="method"):
        diagnostics.paired_interval(diffs, method="normal")


def test_paired_interval_bca_of_skewed_gains():
    normal = np.random.default_rng(1).normal(1.0, 1.0, 400)
    m, lo, hi = diagnostics.paired_interval(normal)
    half = 1.96 * normal.std(ddof=1) / math.sqrt(400)  # the normal interval, for large n
    assert m == pytest.approx(normal.mean()) and lo == pytest.approx(m - half, abs=0.02)
    assert hi == pytest.approx(m + half, abs=0.02)
    np.testing.assert_array_equal(
        diagnostics.paired_interval(normal[:20]), diagnostics.paired_interval(normal[:20])
    )
    # skewed gains: mostly ties, a few large ones; the interval stays on their side of 0
    m, lo, hi = diagnostics.paired_interval([0.0] * 8 + [0.2] * 7 + [1.1])
    assert 0 < lo < m < hi
    np.testing.assert_array_equal(diagnostics.paired_interval([0.5, 0.5]), [0.5, 0.5, 0.5])
    assert diagnostics.paired_interval([0.0] * 15 + [0.002])[1] == 0.0  # BCa undefined: percentiles
    with pytest.raises(ValueError, match="pairs >= 2"):
        diagnostics.paired_interval([1.0])
