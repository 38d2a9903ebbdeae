"""Tests of the convexified two-layer ReLU network (Lemma E.1 of [SAP] App. E)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density

from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.theory import convexified_relu as convex

pytestmark = pytest.mark.usefixtures("x64")  # equalities checked to 1e-12

D, H, N = 3, 6, 20
SIGMA, TAU = 0.7, 1.3


@pytest.fixture()
def net_and_data(x64):
    params = nets.mlp_init(jax.random.key(0), (D, H, 1), bias=False)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(N, D)), rng.normal(size=N)
    return params, x, y


@pytest.mark.slow
def test_group_hadamard_is_the_rowwise_product(net_and_data):
    params, _, _ = net_and_data
    u = convex.group_hadamard(params)
    W1, w2 = np.asarray(params[0]["W"]).T, np.asarray(params[1]["W"])[:, 0]
    assert u.shape == (H, D)
    for i in range(H):
        np.testing.assert_allclose(u[i], w2[i] * W1[i])
    batched = jax.tree_util.tree_map(lambda a: jnp.stack([a, 2 * a]), params)
    np.testing.assert_allclose(convex.group_hadamard(batched)[1], 4 * u)


def test_activation_patterns_are_the_relu_gates(net_and_data):
    params, x, _ = net_and_data
    d = convex.activation_patterns(params, x)
    assert d.shape == (H, N)
    np.testing.assert_array_equal(d, (x @ np.asarray(params[0]["W"]) >= 0).T)


@pytest.mark.slow
def test_f_is_the_negative_log_posterior(net_and_data):
    params, x, y = net_and_data
    kwargs = {"widths": (D, H, 1), "bias": False, "prior_scale": TAU, "noise_scale": SIGMA}
    sites = {"W0": params[0]["W"], "W1": params[1]["W"]}
    logp, _ = log_density(models.mlp_regression, (x, y), kwargs, sites)
    consts = N * np.log(SIGMA * np.sqrt(2 * np.pi)) + (D * H + H) * np.log(TAU * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(convex.loss_f(params, x, y, SIGMA, TAU), -logp - consts, rtol=1e-10)


def test_gap_f_minus_g_is_the_imbalance_and_non_negative():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(N, D)), rng.normal(size=N)
    for seed in range(20):
        params = nets.mlp_init(jax.random.key(seed), (D, H, 1), scale=0.3 + seed / 10, bias=False)
        f = convex.loss_f(params, x, y, SIGMA, TAU)
        g = convex.loss_g(
            convex.group_hadamard(params), convex.activation_patterns(params, x), x, y, SIGMA, TAU
        )
        gap = convex.imbalance(params, TAU)
        assert gap > 0
        np.testing.assert_allclose(f - g, gap, rtol=1e-9, atol=1e-9)


def test_rebalance_keeps_the_function_and_attains_equality(net_and_data):
    params, x, y = net_and_data
    balanced = convex.rebalance(params)
    np.testing.assert_allclose(nets.mlp_apply(balanced, x), nets.mlp_apply(params, x), rtol=1e-12)
    np.testing.assert_allclose(convex.group_hadamard(balanced), convex.group_hadamard(params))
    W1, w2 = np.asarray(balanced[0]["W"]).T, np.asarray(balanced[1]["W"])[:, 0]
    np.testing.assert_allclose(np.linalg.norm(W1, axis=1), np.abs(w2), rtol=1e-12)
    assert float(convex.imbalance(balanced, TAU)) == pytest.approx(0.0, abs=1e-20)
    f = convex.loss_f(balanced, x, y, SIGMA, TAU)
    g = convex.loss_g(
        convex.group_hadamard(params), convex.activation_patterns(params, x), x, y, SIGMA, TAU
    )
    np.testing.assert_allclose(f, g, rtol=1e-12)
    assert float(convex.loss_f(params, x, y, SIGMA, TAU)) > float(f)


def test_rebalance_leaves_dead_units_alone(net_and_data):
    params, _, _ = net_and_data
    params = [{"W": params[0]["W"].at[:, 0].set(0.0)}, {"W": params[1]["W"].at[1, 0].set(0.0)}]
    balanced = convex.rebalance(params)
    assert np.all(np.isfinite(balanced[0]["W"])) and np.all(np.isfinite(balanced[1]["W"]))
    np.testing.assert_array_equal(balanced[1]["W"][0], params[1]["W"][0])
    np.testing.assert_array_equal(balanced[0]["W"][:, 1], params[0]["W"][:, 1])


def test_match_units_undoes_a_permutation():
    rng = np.random.default_rng(2)
    reference = rng.normal(size=(7, 4))
    perm = rng.permutation(7)
    features = reference[np.argsort(perm)] + 1e-3 * rng.normal(size=(7, 4))
    found = convex.match_units(reference, features)
    np.testing.assert_allclose(features[found], reference, atol=1e-2)
    with pytest.raises(ValueError, match=r"both be \(H, k\)"):
        convex.match_units(reference, features[:5])


@pytest.mark.parametrize(
    "params",
    [
        [{"W": jnp.ones((3, 4)), "b": jnp.ones(4)}, {"W": jnp.ones((4, 1))}],
        [{"W": jnp.ones((3, 4))}, {"W": jnp.ones((4, 2))}],
        [{"W": jnp.ones((3, 4))}, {"W": jnp.ones((5, 1))}],
        [{"W": jnp.ones((3, 4))}, {"W": jnp.ones((4, 4))}, {"W": jnp.ones((4, 1))}],
    ],
)
def test_rejects_other_networks(params):
    with pytest.raises(ValueError, match="bias-free two-layer net"):
        convex.group_hadamard(params)


def test_losses_reject_bad_data_and_scales(net_and_data):
    params, x, y = net_and_data
    with pytest.raises(ValueError, match="x must be"):
        convex.loss_f(params, x, y[:-1], SIGMA, TAU)
    with pytest.raises(ValueError, match="sigma must be positive"):
        convex.loss_f(params, x, y, -1.0, TAU)
    with pytest.raises(ValueError, match="tau must be positive"):
        convex.loss_g(convex.group_hadamard(params), None, x, y, SIGMA, 0.0)
