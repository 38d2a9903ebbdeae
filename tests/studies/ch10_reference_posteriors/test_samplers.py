"""Tests of chapter 10's sample-based methods (deep ensemble, MILE, one NUTS chain, MetricBNN)
on tiny problems: the contract's format, determinism, and one property per method that a
broken method would fail."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.studies.ch10_reference_posteriors import problems, samplers
from bnn_posteriors.studies.ch10_reference_posteriors.fits import MethodFit

RNG = np.random.default_rng(0)
X_REG = np.sort(RNG.uniform(-2, 2, (30, 1)), axis=0).astype(np.float32)
Y_REG = (np.sin(2 * X_REG[:, 0]) + 0.1 * RNG.normal(size=30)).astype(np.float32)
X_CLS = RNG.normal(size=(30, 2)).astype(np.float32)
Y_CLS = (X_CLS[:, 0] > 0).astype(np.int32)
GRID = np.linspace(-6, 6, 13, dtype=np.float32)[:, None]  # far beyond the data at both ends


def _regression(spec=None) -> problems.Problem:
    """One hidden layer; the test inputs are the training inputs, so the predictive at
    "test" is the fit on the training set."""
    spec = spec or MLP((1, 8, 1), activation="tanh")
    return problems.Problem("tiny_reg", "", spec, X_REG, Y_REG, X_REG, Y_REG, GRID)


def _classification() -> problems.Problem:
    """Two hidden layers, two classes split by the first input; test = training inputs."""
    spec = MLP((2, 4, 3, 2), likelihood="categorical", activation="tanh")
    return problems.Problem("tiny_cls", "", spec, X_CLS, Y_CLS, X_CLS, Y_CLS)


ENSEMBLE = dict(max_epochs=200, batch_size=8, patience=200, learning_rate=0.03)
SETTINGS = {
    "deep_ensemble": dict(n_members=3, **ENSEMBLE),
    "mile": dict(num_chains=3, tuning_steps=200, sampling_steps=100, thinning=10, **ENSEMBLE),
    "single_nuts": dict(gradient_budget=3000, max_num_doublings=5),
}
SETTINGS["metricbnn"] = dict(
    num_samples=20,
    map_steps=1000,
    num_steps=10,
    ae_updates=50,
    ae_batch=32,
    ae_hidden=(16,),
    latent_dim=4,
    ae_components=8,
)
DRAWS = {"deep_ensemble": 3, "mile": 30, "metricbnn": 20}
KEY = jax.random.PRNGKey(3)


@pytest.fixture(scope="module")
def fits():
    """Every method's fit of both tiny problems, once per module."""
    out = {}
    for method, kw in SETTINGS.items():
        for prob in (_regression(), _classification()):
            out[method, prob.likelihood] = getattr(samplers, method)(KEY, prob, **kw)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("method", list(SETTINGS))
@pytest.mark.parametrize("likelihood", ["gaussian", "categorical"])
def test_the_contract_of_every_method(fits, method, likelihood):
    fit = fits[method, likelihood]
    assert isinstance(fit, MethodFit) and fit.gradient_evaluations > 0
    prob = _regression() if likelihood == "gaussian" else _classification()
    assert set(fit.predictive) == set(prob.points())
    draws = {pred[next(iter(pred))].shape[0] for pred in fit.predictive.values()}
    assert len(draws) == 1  # the same draws at every set of points
    if method in DRAWS:
        assert draws == {DRAWS[method]}
    for name, x in prob.points().items():
        pred = fit.predictive[name]
        if likelihood == "gaussian":
            assert set(pred) == {"f", "noise_scale"} and pred["f"].shape[1] == len(x)
            assert np.all(np.isfinite(pred["f"])) and np.all(pred["noise_scale"] > 0)
        else:
            probs = pred["probs"]
            assert set(pred) == {"probs"} and probs.shape[1:] == (len(x), 2)
            assert np.all(probs >= 0)
            np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
        assert all(v.dtype == np.float32 for v in pred.values())


@pytest.mark.slow
@pytest.mark.parametrize("method", list(SETTINGS))
def test_the_same_key_gives_the_same_fit(fits, method):
    again = getattr(samplers, method)(KEY, _regression(), **SETTINGS[method])
    first = fits[method, "gaussian"]
    assert again.gradient_evaluations == first.gradient_evaluations
    for name, pred in first.predictive.items():
        for k, v in pred.items():
            np.testing.assert_array_equal(again.predictive[name][k], v)


def _fit_rmse(fit) -> float:
    """RMSE of the predictive mean on the training set (test = training inputs)."""
    return float(np.sqrt(np.mean((fit.predictive["test"]["f"].mean(0) - Y_REG) ** 2)))


def _train_accuracy(fit) -> float:
    return float(np.mean(fit.predictive["test"]["probs"].mean(0).argmax(-1) == Y_CLS))


@pytest.mark.parametrize("method", list(SETTINGS))
def test_every_method_fits_the_data(fits, method):
    """A method that does not learn (or predicts from the wrong parameters) fails: the
    predictive mean explains most of the variance, and classifies the training set."""
    assert _fit_rmse(fits[method, "gaussian"]) < 0.5 * Y_REG.std()
    assert _train_accuracy(fits[method, "categorical"]) >= 0.9


def test_ensemble_members_differ_and_carry_their_residual_sd(fits):
    pred = fits["deep_ensemble", "gaussian"].predictive["test"]
    assert pred["f"].std(0).mean() > 1e-3  # members from different initialisations
    rmse = np.sqrt(np.mean((pred["f"] - Y_REG) ** 2, axis=1))
    np.testing.assert_allclose(pred["noise_scale"], rmse, rtol=1e-4)
    # minibatch cost: 27 training rows (3 held out), 3 batches of 8 → 24/30 of a gradient an
    # epoch, 200 epochs (no early stop at patience 200) for each of 3 members
    assert fits["deep_ensemble", "gaussian"].gradient_evaluations == pytest.approx(3 * 200 * 0.8)


def test_sampled_predictives_widen_away_from_the_data(fits):
    """The Bayesian methods' spread of f is larger far from the data than on it."""
    for method in ("mile", "single_nuts", "deep_ensemble"):
        pred = fits[method, "gaussian"].predictive
        on_data = pred["test"]["f"].std(0).mean()
        far = pred["grid"]["f"].std(0)[[0, 1, -2, -1]].mean()
        assert far > 2 * on_data, method


def test_mile_counts_its_ensemble_and_two_gradients_per_step(fits):
    mile, ensemble = fits["mile", "gaussian"], fits["deep_ensemble", "gaussian"]
    # the same ensemble (same key split, members and settings) plus 3 chains × 300 steps × 2
    assert mile.gradient_evaluations > 3 * 300 * 2
    assert mile.gradient_evaluations - 3 * 300 * 2 == pytest.approx(
        _mile_ensemble_gradients(), rel=1e-6
    )
    assert ensemble.gradient_evaluations > 0


def _mile_ensemble_gradients() -> float:
    key = jax.random.split(KEY)[0]  # mile's ensemble key
    fit = samplers.deep_ensemble(key, _regression(), **SETTINGS["deep_ensemble"])
    return fit.gradient_evaluations


def test_mile_samples_a_declared_noise_scale():
    """A problem that fixes σ: MILE's chains have no log σ and every draw carries that σ."""
    fixed = _regression(MLP((1, 8, 1), activation="tanh", noise_scale=0.1))
    fit = samplers.mile(KEY, fixed, **SETTINGS["mile"])
    pred = fit.predictive["test"]
    assert pred["f"].shape == (DRAWS["mile"], len(X_REG)) and np.all(np.isfinite(pred["f"]))
    np.testing.assert_array_equal(pred["noise_scale"], np.float32(0.1))


def test_mile_refuses_a_model_it_cannot_sample():
    hetero = _regression(MLP((1, 8, 2), activation="tanh", heteroscedastic=True))
    with pytest.raises(ValueError, match="homoscedastic|heteroscedastic"):
        samplers.mile(KEY, hetero, **SETTINGS["mile"])
    no_bias = _regression(MLP((1, 8, 1), activation="tanh", bias=False))
    with pytest.raises(ValueError, match="biases"):
        samplers.deep_ensemble(KEY, no_bias, **SETTINGS["deep_ensemble"])


def test_nuts_schedule_caps_the_worst_case_at_the_budget():
    assert samplers.nuts_schedule(1_200_000, 10, 300) == (10, 1173)  # 1173 × 1023 ≤ 1.2 M
    assert samplers.nuts_schedule(30_000, 10, 300) == (6, 476)  # depth lowered: 476 × 63
    assert samplers.nuts_schedule(3000, 5, 300) == (3, 428)
    assert samplers.nuts_schedule(300, 10, 300) == (1, 300)
    with pytest.raises(ValueError, match="below min_iterations=300"):
        samplers.nuts_schedule(299, 10, 300)


def test_single_nuts_spends_at_most_its_budget(fits):
    """Every iteration costs 1 to 7 leapfrog steps at the schedule's depth 3: 428 to 2996."""
    for likelihood in ("gaussian", "categorical"):
        spent = fits["single_nuts", likelihood].gradient_evaluations
        assert 428 < spent <= 3000 and spent == int(spent), (likelihood, spent)
        draws = fits["single_nuts", likelihood].predictive["test"]
        assert next(iter(draws.values())).shape[0] == 428 - 428 // 2


def test_metricbnn_draws_spread_around_the_map(fits):
    fit = fits["metricbnn", "gaussian"]
    f = fit.predictive["test"]["f"]
    assert f.std(0).mean() > 1e-4  # the walk and the decoder move off the MAP
    params, sigma = samplers.joint_map(
        jax.random.split(KEY, 4)[0], _regression(), num_steps=SETTINGS["metricbnn"]["map_steps"]
    )
    np.testing.assert_allclose(fit.predictive["test"]["noise_scale"], sigma, rtol=1e-6)


@pytest.mark.slow
def test_joint_map_noise_scale_solves_its_stationarity_condition():
    """At the MAP of (θ, log σ) with log σ ~ N(0, 1): n − RSS/σ² + log σ = 0."""
    from bnn_posteriors.models import nets

    params, sigma = samplers.joint_map(KEY, _regression(), num_steps=3000)
    rss = float(np.sum((np.asarray(nets.mlp_apply(params, X_REG, "tanh"))[:, 0] - Y_REG) ** 2))
    assert len(Y_REG) - rss / sigma**2 + np.log(sigma) == pytest.approx(0.0, abs=0.5)
    assert rss / len(Y_REG) < 0.25 * Y_REG.var()


@pytest.mark.slow
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: samplers.deep_ensemble(KEY, "tiny"), "must be a problems.Problem"),
        (lambda: samplers.deep_ensemble(KEY, _regression(), val_fraction=1.0), "val_fraction"),
        (lambda: samplers.single_nuts(KEY, _regression(), gradient_budget=0), "gradient_budget"),
        (lambda: samplers.metricbnn(KEY, _regression(), num_steps=0), "num_steps"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
