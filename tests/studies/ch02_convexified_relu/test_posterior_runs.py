"""Tests of chapter 02's runs and what it measures on them ([SAP] App. D.2, Figs. 8–9)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.studies.ch02_convexified_relu import chain_marginals, posterior_runs

RNG = np.random.default_rng(0)


def fake_run(width: int, chains: int = 3, draws: int = 40, d: int = 2) -> dict:
    """A run shaped like sample_posterior's, with independent Gaussian draws."""
    w1 = RNG.normal(size=(chains, draws, width, d))
    w2 = RNG.normal(size=(chains, draws, width))
    stats = {
        "step_size": np.full((chains, draws), 0.1),
        "num_steps": np.full((chains, draws), 7),
        "acceptance_rate": np.full((chains, draws), 0.8),
        "diverging": np.zeros((chains, draws), bool),
    }
    return {
        "u": w2[..., None] * w1,
        "W1": w1,
        "w2": w2,
        "sigma": np.ones((chains, draws)),
        "stats": stats,
        "potential": np.arange(chains, dtype=float),
    }


RUNS = {width: fake_run(width) for width in (2, 3)}  # the widths_hidden of tiny_cfg (conftest)


def test_flat_keeps_chains_and_draws():
    assert posterior_runs.flat(np.zeros((2, 5, 3, 4))).shape == (2, 5, 12)
    with pytest.raises(ValueError, match="chains, draws"):
        posterior_runs.flat(np.zeros(3))


def test_sample_widths_splits_each_key_by_width_and_passes_the_settings(monkeypatch, tiny_cfg):
    # The sampler itself is tested in tests/theory; here: which keys and settings it gets.
    calls = []

    def fake_sample(key_warm, key_nuts, x, y, width, **kwargs):
        calls.append((key_warm, key_nuts, width, kwargs))
        return {"width": width}

    monkeypatch.setattr(posterior_runs, "sample_posterior", fake_sample)
    x, y = RNG.normal(size=(12, 2)), RNG.normal(size=12)
    key_warm, key_nuts = jax.random.key(0), jax.random.key(1)
    runs = posterior_runs.sample_widths(key_warm, key_nuts, x, y, tiny_cfg)
    assert runs == {2: {"width": 2}, 3: {"width": 3}}
    for i, (k_warm, k_nuts, width, kwargs) in enumerate(calls):
        assert width == tiny_cfg.widths_hidden[i]
        assert jax.random.key_data(k_warm).tolist() == (
            jax.random.key_data(jax.random.split(key_warm, 2)[i]).tolist()
        )
        assert jax.random.key_data(k_nuts).tolist() == (
            jax.random.key_data(jax.random.split(key_nuts, 2)[i]).tolist()
        )
        assert kwargs["num_samples"] == 40 and kwargs["max_tree_depth"] == 3
        assert kwargs["prior_scale"] == tiny_cfg.tau and kwargs["cache"] is False
    with pytest.raises(ValueError, match="widths_hidden"):
        posterior_runs.sample_widths(
            key_warm, key_nuts, x, y, dataclasses.replace(tiny_cfg, widths_hidden=())
        )


def test_sampler_table_has_one_row_per_width():
    table = posterior_runs.sampler_table(RUNS).splitlines()
    assert len(table) == 2 + len(RUNS) and "step size" in table[0]
    assert table[2].startswith("| 2 | 0, 1, 2 | 1.0e-01 | 7 | 0.80 | 0 | 1.00 |")


def test_u_dips_match_a_direct_dip_test_on_the_same_picks(tiny_cfg):
    dips, picks = posterior_runs.u_dips(np.random.default_rng(3), RUNS, tiny_cfg)
    rng = np.random.default_rng(3)
    for width, run in RUNS.items():
        u = posterior_runs.flat(run["u"])
        pick = chain_marginals.random_components(rng, u.shape[-1], tiny_cfg.n_components)
        np.testing.assert_array_equal(picks[width], pick)
        expected = chain_marginals.dip_pass_rate(u[..., pick], tiny_cfg.dip_alpha)
        assert dips[width][0] == expected[0] and dips[width][2] == expected[2]


def test_pair_dip_tests_projections_and_refuses_a_triple(tiny_cfg):
    rate, p, ess = posterior_runs.pair_dip(np.random.default_rng(4), RUNS[3]["u"], [0, 5], tiny_cfg)
    assert 0.0 <= rate <= 1.0 and p.shape == (3, tiny_cfg.n_directions) and ess > 0
    with pytest.raises(ValueError, match="two component"):
        posterior_runs.pair_dip(np.random.default_rng(4), RUNS[3]["u"], [0, 1, 2], tiny_cfg)


def test_weight_dips_cover_both_layers_at_every_width(tiny_cfg):
    dips = posterior_runs.weight_dips(np.random.default_rng(5), RUNS, tiny_cfg)
    assert set(dips) == {(w, k) for w in tiny_cfg.widths_hidden for k in ("W1", "w2")}
    assert dips[2, "w2"][1].shape == (3, 2)  # both entries of w2 at H = 2


def test_shrinkage_sees_u_shrink_tenfold(tiny_cfg):
    runs = {2: fake_run(2), 3: fake_run(3)}
    runs[3]["u"] = runs[3]["u"] / 10
    per_width, shrink, ess_all = posterior_runs.shrinkage(jax.random.key(2), runs, tiny_cfg)
    ratio = per_width[2]["size"][0] / per_width[3]["size"][0]
    assert shrink["size"][0] == pytest.approx(ratio)
    assert 5 < shrink["size"][0] < 20 and shrink["size"][1] <= shrink["size"][0]
    assert ess_all[2] == diagnostics.within_chain_ess(posterior_runs.flat(runs[2]["u"]))


def test_ess_budget_grows_with_the_draws_for_independent_draws(tiny_cfg):
    shown = posterior_runs.ess_budget(RUNS, tiny_cfg)
    table, values = shown.table, shown.glue
    assert table.splitlines()[0] == "| draws per chain | 5 | 10 | 20 | 40 |"
    assert values["ess_doubling_small"] > 1.2  # independent draws: about 2
    assert values["draws_needed_2"] == pytest.approx(
        tiny_cfg.min_ess * tiny_cfg.num_samples / (values["ess_rate_2"] * tiny_cfg.num_samples)
    )
    assert values["num_warmup"] == tiny_cfg.num_warmup


def test_training_outputs_are_the_networks_and_chunks_change_nothing():
    run = fake_run(3, chains=2, draws=7, d=2)
    x = RNG.normal(size=(9, 2))
    f = posterior_runs.training_outputs(run, x, max_inputs=4, chunk=3)
    rows = x[[0, 2, 5, 8]]  # four evenly spaced rows of nine
    c, s = 1, 5
    exact = np.maximum(rows @ run["W1"][c, s].T, 0.0) @ run["w2"][c, s]
    assert f.shape == (2, 7, 4) and np.allclose(f[c, s], exact, rtol=1e-5)
    assert np.allclose(f, posterior_runs.training_outputs(run, x, max_inputs=4, chunk=100))
    with pytest.raises(ValueError, match="takes 2 inputs"):
        posterior_runs.training_outputs(run, np.ones((4, 3)))


def test_where_chains_stall_sees_a_function_that_mixes_while_u_drifts():
    """Units that trade their contributions (u drifts as a random walk, the function stays
    put): the ESS of the outputs is many times that of u. A w2 that never changes sign shows
    no flips; one that does, in every unit of every chain, shows them all."""
    chains, draws, width = 3, 200, 2
    walk = np.cumsum(RNG.normal(size=(chains, draws, 1)), axis=1)
    noise = 0.01 * RNG.normal(size=(chains, draws, 1))
    w1 = np.ones((chains, draws, width, 1))
    w2 = np.concatenate([2.0 + walk + noise, 2.0 - walk], axis=-1) + 50.0  # the sum stays put
    run = {"u": w2[..., None] * w1, "W1": w1, "w2": w2}
    x = np.ones((5, 1))
    shown = posterior_runs.where_chains_stall({width: run}, x)
    values = shown.glue
    assert values["ess_f_2"] > 10 * values["ess_uall_2"] and values["sign_flips_2"] == 0.0
    flipping = {**run, "w2": run["w2"] * np.where(np.arange(draws) % 2, 1, -1)[None, :, None]}
    assert posterior_runs.where_chains_stall({width: flipping}, x).glue["sign_flips_2"] == 1.0
    assert "changes sign" in shown.table


def test_rhat_matching_units_removes_a_relabelling():
    u = RNG.normal(size=(1, 40, 3, 2)) * 0.1 + 3 * np.arange(3)[None, None, :, None]
    relabelled = {3: {"u": np.concatenate([u, u[:, :, [2, 0, 1]]])}}
    rhats = posterior_runs.rhat_diagnostics(relabelled, {3: 40.0})
    assert np.median(rhats[3]["rhat_raw"]) > 1.5 and np.median(rhats[3]["rhat_aligned"]) < 1.1
    shown = posterior_runs.rhat_table(rhats, 40)
    table, values = shown.table, shown.glue
    assert set(values) == {"rhat_raw_3", "rhat_aligned_3"} and "of 40 draws" in table


@pytest.mark.slow
def test_sample_posterior_shapes():
    keys = jax.random.split(jax.random.key(2), 2)
    x, y = RNG.normal(size=(10, 3)), RNG.normal(size=10)
    run = posterior_runs.sample_posterior(
        keys[0],
        keys[1],
        x,
        y,
        3,
        prior_scale=1.0,
        num_chains=2,
        warm_steps=20,
        warm_learning_rate=0.01,
        num_warmup=20,
        num_samples=10,
        target_acceptance_rate=0.8,
        max_tree_depth=4,
    )
    assert run["u"].shape == (2, 10, 3, 3) and run["W1"].shape == (2, 10, 3, 3)
    assert run["w2"].shape == (2, 10, 3) and run["sigma"].shape == (2, 10)
    np.testing.assert_allclose(run["u"], run["w2"][..., None] * run["W1"])
    assert np.asarray(run["potential"]).shape == (2,)
