"""Cumulative LPPD over chains, pairwise W2 between Gaussian predictives, the Z-test and the
within/between-chain W2 ratio."""

import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.evaluation import metrics


@pytest.mark.slow
def test_cumulative_lppd_last_column_is_full_lppd():
    rng = np.random.default_rng(0)
    y = rng.normal(size=7)
    mean = rng.normal(size=(4, 3, 7))
    scale = np.exp(rng.normal(size=(4, 3)) * 0.1)
    cum = metrics.cumulative_lppd(1, y, mean, scale, n_orderings=3)
    assert cum.shape == (3, 4)
    full = float(metrics.lppd(y, mean, scale[..., None]))
    np.testing.assert_allclose(cum[:, -1], full, rtol=1e-5)
    # first column: one chain; it is one of the single-chain LPPDs
    singles = [float(metrics.lppd(y, mean[k], scale[k][:, None])) for k in range(4)]
    assert all(np.isclose(c, singles, rtol=1e-5).any() for c in cum[:, 0])


def test_cumulative_lppd_bad_input():
    with pytest.raises(ValueError, match="axes"):
        metrics.cumulative_lppd(0, np.zeros(3), np.zeros((2, 3)), 1.0)
    with pytest.raises(ValueError, match="positive"):
        metrics.cumulative_lppd(0, np.zeros(3), np.zeros((2, 2, 3)), -1.0)
    with pytest.raises(ValueError, match="n_orderings"):
        metrics.cumulative_lppd(0, np.zeros(3), np.zeros((2, 2, 3)), 1.0, n_orderings=0)


def test_w2_squared_closed_form():
    mean = np.array([[0.0, 0.0], [1.0, 3.0]])
    scale = np.array([1.0, 2.0])
    w2 = metrics.w2_squared_gaussian(mean, scale)
    # per input: ((0-1)^2 + (0-3)^2)/2 + (1-2)^2
    np.testing.assert_allclose(w2, [[0.0, 6.0], [6.0, 0.0]])
    # one-dimensional check against scipy's W1-free formula: W2^2 = (m1-m2)^2 + (s1-s2)^2
    a, b = stats.norm(0, 1).ppf, stats.norm(1, 2).ppf
    u = np.linspace(1e-4, 1 - 1e-4, 20001)
    np.testing.assert_allclose(np.mean((a(u) - b(u)) ** 2), 2.0, rtol=1e-2)


def test_w2_squared_matches_direct_sum_for_near_copies():
    # the Gram-matrix form equals the direct per-input sum, also for nearly equal samples
    rng = np.random.default_rng(7)
    mean = 3.0 + rng.normal(size=(1, 40)) + 0.01 * rng.normal(size=(30, 40))
    scale = np.exp(0.1 * rng.normal(size=(30, 40)))
    direct = np.mean((mean[:, None] - mean[None]) ** 2, axis=-1) + np.mean(
        (scale[:, None] - scale[None]) ** 2, axis=-1
    )
    w2 = metrics.w2_squared_gaussian(mean, scale)
    np.testing.assert_allclose(w2, direct, rtol=1e-9, atol=1e-15)
    assert np.all(np.diag(w2) == 0.0) and np.allclose(w2, w2.T)


def test_z_test_detects_shift_and_not_identity():
    rng = np.random.default_rng(0)
    base = rng.normal(size=200)
    mean = np.stack([base, base + 0.0, base + 1.0])
    z = metrics.w2_z_test(mean, np.ones(3) * 0.5)
    assert z[0, 1] == 0.0 and abs(z[0, 2]) > 1.96
    assert np.allclose(z, -z.T)
    z_paper = metrics.w2_z_test(mean, np.ones(3) * 0.5, paper_formula=True)
    np.testing.assert_allclose(z_paper * 200, z)
    with pytest.raises(ValueError, match="homoscedastic"):
        metrics.w2_z_test(mean, rng.uniform(1, 2, size=(3, 200)))


def test_w2_chain_blocks_by_hand():
    # 2 chains x 2 samples: within = the one off-diagonal pair of each chain,
    # between = the mean of the four cross pairs
    w2 = np.array(
        [
            [0.0, 1.0, 5.0, 7.0],
            [1.0, 0.0, 6.0, 8.0],
            [5.0, 6.0, 0.0, 3.0],
            [7.0, 8.0, 3.0, 0.0],
        ]
    )
    within, between = metrics.w2_chain_blocks(w2, 2)
    np.testing.assert_allclose(within, [1.0, 3.0])
    assert np.isnan(between[0, 0]) and np.isnan(between[1, 1])
    np.testing.assert_allclose([between[0, 1], between[1, 0]], [6.5, 6.5])
    ratio, mean_within, mean_between = metrics.within_between_ratio(within, between)
    assert (ratio, mean_within, mean_between) == pytest.approx((2.0 / 6.5, 2.0, 6.5))


def test_w2_ratio_matches_masks_and_variance_share():
    # K chains with centres of variance v_b and samples of variance v_w around them:
    # E rho = v_w / (v_w + v_b)
    rng = np.random.default_rng(5)
    n_chains, n_samples, n, v_w, v_b = 8, 60, 50, 0.25, 1.0
    centres = rng.normal(scale=np.sqrt(v_b), size=(n_chains, 1, n))
    mean = centres + rng.normal(scale=np.sqrt(v_w), size=(n_chains, n_samples, n))
    w2 = metrics.w2_squared_gaussian(mean.reshape(-1, n), np.full(n_chains * n_samples, 0.3))
    within, between = metrics.w2_chain_blocks(w2, n_chains)
    ratio, mean_within, mean_between = metrics.within_between_ratio(within, between)
    chain = np.repeat(np.arange(n_chains), n_samples)
    same = chain[:, None] == chain[None]
    assert mean_within == pytest.approx(w2[same & ~np.eye(len(w2), dtype=bool)].mean())
    assert mean_between == pytest.approx(w2[~same].mean())
    assert ratio == pytest.approx(v_w / (v_w + v_b), rel=0.25)


def test_w2_ratio_resampled_chains():
    within = np.array([1.0, 2.0, 4.0])
    between = np.array([[np.nan, 10.0, 20.0], [10.0, np.nan, 30.0], [20.0, 30.0, np.nan]])
    # chain 0 drawn twice: its within-mean counts twice; the copies form no between pair
    ratio, mean_within, mean_between = metrics.within_between_ratio(within, between, [0, 0, 1])
    assert mean_within == pytest.approx(4.0 / 3.0)
    assert mean_between == pytest.approx(10.0)
    assert ratio == pytest.approx(0.4 / 3.0)
    # two copies of one chain: no between-chain pair at all
    ratio, mean_within, mean_between = metrics.within_between_ratio(within, between, [2, 2])
    assert np.isnan(ratio) and np.isnan(mean_between) and mean_within == 4.0


def test_w2_ratio_fails_where_the_z_test_does_not():
    # near-copies of one sample per chain (W2^2 ~ 1e-4): the Z-test still calls most pairs
    # significant (sigma_D shrinks with them), the ratio is near 0
    rng = np.random.default_rng(6)
    n_chains, n_samples, n = 4, 20, 100
    centres = rng.normal(size=(n_chains, 1, n))
    mean = centres + 0.01 * rng.normal(size=(n_chains, n_samples, n))
    sigma = np.full((n_chains, n_samples), 0.2)
    z = np.stack([metrics.w2_z_test(mean[k], sigma[k]) for k in range(n_chains)])
    off = ~np.eye(n_samples, dtype=bool)
    assert np.mean(np.abs(z[:, off]) > 1.96) > 0.5
    w2 = metrics.w2_squared_gaussian(mean.reshape(-1, n), sigma.reshape(-1))
    within, between = metrics.w2_chain_blocks(w2, n_chains)
    assert within.max() < 1e-3
    assert metrics.within_between_ratio(within, between)[0] < 1e-3


def test_w2_chain_blocks_and_ratio_bad_input():
    with pytest.raises(ValueError, match="n_chains"):
        metrics.w2_chain_blocks(np.zeros((4, 4)), 1)
    with pytest.raises(ValueError, match="square"):
        metrics.w2_chain_blocks(np.zeros((6, 6)), 4)
    with pytest.raises(ValueError, match="2 samples"):
        metrics.w2_chain_blocks(np.zeros((3, 3)), 3)
    with pytest.raises(ValueError, match="within must be"):
        metrics.within_between_ratio(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="indices"):
        metrics.within_between_ratio(np.ones(2), np.ones((2, 2)), [0.5, 1.0])
    with pytest.raises(ValueError, match="lie in"):
        metrics.within_between_ratio(np.ones(2), np.ones((2, 2)), [0, 2])


@pytest.mark.slow
def test_running_lppd_matches_lppd_of_prefixes():
    rng = np.random.default_rng(2)
    y, mean, scale = rng.normal(size=5), rng.normal(size=(6, 5)), np.full(6, 0.7)
    run = metrics.running_lppd(y, mean, scale)
    for s in (1, 3, 6):
        np.testing.assert_allclose(run[s - 1], metrics.lppd(y, mean[:s], 0.7), rtol=1e-5)
    with pytest.raises(ValueError, match="axis"):
        metrics.running_lppd(np.zeros(4), mean, scale)
