"""Tests of bnn_posteriors.evaluation.diagnostics against independent draws with known answers."""

import jax
import numpy as np
import pytest

from bnn_posteriors.evaluation import diagnostics


def test_independent_chains_mix():
    draws = np.random.default_rng(0).normal(size=(4, 1000, 3))
    assert diagnostics.rhat(draws).shape == (3,)
    assert np.all(diagnostics.rhat(draws) < 1.01)
    assert np.all(diagnostics.ess(draws) > 2500)  # about 4000 for independent draws
    # MCSE of the mean of 4000 independent N(0, 1) draws is about 1/sqrt(4000) = 0.0158
    assert np.allclose(diagnostics.mcse(draws), 1 / np.sqrt(4000), rtol=0.2)


def test_separated_chains_do_not_mix():
    draws = np.random.default_rng(1).normal(size=(2, 500)) + np.array([[0.0], [5.0]])
    assert diagnostics.rhat(draws) > 1.5


@pytest.mark.parametrize(
    ("draws", "match"),
    [(np.zeros(10), "shaped"), (np.zeros((2, 3)), "at least 4"), (np.full((2, 9), np.nan), "NaN")],
)
def test_bad_draws(draws, match):
    with pytest.raises(ValueError, match=match):
        diagnostics.ess(draws)


def test_within_chain_ess_ignores_between_chain_offsets():
    rng = np.random.default_rng(2)
    iid = rng.normal(size=(3, 400, 2)) + np.array([0.0, 10.0, -10.0])[:, None, None]
    assert diagnostics.within_chain_ess(iid) > 250  # about 400 per chain: offsets do not count
    walk = np.cumsum(rng.normal(size=(3, 400, 2)), axis=1)  # a random walk barely mixes
    assert diagnostics.within_chain_ess(walk) < 30
    with pytest.raises(ValueError, match="shaped"):
        diagnostics.within_chain_ess(np.zeros(10))


def test_chain_bootstrap_interval_of_a_mean():
    # 200 chains with per-chain means N(1, 1): the 95 % interval of the mean is about
    # 1 ± 1.96 / sqrt(200) = 1 ± 0.139 and covers the estimate
    means = np.random.default_rng(3).normal(1.0, 1.0, size=200)
    key = jax.random.PRNGKey(0)
    estimate, low, high = diagnostics.chain_bootstrap(key, (means,), np.mean, num_resamples=2000)
    assert estimate == pytest.approx(means.mean())
    assert low < estimate < high
    assert high - low == pytest.approx(2 * 1.96 / np.sqrt(200), rel=0.2)
    # the same key gives the same interval
    assert diagnostics.chain_bootstrap(key, (means,), np.mean, num_resamples=2000) == (
        estimate,
        low,
        high,
    )


def test_chain_bootstrap_ratio_of_two_groups():
    rng = np.random.default_rng(4)
    a, b = rng.normal(2.0, 0.1, size=(50, 3)), rng.normal(1.0, 0.1, size=(20, 3))
    ratio = lambda x, y: x.mean() / y.mean()  # noqa: E731
    estimate, low, high = diagnostics.chain_bootstrap(jax.random.PRNGKey(1), (a, b), ratio)
    assert 1.9 < low < estimate < high < 2.1
    # identical chains: every resample gives the estimate
    same = np.ones((4, 2))
    assert diagnostics.chain_bootstrap(jax.random.PRNGKey(2), (same,), np.mean) == (1.0, 1.0, 1.0)


def test_chain_bootstrap_infinite_resamples_and_bad_input():
    spread = np.array([0.0, 0.0, 0.0, 1.0])  # a resample without the last chain has sd 0
    estimate, low, high = diagnostics.chain_bootstrap(
        jax.random.PRNGKey(3), (spread,), lambda s: 1.0 / np.std(s), num_resamples=500
    )
    assert np.isfinite(estimate) and np.isfinite(low) and high == np.inf
    with pytest.raises(ValueError, match="at least 2 chains"):
        diagnostics.chain_bootstrap(jax.random.PRNGKey(0), (np.ones(1),), np.mean)
    with pytest.raises(ValueError, match="level"):
        diagnostics.chain_bootstrap(jax.random.PRNGKey(0), (np.ones(3),), np.mean, level=1.5)
    with pytest.raises(ValueError, match="NaN on every"):
        diagnostics.chain_bootstrap(
            jax.random.PRNGKey(0), (np.zeros(3),), lambda s: s.sum() / s.sum()
        )


@pytest.mark.slow
def test_mean_interval_matches_scipy_and_covers_at_its_level():
    from scipy import stats

    rng = np.random.default_rng(0)
    values = rng.normal(0.3, 1.0, size=12)
    mean, low, high = diagnostics.mean_interval(values, level=0.9)
    ref = stats.t.interval(0.9, 11, loc=values.mean(), scale=stats.sem(values))
    assert mean == pytest.approx(values.mean())
    assert (low, high) == pytest.approx(ref)
    assert all(type(v) is float for v in (mean, low, high))  # myst-nb glues plain floats
    # coverage of the true mean over many repeats is close to the level
    draws = rng.normal(0.3, 1.0, size=(4000, 5))
    covered = [lo <= 0.3 <= hi for _, lo, hi in map(diagnostics.mean_interval, draws)]
    assert np.mean(covered) == pytest.approx(0.95, abs=0.015)


@pytest.mark.parametrize(
    ("values", "level", "match"),
    [([1.0], 0.95, "at least 2"), ([1.0, np.nan], 0.95, "NaN"), ([1.0, 2.0], 1.5, "level")],
)
def test_mean_interval_rejects_bad_input(values, level, match):
    with pytest.raises(ValueError, match=match):
        diagnostics.mean_interval(values, level=level)


def test_ess_growth_grows_with_draws_for_a_mixing_chain_and_rejects_bad_counts():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=(3, 800, 2))
    small, large = diagnostics.ess_growth(iid, (100, 800))
    assert 60 < small < 140 and 600 < large < 1000  # about n for independent draws
    walk = np.cumsum(rng.normal(size=(3, 800, 2)), axis=1)  # a chain that does not mix
    assert max(diagnostics.ess_growth(walk, (100, 800))) < 30
    with pytest.raises(ValueError, match="counts must lie"):
        diagnostics.ess_growth(iid, (900,))
    with pytest.raises(ValueError, match="counts must lie"):
        diagnostics.ess_growth(iid, (2,))
