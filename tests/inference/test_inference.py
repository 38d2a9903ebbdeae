"""Tests of NUTS (BlackJAX and NumPyro), mean-field VI and the multistart optimiser.

The known answer is the narrow network of depth 1, β = w: a conjugate Gaussian model
whose posterior is N(m, v) with precision Σx²/σ² + 1/τ² and mean (Σxy/σ²)·v. MFVI
is exact for it. Budgets are tiny (two chains, a few hundred draws), so the
tolerances are a few Monte-Carlo standard errors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.inference import mcmc, mean_field, optim, vi
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.theory import narrow_network as theory

X = np.array([-1.0, 0.5, 2.0, 1.5])
Y = np.array([-0.4, 0.3, 1.1, 0.7])
SIGMA, TAU = 0.5, 1.0
KWARGS = {"x": X, "y": Y, "depth": 1, "sigma": SIGMA, "tau": TAU}
PRECISION = X @ X / SIGMA**2 + 1 / TAU**2
POST_MEAN, POST_SD = (X @ Y / SIGMA**2) / PRECISION, PRECISION**-0.5  # 0.490, 0.180
BUDGET = {"num_chains": 2, "num_warmup": 200, "num_samples": 300}
# Standard error of the mean of ~600 (nearly independent) NUTS draws.
MEAN_TOL = 4 * POST_SD / np.sqrt(600)


def check_conjugate_draws(w):
    assert float(jnp.mean(w)) == pytest.approx(POST_MEAN, abs=MEAN_TOL)
    assert float(jnp.std(w)) == pytest.approx(POST_SD, rel=0.15)


# --- NUTS -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def blackjax_run():
    return mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, **BUDGET)


@pytest.fixture(scope="module")
def numpyro_run():
    return mcmc.nuts_numpyro(jax.random.key(0), models.narrow_network, KWARGS, **BUDGET)


@pytest.mark.slow
def test_nuts_output_layout(blackjax_run):
    samples, stats_ = blackjax_run
    assert set(samples) == {"w", "beta"}
    assert samples["w"].shape == (2, 300, 1)
    assert samples["beta"].shape == (2, 300)
    np.testing.assert_allclose(samples["beta"], samples["w"][..., 0])
    assert stats_["step_size"].shape == (2,)
    for key in ("acceptance_rate", "num_steps", "diverging"):
        assert stats_[key].shape == (2, 300)
    assert float(jnp.mean(stats_["acceptance_rate"])) > 0.6
    assert not bool(jnp.any(stats_["diverging"]))


def test_nuts_recovers_conjugate_posterior(blackjax_run):
    check_conjugate_draws(blackjax_run[0]["w"])


def test_nuts_is_deterministic_and_reuses_compilation(blackjax_run):
    before = mcmc._compiled_nuts.cache_info()
    again, _ = mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, **BUDGET)
    np.testing.assert_array_equal(again["w"], blackjax_run[0]["w"])
    # New data of the same shape and a new key: same compiled program, new draws.
    other = {**KWARGS, "y": -Y}
    flipped, _ = mcmc.nuts(jax.random.key(1), models.narrow_network, other, **BUDGET)
    after = mcmc._compiled_nuts.cache_info()
    assert after.hits == before.hits + 2
    assert after.misses == before.misses
    assert float(jnp.mean(flipped["w"])) == pytest.approx(-POST_MEAN, abs=MEAN_TOL)


@pytest.mark.slow
def test_nuts_in_chunks_gives_the_same_draws_and_resumes(blackjax_run, tmp_path):
    whole_samples, whole_stats = blackjax_run
    chunked = lambda: mcmc.nuts(  # noqa: E731
        jax.random.key(0),
        models.narrow_network,
        KWARGS,
        chunk_size=120,
        cache=tmp_path,
        **BUDGET,
    )
    samples, stats_ = chunked()
    np.testing.assert_allclose(samples["w"], whole_samples["w"], rtol=1e-5, atol=1e-6)
    for key in ("step_size", "acceptance_rate", "num_steps", "diverging"):
        assert stats_[key].shape == whole_stats[key].shape
    units = sorted(tmp_path.rglob("*.npz"))
    assert len(units) == 4  # the adaptation and three chunks of 120, 120 and 60 draws
    # an interrupted run: the last chunk is lost; the rerun computes only that one
    last = max(units, key=lambda p: p.stat().st_mtime_ns)
    kept = {p: p.stat().st_mtime_ns for p in units if p != last}
    last.unlink()
    again, _ = chunked()
    np.testing.assert_array_equal(again["w"], samples["w"])
    assert last.exists() and all(p.stat().st_mtime_ns == t for p, t in kept.items())
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, chunk_size=0, **BUDGET)


def test_nuts_accepts_warm_starts(blackjax_run):
    init = {"w": jnp.array([[0.4], [0.6]])}
    samples, _ = mcmc.nuts(
        jax.random.key(2), models.narrow_network, KWARGS, init_positions=init, **BUDGET
    )
    check_conjugate_draws(samples["w"])


def test_nuts_rejects_init_positions_with_wrong_chain_axis():
    init = {"w": jnp.zeros((3, 1))}
    with pytest.raises(ValueError, match=r"init_positions need a leading axis of 2 chains"):
        mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, init_positions=init, **BUDGET)


BAD_BUDGETS = [
    ({"num_chains": 0}, "num_chains must be"),
    ({"num_chains": 2.0}, "num_chains must be"),
    ({"num_warmup": -1}, "num_warmup must be"),
    ({"num_samples": 0}, "num_samples must be a positive integer"),
    ({"num_samples": None}, "num_samples must be a positive integer"),
    ({"num_chains": True}, "num_chains must be"),
]


@pytest.mark.parametrize("sampler", [mcmc.nuts, mcmc.nuts_numpyro])
@pytest.mark.parametrize(("change", "message"), BAD_BUDGETS)
def test_samplers_reject_bad_budgets(sampler, change, message):
    with pytest.raises(ValueError, match=message):
        sampler(jax.random.key(0), models.narrow_network, KWARGS, **{**BUDGET, **change})


@pytest.mark.slow
def test_nuts_caps_the_tree_depth():
    samples, stats = mcmc.nuts(
        jax.random.key(3), models.narrow_network, KWARGS, max_num_doublings=1, **BUDGET
    )
    assert int(stats["num_steps"].max()) <= 1  # depth 1: a single leapfrog step
    check_conjugate_draws(samples["w"])
    with pytest.raises(ValueError, match="max_num_doublings must be a positive integer"):
        mcmc.nuts(jax.random.key(3), models.narrow_network, KWARGS, max_num_doublings=0, **BUDGET)


@pytest.mark.slow
def test_warm_starts_find_the_posterior_mode_of_every_chain():
    positions, potential = mcmc.warm_starts(
        jax.random.key(4), models.narrow_network, KWARGS, num_chains=3, num_steps=500
    )
    assert positions["w"].shape == (3, 1) and potential.shape == (3,)
    np.testing.assert_allclose(positions["w"][:, 0], POST_MEAN, atol=1e-3)  # Gaussian: mode = mean
    with pytest.raises(ValueError, match="num_chains must be a positive integer"):
        mcmc.warm_starts(jax.random.key(4), models.narrow_network, KWARGS, num_chains=0)
    with pytest.raises(ValueError, match="init_scale must be a positive number"):
        mcmc.warm_starts(
            jax.random.key(4), models.narrow_network, KWARGS, num_chains=2, init_scale=0.0
        )


def test_blackjax_nuts_needs_warmup_for_its_adaptation():
    with pytest.raises(ValueError, match="nuts: num_warmup must be a positive integer"):
        mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, **{**BUDGET, "num_warmup": 0})


def test_nuts_rejects_unhashable_settings():
    with pytest.raises(TypeError, match="must be hashable"):
        mcmc.nuts(jax.random.key(0), models.narrow_network, {**KWARGS, "tau": [1.0]}, **BUDGET)


def test_fit_mfvi_narrow_rejects_no_starts():
    with pytest.raises(ValueError, match="num_starts must be a positive integer"):
        vi.fit_mfvi_narrow(jax.random.key(0), X, Y, depth=1, sigma=1.0, tau=1.0, num_starts=0)


@pytest.mark.slow
def test_nuts_numpyro_output_layout(numpyro_run):
    samples, stats_ = numpyro_run
    assert samples["w"].shape == (2, 300, 1)
    assert samples["beta"].shape == (2, 300)
    assert set(stats_) == {"acceptance_rate", "num_steps", "diverging"}
    for value in stats_.values():
        assert value.shape == (2, 300)


def test_nuts_numpyro_recovers_conjugate_posterior(numpyro_run):
    check_conjugate_draws(numpyro_run[0]["w"])


def test_both_backends_agree(blackjax_run, numpyro_run):
    a, b = blackjax_run[0]["w"], numpyro_run[0]["w"]
    assert stats.ks_2samp(np.ravel(a), np.ravel(b)).pvalue > 1e-3


@pytest.mark.slow
def test_to_arviz_dims(blackjax_run):
    idata = mcmc.to_arviz(blackjax_run[0])
    post = idata.posterior
    assert set(post.data_vars) == {"w", "beta"}
    assert post.sizes["chain"] == 2
    assert post.sizes["draw"] == 300
    assert post["w"].shape == (2, 300, 1)
    np.testing.assert_allclose(post["beta"].values, np.asarray(blackjax_run[0]["beta"]))
    only = mcmc.to_arviz(blackjax_run[0], var_names=["beta"])
    assert list(only.posterior.data_vars) == ["beta"]


def test_log_joint_fn_matches_model_log_joint():
    # Same model and settings as the NUTS runs: the traced program is reused.
    logdensity, init, postprocess = mcmc.log_joint_fn(
        jax.random.key(0), models.narrow_network, KWARGS
    )
    assert init["w"].shape == (1,)
    assert bool(jnp.all(jnp.abs(init["w"]) <= 2.0))
    for w in (-0.77, 0.3):
        expected = stats.norm.logpdf(w, 0, TAU) + stats.norm.logpdf(Y, w * X, SIGMA).sum()
        got = logdensity({"w": jnp.array([w])})
        assert float(got) == pytest.approx(expected, rel=1e-5)
    assert float(postprocess({"w": jnp.array([-0.77])})["beta"]) == pytest.approx(-0.77)


def test_split_kwargs_separates_arrays_from_settings():
    arrays, static = mcmc.split_kwargs(KWARGS)
    assert set(arrays) == {"x", "y"}
    np.testing.assert_array_equal(arrays["x"], X)
    assert static == (("depth", 1), ("sigma", SIGMA), ("tau", TAU))
    hash(static)


# --- mean-field VI --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def svi_fit():
    q, losses = vi.fit_mfvi(
        jax.random.key(3), models.narrow_network, KWARGS, num_steps=1500, learning_rate=0.02
    )
    return q, losses


@pytest.mark.slow
def test_fit_mfvi_is_exact_for_a_gaussian_posterior(svi_fit):
    q, losses = svi_fit
    assert losses.shape == (1500,)
    assert svi_fit[0].loc["w"].shape == (1,)
    assert float(svi_fit[0].loc["w"][0]) == pytest.approx(POST_MEAN, abs=0.02)
    assert float(svi_fit[0].scale["w"][0]) == pytest.approx(POST_SD, rel=0.05)
    # The loss is the negative ELBO; at the optimum it is −log p(y).
    cov = SIGMA**2 * np.eye(X.size) + TAU**2 * np.outer(X, X)
    log_evidence = stats.multivariate_normal(np.zeros(X.size), cov).logpdf(Y)
    assert float(jnp.mean(svi_fit[1][-200:])) == pytest.approx(-log_evidence, abs=0.1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_steps": 0}, "num_steps must be a positive integer"),
        ({"num_steps": 10.0}, "num_steps must be a positive integer"),
        ({"num_particles": 0}, "num_particles must be a positive integer"),
        ({"learning_rate": 0.0}, "fit_mfvi: learning_rate must be a positive number"),
        ({"init_scale": -1.0}, "fit_mfvi: init_scale must be a positive number"),
    ],
)
def test_fit_mfvi_rejects_bad_settings(change, message):
    with pytest.raises(ValueError, match=message):
        vi.fit_mfvi(jax.random.key(0), models.narrow_network, KWARGS, **change)


def test_sample_accepts_fit_mfvi_output(svi_fit):
    draws = mean_field.sample(jax.random.key(5), svi_fit[0], 4000)
    assert draws["w"].shape == (4000, 1)
    assert float(jnp.mean(draws["w"])) == pytest.approx(POST_MEAN, abs=0.03)


FIT_NARROW = {"max_depth": 4, "num_starts": 8, "num_steps": 300, "sigma": SIGMA, "tau": TAU}


@pytest.mark.slow
def test_fit_mfvi_narrow_depth_one_is_the_exact_posterior():
    fit = vi.fit_mfvi_narrow(jax.random.key(6), X, Y, depth=1, **FIT_NARROW)
    assert fit[0].loc["w"].shape == fit[0].scale["w"].shape == (1,)
    # float32: the ELBO is flat to ~1e-7 relative, so s is found to ~1e-3.
    assert float(fit[0].loc["w"][0]) == pytest.approx(POST_MEAN, rel=1e-3)
    assert float(fit[0].scale["w"][0]) == pytest.approx(POST_SD, rel=1e-3)
    cov = SIGMA**2 * np.eye(X.size) + TAU**2 * np.outer(X, X)
    log_evidence = stats.multivariate_normal(np.zeros(X.size), cov).logpdf(Y)
    assert float(fit[1]) == pytest.approx(log_evidence, abs=1e-4)


def test_fit_mfvi_narrow_beats_stochastic_vi(svi_fit):
    fit = vi.fit_mfvi_narrow(jax.random.key(6), X, Y, depth=1, **FIT_NARROW)
    svi_elbo = theory.mfvi_elbo(svi_fit[0].loc["w"], svi_fit[0].scale["w"], X, Y, SIGMA, TAU)
    assert float(fit[1]) >= float(svi_elbo) - 1e-5


@pytest.mark.slow
def test_fit_mfvi_narrow_depth_three_has_equal_magnitudes():
    fit = vi.fit_mfvi_narrow(jax.random.key(7), X, Y, depth=3, **FIT_NARROW)
    mu, s = np.asarray(fit[0].loc["w"]), np.asarray(fit[0].scale["w"])
    assert mu.shape == s.shape == (3,)
    np.testing.assert_allclose(np.abs(mu), np.abs(mu[0]), rtol=1e-3)
    np.testing.assert_allclose(s, s[0], rtol=1e-3)
    assert np.prod(mu) > 0  # the product has the sign of Σxy
    elbo = float(fit[1])
    assert elbo == pytest.approx(float(theory.mfvi_elbo(mu, s, X, Y, SIGMA, TAU)), abs=1e-4)
    # No perturbation of the optimum does better.
    rng = np.random.default_rng(0)
    mu_p = mu + 0.05 * rng.normal(size=(200, 3))
    s_p = s * np.exp(0.05 * rng.normal(size=(200, 3)))
    assert np.all(np.asarray(theory.mfvi_elbo(mu_p, s_p, X, Y, SIGMA, TAU)) <= elbo + 1e-5)


@pytest.mark.parametrize("depth", [0, 5, 2.0])
def test_fit_mfvi_narrow_rejects_bad_depth(depth):
    with pytest.raises(ValueError, match=r"depth must be an integer in 1..4"):
        vi.fit_mfvi_narrow(jax.random.key(0), X, Y, depth=depth, **FIT_NARROW)


@pytest.mark.parametrize("name", ["sigma", "tau"])
def test_fit_mfvi_narrow_rejects_non_positive_scales(name):
    with pytest.raises(ValueError, match=f"{name} must be a positive number"):
        vi.fit_mfvi_narrow(jax.random.key(0), X, Y, depth=1, **{**FIT_NARROW, name: 0.0})


@pytest.mark.slow
def test_narrow_negative_elbo_ignores_inactive_layers():
    mu = jnp.array([0.8, -0.5, 123.0, -7.0])
    log_s = jnp.log(jnp.array([0.3, 0.2, 5.0, 0.01]))
    active = jnp.arange(4) < 2
    got = vi.narrow_negative_elbo({"mu": mu, "log_s": log_s}, active, X, Y, SIGMA, TAU)
    expected = -theory.mfvi_elbo(mu[:2], jnp.exp(log_s[:2]), X, Y, SIGMA, TAU)
    assert float(got) == pytest.approx(float(expected), rel=1e-5)


# --- multistart optimiser -------------------------------------------------------------------


def quadratic(params, center):
    return jnp.sum((params["p"] - center) ** 2)


def test_multistart_minimise_finds_the_minimum_from_every_start():
    inits = {"p": jnp.array([[5.0, -5.0], [0.0, 0.0], [-3.0, 2.0]])}
    center = jnp.array([1.0, -2.0])
    params, final, trace = optim.multistart_minimise(
        quadratic, inits, center, num_steps=300, learning_rate=0.1, newton_steps=2
    )
    assert params["p"].shape == (3, 2)
    assert trace.shape == (3, 300)
    np.testing.assert_allclose(params["p"], np.tile([1.0, -2.0], (3, 1)), atol=1e-5)
    np.testing.assert_allclose(final, [0.0, 0.0, 0.0], atol=1e-10)
    assert bool(jnp.all(trace[:, -1] < trace[:, 0]))


newton_step = jax.jit(optim.newton_step, static_argnums=0)


def test_newton_step_solves_a_quadratic_in_one_step():
    loss = lambda p, a: 0.5 * p["v"] @ a @ p["v"] - p["v"].sum()
    a = jnp.array([[3.0, 1.0], [1.0, 2.0]])
    out = newton_step(loss, {"v": jnp.zeros(2)}, a)
    np.testing.assert_allclose(out["v"], np.linalg.solve(np.asarray(a), np.ones(2)), rtol=1e-5)


def test_newton_step_escapes_a_saddle():
    # f = x² − y²: the saddle-free direction |H|⁻¹∇ from (1, 1) is (1, −1).
    loss = lambda p: p["v"][0] ** 2 - p["v"][1] ** 2
    out = newton_step(loss, {"v": jnp.array([1.0, 1.0])})
    np.testing.assert_allclose(out["v"], [0.0, 2.0], atol=1e-6)


def test_newton_step_keeps_point_when_no_step_helps():
    loss = lambda p: jnp.sum(p["v"] ** 2)
    out = newton_step(loss, {"v": jnp.zeros(3)})
    np.testing.assert_array_equal(out["v"], np.zeros(3))


@pytest.mark.parametrize(
    ("inits", "change", "message"),
    [
        ({}, {}, "inits must be a pytree of arrays with a leading axis"),
        ({"p": jnp.array(1.0)}, {}, "inits must be a pytree of arrays with a leading axis"),
        ({"p": jnp.zeros((2, 2))}, {"num_steps": 0}, "num_steps must be a positive integer"),
        ({"p": jnp.zeros((2, 2))}, {"learning_rate": 0.0}, "learning_rate must be positive"),
        ({"p": jnp.zeros((2, 2))}, {"newton_steps": -1}, "newton_steps must be a non-negative"),
    ],
)
def test_multistart_minimise_rejects_bad_inputs(inits, change, message):
    with pytest.raises(ValueError, match=message):
        optim.multistart_minimise(quadratic, inits, jnp.zeros(2), **change)
