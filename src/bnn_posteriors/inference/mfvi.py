"""Mean-field VI baseline of the UCI benchmark ([SAP] §5, App. D.7).

q(θ) = Π_j N(θ_j; m_j, s_j²) over every weight and bias of the regression MLP
:func:`bnn_posteriors.models.mlp_regression` (prior N(0, τ²) per parameter, Gaussian
likelihood with a *fixed* observation noise σ). NumPyro SVI with the ``AutoNormal``
guide and ``TraceMeanField_ELBO`` (analytic KL(q‖p), Monte-Carlo expected
log-likelihood), full-batch Adam with a constant learning rate, as [SAP] App. D.7:
"5000 epochs with the Adam optimizer and a learning rate of 0.005". The predictive
([SAP] App. D.7) is Gaussian with the mean and variance of the network outputs of
100 draws from q plus the observation noise σ².

Differs from :func:`bnn_posteriors.inference.vi.fit_mfvi` (a cosine-decayed learning
rate, NumPyro's uniform initialisation) only in these two choices, which follow the
benchmark's authors here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from numpyro.infer import SVI, TraceMeanField_ELBO
from numpyro.infer.autoguide import AutoNormal
from numpyro.infer.initialization import init_to_value
from numpyro.optim import optax_to_numpyro

from .. import models, nets, validate
from ..validate import positive, positive_int


def glorot_means(rng_key, widths: Sequence[int]) -> dict:
    """Initial means of q: kernels ~ N(0, 2/(d_in + d_out)), biases 0 (sites ``W{i}``, ``b{i}``)."""
    widths = nets.check_widths(widths)
    keys = jax.random.split(rng_key, len(widths) - 1)
    values = {}
    for i, (k, d_in, d_out) in enumerate(zip(keys, widths[:-1], widths[1:], strict=True)):
        values[f"W{i}"] = math.sqrt(2.0 / (d_in + d_out)) * jax.random.normal(k, (d_in, d_out))
        values[f"b{i}"] = jnp.zeros(d_out)
    return values


def fit_mfvi_regression(
    rng_key,
    x,
    y,
    *,
    widths: Sequence[int],
    noise: float = 0.1,
    prior_scale: float = 1.0,
    num_steps: int = 5000,
    learning_rate: float = 0.005,
    num_particles: int = 10,
    init_scale: float = math.exp(-2.0),
    activation: str = "relu",
) -> dict:
    """Fit mean-field q to the regression MLP's posterior by maximising the ELBO.

    ELBO(q) = E_q[log p(y | x, θ)] − KL(q ‖ N(0, τ² I)), the KL analytic
    (``TraceMeanField_ELBO``), the expectation from ``num_particles`` draws; full-batch
    Adam(``learning_rate``) for ``num_steps`` steps. Means start at Glorot-normal
    kernels and zero biases, standard deviations at ``init_scale`` (the authors' code:
    log s = −2). ``x`` (n, d), ``y`` (n,), ``widths`` = (d, hidden..., 1).

    Returns ``dict(params, losses (num_steps,), loc, scale, widths, noise, prior_scale,
    activation)``; ``loc``/``scale`` map each site (``W0``, ``b0``, ...) to its mean and sd.
    """
    widths = nets.check_widths(widths)
    if widths[-1] != 1:
        raise ValueError(f"mean regression needs one output, got widths {widths}")
    nets.activation(activation)
    where = "fit_mfvi_regression"
    x, y = validate.check_xy(x, y, where=where, n_features=widths[0], dtype=np.float32)
    x, y = jnp.asarray(x), jnp.asarray(y)
    noise = positive("noise", noise, where=where)
    prior_scale = positive("prior_scale", prior_scale, where=where)
    learning_rate = positive("learning_rate", learning_rate, where=where)
    init_scale = positive("init_scale", init_scale, where=where)
    num_steps = positive_int("num_steps", num_steps)
    num_particles = positive_int("num_particles", num_particles)
    key_init, key_fit = jax.random.split(rng_key)
    kwargs = dict(widths=widths, activation=activation, prior_scale=prior_scale, noise=noise)
    guide = AutoNormal(
        models.mlp_regression,
        init_loc_fn=init_to_value(values=glorot_means(key_init, widths)),
        init_scale=init_scale,
    )
    svi = SVI(
        models.mlp_regression,
        guide,
        optax_to_numpyro(optax.adam(learning_rate)),
        TraceMeanField_ELBO(num_particles=num_particles),
    )
    state = svi.init(key_fit, x, y, **kwargs)

    def step(state, _):
        return svi.update(state, x, y, **kwargs)

    state, losses = jax.jit(lambda s: jax.lax.scan(step, s, None, length=num_steps))(state)
    params = svi.get_params(state)
    loc = {k[: -len("_auto_loc")]: v for k, v in params.items() if k.endswith("_auto_loc")}
    scale = {k[: -len("_auto_scale")]: v for k, v in params.items() if k.endswith("_auto_scale")}
    return {
        "params": params,
        "losses": losses,
        "loc": loc,
        "scale": scale,
        "widths": widths,
        "noise": noise,
        "prior_scale": prior_scale,
        "activation": activation,
    }


def _check_fit(fit) -> None:
    required = {"loc", "scale", "widths", "noise", "activation"}
    if not isinstance(fit, dict) or not required <= set(fit):
        raise TypeError("fit must be the dict returned by fit_mfvi_regression")


def mfvi_output_samples(rng_key, fit: dict, x, num_samples: int = 100):
    """Network outputs f(x; θ_s) for θ_s ~ q, s = 1..``num_samples``: shape (S, n)."""
    _check_fit(fit)
    num_samples = positive_int("num_samples", num_samples)
    x = validate.check_x(
        x, where="mfvi_output_samples", n_features=fit["widths"][0], dtype=np.float32
    )
    n_layers = len(fit["widths"]) - 1
    keys = jax.random.split(rng_key, 2 * n_layers)
    layers = []
    for i in range(n_layers):
        layer = {}
        for j, name in enumerate(("W", "b")):
            loc, scale = fit["loc"][f"{name}{i}"], fit["scale"][f"{name}{i}"]
            eps = jax.random.normal(keys[2 * i + j], (num_samples, *loc.shape))
            layer[name] = loc + scale * eps
        layers.append(layer)
    apply = jax.vmap(lambda p: nets.mlp_apply(p, jnp.asarray(x), fit["activation"])[:, 0])
    return apply(layers)


def mfvi_predictive(rng_key, fit: dict, x, num_samples: int = 100, noise: float | None = None):
    """Gaussian predictive of [SAP] App. D.7: ``(mean (n,), var (n,))``.

    mean = average output over ``num_samples`` draws from q; var = their variance plus
    σ² (``noise``, default the fit's observation noise).
    """
    noise = fit["noise"] if noise is None else positive("noise", noise)
    f = mfvi_output_samples(rng_key, fit, x, num_samples)
    return f.mean(0), f.var(0) + noise**2
