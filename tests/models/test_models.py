"""Tests of the NumPyro models: sample sites, log joints against scipy, validation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density
from scipy import stats

from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models

X = np.array([-1.0, 0.5, 2.0, 1.5])
Y = np.array([-0.4, 0.3, 1.1, 0.7])


def trace(model, **kwargs):
    return handlers.trace(handlers.seed(model, jax.random.key(0))).get_trace(**kwargs)


# --- narrow_network -------------------------------------------------------------------------


def test_narrow_network_sites():
    tr = trace(models.narrow_network, x=X, depth=3)
    assert tr["w"]["value"].shape == (3,)
    assert float(tr["beta"]["value"]) == pytest.approx(float(jnp.prod(tr["w"]["value"])))
    assert tr["y"]["value"].shape == X.shape
    assert not tr["y"]["is_observed"]


@pytest.mark.parametrize(("depth", "sigma", "tau"), [(1, 1.0, 1.0), (3, 0.5, 2.0)])
def test_narrow_network_log_joint_matches_scipy(depth, sigma, tau):
    w = np.linspace(-0.9, 1.3, depth)
    logp, _ = log_density(
        models.narrow_network, (X, Y), {"depth": depth, "sigma": sigma, "tau": tau}, {"w": w}
    )
    beta = np.prod(w)
    expected = stats.norm.logpdf(w, 0, tau).sum() + stats.norm.logpdf(Y, beta * X, sigma).sum()
    assert float(logp) == pytest.approx(expected, rel=1e-5)


def test_narrow_network_max_depth_masks_inactive_layers():
    w = np.array([0.8, -1.5, 2.0, 0.3])
    kwargs = {"depth": 2, "max_depth": 4, "sigma": 0.5, "tau": 1.0}
    logp, tr = log_density(models.narrow_network, (X, Y), kwargs, {"w": w})
    assert float(tr["beta"]["value"]) == pytest.approx(0.8 * -1.5)
    expected = stats.norm.logpdf(w, 0, 1.0).sum() + stats.norm.logpdf(Y, -1.2 * X, 0.5).sum()
    assert float(logp) == pytest.approx(expected, rel=1e-5)


def test_narrow_network_max_depth_accepts_traced_depth():
    w = np.array([0.8, -1.5, 2.0])

    def logp(depth):
        kwargs = {"depth": depth, "max_depth": 3, "sigma": 1.0, "tau": 1.0}
        return log_density(models.narrow_network, (X, Y), kwargs, {"w": w})[0]

    got = jax.jit(logp)(3)
    expected = stats.norm.logpdf(w).sum() + stats.norm.logpdf(Y, np.prod(w) * X).sum()
    assert float(got) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("depth", [0, -1, 2.0, None])
def test_narrow_network_rejects_bad_depth(depth):
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        trace(models.narrow_network, x=X, depth=depth)


@pytest.mark.parametrize("max_depth", [0, 2.5])
def test_narrow_network_rejects_bad_max_depth(max_depth):
    with pytest.raises(ValueError, match="max_depth must be a positive integer"):
        trace(models.narrow_network, x=X, depth=1, max_depth=max_depth)


@pytest.mark.parametrize("depth", [0, 5])
def test_narrow_network_rejects_depth_beyond_max_depth(depth):
    with pytest.raises(ValueError, match=r"depth must lie in 1..max_depth=4"):
        trace(models.narrow_network, x=X, depth=depth, max_depth=4)


@pytest.mark.parametrize("name", ["sigma", "tau"])
@pytest.mark.parametrize("value", [0.0, -0.5])
def test_narrow_network_rejects_non_positive_scales(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive number"):
        trace(models.narrow_network, x=X, depth=2, **{name: value})


# --- mlp_regression -------------------------------------------------------------------------

XM = np.array([[0.1, -1.0], [0.7, 0.2], [-0.3, 0.9]])
YM = np.array([0.2, -0.1, 0.5])
WIDTHS = (2, 3, 1)


def mlp_params(key=1, scale=0.8):
    params = nets.mlp_init(jax.random.key(key), WIDTHS, scale=scale)
    return {f"{k}{i}": layer[k] for i, layer in enumerate(params) for k in ("W", "b")}, params


def prior_logpdf(sites, prior_scale):
    return sum(
        stats.norm.logpdf(np.asarray(v), 0, prior_scale).sum()
        for k, v in sites.items()
        if k[0] in "Wb"
    )


def test_mlp_regression_sites():
    tr = trace(models.mlp_regression, x=XM, widths=WIDTHS)
    assert tr["W0"]["value"].shape == (2, 3)
    assert tr["b0"]["value"].shape == (3,)
    assert tr["W1"]["value"].shape == (3, 1)
    assert tr["b1"]["value"].shape == (1,)
    assert "log_sigma" in tr
    assert tr["mean"]["value"].shape == (3,)
    assert tr["y"]["value"].shape == (3,)


@pytest.mark.slow
def test_mlp_regression_log_joint_with_fixed_noise():
    sites, params = mlp_params()
    kwargs = {"widths": WIDTHS, "activation": "tanh", "prior_scale": 0.8, "noise_scale": 0.3}
    logp, tr = log_density(models.mlp_regression, (XM, YM), kwargs, sites)
    assert "log_sigma" not in tr
    mean = np.tanh(XM @ params[0]["W"] + params[0]["b"]) @ params[1]["W"] + params[1]["b"]
    expected = prior_logpdf(sites, 0.8) + stats.norm.logpdf(YM, mean[:, 0], 0.3).sum()
    assert float(logp) == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(np.asarray(tr["mean"]["value"]), mean[:, 0], rtol=1e-5)


def test_mlp_regression_log_joint_with_learned_noise():
    sites, params = mlp_params(key=2, scale=1.0)
    sites["log_sigma"] = jnp.array(-0.4)
    kwargs = {"widths": WIDTHS, "output_scale": 0.5}
    logp, _ = log_density(models.mlp_regression, (XM, YM), kwargs, sites)
    hidden = np.maximum(XM @ params[0]["W"] + params[0]["b"], 0.0)
    mean = 0.5 * (hidden @ params[1]["W"] + params[1]["b"])[:, 0]
    expected = (
        prior_logpdf(sites, 1.0)
        + stats.norm.logpdf(-0.4)
        + stats.norm.logpdf(YM, mean, np.exp(-0.4)).sum()
    )
    assert float(logp) == pytest.approx(expected, rel=1e-5)


def test_mlp_regression_rejects_several_outputs():
    with pytest.raises(ValueError, match="mean regression needs one output"):
        trace(models.mlp_regression, x=XM, widths=(2, 3, 2))


def test_mlp_regression_rejects_bad_widths():
    with pytest.raises(ValueError, match="widths must be a sequence"):
        trace(models.mlp_regression, x=XM, widths=(2,))


@pytest.mark.parametrize(("name", "value"), [("prior_scale", 0.0), ("noise_scale", -0.1)])
def test_mlp_regression_rejects_non_positive_scales(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive number"):
        trace(models.mlp_regression, x=XM, widths=WIDTHS, **{name: value})


def test_mlp_regression_rejects_unknown_activation():
    with pytest.raises(ValueError, match="unknown activation"):
        trace(models.mlp_regression, x=XM, widths=WIDTHS, activation="elu")


def test_mlp_regression_prior_predictive_scale():
    # With a 1-layer affine net f(x) = x W + b and W, b ~ N(0, s²), f(0) ~ N(0, s²).
    predictive = numpyro.infer.Predictive(models.mlp_regression, num_samples=4000)
    draws = predictive(jax.random.key(3), x=np.zeros((1, 1)), widths=(1, 1), noise_scale=1e-3)
    assert draws["mean"].shape == (4000, 1)
    assert float(jnp.std(draws["mean"])) == pytest.approx(1.0, rel=0.06)


@pytest.mark.slow
def test_narrow_network_adjusted_prior_log_joint_matches_scipy():
    """Prop. B.5's prior N(θ₀, Σ) with per-weight means and scales."""
    x, y = np.linspace(-1, 1, 5), np.linspace(-0.5, 0.7, 5)
    w = jnp.array([0.4, -1.3])
    loc, scale = (0.1, -0.2), (0.9, 1.1)
    kwargs = dict(x=x, y=y, depth=2, sigma=0.7, tau=scale, prior_loc=loc)
    logp, _ = log_density(models.narrow_network, (), kwargs, {"w": w})
    expected = (
        stats.norm.logpdf(w, loc, scale).sum() + stats.norm.logpdf(y, np.prod(w) * x, 0.7).sum()
    )
    assert float(logp) == pytest.approx(expected, rel=1e-5)


def test_narrow_network_rejects_mismatched_prior_shapes():
    with pytest.raises(ValueError, match="tau and prior_loc must be scalars or of shape"):
        with handlers.seed(rng_seed=0):
            models.narrow_network(np.ones(3), depth=2, tau=(1.0, 1.0, 1.0))


def test_mlp_regression_without_bias_has_only_weight_sites():
    tr = trace(models.mlp_regression, x=XM, y=YM, widths=WIDTHS, bias=False, noise_scale=0.5)
    latent = {k for k, v in tr.items() if v["type"] == "sample" and not v["is_observed"]}
    assert latent == {"W0", "W1"}
    params = [{"W": tr["W0"]["value"]}, {"W": tr["W1"]["value"]}]
    np.testing.assert_allclose(tr["mean"]["value"], nets.mlp_apply(params, XM)[:, 0], rtol=1e-6)


def test_mlp_prior_sites_and_shapes():
    tr = trace(lambda: models.mlp_prior((2, 3, 1), 0.5, bias=True))
    assert {k: tuple(v["value"].shape) for k, v in tr.items()} == {
        "W0": (2, 3),
        "b0": (3,),
        "W1": (3, 1),
        "b1": (1,),
    }
    assert float(tr["W0"]["fn"].base_dist.base_dist.scale) == 0.5
    assert set(trace(lambda: models.mlp_prior((2, 3, 1), 1.0, bias=False))) == {"W0", "W1"}


# --- mlp_regression, heteroscedastic (the authors' `regr` task) ------------------------------


def test_mlp_regression_heteroscedastic_log_joint_matches_scipy():
    widths = (2, 3, 2)
    params = nets.mlp_init(jax.random.key(4), widths, scale=0.9)
    sites = {f"{k}{i}": layer[k] for i, layer in enumerate(params) for k in ("W", "b")}
    kwargs = {"widths": widths, "prior_scale": 0.7, "heteroscedastic": True}
    logp, tr = log_density(models.mlp_regression, (XM, YM), kwargs, sites)
    assert "log_sigma" not in tr
    p = [{k: np.asarray(v, np.float64) for k, v in layer.items()} for layer in params]
    out = np.maximum(XM @ p[0]["W"] + p[0]["b"], 0.0) @ p[1]["W"] + p[1]["b"]
    scale = np.clip(np.exp(out[:, 1]), 1e-6, 1e6)
    expected = prior_logpdf(sites, 0.7) + stats.norm.logpdf(YM, out[:, 0], scale).sum()
    assert float(logp) == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(np.asarray(tr["mean"]["value"]), out[:, 0], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tr["scale"]["value"]), scale, rtol=1e-5)


def test_heteroscedastic_outputs_clip_the_scale():
    mean, scale = models.heteroscedastic_outputs(jnp.array([[1.0, -50.0], [2.0, 0.0], [3.0, 50.0]]))
    np.testing.assert_array_equal(mean, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(scale, [1e-6, 1.0, 1e6], rtol=1e-6)


def test_mlp_regression_heteroscedastic_sites():
    tr = trace(models.mlp_regression, x=XM, widths=(2, 3, 2), heteroscedastic=True)
    assert "log_sigma" not in tr and tr["W1"]["value"].shape == (3, 2)
    assert tr["mean"]["value"].shape == (3,) and tr["scale"]["value"].shape == (3,)
    assert tr["y"]["value"].shape == (3,)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(widths=(2, 3, 1)), r"heteroscedastic regression needs two outputs \(mean, log"),
        (dict(widths=(2, 3, 3)), "heteroscedastic regression needs two outputs"),
        (
            dict(widths=(2, 3, 2), noise_scale=0.5),
            "learns its noise scale.*noise_scale must be None",
        ),
    ],
)
def test_mlp_regression_heteroscedastic_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        trace(models.mlp_regression, x=XM, heteroscedastic=True, **kwargs)


# --- MLP spec ---------------------------------------------------------------------------------


def test_mlp_spec_gives_the_model_and_its_log_joint():
    sites, params = mlp_params()
    spec = models.MLP(WIDTHS, activation="tanh", prior_scale=0.8, noise_scale=0.3)
    assert spec.model is models.mlp_regression and spec.widths == tuple(WIDTHS)
    logp, _ = log_density(spec.model, (), spec.kwargs(XM, YM), sites)
    mean = np.tanh(XM @ params[0]["W"] + params[0]["b"]) @ params[1]["W"] + params[1]["b"]
    expected = prior_logpdf(sites, 0.8) + stats.norm.logpdf(YM, mean[:, 0], 0.3).sum()
    assert float(logp) == pytest.approx(expected, rel=1e-5)
    labels = models.MLP([2, 3, 4], likelihood="categorical", noise_scale=0.3)
    assert labels.model is models.mlp_classification
    assert "noise_scale" not in labels.kwargs(XM, None)
    assert hash(spec) == hash(models.MLP(tuple(WIDTHS), "gaussian", "tanh", True, 0.8, 0.3))
    with pytest.raises(AttributeError):
        spec.prior_scale = 2.0  # frozen: a spec never changes after it is made


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"widths": (2,)}, "widths must be a sequence of at least two positive integers"),
        ({"likelihood": "poisson"}, "unknown likelihood 'poisson'; choose one of gaussian"),
        ({"activation": "swish"}, "unknown activation 'swish'"),
        ({"prior_scale": 0.0}, "prior_scale must be a positive number, got 0.0"),
        ({"noise_scale": -1.0}, "noise_scale must be a positive number, got -1.0"),
    ],
)
def test_mlp_spec_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.MLP(**{"widths": (2, 3, 1), **kwargs})


def test_neg_log_likelihood_matches_scipy():
    f, y = np.array([0.2, -0.5, 1.0]), np.array([0.0, -0.1, 1.7])
    got = models.neg_log_likelihood(f, y, "gaussian", 0.4)
    assert float(got) == pytest.approx(-stats.norm.logpdf(y, f, 0.4).sum(), rel=1e-6)
    scales = np.array([0.3, 1.0, 2.0])  # one σ per point, as the heteroscedastic model's σ(x)
    got = models.neg_log_likelihood(f, y, "gaussian", scales)
    assert float(got) == pytest.approx(-stats.norm.logpdf(y, f, scales).sum(), rel=1e-6)
    logits, labels = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 2.0]]), np.array([0, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    got = models.neg_log_likelihood(logits, labels, "categorical")
    assert float(got) == pytest.approx(-(logp[0, 0] + logp[1, 2]), rel=1e-6)


def test_width_and_noise_checks():
    assert models.classification_widths([4, 8, 3]) == (4, 8, 3)
    with pytest.raises(ValueError, match="classification needs at least two outputs"):
        models.classification_widths((4, 8, 1))
    models.check_noise(0.3, heteroscedastic=False)
    models.check_noise(None, heteroscedastic=True)
    with pytest.raises(ValueError, match="noise_scale must be None, got 0.3"):
        models.check_noise(0.3, heteroscedastic=True)
