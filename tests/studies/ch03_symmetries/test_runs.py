"""Tests of chapter 03's runs: the prior symmetry checks on known answers, the plumbing of
the Fig. 2 and Prop. B.5 runs on a tiny budget, and the tables of their numbers."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

from bnn_posteriors.studies.ch03_symmetries import runs
from bnn_posteriors.theory import narrow_network as theory

pytestmark = pytest.mark.usefixtures("x64")

X = np.linspace(-2.0, 2.0, 12)
Y = 0.8 * X + 0.1 * np.sin(7.0 * X)


@pytest.mark.slow
def test_sign_flip_gaps_vanish_for_both_symmetric_priors():
    gaps = runs.sign_flip_gaps(jax.random.key(0), 50, num_weights=3)
    assert set(gaps) == set(runs.KINDS) and max(gaps.values()) < 1e-12
    assert gaps == runs.sign_flip_gaps(jax.random.key(0), 50, num_weights=3)
    with pytest.raises(ValueError, match="at least one draw"):
        runs.sign_flip_gaps(jax.random.key(0), 0)


@pytest.mark.slow
def test_pairwise_roots_are_the_identity_and_the_swap():
    roots_ok, min_gap_away = runs.pairwise_roots(num=5, num_c=801)
    # 5 points on [-2, 2] without 0: 4 values, 8 pairs with |a| != |b|, two priors each
    assert len(roots_ok) == len(min_gap_away) == 16
    assert all(roots_ok) and min(min_gap_away) > 0
    with pytest.raises(ValueError, match="c_range"):
        runs.pairwise_roots(c_range=(0.0, 1.0))
    with pytest.raises(ValueError, match="no pair"):
        runs.pairwise_roots(num=1)


def test_pairwise_case_names_name_each_case_in_order():
    names = runs.pairwise_case_names(num=5)
    assert len(names) == 16 and len(set(names)) == 16  # one per (prior, pair), as above
    assert names[0] == f"{runs.KINDS[0]} prior, (θ1, θ2) = (-2, -1)"
    assert names[8].startswith(f"{runs.KINDS[1]} prior")
    with pytest.raises(ValueError, match="no pair"):
        runs.pairwise_case_names(num=1)


def test_two_weight_data_takes_the_first_input_column(monkeypatch, tiny_cfg):
    split = SimpleNamespace(x_train=np.stack([X, -X], axis=1), y_train=Y)
    monkeypatch.setattr(runs.data, "load_split", lambda name, seed, n_max: split)
    x, y, beta_hat, tau2_threshold = runs.two_weight_data(tiny_cfg)
    np.testing.assert_allclose(x, X)
    assert beta_hat == pytest.approx(X @ Y / (X @ X))
    assert tau2_threshold == pytest.approx(tiny_cfg.sigma**2 / abs(X @ Y))


@pytest.mark.slow
def test_figure2_fits_and_tables_plumbing(tiny_cfg):
    keys = jax.random.split(jax.random.key(1), 3)
    fits = runs.figure2_fits(*keys, X, Y, tiny_cfg)
    assert set(fits) == set(tiny_cfg.tau2s) and fits[1.0]["w"].shape == (2, 20, 2)
    table = runs.fits_table(fits, 12, 0.8, 0.05, tiny_cfg.sigma)
    assert table.startswith("12 training rows, β̂ = 0.800") and "| 0.01 |" in table
    diagnostics = runs.diagnostics_table(fits)
    assert diagnostics.count("\n") == 2 + len(fits) and "divergences" in diagnostics


@pytest.mark.slow
def test_adjusted_runs_summary_and_table(tiny_cfg):
    tau2_c = theory.mfvi_two_layer_optimum(X, Y, tiny_cfg.sigma, 1.0)["tau2_critical"]
    scan = runs.adjusted_runs(jax.random.key(2), X, Y, tau2_c, tiny_cfg)
    assert list(scan) == pytest.approx([0.01, 1.5 * tau2_c])
    assert scan[0.01]["adjusted"].shape == (2,)
    summary = runs.adjusted_summary(scan, tau2_c, X, Y, tiny_cfg)
    assert set(summary["trap"]["above"]) == {1.5 * tau2_c}
    assert summary["grad_plain"] == 0.0 and summary["grad_zero"].shape == (4,)
    assert np.all(summary["grad_zero"] > 0)  # the adjusted prior breaks the fixed point
    table = runs.scan_table(scan, tau2_c, 0.1, 0.8)
    assert table.startswith(f"τ²_c = {tau2_c:.5f}") and "| 1.500 |" in table
    with pytest.raises(ValueError, match="tau2_critical"):
        runs.adjusted_runs(jax.random.key(2), X, Y, 0.0, tiny_cfg)


@pytest.mark.slow
def test_deep_trap_runs_pair_plain_and_adjusted_fits_per_sigma0(tiny_cfg):
    trap = runs.deep_trap_runs(jax.random.key(3), X, Y, tiny_cfg)
    assert list(trap) == [0.1, 1.0]
    for r in trap.values():
        assert r["plain"].shape == r["adjusted"].shape == (2,) and r["depth"] == 3
        assert r["nu_star"] > 0.5  # the optimum is far from the fixed point μ = 0
        np.testing.assert_allclose(r["plain"], 0.0, atol=1e-6)  # plain MFVI stays at μ = 0
    # the same starts and keys at every σ0: the plain fits agree
    np.testing.assert_allclose(trap[0.1]["plain"], trap[1.0]["plain"])
