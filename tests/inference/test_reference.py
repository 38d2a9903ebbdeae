"""Tests of the reference runs: the predictive of draws, a tiny run of each likelihood, and the
thinning and errors of the run."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.inference import reference
from bnn_posteriors.models import nets
from bnn_posteriors.models.numpyro_models import MLP

RNG = np.random.default_rng(1)
X = RNG.normal(size=(12, 2)).astype(np.float32)
Y_REG = (X[:, 0] - 0.5 * X[:, 1]).astype(np.float32)
Y_CLS = (X[:, 0] > 0).astype(np.int32)
POINTS = {"test": X[:3], "grid": np.zeros((2, 2), np.float32)}
TINY = {"num_chains": 2, "num_warmup": 20, "num_samples": 20}


def _samples(spec, chains=2, draws=3, log_sigma=True):
    params = [
        nets.mlp_init(jax.random.PRNGKey(c * draws + d), spec.widths, scheme="normal")
        for c in range(chains)
        for d in range(draws)
    ]
    stacked = jax.tree.map(lambda *a: np.stack(a).reshape(chains, draws, *a[0].shape), *params)
    out = nets.sites(stacked)
    if log_sigma:
        out["log_sigma"] = RNG.normal(size=(chains, draws)).astype(np.float32)
    return out, params


@pytest.mark.slow
def test_regression_predictive_is_the_network_output():
    spec = MLP((2, 4, 1), activation="tanh")
    samples, params = _samples(spec)
    pred = reference.predictive(spec, samples, X[:5])
    assert pred["f"].shape == (2, 3, 5) and pred["noise_scale"].shape == (2, 3)
    expected = nets.mlp_apply(params[4], X[:5], "tanh")[:, 0]  # chain 1, draw 1
    np.testing.assert_allclose(pred["f"][1, 1], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pred["noise_scale"], np.exp(samples["log_sigma"]), rtol=1e-6)
    fixed = reference.predictive(MLP((2, 4, 1), noise_scale=0.3), samples, X[:5])
    np.testing.assert_allclose(fixed["noise_scale"], 0.3)


@pytest.mark.slow
def test_heteroscedastic_and_classification_predictives():
    het = MLP((2, 4, 2), heteroscedastic=True)
    samples, params = _samples(het, log_sigma=False)
    pred = reference.predictive(het, samples, X[:5])
    out = nets.mlp_apply(params[0], X[:5], "relu")
    np.testing.assert_allclose(pred["noise_scale"][0, 0], np.exp(out[:, 1]), rtol=1e-5)
    cls = MLP((2, 4, 3), likelihood="categorical")
    samples, params = _samples(cls, log_sigma=False)
    probs = reference.predictive(cls, samples, X[:5])["probs"]
    assert probs.shape == (2, 3, 5, 3)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(
        probs[0, 2], jax.nn.softmax(nets.mlp_apply(params[2], X[:5], "relu")), rtol=1e-5
    )


def test_predictive_rejects_bad_samples():
    spec = MLP((2, 4, 1))
    samples, _ = _samples(spec)
    with pytest.raises(ValueError, match=r"lack the sites \['b1'\]"):
        reference.predictive(spec, {k: v for k, v in samples.items() if k != "b1"}, X)
    with pytest.raises(ValueError, match="lack the site 'log_sigma'"):
        reference.predictive(spec, {k: v for k, v in samples.items() if k != "log_sigma"}, X)
    with pytest.raises(ValueError, match=r"leading axes \(chain, draw\)"):
        reference.predictive(spec, {k: v[0] for k, v in samples.items()}, X)
    with pytest.raises(ValueError, match="x has 3 columns"):
        reference.predictive(spec, samples, np.zeros((2, 3)))


@pytest.mark.slow
def test_tiny_regression_run_thins_and_reports():
    spec = MLP((2, 3, 1), activation="tanh")
    out = reference.run(jax.random.PRNGKey(0), spec, X, Y_REG, POINTS, num_kept=5, **TINY)
    assert out["predictive"]["test"]["f"].shape == (2, 5, 3)
    assert out["predictive"]["grid"]["noise_scale"].shape == (2, 5)
    stats = out["stats"]
    assert stats["step_size"].shape == stats["divergences"].shape == (2,)
    assert [len(d) for d in stats["divergent_draws"]] == stats["divergences"].tolist()
    assert stats["gradient_evaluations"] == int(stats["mean_num_steps"].sum() * 20)
    assert np.isfinite(out["predictive"]["test"]["f"]).all()


@pytest.mark.slow
def test_tiny_classification_run():
    spec = MLP((2, 3, 2), likelihood="categorical", activation="tanh")
    out = reference.run(jax.random.PRNGKey(0), spec, X, Y_CLS, {"test": X[:4]}, **TINY)
    probs = out["predictive"]["test"]["probs"]
    assert probs.shape == (2, 20, 4, 2)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["gaussian", "categorical"])
def test_a_mams_run_has_the_layout_of_a_nuts_run(likelihood):
    """The second sampler family: the same predictive and statistics, and its L."""
    spec = MLP((2, 3, 1 + (likelihood == "categorical")), likelihood=likelihood, activation="tanh")
    y = Y_CLS if likelihood == "categorical" else Y_REG
    kw = dict(num_kept=5, **TINY)
    nuts = reference.run(jax.random.PRNGKey(0), spec, X, y, POINTS, **kw)
    out = reference.run(jax.random.PRNGKey(0), spec, X, y, POINTS, sampler="mams", **kw)
    for name in POINTS:
        assert {k: v.shape for k, v in out["predictive"][name].items()} == {
            k: v.shape for k, v in nuts["predictive"][name].items()
        }
        assert all(np.isfinite(v).all() for v in out["predictive"][name].values())
    assert set(out["stats"]) == set(nuts["stats"]) | {"L"}
    assert out["stats"]["gradient_evaluations"] == int(out["stats"]["mean_num_steps"].sum() * 20)


def test_divergent_draws_are_the_indices_of_each_chains_divergences():
    diverging = np.zeros((3, 6), dtype=bool)
    diverging[0, [1, 4]] = True
    diverging[2, 5] = True
    assert reference.divergent_draws(diverging) == [[1, 4], [], [5]]
    with pytest.raises(ValueError, match="must be \\(chains, draws\\)"):
        reference.divergent_draws(diverging[0])


def test_run_rejects_bad_budgets():
    spec = MLP((2, 3, 1))
    with pytest.raises(ValueError, match="num_samples=20 must be a multiple of num_kept=3"):
        reference.run(jax.random.PRNGKey(0), spec, X, Y_REG, POINTS, num_kept=3, **TINY)
    with pytest.raises(ValueError, match="points must name at least one"):
        reference.run(jax.random.PRNGKey(0), spec, X, Y_REG, {}, **TINY)
    with pytest.raises(ValueError, match="sampler must be one of"):
        reference.run(jax.random.PRNGKey(0), spec, X, Y_REG, POINTS, sampler="hmc", **TINY)
