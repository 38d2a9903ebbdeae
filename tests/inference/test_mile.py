"""MILE: tuned MCLMC from ensemble warm starts, sharded chains, resumable units."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import ensembles, mclmc, mcmc, mile, sharding
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.store import cache

WIDTHS = (2, 4, 1)


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1] + 0.1 * rng.normal(size=n)).astype(np.float32)
    return x, y


def _starts(n_chains, seed=0):
    x, y = _data()
    params, _ = ensembles.train_ensemble(
        jax.random.PRNGKey(seed), x, y, x, y, widths=WIDTHS, n_members=n_chains, max_epochs=20
    )
    return mile.warm_start_positions(params)


@pytest.mark.slow
def test_log_density_matches_model():
    x, y = _data()
    pos = jax.tree.map(lambda a: a[0], _starts(1))
    logdensity, _, _ = mcmc.log_joint_fn(
        jax.random.PRNGKey(0), models.mlp_regression, models.MLP(WIDTHS).kwargs(x, y)
    )
    np.testing.assert_allclose(mile.log_density(pos, x, y, widths=WIDTHS), logdensity(pos))
    # hand-written: N(0,1) weights, N(0,1) log sigma, Gaussian likelihood
    from jax.scipy.stats import norm

    params = mile.params_of(pos)
    mean = ensembles.nets.mlp_apply(params, x)[:, 0]
    flat = jnp.concatenate([jnp.ravel(v) for v in jax.tree.leaves(pos)])
    expected = norm.logpdf(flat).sum() + norm.logpdf(y, mean, jnp.exp(pos["log_sigma"])).sum()
    np.testing.assert_allclose(mile.log_density(pos, x, y, widths=WIDTHS), expected, rtol=1e-5)


@pytest.mark.slow
def test_run_bde_shapes_and_finite_tuning():
    x, y = _data()
    out = mile.run_bde(
        jax.random.PRNGKey(3),
        x,
        y,
        _starts(3),
        widths=WIDTHS,
        tuning_steps=200,
        sampling_steps=50,
        thinning=5,
    )
    assert out["samples"]["W0"].shape == (3, 10, 2, 4)
    assert out["samples"]["log_sigma"].shape == (3, 10)
    assert np.all(np.isfinite(out["L"])) and np.all(out["L"] > 0)
    assert np.all(np.isfinite(out["step_size"])) and np.all(out["step_size"] > 0)
    mean, sigma = mile.predict(out["samples"], x)
    assert mean.shape == (3, 10, 24) and sigma.shape == (3, 10)


@pytest.mark.slow
def test_resume_does_not_recompute(tmp_path, monkeypatch):
    x, y = _data()
    starts = _starts(2)
    kw = dict(
        widths=WIDTHS, tuning_steps=100, sampling_steps=20, thinning=2, cache=tmp_path, chunks=1
    )
    first = mile.run_bde(jax.random.PRNGKey(4), x, y, starts, **kw)
    calls = []
    real_tune, real_sample = sharding.tune_chains, sharding.sample_chains
    monkeypatch.setattr(sharding, "tune_chains", lambda *a: calls.append("t") or real_tune(*a))
    monkeypatch.setattr(sharding, "sample_chains", lambda *a: calls.append("s") or real_sample(*a))
    again = mile.run_bde(jax.random.PRNGKey(4), x, y, starts, **kw)
    assert calls == []
    np.testing.assert_array_equal(first["samples"]["W0"], again["samples"]["W0"])
    # one chain's sampling unit lost: only that chain is sampled again, no tuning
    sample_dir = tmp_path / "mile-sample"
    victim = sorted(sample_dir.glob("*.npz"))[0]
    victim.unlink()
    mile.run_bde(jax.random.PRNGKey(4), x, y, starts, **kw)
    assert calls == ["s"]


@pytest.mark.slow
def test_units_key_on_the_computation_version_not_the_source(tmp_path, monkeypatch):
    x, y = _data()
    starts = _starts(2)
    kw = dict(widths=WIDTHS, tuning_steps=20, sampling_steps=4, thinning=2, cache=tmp_path)
    first = mile.run_bde(jax.random.PRNGKey(4), x, y, starts, **kw)
    calls = []
    real_tune, real_sample = sharding.tune_chains, sharding.sample_chains
    monkeypatch.setattr(sharding, "tune_chains", lambda *a: calls.append("t") or real_tune(*a))
    monkeypatch.setattr(sharding, "sample_chains", lambda *a: calls.append("s") or real_sample(*a))
    # an edit elsewhere in the package (a docstring) changes the source SHA: units are kept
    monkeypatch.setattr(cache, "code_version", lambda: "0123456789abcdef")
    again = mile.run_bde(jax.random.PRNGKey(4), x, y, starts, **kw)
    assert calls == []
    np.testing.assert_array_equal(first["samples"]["W0"], again["samples"]["W0"])
    # a new version of the computation recomputes both units of every chain
    monkeypatch.setattr(mile, "CACHE_VERSION", mile.CACHE_VERSION + "-next")
    mile.run_bde(jax.random.PRNGKey(4), x, y, starts, **kw)
    assert calls == ["t", "s"]
    assert len(list((tmp_path / "mile-tune").glob("*.npz"))) == 4


@pytest.mark.slow
@pytest.mark.parametrize("cached", [False, True])
def test_per_chain_prior_scale_matches_shared_scales(tmp_path, cached):
    x, y = _data()
    starts = _starts(2)
    # MCLMC is chaotic and float round-off differs between programs: compare short runs
    kw = dict(widths=WIDTHS, tuning_steps=10, sampling_steps=3, thinning=1)
    if cached:
        kw["cache"] = tmp_path
    mixed = mile.run_bde(jax.random.PRNGKey(6), x, y, starts, prior_scale=[1.0, 0.1], **kw)
    for chain, scale in enumerate((1.0, 0.1)):
        shared = mile.run_bde(jax.random.PRNGKey(6), x, y, starts, prior_scale=scale, **kw)
        # the prior term of the log density tells the scales apart (a factor 100 here)
        np.testing.assert_allclose(
            mixed["logdensity"][chain], shared["logdensity"][chain], rtol=1e-2
        )
        np.testing.assert_allclose(
            mixed["samples"]["W0"][chain], shared["samples"]["W0"][chain], rtol=1e-2, atol=1e-2
        )
        np.testing.assert_allclose(mixed["step_size"][chain], shared["step_size"][chain], rtol=1e-2)
    assert abs(mixed["logdensity"][0, 0] - mixed["logdensity"][1, 0]) > 10
    with pytest.raises(ValueError, match="prior_scale"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, prior_scale=[1.0, 1.0, 1.0], **kw)
    with pytest.raises(ValueError, match="prior_scale"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, prior_scale=[1.0, 0.0], **kw)


@pytest.mark.slow
def test_nuts_bde_runs_from_warm_starts():
    x, y = _data()
    samples, stats = mile.run_nuts_bde(
        jax.random.PRNGKey(5),
        x,
        y,
        _starts(2),
        widths=WIDTHS,
        num_warmup=20,
        num_samples=10,
        max_num_doublings=4,
    )
    assert samples["W0"].shape == (2, 10, 2, 4) and stats["step_size"].shape == (2,)


def test_bad_input():
    x, y = _data()
    starts = _starts(2)
    with pytest.raises(ValueError, match="widths"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, widths=(2, 5, 1), tuning_steps=20)
    with pytest.raises(ValueError, match="tuning_steps"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, widths=WIDTHS, tuning_steps=3)
    with pytest.raises(ValueError, match="prior_scale"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, widths=WIDTHS, prior_scale=-1.0)
    with pytest.raises(TypeError, match="warm_starts"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, {"W0": 1}, widths=WIDTHS)
    with pytest.raises(ValueError, match="thinning"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, widths=WIDTHS, thinning=0)


def test_moved_names_are_still_importable_from_mile():
    assert mile.mclmc_chain is mclmc.mclmc_chain
    assert mile.energy_var_schedule is mclmc.energy_var_schedule
    assert mile.TUNING_FRACTIONS == mclmc.TUNING_FRACTIONS and mile.L_FACTOR == mclmc.L_FACTOR
    assert mile.chain_mesh is sharding.chain_mesh
    assert mile.shard_chains is sharding.shard_chains and mile.replicate is sharding.replicate


# --- the heteroscedastic model (two outputs: mean and log scale; the authors' `regr`) -------

HET = (2, 4, 2)


def _het_starts(n_chains, seed=0):
    x, y = _data()
    params, _ = ensembles.train_ensemble(
        jax.random.PRNGKey(seed),
        x,
        y,
        x,
        y,
        widths=HET,
        n_members=n_chains,
        max_epochs=20,
        heteroscedastic=True,
    )
    return mile.warm_start_positions(params, heteroscedastic=True)


@pytest.mark.slow
def test_heteroscedastic_log_density_matches_scipy():
    from scipy import stats

    x, y = _data()
    pos = jax.tree.map(lambda a: a[0], _het_starts(1))
    assert "log_sigma" not in pos
    p = [{k: np.asarray(v, np.float64) for k, v in layer.items()} for layer in mile.params_of(pos)]
    out = np.maximum(x @ p[0]["W"] + p[0]["b"], 0.0) @ p[1]["W"] + p[1]["b"]
    flat = np.concatenate([np.ravel(v) for v in jax.tree.leaves(pos)])
    scale = np.clip(np.exp(out[:, 1]), 1e-6, 1e6)
    expected = stats.norm.logpdf(flat, 0, 0.6).sum() + stats.norm.logpdf(y, out[:, 0], scale).sum()
    got = mile.log_density(pos, x, y, widths=HET, prior_scale=0.6, heteroscedastic=True)
    assert float(got) == pytest.approx(expected, rel=1e-5)
    # the NUTS log joint of the same model kwargs (validate.check_model_data accepts them)
    kwargs = models.MLP(HET, prior_scale=0.6, heteroscedastic=True).kwargs(x, y)
    logdensity, _, _ = mcmc.log_joint_fn(jax.random.PRNGKey(0), models.mlp_regression, kwargs)
    np.testing.assert_allclose(logdensity(pos), got, rtol=1e-6)
    assert "heteroscedastic" not in models.MLP(WIDTHS).kwargs(x, y)  # mean regression as before


@pytest.mark.slow
def test_heteroscedastic_run_bde_samples_and_predicts_scales(tmp_path):
    x, y = _data()
    starts = _het_starts(3)
    kw = dict(widths=HET, tuning_steps=50, sampling_steps=20, thinning=1, heteroscedastic=True)
    out = mile.run_bde(jax.random.PRNGKey(3), x, y, starts, **kw)
    assert set(out["samples"]) == {"W0", "b0", "W1", "b1"}
    assert out["samples"]["W1"].shape == (3, 20, 4, 2)
    for v in [*out["samples"].values(), out["logdensity"], out["L"], out["step_size"]]:
        assert np.all(np.isfinite(v))
    mean, scale = mile.predict(out["samples"], x)
    assert mean.shape == (3, 20, 24) and scale.shape == (3, 20, 24)
    assert np.all(np.isfinite(mean)) and np.all(scale > 0)
    first = jax.tree.map(lambda a: a[1, 4], out["samples"])
    expected = models.heteroscedastic_outputs(nets.mlp_apply(mile.params_of(first), x))
    np.testing.assert_allclose(mean[1, 4], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scale[1, 4], expected[1], rtol=1e-5)
    # the cached, chunked path (one unit per chain) draws the same chains
    cached = mile.run_bde(jax.random.PRNGKey(3), x, y, starts, cache=tmp_path, chunks=2, **kw)
    assert len(list((tmp_path / "mile-sample").glob("*.npz"))) == 3
    # the same per-chain programs without the cache (progress bar on) give the same chains
    # bit for bit; the whole-program path above rounds differently, and MCLMC is chaotic,
    # so 50 tuning steps apart its step sizes differed from these by up to 14 % (CI, jaxlib
    # 0.10.2): short runs compare the two programs (test_per_chain_prior_scale_...)
    plain = mile.run_bde(jax.random.PRNGKey(3), x, y, starts, progress=True, chunks=2, **kw)
    np.testing.assert_array_equal(cached["step_size"], plain["step_size"])
    np.testing.assert_array_equal(cached["samples"]["W1"], plain["samples"]["W1"])
    again = mile.run_bde(jax.random.PRNGKey(3), x, y, starts, cache=tmp_path, chunks=2, **kw)
    np.testing.assert_array_equal(again["samples"]["W1"], cached["samples"]["W1"])


@pytest.mark.slow
def test_heteroscedastic_nuts_bde_runs():
    x, y = _data()
    samples, _ = mile.run_nuts_bde(
        jax.random.PRNGKey(5),
        x,
        y,
        _het_starts(2),
        widths=HET,
        num_warmup=10,
        num_samples=5,
        max_num_doublings=3,
        heteroscedastic=True,
    )
    assert samples["W1"].shape == (2, 5, 4, 2) and samples["scale"].shape == (2, 5, 24)
    assert "log_sigma" not in samples


def test_heteroscedastic_bad_input():
    x, y = _data()
    starts = _het_starts(2)
    with pytest.raises(ValueError, match="heteroscedastic regression needs two outputs"):
        mile.run_bde(jax.random.PRNGKey(0), x, y, _starts(2), widths=WIDTHS, heteroscedastic=True)
    with pytest.raises(ValueError, match="warm_starts do not match"):  # a log_sigma too many
        mile.run_bde(
            jax.random.PRNGKey(0),
            x,
            y,
            {**starts, "log_sigma": jnp.zeros(2)},
            widths=HET,
            heteroscedastic=True,
        )
    with pytest.raises(TypeError, match="warm_starts"):  # no log_sigma: not mean regression
        mile.run_bde(jax.random.PRNGKey(0), x, y, starts, widths=HET)
    params = mile.params_of(starts)
    with pytest.raises(ValueError, match="log_sigma must be None"):
        mile.warm_start_positions(params, log_sigma=0.0, heteroscedastic=True)
    one_output = mile.params_of({k: v for k, v in _starts(2).items() if k != "log_sigma"})
    with pytest.raises(ValueError, match="two outputs"):
        mile.warm_start_positions(one_output, heteroscedastic=True)
    with pytest.raises(ValueError, match="heteroscedastic model"):
        mile.predict({k: v for k, v in _starts(2).items() if k != "log_sigma"}, x)


@pytest.mark.slow
def test_categorical_log_density_and_run_bde():
    """likelihood="categorical": the classifier's log joint (no log_sigma site) and its chains."""
    x, _ = _data()
    y = (x[:, 0] > 0).astype(np.int32)
    widths = (2, 4, 2)
    params, _ = ensembles.train_ensemble(
        jax.random.PRNGKey(0),
        x,
        y,
        x,
        y,
        widths=widths,
        n_members=2,
        max_epochs=20,
        likelihood="categorical",
    )
    starts = mile.warm_start_positions(params, likelihood="categorical")
    assert "log_sigma" not in starts
    pos = jax.tree.map(lambda a: a[0], starts)
    spec = models.MLP(widths, likelihood="categorical")
    logdensity, _, _ = mcmc.log_joint_fn(jax.random.PRNGKey(0), spec.model, spec.kwargs(x, y))
    value = mile.log_density(pos, x, y, widths=widths, likelihood="categorical")
    np.testing.assert_allclose(value, logdensity(pos), rtol=1e-6)
    from jax.scipy.stats import norm

    flat = jnp.concatenate([jnp.ravel(v) for v in jax.tree.leaves(pos)])
    logits = nets.mlp_apply(mile.params_of(pos), x)
    expected = norm.logpdf(flat).sum() + jax.nn.log_softmax(logits)[jnp.arange(24), y].sum()
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    out = mile.run_bde(
        jax.random.PRNGKey(1),
        x,
        y,
        starts,
        widths=widths,
        tuning_steps=100,
        sampling_steps=20,
        thinning=5,
        likelihood="categorical",
    )
    assert out["samples"]["W1"].shape == (2, 4, 4, 2) and "log_sigma" not in out["samples"]
    assert np.all(np.isfinite(out["logdensity"]))
    with pytest.raises(ValueError, match="no log_sigma site"):
        mile.warm_start_positions(params, 0.0, likelihood="categorical")
    with pytest.raises(ValueError, match="heteroscedastic needs the gaussian"):
        mile.run_bde(
            jax.random.PRNGKey(1),
            x,
            y,
            starts,
            widths=widths,
            likelihood="categorical",
            heteroscedastic=True,
        )


@pytest.mark.slow
def test_fixed_noise_log_density_and_run_bde():
    """noise_scale: the mean regression with a declared σ (no log_sigma site), its log joint the
    model's and a hand-written one, and its chains."""
    x, y = _data()
    params, _ = ensembles.train_ensemble(
        jax.random.PRNGKey(0), x, y, x, y, widths=WIDTHS, n_members=2, max_epochs=20
    )
    starts = mile.warm_start_positions(params, fixed_noise=True)
    assert "log_sigma" not in starts
    pos = jax.tree.map(lambda a: a[0], starts)
    spec = models.MLP(WIDTHS, noise_scale=0.3)
    logdensity, _, _ = mcmc.log_joint_fn(jax.random.PRNGKey(0), spec.model, spec.kwargs(x, y))
    value = mile.log_density(pos, x, y, widths=WIDTHS, noise_scale=0.3)
    np.testing.assert_allclose(value, logdensity(pos), rtol=1e-6)
    from jax.scipy.stats import norm

    flat = jnp.concatenate([jnp.ravel(v) for v in jax.tree.leaves(pos)])
    mean = nets.mlp_apply(mile.params_of(pos), x)[:, 0]
    expected = norm.logpdf(flat).sum() + norm.logpdf(y, mean, 0.3).sum()
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    out = mile.run_bde(
        jax.random.PRNGKey(1),
        x,
        y,
        starts,
        widths=WIDTHS,
        tuning_steps=100,
        sampling_steps=20,
        thinning=5,
        noise_scale=0.3,
    )
    assert out["samples"]["W0"].shape == (2, 4, 2, 4) and "log_sigma" not in out["samples"]
    assert np.all(np.isfinite(out["logdensity"]))
    with pytest.raises(ValueError, match="log_sigma must be None"):
        mile.warm_start_positions(params, 0.0, fixed_noise=True)
    with pytest.raises(ValueError, match="mean regression only"):
        labels = (x[:, 0] > 0).astype(np.int32)
        mile.run_bde(jax.random.PRNGKey(1), x, labels, starts, widths=(2, 4, 2), noise_scale=0.3,
                     likelihood="categorical")  # fmt: skip
