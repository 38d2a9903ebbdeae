"""Tests of ``bnn_posteriors.util.validate`` and of the validation at the public entry points."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import ensembles, laplace, map_estimate, mcmc, mile, vi
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.util import validate

KEY = jax.random.key(0)

# --- scalars and counts ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 0.5, np.float32(2.0), jnp.array(3.0)])
def test_positive_returns_float(value):
    out = validate.positive("tau", value)
    assert isinstance(out, float) and out == pytest.approx(float(value))


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_positive_rejects_non_positive_or_non_finite(value):
    with pytest.raises(ValueError, match="f: tau must be a positive number"):
        validate.positive("tau", value, where="f")


@pytest.mark.parametrize("value", ["one", None, [1.0, 2.0]])
def test_positive_rejects_non_numbers(value):
    with pytest.raises(TypeError, match="sigma must be a number"):
        validate.positive("sigma", value)


def test_positive_passes_traced_values():
    assert float(jax.jit(lambda v: validate.positive("s", v) * 2)(1.5)) == 3.0


def test_non_negative_accepts_zero_and_rejects_the_rest():
    assert validate.non_negative("decay", 0) == 0.0
    for bad in (-1e-3, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="decay must be a non-negative number"):
            validate.non_negative("decay", bad)


def test_positive_array_accepts_positive_and_rejects_the_rest():
    np.testing.assert_allclose(validate.positive_array("tau", [0.5, 2.0]), [0.5, 2.0])
    for bad in ([1.0, 0.0], [1.0, -2.0], [np.nan, 1.0], []):
        with pytest.raises(ValueError, match="tau must be positive everywhere"):
            validate.positive_array("tau", bad)


@pytest.mark.parametrize("value", [1, 5, np.int64(3)])
def test_positive_int_returns_int(value):
    out = validate.positive_int("n", value)
    assert out == int(value) and type(out) is int


@pytest.mark.parametrize("value", [0, -2, 1.0, True, None, "3"])
def test_positive_int_rejects(value):
    with pytest.raises(ValueError, match="n must be a positive integer"):
        validate.positive_int("n", value)


def test_positive_int_minimum_and_the_models_alias():
    assert validate.positive_int("steps", 10, minimum=10) == 10
    with pytest.raises(ValueError, match="g: steps must be an integer ≥ 10"):
        validate.positive_int("steps", 9, minimum=10, where="g")


# --- arrays ---------------------------------------------------------------------------------


def test_check_xy_accepts_and_rejects():
    x, y = validate.check_xy(np.ones((5, 2)), np.zeros(5), where="f")
    assert x.shape == (5, 2) and y.shape == (5,)
    validate.check_xy(np.arange(4), np.arange(4), where="f")  # 1-D x, integers
    with pytest.raises(ValueError, match="f: x has 5 rows but y has 4"):
        validate.check_xy(np.ones((5, 2)), np.zeros(4), where="f")
    y_nan = np.array([np.nan, 1.0, np.nan, 2.0, np.nan])
    with pytest.raises(ValueError, match="f: y contains 3 NaN values"):
        validate.check_xy(np.ones((5, 2)), y_nan, where="f")
    with pytest.raises(ValueError, match="x contains 1 infinite values"):
        validate.check_xy(np.array([1.0, np.inf]), np.zeros(2), where="f")
    with pytest.raises(ValueError, match=r"y must have shape \(n,\)"):
        validate.check_xy(np.ones((3, 2)), np.zeros((3, 1)), where="f")
    with pytest.raises(ValueError, match=r"x must have shape \(n,\) or \(n, d\)"):
        validate.check_xy(np.ones((3, 2, 2)), np.zeros(3), where="f")
    with pytest.raises(ValueError, match="no rows"):
        validate.check_xy(np.ones((0, 2)), np.zeros(0), where="f")
    with pytest.raises(ValueError, match="x must be numeric"):
        validate.check_xy(np.array(["a", "b"]), np.zeros(2), where="f")


def test_check_xy_features_targets_and_labels():
    x = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"f: x has 3 columns \(features\), expected 2"):
        validate.check_x(x, where="f", n_features=2)
    with pytest.raises(ValueError, match=r"f: x must have shape \(n, 3\), got shape \(4,\)"):
        validate.check_x(np.ones(4), where="f", n_features=3)
    x2, y2 = validate.check_xy(x, np.zeros((4, 2)), where="f", y_ndim=2)
    assert y2.shape == (4, 2)
    labels = np.array([0, 2, 1, 0])
    assert validate.check_xy(x, labels, where="f", likelihood="categorical")[1] is labels
    with pytest.raises(ValueError, match="f: class labels y must be integers ≥ 0, got dtype"):
        validate.check_xy(x, labels.astype(float), where="f", likelihood="categorical")
    with pytest.raises(ValueError, match="f: class labels y must be integers ≥ 0, got -1"):
        validate.check_xy(x, labels - 1, where="f", likelihood="categorical")
    message = "f: unknown likelihood 'poisson'; choose one of gaussian, categorical"
    with pytest.raises(ValueError, match=message):
        validate.check_xy(x, labels, where="f", likelihood="poisson")


def test_check_xy_reads_only_unless_asked_for_a_dtype():
    x, y = np.linspace(0, 1, 6).reshape(3, 2), np.array([0.1, 0.2, 0.3])
    same_x, same_y = validate.check_xy(x, y, where="f")
    assert same_x.dtype == np.float64 and np.array_equal(same_x, x) and np.array_equal(same_y, y)
    x32, y32 = validate.check_xy(x, y, where="f", dtype=np.float32)
    assert x32.dtype == y32.dtype == np.float32
    np.testing.assert_array_equal(x32, np.asarray(x, dtype=np.float32))


def test_traced_values_get_shape_checks_only():
    def f(x, y):
        x, y = validate.check_xy(x, y, where="f")
        return jnp.sum(x) + jnp.sum(y)

    assert float(jax.jit(f)(jnp.ones(3), jnp.full(3, jnp.nan))) != 0.0  # NaN not seen
    with pytest.raises(ValueError, match="f: x has 3 rows but y has 2"):
        jax.jit(f)(jnp.ones(3), jnp.ones(2))


def test_check_model_data():
    validate.check_model_data({"x": np.ones(3), "y": None, "depth": 1}, where="f")
    validate.check_model_data({"depth": 1}, where="f")
    with pytest.raises(ValueError, match="f: x contains 1 NaN values"):
        validate.check_model_data({"x": np.array([1.0, np.nan])}, where="f")
    with pytest.raises(TypeError, match="f: model_kwargs must be a dict"):
        validate.check_model_data([np.ones(3)], where="f")


# --- entry points ---------------------------------------------------------------------------

X = np.array([-1.0, 0.5, 2.0, 1.5])
Y = np.array([-0.4, 0.3, 1.1, 0.7])
NARROW = {"depth": 1, "sigma": 0.5, "tau": 1.0}
BUDGET = {"num_chains": 2, "num_warmup": 10, "num_samples": 10}


@pytest.mark.parametrize("sampler", [mcmc.nuts, mcmc.nuts_numpyro])
def test_nuts_rejects_nan_in_y_and_mismatched_rows(sampler):
    name = sampler.__name__
    y_nan = Y.copy()
    y_nan[1] = np.nan
    with pytest.raises(ValueError, match=rf"^{name}: y contains 1 NaN values \(it must be"):
        sampler(KEY, models.narrow_network, {"x": X, "y": y_nan, **NARROW}, **BUDGET)
    with pytest.raises(ValueError, match=rf"^{name}: x has 4 rows but y has 3"):
        sampler(KEY, models.narrow_network, {"x": X, "y": Y[:3], **NARROW}, **BUDGET)


def test_warm_starts_and_fit_mfvi_reject_bad_data():
    bad = {"x": X, "y": Y[:3], **NARROW}
    with pytest.raises(ValueError, match="warm_starts: x has 4 rows but y has 3"):
        mcmc.warm_starts(KEY, models.narrow_network, bad, num_chains=2)
    with pytest.raises(ValueError, match="fit_mfvi: x has 4 rows but y has 3"):
        vi.fit_mfvi(KEY, models.narrow_network, bad)
    with pytest.raises(ValueError, match="fit_mfvi: init_scale must be a positive number"):
        vi.fit_mfvi(KEY, models.narrow_network, {"x": X, "y": Y, **NARROW}, init_scale=0.0)
    with pytest.raises(ValueError, match="fit_mfvi_narrow: y contains 1 infinite values"):
        vi.fit_mfvi_narrow(KEY, X, np.r_[Y[:3], np.inf], depth=1, sigma=0.5, tau=1.0)


def _regression(n=6, widths=(2, 3, 1)):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(n, widths[0])), rng.normal(size=(n, widths[-1]))
    return x, y, nets.mlp_init(jax.random.PRNGKey(0), widths, 0.5)


def test_laplace_entry_points():
    x, y, params = _regression()
    with pytest.raises(ValueError, match="laplace: x has 6 rows but y has 5"):
        laplace.laplace(params, x, y[:5], likelihood="gaussian")
    with pytest.raises(ValueError, match="laplace: class labels y must be integers ≥ 0, got -1"):
        laplace.laplace(params, x, np.array([0, 1, -1, 0, 1, 0]), likelihood="categorical")
    with pytest.raises(ValueError, match="train_map: prior_precision must be a positive number"):
        map_estimate.train_map(params, x, y, likelihood="gaussian", prior_precision=0.0)
    with pytest.raises(ValueError, match="train_map: num_steps must be a positive integer"):
        map_estimate.train_map(params, x, y, likelihood="gaussian", num_steps=0)
    x[0, 1] = np.nan
    with pytest.raises(ValueError, match="train_map: x contains 1 NaN values"):
        map_estimate.train_map(params, x, y, likelihood="gaussian")


@pytest.mark.slow
@pytest.mark.parametrize("subset", ["full", "last_layer"])
def test_linearised_predictive_checks_the_feature_count(subset):
    x, y, params = _regression()
    post = laplace.laplace(params, x, y, likelihood="gaussian", subset=subset)
    message = r"^linearised_predictive: x has 3 columns \(features\), expected 2$"
    with pytest.raises(ValueError, match=message):
        laplace.linearised_predictive(post, np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"predictive_samples: x must have shape \(n, 2\)"):
        laplace.predictive_samples(post, np.ones(4), KEY)


def test_ensembles_and_mfvi_reject_bad_data():
    x, y, _ = _regression(n=8)
    y = y[:, 0]
    with pytest.raises(ValueError, match=r"train_ensemble \(validation data\): x has 3 col"):
        ensembles.train_ensemble(
            KEY, x, y, np.ones((8, 3)), y, widths=(2, 4, 1), n_members=1, max_epochs=1
        )
    with pytest.raises(ValueError, match="train_ensemble: noise_scale must be a positive number"):
        ensembles.train_ensemble(KEY, x, y, x, y, widths=(2, 4, 1), n_members=1, noise_scale=0.0)
    with pytest.raises(ValueError, match="fit_mfvi: prior_scale must be a positive"):
        vi.fit_mfvi(KEY, models.mlp_regression, dict(x=x, y=y, widths=(2, 1), prior_scale=-1.0))


def test_run_bde_rejects_bad_data():
    x, y = np.ones((4, 3)), np.zeros(4)
    with pytest.raises(ValueError, match=r"run_bde: x has 3 columns \(features\), expected 2"):
        mile.run_bde(KEY, x, y, {}, widths=(2, 4, 1))
    with pytest.raises(ValueError, match="run_bde: y contains 1 NaN values"):
        mile.run_bde(KEY, x, np.r_[y[:3], np.nan], {}, widths=(3, 4, 1))


def test_check_likelihood():
    checked = [validate.check_likelihood(k) for k in validate.LIKELIHOODS]
    assert checked == ["gaussian", "categorical"]
    with pytest.raises(ValueError, match="^g: unknown likelihood 'regression'; choose one of"):
        validate.check_likelihood("regression", where="g")
