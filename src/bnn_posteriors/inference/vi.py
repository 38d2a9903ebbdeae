"""Mean-field variational inference: the one implementation of the package.

q(θ) = Π_j N(θ_j; m_j, s_j²) over every latent site of a NumPyro model, as NumPyro's
``AutoNormal`` guide; the objective is ``TraceMeanField_ELBO``, which uses the analytic
KL(q‖p) where NumPyro has one (Gaussian against Gaussian) and Monte Carlo for the
expected log-likelihood. The choices the papers differ in are arguments:

- the initial means (``init_loc``: NumPyro's uniform default, Glorot-normal kernels as
  [SAP] App. D.7, or a start of the caller's) and the initial sds (``init_scale``);
- how the sds are parametrised (``scale_transform``: softplus, NumPyro's default, or exp);
- the step size (``schedule``: cosine-decayed or constant Adam);
- the temperature η of ELBO_η = E_q log p(y | θ) − η KL(q‖p) ([TEMP]), applied by
  ``numpyro.handlers.scale`` on the guide, whose sites carry the analytic KL.

:func:`fit_mfvi` validates and fits; :func:`svi_steps` is the traceable core that
callers vectorise with ``jax.vmap`` (over temperatures, starts or data sets). The fitted q is
a :class:`bnn_posteriors.inference.mean_field.MeanField`, as in every VI method of the package.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro
import optax
from numpyro.distributions import constraints
from numpyro.infer import SVI, TraceMeanField_ELBO
from numpyro.infer.autoguide import AutoNormal
from numpyro.infer.initialization import init_to_uniform, init_to_value
from numpyro.optim import optax_to_numpyro

from bnn_posteriors.inference import mean_field, optim
from bnn_posteriors.theory import narrow_network as theory
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive

SCHEDULES = ("cosine", "constant")
SCALE_TRANSFORMS = ("softplus", "exp")


class _AutoNormalExp(AutoNormal):
    """``AutoNormal`` whose sds are exp of an unconstrained parameter (not softplus)."""

    scale_constraint = constraints.positive


def mean_field_guide(model, *, init_loc=None, init_scale=0.1, scale_transform="softplus"):
    """The mean-field Gaussian guide of ``model``: ``AutoNormal`` with the given start.

    ``init_loc`` maps latent sites to their initial means (None: NumPyro's uniform
    initialisation in the unconstrained space); every sd starts at ``init_scale``.
    Parameters are named ``<site>_auto_loc`` and ``<site>_auto_scale``.
    """
    if scale_transform not in SCALE_TRANSFORMS:
        raise ValueError(
            f"scale_transform must be one of {SCALE_TRANSFORMS}, got {scale_transform!r}"
        )
    guide_class = AutoNormal if scale_transform == "softplus" else _AutoNormalExp
    init_loc_fn = init_to_uniform if init_loc is None else init_to_value(values=init_loc)
    return guide_class(model, init_loc_fn=init_loc_fn, init_scale=init_scale)


def learning_rate_schedule(schedule: str, learning_rate: float, num_steps: int):
    """Adam's step size: cosine decay to 1 % over ``num_steps``, or constant."""
    if schedule == "cosine":
        return optax.cosine_decay_schedule(learning_rate, num_steps, alpha=1e-2)
    if schedule == "constant":
        return learning_rate
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def svi_steps(
    rng_key,
    model,
    guide,
    model_kwargs: dict,
    *,
    num_steps: int,
    learning_rate: float,
    schedule: str = "cosine",
    num_particles: int = 1,
    temperature=None,
    init_params: dict | None = None,
    elbo=None,
):
    """``num_steps`` full-batch Adam steps on the (tempered) negative ELBO, in one ``scan``.

    ``temperature`` η (None: 1, untouched) scales the guide's sites, so the KL term of
    ``TraceMeanField_ELBO`` is η·KL. ``init_params`` overrides the guide's initial
    parameters (``<site>_auto_loc``/``<site>_auto_scale``, constrained values). Traceable:
    no validation, safe under ``jax.vmap``. ``elbo``: the objective, a NumPyro ELBO object
    (default ``TraceMeanField_ELBO(num_particles)``; a subclass adds terms to it, as the
    symmetrised objective of [SYM] does). Returns ``(params, losses (num_steps,))``.
    """
    scaled = guide if temperature is None else numpyro.handlers.scale(guide, scale=temperature)
    optimiser = optax.adam(learning_rate_schedule(schedule, learning_rate, num_steps))
    svi = SVI(
        model,
        scaled,
        optax_to_numpyro(optimiser),
        TraceMeanField_ELBO(num_particles=num_particles) if elbo is None else elbo,
    )
    state = svi.init(rng_key, init_params=init_params, **model_kwargs)

    def step(state, _):
        return svi.update(state, **model_kwargs)

    state, losses = jax.lax.scan(step, state, None, length=num_steps)
    return svi.get_params(state), losses


def fit_mfvi(
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_steps: int = 5000,
    learning_rate: float = 1e-2,
    schedule: str = "cosine",
    num_particles: int = 8,
    init_loc: dict | None = None,
    init_scale: float = 0.1,
    scale_transform: str = "softplus",
    temperature: float | None = None,
):
    """Fit a mean-field Gaussian q to ``model``'s posterior by maximising the (tempered) ELBO.

    Adam (``schedule``: cosine-decayed or constant) from the start given by ``init_loc``
    and ``init_scale`` (:func:`mean_field_guide`); ``num_particles`` Monte-Carlo draws per
    step for the expected log-likelihood; η = ``temperature`` multiplies the KL.
    Returns ``(q, losses (num_steps,))`` with q a :class:`.mean_field.MeanField` over the
    model's latent sites (means and standard deviations, keyed by site; for an MLP model
    :func:`.mean_field.layers` gives its layer list and :func:`.mean_field.outputs` its
    network outputs under draws from q).
    """
    where = "fit_mfvi"
    validate.check_model_data(model_kwargs, where=where)
    validate.positive_int("num_steps", num_steps, where=where)
    validate.positive_int("num_particles", num_particles, where=where)
    validate.positive("learning_rate", learning_rate, where=where)
    validate.positive("init_scale", init_scale, where=where)
    if temperature is not None:
        validate.positive("temperature", temperature, where=where)
    learning_rate_schedule(schedule, learning_rate, num_steps)  # rejects an unknown schedule
    guide = mean_field_guide(
        model, init_loc=init_loc, init_scale=init_scale, scale_transform=scale_transform
    )
    params, losses = svi_steps(
        rng_key,
        model,
        guide,
        model_kwargs,
        num_steps=num_steps,
        learning_rate=learning_rate,
        schedule=schedule,
        num_particles=num_particles,
        temperature=temperature,
    )
    return mean_field.from_auto_normal(params), losses


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
    (:func:`bnn_posteriors.theory.narrow_network.mfvi_elbo`), so the optimum is found without
    Monte-Carlo noise: Adam from ``num_starts`` random starts (μ ~ N(0, τ²),
    s = τ/2) on (μ, log s), each end point polished by Newton steps. All depths
    up to ``max_depth`` share one compiled program (:func:`narrow_negative_elbo`).
    Returns ``(q, elbo)``: q the :class:`.mean_field.MeanField` over the model's site ``w``
    (means μ (L,), sds s (L,)), as :func:`fit_mfvi` returns it for
    :func:`bnn_posteriors.models.numpyro_models.narrow_network`, and its ELBO.
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
    q = mean_field.MeanField(
        {"w": params["mu"][best, :depth]}, {"w": jnp.exp(params["log_s"][best, :depth])}
    )
    return q, -final[best]
