"""Tests of the predictive metrics (LPPD, RMSE) and the KS distances, against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from bnn_posteriors.evaluation import metrics

RNG = np.random.default_rng(0)
Y = RNG.normal(size=6)


def test_lppd_of_one_sample_is_mean_log_density():
    mean = RNG.normal(size=(1, 1, Y.size))
    expected = np.mean(stats.norm.logpdf(Y, mean[0, 0], 0.7))
    assert float(metrics.lppd(Y, mean, 0.7)) == pytest.approx(expected, rel=1e-5)


def test_lppd_of_identical_samples_is_that_of_one():
    mean = RNG.normal(size=Y.size)
    many = np.broadcast_to(mean, (3, 4, Y.size))
    expected = np.mean(stats.norm.logpdf(Y, mean, 1.3))
    assert float(metrics.lppd(Y, many, 1.3)) == pytest.approx(expected, rel=1e-5)


def test_lppd_of_two_samples_is_log_of_average_density():
    mean = RNG.normal(size=(2, Y.size))
    scale = np.array([[0.5], [2.0]]) * np.ones((2, Y.size))
    dens = stats.norm.pdf(Y, mean, scale)
    expected = np.mean(np.log(dens.mean(axis=0)))
    assert float(metrics.lppd(Y, mean, scale)) == pytest.approx(expected, rel=1e-5)


def test_lppd_is_stable_for_far_away_predictions():
    # Every density underflows in float32; log-sum-exp still gives the right value.
    y = np.array([0.0, 0.0])
    mean = np.array([[30.0, 30.0], [40.0, 40.0]])
    expected = np.mean(np.log(0.5) + np.logaddexp(*stats.norm.logpdf(y, mean, 0.5)))
    assert float(metrics.lppd(y, mean, 0.5)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    ("y", "mean"), [(np.zeros(3), np.zeros((2, 4))), (np.zeros((3, 1)), np.zeros((2, 3)))]
)
def test_lppd_rejects_shape_mismatch(y, mean):
    with pytest.raises(ValueError, match="mean must end in the"):
        metrics.lppd(y, mean, 1.0)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.array([1.0, 0.0, 1.0])])
def test_lppd_rejects_non_positive_scale(scale):
    with pytest.raises(ValueError, match="predictive scales must be positive"):
        metrics.lppd(np.zeros(3), np.zeros((2, 3)), scale)


def test_rmse_known_answer():
    assert float(metrics.rmse([1.0, 2.0, 3.0, 4.0], [1.0, 0.0, 3.0, 6.0])) == pytest.approx(
        np.sqrt(2.0)
    )
    assert float(metrics.rmse([1.0, -2.0], [1.0, -2.0])) == 0.0


def test_rmse_rejects_shape_mismatch():
    with pytest.raises(ValueError, match=r"y \(3,\) and prediction \(2,\) differ in shape"):
        metrics.rmse(np.zeros(3), np.zeros(2))


def test_ks_distance_matches_scipy():
    samples = RNG.normal(size=(20, 10))
    expected = stats.kstest(samples.ravel(), stats.norm.cdf).statistic
    assert metrics.ks_distance(samples, stats.norm.cdf) == pytest.approx(expected)


def test_ks_distance_of_a_single_point():
    # F_n jumps from 0 to 1 at 0 where Φ = 1/2.
    assert metrics.ks_distance([0.0], stats.norm.cdf) == pytest.approx(0.5)


@pytest.mark.parametrize("samples", [[], [1.0, np.nan], [np.inf]])
def test_ks_distance_rejects_empty_or_non_finite(samples):
    with pytest.raises(ValueError, match="non-empty array of finite numbers"):
        metrics.ks_distance(samples, stats.norm.cdf)


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_ks_to_normal_matches_scipy(scale):
    samples = scale * RNG.normal(size=500)
    expected = stats.kstest(samples, stats.norm(scale=scale).cdf).statistic
    assert metrics.ks_to_normal(samples, scale) == pytest.approx(expected)
    assert metrics.ks_to_normal(samples, scale) < 0.1
    assert metrics.ks_to_normal(samples, 10 * scale) > 0.3


def test_ks_to_normal_absolute_uses_half_normal():
    samples = 1.5 * RNG.normal(size=500)
    expected = stats.kstest(np.abs(samples), stats.halfnorm(scale=1.5).cdf).statistic
    got = metrics.ks_to_normal(samples, 1.5, absolute=True)
    assert got == pytest.approx(expected)
    assert got < 0.1


@pytest.mark.parametrize("scale", [0.0, -2.0, float("nan")])
def test_ks_to_normal_rejects_non_positive_scale(scale):
    with pytest.raises(ValueError, match="scale must be positive"):
        metrics.ks_to_normal([0.1, 0.2], scale)


def test_lppd_rejects_a_scalar_mean():
    with pytest.raises(ValueError, match="mean must end in"):
        metrics.lppd(np.zeros(3), 0.0, 1.0)


# --- dip test -------------------------------------------------------------------------------


def test_dip_test_separates_unimodal_from_bimodal():
    rng = np.random.default_rng(0)
    unimodal = rng.normal(size=(2, 3, 500))
    bimodal = np.concatenate([rng.normal(-3, 1, 250), rng.normal(3, 1, 250)])
    dip, p = metrics.dip_test(unimodal)
    assert dip.shape == p.shape == (2, 3)
    assert np.all(p > 0.05)
    dip_b, p_b = metrics.dip_test(bimodal)
    assert p_b.shape == () and float(p_b) < 1e-3 and float(dip_b) > dip.max()


@pytest.mark.parametrize(
    ("samples", "message"),
    [(np.zeros(3), "at least 4 draws"), (np.array([0.0, 1.0, np.nan, 2.0, 3.0]), "finite")],
)
def test_dip_test_rejects_bad_samples(samples, message):
    with pytest.raises(ValueError, match=message):
        metrics.dip_test(samples)


def test_pointwise_lppd_and_its_float64_twin_match_scipy():
    rng = np.random.default_rng(4)
    y = rng.normal(size=7)
    mean = rng.normal(size=(2, 3, 7))
    scale = np.exp(rng.normal(size=(2, 3, 1)) * 0.3)
    expected = np.log(stats.norm.pdf(y, mean, scale).reshape(-1, 7).mean(0))
    np.testing.assert_allclose(metrics.pointwise_lppd64(y, mean, scale), expected, atol=1e-12)
    np.testing.assert_allclose(metrics.pointwise_lppd(y, mean, scale), expected, atol=1e-4)
    assert float(metrics.lppd(y, mean, scale)) == pytest.approx(expected.mean(), abs=1e-4)


def test_log_mean_exp_is_stable():
    a = np.array([[-1000.0, 0.0], [-1000.0, np.log(3.0)]])
    np.testing.assert_allclose(metrics.log_mean_exp(a, axis=0), [-1000.0, np.log(2.0)])
    np.testing.assert_allclose(metrics.log_mean_exp(a, axis=1), metrics.log_mean_exp(a.T))


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan])
def test_pointwise_lppd64_rejects_bad_scales(scale):
    with pytest.raises(ValueError, match="positive"):
        metrics.pointwise_lppd64(np.zeros(2), np.zeros(2), scale)
    with pytest.raises(ValueError, match="must end in"):
        metrics.pointwise_lppd64(np.zeros(2), np.zeros(3), 1.0)


def test_lppd_with_per_point_scales_matches_scipy():
    mean = RNG.normal(size=(2, 3, Y.size))
    scale = np.exp(RNG.normal(size=mean.shape))
    logp = stats.norm.logpdf(Y, mean, scale).reshape(-1, Y.size)
    expected = np.mean(special.logsumexp(logp, axis=0) - np.log(6))
    assert float(metrics.lppd(Y, mean, scale)) == pytest.approx(expected, rel=1e-5)


def test_cumulative_lppd_with_per_point_scales_is_a_direct_logsumexp():
    mean = RNG.normal(size=(4, 3, Y.size))  # (chains, samples, n)
    scale = np.exp(0.5 * RNG.normal(size=mean.shape))  # a heteroscedastic σ per point
    cum = metrics.cumulative_lppd(7, Y, mean, scale, n_orderings=3)
    logp = stats.norm.logpdf(Y, mean, scale)
    rng = np.random.default_rng(7)
    for r in range(3):
        order = rng.permutation(4)
        for k in range(1, 5):
            first = logp[order[:k]].reshape(-1, Y.size)
            direct = np.mean(special.logsumexp(first, axis=0) - np.log(first.shape[0]))
            assert cum[r, k - 1] == pytest.approx(direct, rel=1e-12)
    assert cum[0, -1] == pytest.approx(float(metrics.lppd(Y, mean, scale)), rel=1e-5)
