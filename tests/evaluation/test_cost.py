"""Tests of bnn_posteriors.evaluation.cost: FLOP counts against hand counts."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from bnn_posteriors.evaluation import cost
from bnn_posteriors.inference import metricbnn
from bnn_posteriors.models import nets


def test_xla_flops_of_a_matmul():
    a = jnp.ones((30, 40))
    b = jnp.ones((40, 20))
    assert cost.xla_flops(jnp.matmul, a, b) == pytest.approx(2 * 30 * 40 * 20)


def test_xla_temp_bytes_counts_the_residuals_reverse_mode_keeps_across_a_loop():
    def loop(x):  # 50 steps of tanh: reverse mode keeps each step's input
        return jax.lax.fori_loop(0, 50, lambda i, v: jnp.tanh(v), x).sum()

    x = jnp.ones(1000)
    forward, backward = cost.xla_temp_bytes(loop, x), cost.xla_temp_bytes(jax.grad(loop), x)
    assert backward >= 50 * 1000 * 4 > forward  # float32: the 50 stored iterates at least


def test_factorisation_counts():
    assert cost.eigh_flops(10) == 9000
    assert cost.svd_flops(100, 10) == cost.svd_flops(10, 100) == 2 * 100 * 100 + 11 * 1000


@pytest.mark.slow
def test_laplace_cost_is_cubic_in_the_parameters():
    x = jnp.linspace(-1, 1, 20)[:, None]
    small = nets.mlp_init(jax.random.PRNGKey(0), (1, 5, 1))
    large = nets.mlp_init(jax.random.PRNGKey(0), (1, 5, 5, 5, 1))
    terms = cost.laplace_flops(small, x, x, noise_scale=0.3)
    assert set(terms) == {"ggn", "eigh", "predictive"} and min(terms.values()) > 0
    p_small, p_large = ravel_pytree(small)[0].size, ravel_pytree(large)[0].size
    growth = sum(cost.laplace_flops(large, x, x, noise_scale=0.3).values()) / sum(terms.values())
    assert growth > (p_large / p_small) ** 2  # at least quadratic: the eigh term is cubic


@pytest.mark.slow
def test_metricbnn_cost_scales_with_the_budget():
    x = jnp.linspace(-1, 1, 20)[:, None]
    y = jnp.sin(x)
    params = nets.mlp_init(jax.random.PRNGKey(0), (1, 8, 1))
    theta, unravel = ravel_pytree(params)
    apply = partial(nets.mlp_apply, activation_name="tanh")
    loss = metricbnn.refinement_loss(unravel, apply, x, y, likelihood="gaussian")
    budget = dict(
        num_particles=2,
        num_steps=5,
        num_refine=3,
        ae_updates=10,
        ae_batch=8,
        latent_dim=2,
        hidden=(4,),
        num_components=4,
        num_samples=3,
    )
    one = cost.metricbnn_flops(loss, theta, apply, unravel, x, **budget)
    two = cost.metricbnn_flops(loss, theta, apply, unravel, x, **{**budget, "ae_updates": 20})
    assert two["autoencoder"] == pytest.approx(2 * one["autoencoder"])
    assert two["walk"] == one["walk"] > 0
    longer = cost.metricbnn_flops(loss, theta, apply, unravel, x, **{**budget, "num_refine": 6})
    assert longer["walk"] > 1.8 * one["walk"]
    # the paper's encoder on all P parameters: no principal directions, a larger autoencoder
    paper = {**budget, "num_components": None}
    all_in = cost.metricbnn_flops(loss, theta, apply, unravel, x, **paper)
    assert all_in["svd"] == 0.0 < one["svd"] and all_in["walk"] == one["walk"]
    assert all_in["autoencoder"] > one["autoencoder"]


@pytest.mark.slow
def test_flops_against_depth_rows_and_terms():
    x = jnp.linspace(-1, 1, 12)[:, None]
    y = jnp.sin(x)
    keys = list(jax.random.split(jax.random.PRNGKey(0), 2))
    budgets = dict(
        num_particles=2,
        num_steps=3,
        num_refine=2,
        ae_updates=2,
        ae_batch=4,
        latent_dim=2,
        hidden=(4,),
        num_components=3,
        num_samples=5,
    )
    rows, terms = cost.flops_against_depth(
        keys, x, y, x[:4], depths=(1, 2), width=3, noise_scale=0.3, prior_precision=1.0, **budgets
    )
    assert rows["depth"] == [1, 2] and rows["P"] == [10, 22]  # 1-3-1 and 1-3-3-1 MLPs
    for la, (la_terms, mb_terms) in zip(rows["LA"], terms, strict=True):
        assert la == sum(la_terms.values()) and set(mb_terms) >= {"walk", "autoencoder"}
    assert rows["LA"][1] > rows["LA"][0] and rows["MetricBNN"][1] > rows["MetricBNN"][0]
    # with the encoder on all P the count grows with P faster than on 3 principal directions
    all_in = rows["MetricBNN, all P in"]
    assert all_in[1] / all_in[0] > rows["MetricBNN"][1] / rows["MetricBNN"][0]
    with pytest.raises(ValueError, match="one key per depth"):
        cost.flops_against_depth(
            keys[:1],
            x,
            y,
            x,
            depths=(1, 2),
            width=3,
            noise_scale=0.3,
            prior_precision=1.0,
            **budgets,
        )


@pytest.mark.slow
def test_gradient_flops_grow_with_the_data_and_the_width():
    from bnn_posteriors.models.numpyro_models import MLP

    x = np.linspace(-1, 1, 40, dtype=np.float32)[:, None]
    y = np.sin(3 * x[:, 0])
    small = cost.gradient_flops(MLP((1, 8, 1), activation="tanh"), x[:20], y[:20])
    more_data = cost.gradient_flops(MLP((1, 8, 1), activation="tanh"), x, y)
    wider = cost.gradient_flops(MLP((1, 32, 1), activation="tanh"), x[:20], y[:20])
    assert 0 < small < more_data < 2.5 * small
    assert wider > 3 * small
    labels = (x[:, 0] > 0).astype(np.int32)  # a classifier (NumPy labels) too
    classifier = cost.gradient_flops(MLP((1, 8, 2), "categorical", "tanh"), x, labels)
    assert classifier > small


def test_gradient_flops_are_compiled_once_per_model_and_data(monkeypatch):
    from bnn_posteriors.models.numpyro_models import MLP

    calls = []
    monkeypatch.setattr(cost, "_GRADIENT_FLOPS", {})
    monkeypatch.setattr(cost, "xla_flops", lambda fn, *args: calls.append(fn) or 7.0 * len(calls))
    x = np.linspace(-1, 1, 10, dtype=np.float32)[:, None]
    y = np.sin(3 * x[:, 0])
    spec = MLP((1, 4, 1), activation="tanh")
    first = cost.gradient_flops(spec, x, y)
    assert cost.gradient_flops(spec, x.copy(), y.copy()) == first and len(calls) == 1
    cost.gradient_flops(spec, x, y + 1.0)  # other data: compiled again
    cost.gradient_flops(MLP((1, 5, 1), activation="tanh"), x, y)  # another model
    assert len(calls) == 3
