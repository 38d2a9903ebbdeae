"""Tests of the MLP symmetry operations of [SAP] App. B (Defs. B.1–B.3), claim C3.1."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions

WIDTHS = [(3, 5, 4, 1), (2, 8, 8, 8, 2)]
N_INPUTS = 256
apply = jax.jit(nets.mlp_apply, static_argnums=2)


def setup(widths, seed=0):
    """Random N(0, 1) MLP and N(0, 1) inputs."""
    params = nets.mlp_init(jax.random.key(seed), widths)
    x = np.random.default_rng(seed).normal(size=(N_INPUTS, widths[0]))
    return params, x


def max_change(params, new, x, act):
    """max_x |f(x) − f_transformed(x)| over the inputs."""
    return float(np.max(np.abs(apply(params, x, act) - apply(new, x, act))))


def snapshot(params):
    return [{k: np.array(v) for k, v in layer.items()} for layer in params]


def assert_same(params, saved):
    for layer, old in zip(params, saved, strict=True):
        for k in ("W", "b"):
            np.testing.assert_array_equal(np.asarray(layer[k]), old[k])


def hidden(widths):
    """(layer, width) of every hidden layer."""
    return list(enumerate(widths[1:-1]))


@pytest.mark.slow
@pytest.mark.parametrize("widths", WIDTHS)
@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_permutation_leaves_f_unchanged(widths, act):
    params, x = setup(widths)
    rng = np.random.default_rng(1)
    for layer, width in hidden(widths):
        perm = rng.permutation(width)
        assert not np.array_equal(perm, np.arange(width))
        new = actions.permute_hidden(params, layer, perm)
        assert max_change(params, new, x, act) < 1e-5
        # The permutation really moved the parameters.
        assert not np.allclose(new[layer]["W"], params[layer]["W"])


def test_permutation_moves_the_right_slots():
    params, _ = setup((3, 5, 4, 1))
    perm = np.array([4, 0, 1, 3, 2])
    new = actions.permute_hidden(params, 0, perm)
    np.testing.assert_array_equal(new[0]["W"][:, 0], params[0]["W"][:, 4])
    np.testing.assert_array_equal(new[0]["b"][1], params[0]["b"][0])
    np.testing.assert_array_equal(new[1]["W"][2, :], params[1]["W"][1, :])
    np.testing.assert_array_equal(new[2]["W"], params[2]["W"])


@pytest.mark.parametrize("widths", WIDTHS)
@pytest.mark.parametrize(
    ("op", "act", "invariant"),
    [
        ("rescale", "relu", True),
        ("flip", "tanh", True),
        ("rescale", "tanh", False),
        ("flip", "relu", False),
    ],
)
def test_rescale_and_flip_first_and_last_unit_of_every_layer(widths, op, act, invariant):
    params, x = setup(widths)
    for layer, width in hidden(widths):
        for neuron in (0, width - 1):
            if op == "rescale":
                new = actions.rescale_neuron(params, layer, neuron, 2.5)
            else:
                new = actions.flip_neuron(params, layer, neuron)
            change = max_change(params, new, x, act)
            if invariant:
                assert change < 1e-5, (layer, neuron, change)
            else:
                assert change > 1e-2, (layer, neuron, change)


def test_rescale_and_flip_touch_only_one_neuron():
    params, _ = setup((3, 5, 4, 1))
    new = actions.rescale_neuron(params, 1, 2, 3.0)
    np.testing.assert_allclose(new[1]["W"][:, 2], 3.0 * params[1]["W"][:, 2], rtol=1e-6)
    np.testing.assert_allclose(new[1]["b"][2], 3.0 * params[1]["b"][2], rtol=1e-6)
    np.testing.assert_allclose(new[2]["W"][2], params[2]["W"][2] / 3.0, rtol=1e-6)
    mask = np.arange(4) != 2
    np.testing.assert_array_equal(new[1]["W"][:, mask], params[1]["W"][:, mask])
    np.testing.assert_array_equal(new[0]["W"], params[0]["W"])
    flipped = actions.flip_neuron(params, 0, 4)
    np.testing.assert_array_equal(flipped[0]["W"][:, 4], -params[0]["W"][:, 4])
    np.testing.assert_array_equal(flipped[0]["b"][4], -params[0]["b"][4])
    np.testing.assert_array_equal(flipped[1]["W"][4], -params[1]["W"][4])


@pytest.mark.parametrize("as_numpy", [False, True])
def test_no_mutation(as_numpy):
    params, _ = setup((2, 8, 8, 8, 2))
    if as_numpy:
        params = snapshot(params)
    saved = snapshot(params)
    actions.permute_hidden(params, 1, np.arange(8)[::-1])
    actions.rescale_neuron(params, 2, 3, 4.0)
    actions.flip_neuron(params, 0, 0)
    assert_same(params, saved)


@pytest.mark.parametrize("layer", [-1, 3, 10, 1.0, "0"])
def test_bad_layer(layer):
    params, _ = setup((2, 8, 8, 8, 2))
    with pytest.raises(ValueError, match="layer must"):
        actions.permute_hidden(params, layer, np.arange(8))
    with pytest.raises(ValueError, match="layer must"):
        actions.flip_neuron(params, layer, 0)


def test_no_hidden_layer():
    params = nets.mlp_init(jax.random.key(0), (3, 2))
    with pytest.raises(ValueError, match="no hidden layer"):
        actions.rescale_neuron(params, 0, 0, 2.0)


@pytest.mark.parametrize("neuron", [-1, 5, 2.0])
def test_bad_neuron(neuron):
    params, _ = setup((3, 5, 4, 1))
    with pytest.raises(ValueError, match="neuron must"):
        actions.rescale_neuron(params, 0, neuron, 2.0)
    with pytest.raises(ValueError, match="neuron must"):
        actions.flip_neuron(params, 0, neuron)


@pytest.mark.parametrize(
    "perm", [[0, 1, 2, 3], [0, 1, 2, 3, 3], [0, 1, 2, 3, 5], [0.0, 1, 2, 3, 4]]
)
def test_bad_permutation(perm):
    params, _ = setup((3, 5, 4, 1))
    with pytest.raises(ValueError, match="perm must be a permutation of 0..4"):
        actions.permute_hidden(params, 0, perm)


@pytest.mark.parametrize("c", [0.0, -1.0, float("nan"), float("inf"), "two"])
def test_bad_scale(c):
    params, _ = setup((3, 5, 4, 1))
    with pytest.raises(ValueError, match="c must be a positive"):
        actions.rescale_neuron(params, 0, 0, c)
