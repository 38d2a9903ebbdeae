"""Tests of the one optimisation loop (bnn_posteriors.inference.optim.minimise)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bnn_posteriors.inference import optim

TARGET = jnp.array([1.0, -2.0, 0.5])


def quadratic(p):
    return jnp.sum((p["w"] - TARGET) ** 2)


def test_minimise_reaches_the_minimum_and_traces_the_loss():
    params, _, trace = optim.minimise(
        quadratic, {"w": jnp.zeros(3)}, optax.adam(0.1), num_steps=500
    )
    np.testing.assert_allclose(params["w"], TARGET, atol=1e-3)
    assert trace.shape == (500,) and float(trace[0]) == float(jnp.sum(TARGET**2))
    assert float(trace[-1]) < 1e-5


def test_minimise_feeds_xs_one_per_step_and_continues_a_state():
    """Minibatch indices as ``xs``; two halves with the carried state equal one run."""
    data = jnp.arange(8.0)
    batches = jnp.arange(8).reshape(4, 2)

    def loss(p, idx):
        return jnp.sum((p - data[idx]) ** 2)

    opt = optax.sgd(0.1)
    whole, _, trace = optim.minimise(loss, jnp.array(0.0), opt, xs=batches)
    half, state, _ = optim.minimise(loss, jnp.array(0.0), opt, xs=batches[:2])
    again, _, _ = optim.minimise(loss, half, opt, xs=batches[2:], state=state)
    assert trace.shape == (4,) and float(whole) == float(again)


def test_minimise_with_aux_returns_both_in_the_trace():
    def loss(p):
        return quadratic(p), {"norm": jnp.linalg.norm(p["w"])}

    _, _, (values, aux) = optim.minimise(
        loss, {"w": jnp.zeros(3)}, optax.adam(0.1), num_steps=5, has_aux=True
    )
    assert values.shape == (5,) and aux["norm"].shape == (5,) and float(aux["norm"][0]) == 0.0


def test_minimise_under_vmap_fits_many_starts():
    starts = {"w": jax.random.normal(jax.random.PRNGKey(0), (4, 3))}
    run = jax.vmap(lambda p: optim.minimise(quadratic, p, optax.adam(0.1), num_steps=400)[0])
    np.testing.assert_allclose(run(starts)["w"], jnp.tile(TARGET, (4, 1)), atol=1e-3)
