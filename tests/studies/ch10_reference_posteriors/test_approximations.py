"""Tests of chapter 10's Gaussian approximations around a mode: the predictive format of every
method on a tiny regression and a tiny classification, determinism, and one behaviour per method
that a broken method would fail."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import laplace as la
from bnn_posteriors.inference import viking as vk
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.studies.ch10_reference_posteriors import approximations as ap
from bnn_posteriors.studies.ch10_reference_posteriors import problems
from bnn_posteriors.studies.ch10_reference_posteriors.fits import DoesNotApply, MethodFit

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, size=(100, 1)).astype(np.float32)
Y = (np.sin(2 * X[:, 0]) + 0.1 * RNG.normal(size=100)).astype(np.float32)
FAR = np.array([[-6.0], [-5.0], [5.0], [6.0]], np.float32)
X2 = RNG.uniform(-2, 2, size=(30, 2)).astype(np.float32)
LABELS = np.argmax(np.stack([X2[:, 0], X2[:, 1], -X2.sum(1)], 1), 1).astype(np.int32)


def _problem(kind: str) -> problems.Problem:
    """Tiny problems whose test points are 10 training points and whose grid lies far away:
    a 1–8–1 regression (P = 25) on 100 points, a 2–4–3 classifier on 30."""
    if kind == "regression":
        mlp = MLP((1, 8, 1), activation="tanh")
        return problems.Problem("reg", "tiny regression", mlp, X, Y, X[:10], Y[:10], FAR)
    mlp = MLP((2, 4, 3), likelihood="categorical", activation="tanh")
    return problems.Problem(
        "cls", "tiny classification", mlp, X2, LABELS, X2[:10], LABELS[:10], 4 * X2[:4]
    )


REG, CLS = _problem("regression"), _problem("classification")
S = 300
VI = dict(num_steps=1500, num_particles=2, learning_rate=0.03, num_samples=S)  # compile-bound
MAP = dict(map_steps=600, map_learning_rate=0.03, num_samples=S)
SETTINGS = {
    "map_point": dict(num_steps=600, learning_rate=0.03),
    "mfvi": VI,
    "tempered_mfvi": VI,
    "symmetrised_vi": {**VI, "num_perms": 4},
    "sampled_laplace": MAP,
    "linearised_laplace": MAP,
    "null_space_laplace": MAP,
    "viking": {**MAP, "num_steps": 100, "num_mc_samples": 4},
    "laplace_diffusion": {**MAP, "num_steps": 5},
}
KEY = jax.random.PRNGKey(3)


@functools.cache
def fit(method: str, kind: str, seed: int = 3) -> MethodFit:
    prob = REG if kind == "regression" else CLS
    return getattr(ap, method)(jax.random.PRNGKey(seed), prob, **SETTINGS[method])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["regression", "classification"])
@pytest.mark.parametrize("method", list(SETTINGS))
def test_predictive_format_and_cost(method, kind):
    prob = REG if kind == "regression" else CLS
    out = fit(method, kind)
    assert set(out.predictive) == set(prob.points())
    draws = 1 if method == "map_point" else S
    for name, x in prob.points().items():
        pred = out.predictive[name]
        if kind == "regression":
            assert set(pred) == {"f", "noise_scale"}
            assert pred["f"].shape == (draws, len(x)) and pred["noise_scale"].shape == (draws,)
            assert np.all(pred["noise_scale"] > 0)
        else:
            assert set(pred) == {"probs"} and pred["probs"].shape == (draws, len(x), 3)
            np.testing.assert_allclose(pred["probs"].sum(-1), 1.0, atol=1e-5)
        assert all(np.all(np.isfinite(v)) for v in pred.values())
    assert out.gradient_evaluations > 0
    if method not in ("map_point", "mfvi", "tempered_mfvi"):
        assert out.extra_flops > 0  # an eigh, an SVD or the I term


@pytest.mark.slow
@pytest.mark.parametrize("method", list(SETTINGS))
def test_same_key_same_fit(method):
    a, b = fit(method, "regression"), getattr(ap, method)(KEY, REG, **SETTINGS[method])
    for name in a.predictive:
        for k in a.predictive[name]:
            np.testing.assert_array_equal(a.predictive[name][k], b.predictive[name][k])
    assert (a.gradient_evaluations, a.extra_flops) == (b.gradient_evaluations, b.extra_flops)


@pytest.mark.parametrize("method", ["map_point", "mfvi"])  # compiled once: another key is cheap
def test_another_key_another_fit(method):
    other = fit(method, "regression", seed=4).predictive["test"]["f"]
    assert not np.allclose(other, fit(method, "regression").predictive["test"]["f"])


def _train_rmse(out: MethodFit) -> float:  # the test points are training points
    return float(np.sqrt(np.mean((out.predictive["test"]["f"].mean(0) - Y[:10]) ** 2)))


def _sd(out: MethodFit, name: str) -> float:
    return float(out.predictive[name]["f"].std(0).mean())


def test_map_fits_the_training_data_and_its_sigma_is_the_residuals():
    out = fit("map_point", "regression")
    assert _train_rmse(out) < 0.3 * Y.std()
    sigma = out.predictive["test"]["noise_scale"][0]
    assert 0.05 < sigma < 0.3 * Y.std()  # the residuals' RMS (data noise 0.1), not Y's sd
    probs = fit("map_point", "classification").predictive["test"]["probs"][0]
    assert (probs.argmax(-1) == LABELS[:10]).mean() >= 0.9
    # the Laplace methods and VIKING start from this MAP: the same σ
    for method in (
        "sampled_laplace",
        "linearised_laplace",
        "null_space_laplace",
        "viking",
        "laplace_diffusion",
    ):
        noise = fit(method, "regression").predictive["test"]["noise_scale"]
        np.testing.assert_allclose(noise, sigma, rtol=1e-6)


@pytest.mark.parametrize("method", ["mfvi", "symmetrised_vi"])
def test_vi_fits_the_data_with_a_spread_and_a_sampled_sigma(method):
    out = fit(method, "regression")
    assert _train_rmse(out) < 0.3 * Y.std()
    assert 0 < _sd(out, "test") < 0.3 * Y.std()
    noise = out.predictive["test"]["noise_scale"]
    assert 0.05 < noise.mean() < 0.3 and noise.std() > 0  # draws of q's factor of log σ


@pytest.mark.slow
def test_tempered_mfvi_spread_grows_with_the_temperature():
    assert ap.balanced_temperature(REG) == pytest.approx(100 / 25)
    cold = ap.tempered_mfvi(KEY, REG, temperature=1e-2, **VI)
    hot = ap.tempered_mfvi(KEY, REG, temperature=30.0, **VI)
    assert _sd(hot, "test") > 3 * _sd(cold, "test")
    # η = 1 is the untempered fit
    one = ap.tempered_mfvi(KEY, REG, temperature=1.0, **VI).predictive["test"]["f"]
    np.testing.assert_array_equal(one, fit("mfvi", "regression").predictive["test"]["f"])
    with pytest.raises(ValueError, match="temperature"):
        ap.tempered_mfvi(KEY, REG, temperature=-1.0, **VI)


def test_symmetrised_vi_refuses_two_hidden_layers():
    deep = problems.Problem(
        "deep", "two hidden layers", MLP((1, 3, 3, 1), activation="tanh"), X, Y, X[:3], Y[:3]
    )
    with pytest.raises(DoesNotApply, match="one hidden layer"):  # the scoreboard shows why
        ap.symmetrised_vi(KEY, deep, **SETTINGS["symmetrised_vi"])


def _posterior(prob=None):
    """The Laplace fit of the methods for KEY: the MAP from the key's first half."""
    prob = REG if prob is None else prob
    k_map, k_draw = jax.random.split(KEY)
    params, sigma = ap._map_fit(k_map, prob, MAP["map_steps"], MAP["map_learning_rate"], 2)
    return ap._laplace(params, sigma, prob), sigma, k_draw


def test_sampled_laplace_pushes_the_laplace_draws_through_the_network():
    """The draws equal the package's sampled predictive (model_fn on the flat θ_s, not the
    model's sites), so the sites are read back in the right order."""
    post, _, k_draw = _posterior()
    want = np.asarray(la.predictive_samples(post, jnp.asarray(FAR), k_draw, S))[:, :, 0]
    got = fit("sampled_laplace", "regression").predictive["grid"]["f"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert got.std(0).min() > 0


@pytest.mark.slow
def test_linearised_laplace_draws_have_the_closed_form_moments():
    out = fit("linearised_laplace", "regression").predictive["grid"]
    post, sigma, _ = _posterior()
    mean, var = la.linearised_predictive(post, jnp.asarray(FAR))
    sd = np.sqrt(np.asarray(var)[:, 0] - sigma**2)
    assert np.all(np.abs(out["f"].mean(0) - np.asarray(mean)[:, 0]) < 4 * sd / np.sqrt(S))
    ratio = out["f"].var(0) / sd**2
    assert np.all((ratio > 0.7) & (ratio < 1.4))  # S = 300 draws: sd of the ratio ≈ 0.08


@pytest.mark.slow
def test_null_space_draws_leave_the_training_points_fixed():
    """On 10 points a 1–8–8–1 net (P = 97) has a kernel that moves f away from the data (the
    1–8–1 net's kernel is made of units the MAP switched off, which move f nowhere)."""
    deep = problems.Problem(
        "deep",
        "10 points",
        MLP((1, 8, 8, 1), activation="tanh"),
        X[:10],
        Y[:10],
        X[:10],
        Y[:10],
        FAR,
    )
    out = ap.null_space_laplace(KEY, deep, **MAP)
    assert _sd(out, "test") < 1e-3 * _sd(out, "grid") and _sd(out, "grid") > 0


def test_tune_prior_false_keeps_the_problems_prior_precision(monkeypatch):
    """The null-space LA and VIKING approximate the declared posterior with tune_prior=False:
    α = 1/prior_scale² reaches the projected draws and VIKING's fit, untrained; with True the
    null-space LA takes the evidence's α and VIKING learns it, as their papers do."""
    prob = problems.Problem(
        "p", "prior scale 2", MLP((1, 3, 1), activation="tanh", prior_scale=2.0), X, Y, X[:3], Y[:3]
    )
    seen = {}
    projected, fit_viking = ap.ns.projected_samples, ap.vk.fit_viking

    def spy_projected(key, mean, projector, precision, num):
        seen["projected"] = float(precision)
        return projected(key, mean, projector, precision, num)

    def spy_viking(*args, **kwargs):
        seen["viking"] = (kwargs["learn_prior_precision"], kwargs["init_log_precision"])
        return fit_viking(*args, **{**kwargs, "num_steps": 2})

    monkeypatch.setattr(ap.ns, "projected_samples", spy_projected)
    monkeypatch.setattr(ap.vk, "fit_viking", spy_viking)
    small = dict(map_steps=20, num_samples=4)
    ap.null_space_laplace(KEY, prob, tune_prior=False, **small)
    assert seen["projected"] == pytest.approx(0.25)
    ap.null_space_laplace(KEY, prob, tune_prior=True, **small)
    assert seen["projected"] != pytest.approx(0.25)  # the evidence's α
    ap.viking(KEY, prob, tune_prior=False, num_steps=2, num_mc_samples=2, **small)
    assert seen["viking"] == (False, pytest.approx(np.log(0.25)))
    ap.viking(KEY, prob, tune_prior=True, num_steps=2, num_mc_samples=2, **small)
    assert seen["viking"][0] is True
    ap.viking(KEY, prob, num_steps=2, num_mc_samples=2, **small)  # the default: the declared α
    assert seen["viking"] == (False, pytest.approx(np.log(0.25)))
    ap.null_space_laplace(KEY, prob, **small)
    assert seen["projected"] == pytest.approx(0.25)
    with pytest.raises(TypeError, match="tune_prior must be true or false"):
        ap.null_space_laplace(KEY, prob, tune_prior="no", **small)


@pytest.mark.slow
def test_viking_draws_have_its_linearised_predictive_variance():
    out = fit("viking", "regression").predictive["grid"]
    k_map, k_rest = jax.random.split(KEY)
    settings = {k: v for k, v in SETTINGS["viking"].items() if k != "num_samples"}
    post, model_fn, _ = ap._viking_fit(
        k_map,
        jax.random.split(k_rest)[0],
        REG,
        noise_rounds=2,
        learning_rate=1e-2,
        rtol=None,
        **settings,
    )
    mean, var = vk.linearised_predictive(post, model_fn, jnp.asarray(FAR))
    np.testing.assert_allclose(
        out["f"].mean(0), np.asarray(mean)[:, 0], atol=4 * float(np.sqrt(np.max(var)) / np.sqrt(S))
    )
    ratio = out["f"].var(0) / np.asarray(var)[:, 0]
    assert np.all((ratio > 0.7) & (ratio < 1.4))


def test_bad_inputs():
    with pytest.raises(TypeError, match="problems.Problem"):
        ap.map_point(KEY, "reg")
    with pytest.raises(ValueError, match="num_samples"):
        ap.mfvi(KEY, REG, num_samples=0)
    hetero = problems.Problem(
        "h", "h", MLP((1, 3, 2), activation="tanh", heteroscedastic=True), X, Y, X[:3], Y[:3]
    )
    with pytest.raises(ValueError, match="heteroscedastic"):
        ap.linearised_laplace(KEY, hetero)
    with pytest.raises(ValueError, match="noise_rounds"):
        ap.map_point(KEY, REG, num_steps=1, noise_rounds=2)


@pytest.mark.slow
def test_laplace_diffusion_keeps_the_training_fit_that_sampled_laplace_loses():
    """[RI]: the diffusion's steps stay in the GGN's image, so on 10 points of a 1–8–8–1 net
    (P = 97, a large kernel) its draws barely move the training predictions, where sampled
    Laplace's kernel part (variance 1/α) moves them by more than the targets' spread (the
    unprojected diffusion would too). Measured over seeds 0–4: sd 0.12–0.20 against 2.2–2.8."""
    deep = problems.Problem(
        "deep", "10 points", MLP((1, 8, 8, 1), activation="tanh"), X[:10], Y[:10], X[:10], Y[:10]
    )
    diffusion = ap.laplace_diffusion(KEY, deep, **{**MAP, "num_steps": 5})
    sampled = ap.sampled_laplace(KEY, deep, **MAP)
    assert 0 < _sd(diffusion, "test") < 0.25 * _sd(sampled, "test")
    with pytest.raises(ValueError, match="num_steps"):
        ap.laplace_diffusion(KEY, deep, **{**MAP, "num_steps": 0})
    with pytest.raises(ValueError, match="max_rank"):
        ap.laplace_diffusion(KEY, deep, **{**MAP, "num_steps": 1, "max_rank": 0})


def test_laplace_diffusion_leaves_out_a_rank_above_its_budget():
    with pytest.raises(DoesNotApply, match=r"rank k = \d+ .* exceeds max_rank = 1"):
        ap.laplace_diffusion(KEY, REG, **{**MAP, "num_steps": 1, "max_rank": 1})
