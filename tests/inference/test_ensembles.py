"""Deep ensembles trained at once (vmap) with AdamW and early stopping."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.inference import ensembles
from bnn_posteriors.models import nets

WIDTHS = (2, 8, 1)


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (np.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.1 * rng.normal(size=n)).astype(np.float32)
    return x, y


@pytest.mark.slow
def test_members_match_single_member_runs():
    x, y = _data()
    xv, yv = _data(32, 1)
    key = jax.random.PRNGKey(0)
    kw = dict(widths=WIDTHS, max_epochs=15, batch_size=16, patience=100)
    params, info = ensembles.train_ensemble(key, x, y, xv, yv, n_members=3, **kw)
    assert params[0]["W"].shape == (3, 2, 8) and info["val_nll"].shape == (3,)
    # the member axis is a vmap over keys: member i equals a one-member run with key i
    keys = jax.random.split(key, 3)
    single, _ = ensembles._compiled_train(WIDTHS, 64, 0.01, 0.005, 15, 16, 100, 1.0, "relu")(
        keys[1:2], jnp.asarray(x), jnp.asarray(y), jnp.asarray(xv), jnp.asarray(yv)
    )
    np.testing.assert_allclose(single[0]["W"][0], params[0]["W"][1], rtol=1e-4, atol=1e-5)
    # members differ (own init and minibatch order)
    assert not np.allclose(params[0]["W"][0], params[0]["W"][1])


@pytest.mark.slow
def test_early_stopping_keeps_best_params():
    x, y = _data()
    xv, yv = _data(32, 1)
    params, info = ensembles.train_ensemble(
        jax.random.PRNGKey(1),
        x,
        y,
        xv,
        yv,
        widths=WIDTHS,
        n_members=4,
        max_epochs=300,
        batch_size=16,
        patience=3,
        learning_rate=0.05,
    )
    epochs, best = np.asarray(info["epochs"]), np.asarray(info["best_epoch"])
    assert np.all(epochs < 300) and np.all(epochs - best == 3)  # stopped after `patience`
    for i in range(4):
        nll = ensembles.gaussian_nll(ensembles.member(params, i), xv, yv, 1.0)
        np.testing.assert_allclose(nll, info["val_nll"][i], rtol=1e-5)


@pytest.mark.slow
def test_training_fits_better_than_init():
    x, y = _data()
    params, info = ensembles.train_ensemble(
        jax.random.PRNGKey(2), x, y, x, y, widths=WIDTHS, n_members=2, max_epochs=50
    )
    init = nets.mlp_init(jax.random.PRNGKey(0), WIDTHS, scheme="glorot")
    assert np.all(info["val_nll"] < ensembles.gaussian_nll(init, x, y, 1.0))
    assert ensembles.predict(params, x).shape == (2, 64)


def test_glorot_init_shapes():
    p = nets.mlp_init(jax.random.PRNGKey(0), (3, 5, 1), scheme="glorot")
    assert p[0]["W"].shape == (3, 5) and np.all(p[0]["b"] == 0)
    assert nets.mlp_apply(p, jnp.ones((4, 3))).shape == (4, 1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_members=0), "n_members"),
        (dict(widths=(2, 8, 2)), "one output"),
        (dict(widths=(3, 8, 1)), "columns"),
        (dict(learning_rate=-1.0), "learning_rate"),
        (dict(weight_decay=-1.0), "weight_decay"),
        (dict(patience=0), "patience"),
    ],
)
def test_bad_input(kwargs, match):
    x, y = _data(8)
    args = dict(widths=WIDTHS, n_members=2, max_epochs=2) | kwargs
    with pytest.raises(ValueError, match=match):
        ensembles.train_ensemble(jax.random.PRNGKey(0), x, y, x, y, **args)


def test_bad_data():
    x, y = _data(8)
    with pytest.raises(ValueError, match="x has 8 rows but y has 4"):
        ensembles.train_ensemble(jax.random.PRNGKey(0), x, y[:4], x, y, widths=WIDTHS, n_members=1)
    y[0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        ensembles.train_ensemble(jax.random.PRNGKey(0), x, y, x, y, widths=WIDTHS, n_members=1)


# --- heteroscedastic members (two outputs: mean and log scale) -------------------------------

HET = (2, 8, 2)


def _het_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    noise_scale = 0.05 + 0.5 * np.abs(x[:, 0])  # the noise grows with |x_0|
    return x, (np.sin(x[:, 1]) + noise_scale * rng.normal(size=n)).astype(np.float32)


def test_heteroscedastic_nll_matches_scipy():
    x, y = _het_data(16)
    params = nets.mlp_init(jax.random.PRNGKey(3), HET, scheme="glorot")
    out = np.asarray(nets.mlp_apply(params, x), np.float64)
    expected = -np.mean(stats.norm.logpdf(y, out[:, 0], np.clip(np.exp(out[:, 1]), 1e-6, 1e6)))
    nll = ensembles.gaussian_nll(params, x, y, None, heteroscedastic=True)
    assert float(nll) == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow
def test_heteroscedastic_ensemble_trains_and_predicts_scales():
    x, y = _het_data()
    xv, yv = _het_data(32, 1)
    params, info = ensembles.train_ensemble(
        jax.random.PRNGKey(0),
        x,
        y,
        xv,
        yv,
        widths=HET,
        n_members=2,
        max_epochs=60,
        batch_size=16,
        patience=100,
        heteroscedastic=True,
    )
    assert params[-1]["W"].shape == (2, 8, 2)
    for i, key in enumerate(jax.random.split(jax.random.PRNGKey(0), 2)):
        init = nets.mlp_init(jax.random.split(key)[0], HET, scheme="glorot")  # member i's start
        before = ensembles.gaussian_nll(init, xv, yv, None, heteroscedastic=True)
        after = ensembles.gaussian_nll(ensembles.member(params, i), xv, yv, None, "relu", True)
        # early stopping scores (and keeps) the members on the same heteroscedastic NLL
        assert float(after) == pytest.approx(float(info["val_nll"][i]), rel=1e-5)
        assert after < before - 0.2
    mean, scale = ensembles.predict(params, x, heteroscedastic=True)
    assert mean.shape == (2, 64) and scale.shape == (2, 64)
    assert np.all(scale > 0)
    # the learned scale follows the noise_scale: larger where |x_0| is large
    big = np.abs(x[:, 0]) > 1.0
    assert float(scale[:, big].mean()) > float(scale[:, ~big].mean())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(widths=(2, 8, 1)), "heteroscedastic regression needs two outputs"),
        (dict(noise_scale=1.0), "noise_scale must be None"),
    ],
)
def test_heteroscedastic_bad_input(kwargs, match):
    x, y = _het_data(8)
    args = dict(widths=HET, n_members=1, max_epochs=2, heteroscedastic=True) | kwargs
    with pytest.raises(ValueError, match=match):
        ensembles.train_ensemble(jax.random.PRNGKey(0), x, y, x, y, **args)
    params, _ = ensembles.train_ensemble(
        jax.random.PRNGKey(0), x, y, x, y, widths=WIDTHS, n_members=1, max_epochs=1
    )
    with pytest.raises(ValueError, match="two outputs"):
        ensembles.predict(params, x, heteroscedastic=True)


@pytest.mark.slow
def test_categorical_ensemble_learns_labels_and_keeps_the_regression_default():
    """likelihood="categorical": classifiers early-stopped on their mean categorical NLL."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    params, info = ensembles.train_ensemble(
        jax.random.PRNGKey(4),
        x,
        y,
        x,
        y,
        widths=(2, 8, 2),
        n_members=2,
        max_epochs=60,
        activation="tanh",
        likelihood="categorical",
    )
    for i in range(2):
        logits = nets.mlp_apply(ensembles.member(params, i), x, "tanh")
        nll = -np.mean(np.asarray(jax.nn.log_softmax(logits))[np.arange(64), y])
        np.testing.assert_allclose(nll, info["val_nll"][i], rtol=1e-5)
        assert np.mean(np.asarray(logits).argmax(-1) == y) > 0.9
    with pytest.raises(ValueError, match="class labels"):  # float targets are not labels
        ensembles.train_ensemble(
            jax.random.PRNGKey(0),
            x,
            y * 1.0,
            x,
            y,
            widths=(2, 8, 2),
            n_members=1,
            likelihood="categorical",
        )
    with pytest.raises(ValueError, match="no noise scale"):
        ensembles.train_ensemble(
            jax.random.PRNGKey(0),
            x,
            y,
            x,
            y,
            widths=(2, 8, 2),
            n_members=1,
            likelihood="categorical",
            noise_scale=1.0,
        )
    with pytest.raises(ValueError, match="at least two outputs"):
        ensembles.train_ensemble(
            jax.random.PRNGKey(0),
            x,
            y,
            x,
            y,
            widths=(2, 8, 1),
            n_members=1,
            likelihood="categorical",
        )
