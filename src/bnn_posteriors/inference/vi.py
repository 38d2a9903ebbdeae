"""Mean-field variational inference with NumPyro SVI.

The guide is NumPyro's ``AutoNormal`` (a factorised Gaussian over every latent
site); the objective is ``TraceMeanField_ELBO``, which uses the analytic
KL(q‖p) where NumPyro has one (Gaussian against Gaussian) and Monte Carlo for
the expected log-likelihood.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from numpyro.infer import SVI, TraceMeanField_ELBO
from numpyro.infer.autoguide import AutoNormal
from numpyro.optim import optax_to_numpyro

from .. import theory, validate
from ..validate import positive
from . import optim


def fit_mfvi(
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_steps: int = 5000,
    learning_rate: float = 1e-2,
    num_particles: int = 8,
    init_scale: float = 0.1,
    progress_bar: bool = False,
):
    """Fit a mean-field Gaussian q to ``model``'s posterior by maximising the ELBO.

    Adam with a cosine-decayed learning rate; ``num_particles`` Monte-Carlo draws
    per step for the expected log-likelihood.
    Returns ``dict(loc=..., scale=..., losses=(num_steps,))`` where ``loc`` and
    ``scale`` map each latent site to its variational mean and standard deviation.
    """
    validate.check_model_data(model_kwargs, where="fit_mfvi")
    validate.positive_int("num_steps", num_steps, where="fit_mfvi")
    validate.positive_int("num_particles", num_particles, where="fit_mfvi")
    validate.positive("learning_rate", learning_rate, where="fit_mfvi")
    validate.positive("init_scale", init_scale, where="fit_mfvi")
    guide = AutoNormal(model, init_scale=init_scale)
    schedule = optax.cosine_decay_schedule(learning_rate, num_steps, alpha=1e-2)
    svi = SVI(
        model,
        guide,
        optax_to_numpyro(optax.adam(schedule)),
        TraceMeanField_ELBO(num_particles=num_particles),
    )
    result = svi.run(rng_key, num_steps, progress_bar=progress_bar, **model_kwargs)
    median = guide.median(result.params)
    scales = {
        name[: -len("_auto_scale")]: value
        for name, value in result.params.items()
        if name.endswith("_auto_scale")
    }
    return {"loc": median, "scale": scales, "losses": result.losses, "params": result.params}


def sample_mfvi(rng_key, fit: dict, num_samples: int):
    """Draws from a fitted mean-field q (:func:`fit_mfvi`): each site (num_samples, ...)."""
    names = sorted(fit["scale"])  # latent sites; ``loc`` also holds deterministic ones
    keys = jax.random.split(rng_key, len(names))
    return {
        name: fit["loc"][name]
        + fit["scale"][name] * jax.random.normal(k, (num_samples, *fit["loc"][name].shape))
        for k, name in zip(keys, names, strict=True)
    }


def narrow_negative_elbo(params, active, x, y, sigma, tau):
    """−ELBO of q = ∏ N(μ_l, s_l²) for the narrow network over the ``active`` layers.

    ``params = {"mu", "log_s"}`` of shape (D,), ``active`` a (D,) boolean mask of the
    L ≤ D layers of the network; inactive entries contribute nothing (their μ is
    read as 1 in the product and their KL as 0), so one compiled program fits every depth.
    """
    mu, s = params["mu"], jnp.exp(params["log_s"])
    ell = theory.mfvi_expected_log_likelihood(
        jnp.where(active, mu, 1.0), jnp.where(active, s, 0.0), x, y, sigma
    )
    kl = theory.mfvi_kl(jnp.where(active, mu, 0.0), jnp.where(active, s, tau), tau)
    return kl - ell


def fit_mfvi_narrow(
    rng_key,
    x,
    y,
    *,
    depth: int,
    sigma: float,
    tau: float,
    max_depth: int = 16,
    num_starts: int = 16,
    num_steps: int = 500,
    learning_rate: float = 0.02,
    newton_steps: int = 50,
):
    """MFVI of the narrow network ([SAP] §2.1) by maximising its closed-form ELBO.

    For q = ∏ N(μ_l, s_l²) both ELBO terms are analytic
    (:func:`bnn_posteriors.theory.mfvi_elbo`), so the optimum is found without
    Monte-Carlo noise: Adam from ``num_starts`` random starts (μ ~ N(0, τ²),
    s = τ/2) on (μ, log s), each end point polished by Newton steps. All depths
    up to ``max_depth`` share one compiled program (:func:`narrow_negative_elbo`).
    Returns ``dict(mu (L,), s (L,), elbo)``.
    """
    validate.check_xy(x, y, where="fit_mfvi_narrow", ndim=(1,))
    validate.positive_int("num_starts", num_starts, where="fit_mfvi_narrow")
    if not (isinstance(depth, int) and 1 <= depth <= max_depth):
        raise ValueError(f"depth must be an integer in 1..{max_depth}, got {depth!r}")
    x, y = jnp.asarray(x), jnp.asarray(y)
    active = jnp.arange(max_depth) < depth
    args = (active, x, y, positive("sigma", sigma), positive("tau", tau))
    inits = {
        "mu": tau * jax.random.normal(rng_key, (num_starts, max_depth)),
        "log_s": jnp.full((num_starts, max_depth), jnp.log(tau / 2)),
    }
    params, final, _ = optim.multistart_minimise(
        narrow_negative_elbo,
        inits,
        *args,
        num_steps=num_steps,
        learning_rate=learning_rate,
        newton_steps=newton_steps,
    )
    best = int(jnp.argmin(final))
    return {
        "mu": params["mu"][best, :depth],
        "s": jnp.exp(params["log_s"][best, :depth]),
        "elbo": -final[best],
    }
