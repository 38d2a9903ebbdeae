"""Cumulative LPPD over chains, pairwise W2 between Gaussian predictives and the Z-test."""

import numpy as np
import pytest
from scipy import stats

from bnn_posteriors import metrics


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


def test_running_lppd_matches_lppd_of_prefixes():
    rng = np.random.default_rng(2)
    y, mean, scale = rng.normal(size=5), rng.normal(size=(6, 5)), np.full(6, 0.7)
    run = metrics.running_lppd(y, mean, scale)
    for s in (1, 3, 6):
        np.testing.assert_allclose(run[s - 1], metrics.lppd(y, mean[:s], 0.7), rtol=1e-5)
    with pytest.raises(ValueError, match="axis"):
        metrics.running_lppd(np.zeros(4), mean, scale)
