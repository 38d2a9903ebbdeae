"""Tests of MFVI and NUTS on the narrow network over depth and prior scale ([SAP] §2.1, §3).

Known answers: depth 1 is conjugate (MFVI is exact), the L = 2 MFVI optimum in closed form
(:func:`theory.mfvi_two_layer_optimum`), the lasso mode of the two-weight posterior.
Tiny budgets: these tests check the plumbing and the known limits, not the claims.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.studies.ch01_narrow_networks import narrow_posterior
from bnn_posteriors.theory import narrow_network as theory

pytestmark = pytest.mark.usefixtures("x64")

X = np.linspace(-2.0, 2.0, 12)
Y = 0.8 * X + 0.1 * np.sin(7.0 * X)
SIGMA, TAU = 0.5, 1.0


@pytest.mark.slow
def test_mfvi_over_depth_is_exact_at_depth_one_and_matches_the_l2_optimum():
    out = narrow_posterior.mfvi_over_depth(
        jax.random.key(0), X, Y, SIGMA, TAU, (1, 2), num_starts=4
    )
    precision = X @ X / SIGMA**2 + 1 / TAU**2
    np.testing.assert_allclose(out["nu"][0], X @ Y / SIGMA**2 / precision, rtol=1e-6)
    np.testing.assert_allclose(
        out["nu"][1], theory.mfvi_two_layer_optimum(X, Y, SIGMA, TAU)["nu"], rtol=1e-5
    )
    np.testing.assert_allclose(out["ratio"], 1.0, atol=1e-6)  # AM-GM equality
    assert np.all((out["kl_share"] > 0) & (out["kl_share"] < 1)) and out["sigma"] == SIGMA


def test_collapse_depth():
    assert narrow_posterior.collapse_depth((1, 2, 3), [0.5, 1e-4, 0.0]) == 2
    assert narrow_posterior.collapse_depth((1, 2), [0.5, 0.4]) is None


@pytest.mark.slow
def test_svi_over_depth_reaches_the_conjugate_mean():
    rows = narrow_posterior.svi_over_depth(
        jax.random.key(1), X, Y, SIGMA, TAU, (1,), num_steps=1500, num_particles=4
    )
    precision = X @ X / SIGMA**2 + 1 / TAU**2
    assert abs(rows[1]["nu"] - X @ Y / SIGMA**2 / precision) < 0.05
    assert rows[1]["ratio"] == 1.0 and np.isfinite(rows[1]["elbo"])


@pytest.mark.slow
def test_nuts_over_depth_agrees_with_the_quadrature():
    runs = narrow_posterior.nuts_over_depth(
        jax.random.key(2),
        X,
        Y,
        SIGMA,
        TAU,
        (1, 2),
        num_chains=2,
        num_warmup=200,
        num_samples=300,
        target_acceptance_rate=0.9,
    )
    for depth, r in runs.items():
        assert r["w"].shape == (2, 300, depth)
        assert abs(r["mean"] - r["exact"]) < 6 * r["mcse"]
        assert 0.0 <= r["ks"] <= 1.0


def test_posterior_modes_are_the_lasso_mode():
    modes = narrow_posterior.posterior_modes(jax.random.key(3), X, Y, SIGMA, TAU, 6)
    assert modes.shape == (6, 2)
    np.testing.assert_allclose(
        np.prod(modes, axis=-1), theory.lasso_mode(X, Y, SIGMA, TAU), rtol=1e-8
    )


@pytest.mark.slow
def test_hyperbola_fits_and_adjusted_prior_scan_plumbing():
    keys = jax.random.split(jax.random.key(4), 4)
    fits = narrow_posterior.hyperbola_fits(
        keys[0],
        keys[1],
        keys[2],
        X,
        Y,
        SIGMA,
        (1.0,),
        num_chains=2,
        num_warmup=50,
        num_samples=40,
        target_acceptance_rate=0.9,
        svi_steps=300,
    )
    r = fits[1.0]
    assert r["w"].shape == (2, 40, 2) and r["draws"]["beta"].shape == (2, 40)
    assert 0 <= r["sign_changes"] <= 2 and 0 <= r["nuts_mass"] <= 1
    np.testing.assert_allclose(
        r["exact_nu"], theory.mfvi_two_layer_optimum(X, Y, SIGMA, 1.0)["nu"], rtol=1e-5
    )
    scan = narrow_posterior.adjusted_prior_scan(
        keys[3], X, Y, SIGMA, (1.0,), num_seeds=2, sigma0=0.1, eps=0.1, svi_steps=50
    )
    assert {k: v.shape for k, v in scan[1.0].items() if k != "nu_star"} == {
        "plain": (2,),
        "adjusted": (2,),
        "theta0": (2,),
        "loc": (2, 2),
        "scale": (2, 2),
    }
    np.testing.assert_allclose(scan[1.0]["theta0"], np.abs(scan[1.0]["loc"].prod(axis=1)))
    assert np.all(np.abs(scan[1.0]["scale"] - 1.0) <= 1.0 / np.sqrt(0.9) - 1.0 + 1e-12)
    assert scan[1.0]["nu_star"] == abs(theory.mfvi_two_layer_optimum(X, Y, SIGMA, 1.0)["nu"])
    key_fit = jax.random.fold_in(keys[2], 0)  # the key of the first τ²
    plain = narrow_posterior.mfvi_abs_nu(key_fit, X, Y, SIGMA, 1.0, num_steps=300)
    assert plain == abs(r["svi_nu"])  # same key and settings as the τ² = 1 fit


def test_hyperbola_parts_measure_each_clause_of_the_claim():
    fits = {
        0.01: {"svi_nu": -0.01, "nuts_mass": 0.9, "sign_changes": 1},
        1.0: {"svi_nu": 0.7, "nuts_mass": 1.0, "sign_changes": 0},
    }
    parts = narrow_posterior.hyperbola_parts(fits, 0.8, (0.01, 1.0))
    values = list(parts.values())
    np.testing.assert_allclose(values, [0.01, 0.1, 1 - 0.7 / 0.8, 1.0])


def test_trap_summary_counts_runs_short_of_the_optimum():
    scan = {
        0.1: {"plain": np.array([0.0, 0.0]), "adjusted": np.array([0.5, 0.6]), "nu_star": 0.0},
        1.0: {
            "plain": np.array([0.1, 0.7, 0.8]),
            "adjusted": np.array([0.7, 0.8, 0.9]),
            "nu_star": 0.8,
        },
        2.0: {
            "plain": np.array([0.9, 0.9, 0.9]),
            "adjusted": np.array([0.9, 0.9, 0.3]),
            "nu_star": 0.9,
        },
    }
    out = narrow_posterior.trap_summary(scan, 0.5, X, Y, SIGMA, jitter_ratio=1.5, eps=0.1)
    assert list(out["above"]) == [1.0, 2.0]
    assert out["progress"] == {1.0: pytest.approx(0.7 / 0.8), 2.0: pytest.approx(1.0)}
    assert out["n_short"] == {"plain": 1, "adjusted": 1}
    tau = np.sqrt(0.75 / 1.1)
    assert out["jitter"][0] == abs(theory.mfvi_two_layer_optimum(X, Y, SIGMA, tau)["nu"])
    assert len(out["jitter"]) == 3


def test_adjusted_elbo_is_the_plain_elbo_at_the_plain_prior():
    mu, s = np.array([0.3, -0.7]), np.array([0.2, 0.4])
    np.testing.assert_allclose(
        narrow_posterior.adjusted_elbo(mu, s, X, Y, SIGMA, np.zeros(2), np.full(2, TAU)),
        theory.mfvi_elbo(mu, s, X, Y, SIGMA, TAU),
        rtol=1e-12,
    )


def test_gradient_at_zero_vanishes_for_the_plain_prior_only():
    loc = np.array([[0.0, 0.0], [0.05, -0.02], [1e-3, 0.0]])
    scale = np.array([[TAU, TAU], [0.9, 1.1], [1.0, 1.0]])
    grad = narrow_posterior.gradient_at_zero(X, Y, SIGMA, loc, scale, 0.3)
    assert grad[0] == 0.0  # the sign flip w -> -w keeps mu = 0 stationary
    np.testing.assert_allclose(grad, np.linalg.norm(loc / scale**2, axis=1), rtol=1e-10)
    with pytest.raises(ValueError, match="priors, 2"):
        narrow_posterior.gradient_at_zero(X, Y, SIGMA, loc, scale[:, :1], 0.3)


def test_convergence_gain_compares_where_plain_mfvi_is_trapped():
    def scan(plain_hi, adjusted_hi):
        return {
            0.1: {"plain": np.zeros(3), "adjusted": np.zeros(3), "nu_star": 0.0},
            1.0: {
                "plain": np.array([0.1, 0.1, 0.8]),
                "adjusted": np.array([0.7, 0.8, 0.8]),
                "nu_star": 0.8,
            },
            2.0: {
                "plain": np.full(3, plain_hi),
                "adjusted": np.full(3, adjusted_hi),
                "nu_star": 0.9,
            },
        }

    trap = narrow_posterior.trap_summary(
        scan(0.9, 0.3), 0.5, X, Y, SIGMA, jitter_ratio=1.5, eps=0.1
    )
    out = narrow_posterior.convergence_gain(trap)
    assert out["trapped"] == [1.0] and out["at"] == [1.0]  # plain median 0.1 < 0.8 / 2
    np.testing.assert_allclose(out["adjusted"], [1.0])  # out of the trap: >= 0.5 of nu*
    np.testing.assert_allclose(out["plain"], [0.1 / 0.8])
    np.testing.assert_allclose(out["gain"], [0.8 / 0.8 - 0.1 / 0.8])
    # No trap: the comparison is made where plain gets least far, and can come out negative
    # (a broken input for the rule: adjusted runs worse than plain ones).
    no_trap = scan(0.9, 0.3)
    no_trap[1.0]["plain"] = np.array([0.7, 0.75, 0.8])
    trap = narrow_posterior.trap_summary(no_trap, 0.5, X, Y, SIGMA, jitter_ratio=1.5, eps=0.1)
    out = narrow_posterior.convergence_gain(trap)
    assert out["trapped"] == [] and out["at"] == [1.0]
    trap = narrow_posterior.trap_summary(
        scan(0.85, 0.3), 1.5, X, Y, SIGMA, jitter_ratio=1.5, eps=0.1
    )
    out = narrow_posterior.convergence_gain(trap)
    assert out["at"] == [2.0] and out["gain"][0] < 0 and out["adjusted"][0] < 0.5
    with pytest.raises(ValueError, match="trap_level"):
        narrow_posterior.convergence_gain(trap, trap_level=0.0)


def test_kl_against_monte_carlo_agrees_with_the_closed_form():
    kl = narrow_posterior.kl_against_monte_carlo(jax.random.key(0), TAU, 20_000)
    assert kl["mu"] == [0.9, -1.2, 0.4] and kl["s"] == [0.3, 0.5, 0.8]
    closed = float(theory.mfvi_kl(np.array(kl["mu"]), np.array(kl["s"]), TAU))
    assert kl["closed"] == pytest.approx(closed)
    assert 0 < kl["se"] < 0.05 and abs(kl["mc"] - kl["closed"]) < 4 * kl["se"]


@pytest.mark.slow
def test_exact_mean_abs_beta_is_the_quadrature_per_sigma_and_depth():
    means = narrow_posterior.exact_mean_abs_beta(X, Y, (0.5, 2.0), TAU, (1, 2))
    assert list(means) == [0.5, 2.0] and len(means[2.0]) == 2
    expected = theory.posterior_beta_quadrature(2, X, Y, 2.0, TAU)["mean_abs_beta"]
    assert means[2.0][1] == pytest.approx(expected)
    assert means[2.0][1] < means[0.5][1]  # a weaker likelihood shrinks more


def test_nonzero_suppression_falls_at_a_rate_per_layer():
    out = narrow_posterior.nonzero_suppression(X, Y, 2.0, TAU, (2, 6, 10), 0.5)
    assert out["depths"] == [2, 6, 10] and len(out["prob"]) == 3 and len(out["rate"]) == 2
    assert all(0 < p <= 1 for p in out["prob"]) and out["prob"][-1] < out["prob"][0]
    np.testing.assert_allclose(out["rate"][0], -np.log(out["prob"][1] / out["prob"][0]) / 4)
    with pytest.raises(ValueError, match="three depths"):
        narrow_posterior.nonzero_suppression(X, Y, 2.0, TAU, (2, 6), 0.5)


def _deep_trap(depth=3, init_scale=0.01, **overrides):
    settings = dict(num_seeds=3, sigma0=1.0, eps=0.1, num_steps=500, init_scale=init_scale)
    return narrow_posterior.deep_trap(
        jax.random.key(0), X, Y, 0.5, 1.0, depth, **(settings | overrides)
    )


def test_deep_trap_holds_plain_mfvi_at_zero_and_a_large_nudge_frees_it(x64):
    trap = _deep_trap()
    np.testing.assert_allclose(trap["plain"], 0.0, atol=1e-6)
    assert np.all(trap["adjusted"] > trap["nu_star"] / 2)  # prior means at the prior's scale
    assert trap["elbo_star"] > trap["plain_elbo"].max()  # the trap is not the optimum
    # from starts far from μ = 0 (outside the basin) plain MFVI reaches the optimum: no trap
    free = _deep_trap(init_scale=1.0)
    assert np.median(free["plain"]) > free["nu_star"] / 2
    with pytest.raises(ValueError, match="depth of 2 or more"):
        _deep_trap(depth=1, num_seeds=1, num_steps=5)
