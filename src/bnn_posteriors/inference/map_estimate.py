"""The MAP estimate that Laplace approximations and MetricBNN start from ([MBNN] eq. 1).

:func:`regularised_loss` is L(θ) = −log p(D | θ) + (δ/2)‖θ‖², the negative log joint
under a N(0, I/δ) prior with the likelihood of :func:`.models.neg_log_likelihood`: for an
MLP it is the potential energy of :class:`.models.MLP`'s model with prior_scale = δ^(−1/2)
less the prior's constant P·log(prior_scale·√(2π)). It takes any ``apply_fn`` (MetricBNN's
CNN has no NumPyro model);
:func:`train_map` minimises L(θ)/n by full-batch AdamW in :func:`.optim.minimise`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from bnn_posteriors.inference import optim
from bnn_posteriors.inference.laplace import check_data
from bnn_posteriors.models import nets
from bnn_posteriors.models.numpyro_models import neg_log_likelihood
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int


def regularised_loss(
    params, x, y, *, apply_fn, likelihood: str, noise_scale=1.0, prior_precision=1.0
):
    """L(θ) = −log p(D | θ) + (δ/2)‖θ‖² ([MBNN] eq. 1 with a N(0, I/δ) prior)."""
    flat, _ = ravel_pytree(params)
    nll = neg_log_likelihood(apply_fn(params, x), y, likelihood, noise_scale)
    return nll + 0.5 * prior_precision * jnp.sum(flat**2)


def train_map(
    params,
    x,
    y,
    *,
    likelihood: str,
    noise_scale: float | jax.Array = 1.0,
    prior_precision: float = 1.0,
    activation: str = "relu",
    apply_fn: Callable | None = None,
    num_steps: int = 1000,
    learning_rate: float = 1e-3,
    weight_decay: float = 0.0,
):
    """Full-batch AdamW on the mean regularised loss L(θ)/n; returns ``(params, loss trace)``.

    ``weight_decay`` is AdamW's decoupled decay, on top of the prior's (δ/2)‖θ‖².
    """
    validate.check_likelihood(likelihood)
    noise_scale = positive("noise_scale", noise_scale, where="train_map")
    delta = positive("prior_precision", prior_precision, where="train_map")
    x, y = check_data(x, y, likelihood, "train_map")
    num_steps = positive_int("num_steps", num_steps, where="train_map")
    learning_rate = positive("learning_rate", learning_rate, where="train_map")
    if apply_fn is None:
        apply_fn = functools.partial(nets.mlp_apply, activation_name=activation)
    n = x.shape[0]

    def loss(p):
        return (
            regularised_loss(
                p,
                x,
                y,
                apply_fn=apply_fn,
                likelihood=likelihood,
                noise_scale=noise_scale,
                prior_precision=delta,
            )
            / n
        )

    opt = optax.adamw(learning_rate, weight_decay=weight_decay)

    @jax.jit
    def run(p):
        p, _, trace = optim.minimise(loss, p, opt, num_steps=num_steps)
        return p, trace

    return run(params)
