"""Tests of bnn_posteriors.diagnostics against independent draws with known answers."""

import numpy as np
import pytest

from bnn_posteriors import diagnostics


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
