"""Tests of the narrow network's numerical minima and scaling orbits ([SAP] §2.1, App. F.1).

Known answers: the likelihood is constant on scaling orbits, the minima of eqs. (2)/(3)
and of eq. (24)/g coincide, the L = 2 mode is the lasso's soft threshold. float64.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.studies.ch01_narrow_networks import narrow_minima
from bnn_posteriors.theory import narrow_network as theory

pytestmark = pytest.mark.usefixtures("x64")

X = np.array([-1.0, 0.5, 2.0, 1.5, -0.7, 1.2])
Y = np.array([-0.4, 0.3, 1.1, 0.7, -0.5, 0.6])
SIGMA, TAU = 0.5, 1.0
OPT = {"num_starts": 8, "num_steps": 300, "newton_steps": 20}


@pytest.mark.slow
def test_orbit_deviation_is_round_off():
    key = jax.random.key(0)
    assert narrow_minima.orbit_deviation(key, 3, X, Y, SIGMA, TAU) < 1e-12
    devs = narrow_minima.max_orbit_deviation(key, (2, 4), X, Y, SIGMA, TAU, num_orbits=3)
    assert set(devs) == {2, 4} and max(devs.values()) < 1e-12
    with pytest.raises(ValueError, match="depth >= 2"):
        narrow_minima.orbit_deviation(key, 1, X, Y, SIGMA, TAU)


@pytest.mark.slow
def test_penalised_minima_match_and_have_sign_patterns():
    grid = narrow_minima.penalised_minima_grid(jax.random.key(1), (2,), (0.5,), X, Y, SIGMA, **OPT)
    r = grid[2, 0.5]
    assert r["patterns"] == 2  # 2^(L-1): (+, +) and (-, -) for a positive slope
    assert r["beta_sign"] == 1
    assert r["rel_gap"] < 1e-6 and r["magnitude_gap"] < 1e-6
    assert r["rel_gap"] == abs(r["min_w"] - r["min_beta"]) / abs(r["min_beta"])


@pytest.mark.slow
def test_matching_minima_of_eq24_and_g():
    r = narrow_minima.matching_minima(jax.random.key(2), 3, X, Y, SIGMA, TAU, **OPT)
    assert abs(r["min_w"] - r["min_g"]) / abs(r["min_g"]) < 1e-6
    assert abs(r["beta_of_w"] - r["beta_g"]) < 1e-5
    # L = 3: the origin is a local minimum on both sides, with the global one
    assert [b for b, _ in r["local_g"]] == [0.0, pytest.approx(r["beta_g"], abs=1e-8)]
    assert len(r["local_w"]) == 2 and r["local_w"][0][0] == 0.0
    np.testing.assert_allclose([v for _, v in r["local_w"]], [v for _, v in r["local_g"]])


def test_local_minima_of_g_and_of_eq24_at_the_origin():
    # L = 2, a lasso: the origin is no minimum of g and a saddle of eq. (24)
    assert all(b != 0.0 for b, _ in narrow_minima.g_local_minima(X, Y, SIGMA, TAU, 2))
    w = jax.numpy.zeros((1, 2))
    loss = theory.neg_log_posterior(w, X, Y, SIGMA, TAU)
    assert narrow_minima.w_local_minima(w, loss, X, Y, SIGMA, TAU) == []
    # L = 4: the cusp at 0 is a local minimum of g, far narrower than the grid's spacing
    g4 = narrow_minima.g_local_minima(X, Y, SIGMA, TAU, 4, grid=11)
    assert g4[0][0] == 0.0
    np.testing.assert_allclose(g4[0][1], float(theory.g(0.0, X, Y, SIGMA, TAU, 4)))
    w4 = jax.numpy.zeros((1, 4))
    origin = narrow_minima.w_local_minima(
        w4, theory.neg_log_posterior(w4, X, Y, SIGMA, TAU), X, Y, SIGMA, TAU
    )
    assert origin == [(0.0, pytest.approx(g4[0][1]))]


def test_lasso_modes_match_the_soft_threshold():
    s = float(X @ Y)
    taus = {"data": TAU, "thresholded": float(np.sqrt(SIGMA**2 / (2 * abs(s))))}
    modes = narrow_minima.lasso_modes(jax.random.key(3), X, Y, SIGMA, taus, **OPT)
    assert modes["thresholded"]["closed"] == 0.0
    for name, m in modes.items():
        assert m["tau"] == taus[name]
        assert m["closed"] == float(theory.lasso_mode(X, Y, SIGMA, taus[name]))
        assert abs(m["numerical"] - m["closed"]) < 1e-6


def test_lasso_cases_threshold_the_second_prior():
    cases = narrow_minima.lasso_cases(X, Y, SIGMA, TAU)
    assert cases["data prior"] == TAU
    s_xy = float(X @ Y)
    np.testing.assert_allclose(SIGMA**2 / cases["thresholded"] ** 2, 2 * abs(s_xy))
    assert float(theory.lasso_mode(X, Y, SIGMA, cases["thresholded"])) == 0.0
    with pytest.raises(ValueError, match="Σ x_i y_i is 0"):
        narrow_minima.lasso_cases(X, np.zeros_like(Y), SIGMA, TAU)


def test_g_shape_is_convex_at_two_and_concave_beyond():
    shape = narrow_minima.g_shape(X, Y, SIGMA, TAU, (2, 3, 5), 0.5)
    second = shape["min_second_diff"]
    assert second[2] > 0 and second[3] < 0 and second[5] < 0
    ratio = [float(theory.g1(0.5, X, Y, SIGMA) / theory.g2(0.5, L, TAU)) for L in (2, 3, 5)]
    np.testing.assert_allclose(shape["ratio_g1_g2"], ratio)
    far = [float(theory.g1(0.5, X, Y, SIGMA) / theory.g2(0.5, L, TAU)) for L in (10, 10**6)]
    assert shape["limit_depths"][0] == 10 and shape["limit_depths"][-1] == 10**6
    np.testing.assert_allclose([shape["ratio_limit"][0], shape["ratio_limit"][-1]], far)
