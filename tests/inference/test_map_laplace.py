"""The one MAP-and-Laplace builder (inference/map_laplace.py): the same MAP as
``map_estimate.train_map`` from the same start, σ refitted to the residuals, the Laplace at
the MAP with its σ and the evidence tuning as arguments, and a chapter's declared choices
(MapLaplaceChoices) passed on whole by fit_map and fit_laplace."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from bnn_posteriors.inference import laplace, map_estimate, map_laplace
from bnn_posteriors.models import nets
from bnn_posteriors.site.settings_classes import MapLaplaceChoices

KEY = jax.random.PRNGKey(3)
X = jnp.linspace(-2, 2, 24, dtype=jnp.float32)[:, None]
Y = jnp.sin(2 * X) + 0.1 * jax.random.normal(jax.random.PRNGKey(1), X.shape)
LABELS = (X[:, 0] > 0).astype(jnp.int32)
WIDTHS = (1, 8, 1)
COMMON = dict(prior_precision=1.0, num_steps=300, learning_rate=1e-2, activation="tanh")


def flat(params):
    return np.asarray(ravel_pytree(params)[0])


def test_a_fixed_noise_map_is_train_maps_from_the_same_start():
    mode = map_laplace.train_map_from(
        KEY, WIDTHS, X, Y, likelihood="gaussian", noise_scale=0.3, init_scheme="fan_in", **COMMON
    )
    by_hand, trace = map_estimate.train_map(
        nets.mlp_init(KEY, WIDTHS, scheme="fan_in"),
        X,
        Y,
        likelihood="gaussian",
        noise_scale=0.3,
        prior_precision=1.0,
        activation="tanh",
        num_steps=300,
        learning_rate=1e-2,
    )
    np.testing.assert_array_equal(flat(mode.params), flat(by_hand))
    np.testing.assert_array_equal(mode.trace, trace)
    assert mode.noise_scale == 0.3  # the σ given, not its float32 round trip
    whole = map_laplace.train_map_from(
        KEY,
        WIDTHS,
        X,
        Y,
        likelihood="gaussian",
        noise_scale=0.3,
        init_scheme="fan_in",
        whole_program=True,
        **COMMON,
    )
    # one program or two: the same MAP up to round-off that 300 steps amplify
    np.testing.assert_allclose(flat(whole.params), flat(mode.params), atol=1e-2)


def test_sigma_is_refitted_to_the_residuals_rms_in_rounds():
    mode = map_laplace.train_map_from(
        KEY, WIDTHS, X, Y, likelihood="gaussian", noise_rounds=3, **COMMON
    )
    fitted = nets.mlp_apply(mode.params, X, activation_name="tanh")
    rms = float(jnp.sqrt(jnp.mean((Y - fitted) ** 2)))
    assert mode.noise_scale == pytest.approx(rms, rel=1e-5)
    assert rms < float(jnp.std(Y)) / 2  # trained, not the targets' sd
    assert mode.trace.shape == (300,)  # 100 + 100 + 100 steps
    with pytest.raises(ValueError, match="at least noise_rounds"):
        map_laplace.train_map_from(
            KEY, WIDTHS, X, Y, likelihood="gaussian", noise_rounds=400, **COMMON
        )


def test_a_classifier_has_no_sigma():
    mode = map_laplace.train_map_from(KEY, (1, 8, 2), X, LABELS, likelihood="categorical", **COMMON)
    assert mode.noise_scale is None
    probs = jax.nn.softmax(nets.mlp_apply(mode.params, X, activation_name="tanh"))
    assert float(jnp.mean(probs.argmax(-1) == LABELS)) > 0.9


def test_laplace_at_reads_the_maps_sigma_and_tunes_by_the_evidence():
    mode = map_laplace.train_map_from(
        KEY, WIDTHS, X, Y, likelihood="gaussian", noise_scale=0.2, **COMMON
    )
    kw = dict(likelihood="gaussian", prior_precision=2.0, activation="tanh")
    plain = map_laplace.laplace_at(mode, X, Y, **kw)
    by_hand = laplace.laplace(mode.params, X, Y, noise_scale=0.2, **kw)
    np.testing.assert_array_equal(plain.mean, by_hand.mean)
    assert float(plain.noise_scale) == pytest.approx(0.2) and float(plain.prior_precision) == 2.0
    tuned = map_laplace.laplace_at(mode, X, Y, tune="prior", **kw)
    expected = laplace.optimise_prior_precision(by_hand)
    assert float(tuned.prior_precision) == pytest.approx(float(expected.prior_precision))
    assert float(tuned.prior_precision) != 2.0
    both = map_laplace.laplace_at(mode, X, Y, tune="noise", **kw)
    assert float(both.noise_scale) != pytest.approx(0.2)  # σ chosen with δ
    other = map_laplace.laplace_at(mode, X, Y, noise_scale=0.5, **kw)
    assert float(other.noise_scale) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="tune must be one of"):
        map_laplace.laplace_at(mode, X, Y, tune="both", **kw)
    with pytest.raises(ValueError, match="needs the Gaussian likelihood"):
        map_laplace.laplace_at(mode, X, LABELS, tune="noise", **{**kw, "likelihood": "categorical"})


CHOICES = MapLaplaceChoices(
    init_scheme="fan_in",
    bias=True,
    dtype="float32",
    weight_decay=1e-3,
    noise_rounds=2,
    whole_program=False,
    subset="last_layer",
    tune="prior",
    tune_from=3.0,
    ggn_noise_scale=0.7,
)


def test_fit_map_and_fit_laplace_pass_every_choice_on():
    mode = map_laplace.fit_map(KEY, WIDTHS, X, Y, CHOICES, likelihood="gaussian", **COMMON)
    by_hand = map_laplace.train_map_from(
        KEY,
        WIDTHS,
        X,
        Y,
        likelihood="gaussian",
        init_scheme="fan_in",
        dtype=jnp.float32,
        weight_decay=1e-3,
        noise_rounds=2,
        **COMMON,
    )
    np.testing.assert_array_equal(flat(mode.params), flat(by_hand.params))
    assert mode.noise_scale == by_hand.noise_scale  # refitted in two rounds
    kw = dict(likelihood="gaussian", activation="tanh")
    post = map_laplace.fit_laplace(mode, X, Y, CHOICES, prior_precision=1.0, **kw)
    expected = map_laplace.laplace_at(
        mode,
        X,
        Y,
        prior_precision=3.0,
        subset="last_layer",
        tune="prior",
        noise_scale=0.7,
        **kw,
    )
    assert float(post.prior_precision) == pytest.approx(float(expected.prior_precision))
    assert float(post.noise_scale) == pytest.approx(0.7)
    np.testing.assert_array_equal(np.asarray(post.mean), np.asarray(expected.mean))
    # tune_from None: the GGN at the MAP's own prior precision, kept without tuning
    plain = dataclasses.replace(CHOICES, tune=None, tune_from=None, subset="full")
    kept = map_laplace.fit_laplace(mode, X, Y, plain, prior_precision=2.5, **kw)
    assert float(kept.prior_precision) == 2.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"init_scheme": "xavier"}, "map_laplace.init_scheme must be one of"),
        ({"dtype": "float16"}, "map_laplace.dtype must be one of"),
        ({"subset": "first_layer"}, "map_laplace.subset must be one of"),
        ({"tune": "both"}, "map_laplace.tune must be one of"),
        ({"tune_from": -1.0}, "tune_from"),
    ],
)
def test_a_bad_choice_is_named(change, message):
    bad = dataclasses.replace(CHOICES, **change)
    with pytest.raises(ValueError, match=message):
        map_laplace.fit_map(KEY, WIDTHS, X, Y, bad, likelihood="gaussian", **COMMON)
    with pytest.raises(TypeError, match="choices must be a MapLaplaceChoices"):
        map_laplace.fit_laplace(
            None, X, Y, {"subset": "full"}, likelihood="gaussian", prior_precision=1.0
        )
