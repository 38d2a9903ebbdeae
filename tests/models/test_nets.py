"""Tests of the network pytrees: initialisation, forward pass, flattening, narrow network."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions

WIDTHS = (3, 5, 4, 2)


def numpy_forward(params, x, phi):
    """Reference forward pass in plain numpy."""
    h = np.asarray(x, dtype=float)
    for layer in params[:-1]:
        h = phi(h @ np.asarray(layer["W"]) + np.asarray(layer["b"]))
    return h @ np.asarray(params[-1]["W"]) + np.asarray(params[-1]["b"])


NUMPY_ACTIVATIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "tanh": np.tanh,
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "identity": lambda z: z,
    # the tanh approximation of GELU (Hendrycks and Gimpel, 2016), JAX's default
    "gelu": lambda z: 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3))),
}


@pytest.mark.parametrize("name", sorted(NUMPY_ACTIVATIONS))
def test_activation_matches_numpy(name):
    z = np.linspace(-3.0, 3.0, 13)
    got = np.asarray(nets.activation(name)(jnp.asarray(z)))
    np.testing.assert_allclose(got, NUMPY_ACTIVATIONS[name](z), rtol=1e-6, atol=1e-6)


def test_unknown_activation_is_named():
    with pytest.raises(ValueError, match=r"unknown activation 'swish'.*relu"):
        nets.activation("swish")


def test_check_widths_returns_tuple():
    assert nets.check_widths([1, 8, 1]) == (1, 8, 1)


@pytest.mark.parametrize("widths", [(3,), (), (3, 0, 1), (3, -2), (3, 2.0), ("3", 1)])
def test_check_widths_rejects_bad_widths(widths):
    with pytest.raises(ValueError, match="widths must be a sequence of at least two positive"):
        nets.check_widths(widths)


@pytest.mark.slow
def test_mlp_init_shapes():
    params = nets.mlp_init(jax.random.key(0), WIDTHS)
    assert len(params) == len(WIDTHS) - 1
    for layer, d_in, d_out in zip(params, WIDTHS[:-1], WIDTHS[1:], strict=True):
        assert layer["W"].shape == (d_in, d_out)
        assert layer["b"].shape == (d_out,)


@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_mlp_init_weights_have_std_scale(scale):
    params = nets.mlp_init(jax.random.key(1), (100, 100, 1), scale=scale)
    flat, _ = nets.flatten(params)
    assert flat.size == 100 * 100 + 100 + 100 + 1
    # ~10^4 N(0, scale²) draws: the sample std is within a few percent of scale.
    assert float(jnp.std(flat)) == pytest.approx(scale, rel=0.03)
    assert abs(float(jnp.mean(flat))) < 0.05 * scale


def test_mlp_init_depends_on_key():
    a, _ = nets.flatten(nets.mlp_init(jax.random.key(0), WIDTHS))
    b, _ = nets.flatten(nets.mlp_init(jax.random.key(0), WIDTHS))
    c, _ = nets.flatten(nets.mlp_init(jax.random.key(1), WIDTHS))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan")])
def test_mlp_init_rejects_non_positive_scale(scale):
    with pytest.raises(ValueError, match="scale must be positive"):
        nets.mlp_init(jax.random.key(0), WIDTHS, scale=scale)


def test_mlp_init_rejects_bad_widths():
    with pytest.raises(ValueError, match="widths"):
        nets.mlp_init(jax.random.key(0), (3,))


@pytest.mark.parametrize("name", sorted(NUMPY_ACTIVATIONS))
def test_mlp_apply_matches_numpy_forward_pass(name):
    params = nets.mlp_init(jax.random.key(2), WIDTHS)
    x = np.random.default_rng(0).normal(size=(7, WIDTHS[0]))
    got = nets.mlp_apply(params, x, name)
    assert got.shape == (7, WIDTHS[-1])
    expected = numpy_forward(params, x, NUMPY_ACTIVATIONS[name])
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)


def test_mlp_apply_default_activation_is_relu():
    params = nets.mlp_init(jax.random.key(3), WIDTHS)
    x = np.random.default_rng(1).normal(size=(4, WIDTHS[0]))
    np.testing.assert_allclose(
        np.asarray(nets.mlp_apply(params, x)),
        numpy_forward(params, x, NUMPY_ACTIVATIONS["relu"]),
        rtol=1e-5,
        atol=1e-5,
    )


def test_mlp_apply_single_layer_is_affine():
    params = [{"W": jnp.array([[2.0], [-1.0]]), "b": jnp.array([0.5])}]
    x = jnp.array([[1.0, 1.0], [0.0, 3.0]])
    np.testing.assert_allclose(np.asarray(nets.mlp_apply(params, x)), [[1.5], [-2.5]])


def test_mlp_apply_output_scale_scales_output():
    params = nets.mlp_init(jax.random.key(4), WIDTHS)
    x = np.random.default_rng(2).normal(size=(5, WIDTHS[0]))
    base = nets.mlp_apply(params, x, "tanh")
    scaled = nets.mlp_apply(params, x, "tanh", output_scale=0.25)
    np.testing.assert_allclose(np.asarray(scaled), 0.25 * np.asarray(base), rtol=1e-6)


@pytest.mark.parametrize("shape", [(5,), (5, 2), (5, 3, 1)])
def test_mlp_apply_rejects_wrong_input_shape(shape):
    params = nets.mlp_init(jax.random.key(0), WIDTHS)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 3\)"):
        nets.mlp_apply(params, np.zeros(shape))


def test_mlp_apply_rejects_unknown_activation():
    params = nets.mlp_init(jax.random.key(0), WIDTHS)
    with pytest.raises(ValueError, match="unknown activation"):
        nets.mlp_apply(params, np.zeros((2, 3)), "swish")


def test_flatten_unflatten_round_trip():
    params = nets.mlp_init(jax.random.key(5), WIDTHS)
    flat, unflatten = nets.flatten(params)
    n_params = sum(a * b + b for a, b in zip(WIDTHS[:-1], WIDTHS[1:], strict=True))
    assert flat.shape == (n_params,)
    back = unflatten(flat)
    for layer, orig in zip(back, params, strict=True):
        np.testing.assert_array_equal(layer["W"], orig["W"])
        np.testing.assert_array_equal(layer["b"], orig["b"])
    # A new vector lands in the right slots.
    moved = unflatten(jnp.arange(float(n_params)))
    assert float(moved[0]["W"].sum() + moved[0]["b"].sum()) > 0


def test_narrow_apply_is_product_times_x():
    w = jnp.array([2.0, -0.5, 3.0])
    x = jnp.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(np.asarray(nets.narrow_apply(w, x)), [-3.0, 6.0, -1.5])


def test_narrow_apply_batches_over_leading_axes():
    rng = np.random.default_rng(3)
    w = rng.normal(size=(4, 2, 5))
    x = rng.normal(size=6)
    got = nets.narrow_apply(w, x)
    assert got.shape == (4, 2, 6)
    expected = np.prod(w, axis=-1)[..., None] * x
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5)


def test_bias_free_mlp_has_no_bias_and_matches_reference():
    params = nets.mlp_init(jax.random.key(3), WIDTHS, scale=0.7, bias=False)
    assert all(set(layer) == {"W"} for layer in params)
    x = np.random.default_rng(0).normal(size=(6, WIDTHS[0]))
    h = x
    for layer in params[:-1]:
        h = np.maximum(h @ np.asarray(layer["W"]), 0.0)
    np.testing.assert_allclose(
        nets.mlp_apply(params, x), h @ np.asarray(params[-1]["W"]), rtol=1e-6
    )
    # the bias-free net is the biased one with zero biases
    with_zero_bias = [{**layer, "b": jnp.zeros(layer["W"].shape[1])} for layer in params]
    np.testing.assert_allclose(nets.mlp_apply(params, x), nets.mlp_apply(with_zero_bias, x))


def test_symmetries_of_bias_free_mlp_keep_function():
    params = nets.mlp_init(jax.random.key(4), WIDTHS, bias=False)
    x = np.random.default_rng(1).normal(size=(5, WIDTHS[0]))
    f = nets.mlp_apply(params, x)
    permuted = actions.permute_hidden(params, 0, np.array([4, 2, 0, 1, 3]))
    rescaled = actions.rescale_neuron(params, 1, 2, 3.5)
    for new in (permuted, rescaled):
        assert all(set(layer) == {"W"} for layer in new)
        np.testing.assert_allclose(nets.mlp_apply(new, x), f, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_glorot_scheme_draws_kernels_and_zero_biases():
    layers = nets.mlp_init(jax.random.PRNGKey(0), (300, 200, 1), scheme="glorot")
    assert float(jnp.abs(layers[0]["b"]).max()) == 0.0 and layers[1]["b"].shape == (1,)
    np.testing.assert_allclose(float(jnp.std(layers[0]["W"])), (2 / 500) ** 0.5, rtol=0.02)
    no_bias = nets.mlp_init(jax.random.PRNGKey(0), (3, 2), scheme="glorot", bias=False)
    assert set(no_bias[0]) == {"W"}
    with pytest.raises(ValueError, match="scheme must be one of"):
        nets.mlp_init(jax.random.PRNGKey(0), (3, 2), scheme="xavier")


def test_sites_names_the_model_sites():
    layers = nets.mlp_init(jax.random.PRNGKey(0), (3, 4, 1))
    named = nets.sites(layers)
    assert sorted(named) == ["W0", "W1", "b0", "b1"] and named["W1"].shape == (4, 1)


@pytest.mark.parametrize(("scheme", "variance"), [("fan_in", 1 / 400), ("he", 2 / 400)])
def test_fan_in_and_he_schemes_scale_by_the_fan_in(scheme, variance):
    layers = nets.mlp_init(jax.random.PRNGKey(1), (400, 300, 2), scheme=scheme)
    np.testing.assert_allclose(float(jnp.var(layers[0]["W"])), variance, rtol=0.02)
    assert float(jnp.abs(layers[1]["b"]).max()) == 0.0


@pytest.mark.slow
def test_dead_relu_start_kills_layer():
    x = jax.random.normal(jax.random.PRNGKey(1), (20, 3))
    params = nets.mlp_init(jax.random.PRNGKey(0), (3, 8, 8, 1), scheme="glorot")
    dead = nets.dead_relu_start(params, 0, x=x)
    h = jax.nn.relu(x @ dead[0]["W"] + dead[0]["b"])
    assert np.all(h == 0)
    with pytest.raises(ValueError, match="hidden layer"):
        nets.dead_relu_start(params, 2)
