"""Tests of bnn_posteriors.studies.ch07_sampling_in_practice.many_chains ([SAP] §4.3, Figs. 1,
5, 7; C7.3, C7.4)."""

import json
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.site import profiles
from bnn_posteriors.store import committed as results
from bnn_posteriors.studies.ch07_sampling_in_practice import many_chains


@pytest.mark.slow
def test_many_chain_run_samples_the_two_output_network():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(36, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
    split = SimpleNamespace(
        x_train=x[:20], y_train=y[:20], x_val=x[20:28], y_val=y[20:28], x_test=x[28:], y_test=y[28:]
    )
    out = many_chains.many_chain_run(
        jax.random.split(jax.random.PRNGKey(0)),
        split,
        hidden=(3, 3),
        n_chains=3,
        ensemble=dict(max_epochs=3, batch_size=8),
        tuning_steps=40,
        sampling_steps=20,
        thinning=5,
    )
    assert out["widths"] == (2, 3, 3, 2) and "log_sigma" not in out["many"]["samples"]
    assert out["mean"].shape == out["sigma"].shape == (3, 4, 8)
    assert np.all(out["sigma"] > 0) and np.isfinite(out["ess"]) and out["seconds"] > 0


def test_chain_saturation_reads_the_cumulative_lppd():
    rng = np.random.default_rng(1)
    y, mean, sigma = rng.normal(size=4), rng.normal(size=(12, 3, 4)), np.ones((12, 3))
    out = many_chains.chain_saturation(np.random.default_rng(5), y, mean, sigma, n_orderings=7)
    cum = metrics.cumulative_lppd(np.random.default_rng(5), y, mean, sigma, n_orderings=7)
    np.testing.assert_array_equal(out["cum"], cum)
    assert out["lppd_10"] == pytest.approx(cum.mean(axis=0)[9])
    assert out["gain_10_max"] == pytest.approx(cum.mean(axis=0)[-1] - out["lppd_10"])


@pytest.mark.slow
def test_kernel_marginals_gap_is_positive_when_inner_kernels_follow_the_prior():
    rng = np.random.default_rng(2)
    shape = (40, 50)  # chains, samples
    samples = {
        "W0": 0.5 + rng.normal(size=(*shape, 2, 2)),  # shifted: far from N(0, 1)
        "W1": rng.normal(size=(*shape, 2, 2)),  # the prior
        "W2": 0.5 + rng.normal(size=(*shape, 2, 1)),
        **{f"b{i}": rng.normal(size=(*shape, 2)) for i in range(3)},
    }
    out = many_chains.kernel_marginals(np.random.default_rng(3), samples, num_resamples=100)
    assert out["ks"][1] < 0.02 < out["ks"][0]
    assert out["ks_bias"][0] == pytest.approx(metrics.ks_to_normal(samples["b0"]))
    assert out["gap"] == pytest.approx(out["outer"] - out["inner"])
    assert 0 < out["low"] <= out["gap"] <= out["high"]
    assert abs(out["ks"][2] - metrics.ks_to_normal(samples["W2"])) <= 1 / diagnostics.KS_GRID
    samples["W0"], samples["W2"] = samples["W1"], samples["W1"][..., :1]  # all the prior
    null = many_chains.kernel_marginals(np.random.default_rng(3), samples, num_resamples=100)
    assert null["low"] < 0


@pytest.fixture
def tiny_cfg(make_cfg):
    """A factory of chapter 7's quick settings with tiny many-chain budgets, committed to
    ``results/<results>`` (None: no folder), and the given fields replaced."""

    def make(results=None, **over):
        return make_cfg(
            dataset="energy",
            split_seed=0,
            hidden_many=(3, 3, 3),
            prior_scale=1.0,
            tuning_steps_many=40,
            sampling_steps_many=20,
            thinning=5,
            n_orderings=3,
            n_boot=20,
            de_learning_rate=0.01,
            de_weight_decay=0.005,
            de_max_epochs=3,
            de_batch_size=8,
            de_patience=2,
            many_seeds=(1, 2),
            many_results=results,
            **over,
        )

    return make


def fake_split(name, seed, n_max=None):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(36, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
    return SimpleNamespace(
        x_train=x[:20], y_train=y[:20], x_val=x[20:28], y_val=y[20:28], x_test=x[28:], y_test=y[28:]
    )


@pytest.mark.slow
def test_seed_runs_are_written_read_back_and_committed_only_when_all_are_in(
    tmp_path, monkeypatch, tiny_cfg
):
    monkeypatch.setattr(many_chains.data, "load_split", fake_split)
    monkeypatch.setattr(many_chains.parts, "results_dir", lambda: tmp_path)
    cfg = tiny_cfg("many")
    s = many_chains.seed_settings(cfg, 1, 12)
    assert s["seed"] == 1 and s["n_chains"] == 12 and s["hidden"] == [3, 3, 3]
    assert s["version"].startswith(many_chains.SEED_VERSION)
    assert many_chains.seed_name(s) == "seed1_chains12"
    assert many_chains.seed_path(tmp_path, s) == tmp_path / "seed1_chains12.json"
    with pytest.raises(ValueError, match="n_chains"):
        many_chains.seed_settings(cfg, 1, 0)
    assert many_chains.committed_seeds(cfg, 12) is None
    (first,) = many_chains.seed_study(cfg, (1,), 12, results_dir=tmp_path / "many", profile="full")
    assert not first["read"] and len(first["ks"]) == 4 and first["low"] <= first["high"]
    assert first["gains"][0] == pytest.approx(first["lppd"][1] - first["lppd"][0])
    assert many_chains.committed_seeds(cfg, 12) is None  # seed 2 is missing
    runs = many_chains.seed_study(cfg, (1, 2), 12, results_dir=tmp_path / "many", profile="full")
    assert [r["read"] for r in runs] == [True, False]
    assert runs[0]["low"] == first["low"]
    committed = many_chains.committed_seeds(cfg, 12)
    assert [r["settings"]["seed"] for r in committed] == [1, 2]
    assert many_chains.committed_seeds(tiny_cfg(None), 12) is None


def test_a_seed_run_is_the_chapters_computation(monkeypatch, tiny_cfg):
    monkeypatch.setattr(many_chains.data, "load_split", fake_split)
    cfg = tiny_cfg()
    s = many_chains.seed_settings(cfg, 3, 12)
    out = many_chains.seed_run(s)
    split = fake_split("energy", 0)
    keys = jax.random.split(jax.random.PRNGKey(3), 6)
    run = many_chains.many_chain_run(
        (keys[3], keys[4]),
        split,
        hidden=(3, 3, 3),
        n_chains=12,
        ensemble=dict(
            learning_rate=0.01, weight_decay=0.005, max_epochs=3, batch_size=8, patience=2
        ),
        prior_scale=1.0,
        tuning_steps=40,
        sampling_steps=20,
        thinning=5,
    )
    rng = np.random.default_rng(3)
    many_chains.chain_saturation(rng, split.y_test, run["mean"], run["sigma"], n_orderings=3)
    ks = many_chains.kernel_marginals(rng, run["many"]["samples"], num_resamples=20)
    assert (out["gap"], out["low"], out["high"]) == (ks["gap"], ks["low"], ks["high"])


def test_the_command_runs_seeds_and_resumes(tmp_path, monkeypatch, capsys, tiny_cfg):
    from bnn_posteriors.cli import main as cli

    monkeypatch.setattr(many_chains.data, "load_split", fake_split)
    cfg = tiny_cfg(
        "many", n_chains_many=12, n_chains_many_accelerator=12, cache=False, profile="full"
    )
    monkeypatch.setattr(profiles, "settings", lambda chapter, profile=None: cfg)
    argv = ["many-chains", "--seeds", "4", "--out", str(tmp_path)]
    assert cli.main(argv) == 0
    assert "seed 4: 12 chains" in capsys.readouterr().out
    assert cli.main(argv) == 0
    assert "(read)" in capsys.readouterr().out
    assert cli.main(["many-chains", "--profile", "bogus"]) == 2


def test_committed_seed_runs_hold_the_full_profiles_settings():
    """Every committed seed run is one the full profile reads back (same settings and version),
    from a clean commit, with finite results."""
    full = profiles.settings("07_sampling_in_practice", "full")
    folder = results.results_dir() / full.many_results
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in files:
        record = json.loads(path.read_text())
        s = record["settings"]
        assert s["seed"] in full.many_seeds, path.name
        assert s == many_chains.seed_settings(full, s["seed"], full.n_chains_many), path.name
        assert many_chains.seed_path(folder, s) == path and record["profile"] == "full"
        assert "+dirty" not in record["provenance"]["commit"]
        assert len(record["ks"]) == len(full.hidden_many) + 1
        assert record["low"] <= record["gap"] <= record["high"]
        assert np.all(np.isfinite(record["lppd"] + record["ks"]))
