"""The Metropolis-adjusted microcanonical sampler (MAMS) on the log joint of a NumPyro model:
a second sampler family beside NUTS (:mod:`.mcmc`) for the reference posteriors.

MAMS (Robnik, Cohn-Gordon & Seljak 2025, "Metropolis adjusted microcanonical Hamiltonian
Monte Carlo") integrates the isokinetic (microcanonical) dynamics of MCLMC with the
McLachlan integrator for a random number of steps and accepts the end point by a
Metropolis-Hastings test, so it is exact like NUTS but explores with other dynamics, another
trajectory length rule and another tuning: a bias that NUTS's chains share need not be shared by
MAMS's. BlackJAX implements it as ``adjusted_mclmc_dynamic`` with the tuning
``adjusted_mclmc_find_L_and_step_size`` (dual averaging of the step size to a target
acceptance, a diagonal preconditioner from the chain's variances, and the trajectory length L
from them and, in a third phase, from the autocorrelation); the number of integration steps
per proposal is drawn around L / step size (Halton-free, uniform rescaled, as BlackJAX's
``make_random_trajectory_length_fn(True)``).

The chains run on the flat unconstrained parameter vector (``jax.flatten_util``), vectorised
with ``jax.vmap``; long runs resume: with ``cache`` the tuning and every chunk of draws are
units of :func:`bnn_posteriors.store.cache.cached` (``mams-adapt``, ``mams-draws``, version
:data:`CACHE_VERSION`), through the same chunked runner as NUTS.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.adjusted_mclmc_adaptation import adjusted_mclmc_find_L_and_step_size
from blackjax.adaptation.mclmc_adaptation import MCLMCAdaptationState
from blackjax.mcmc import adjusted_mclmc_dynamic as amd
from blackjax.mcmc.integrators import isokinetic_mclachlan
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import constrain_fn, potential_energy

from bnn_posteriors.inference import mcmc
from bnn_posteriors.store import cache as unit_cache

CACHE_VERSION = "mams-1"  # of the cached units "mams-adapt" and "mams-draws"
# BlackJAX (1.7) pins the trajectory length to L = integration steps × step size and tunes the
# step size at that number of steps; its default, 2, gives a near-MALA sampler whose chains of
# a BNN posterior do not mix in a reference's budget (snelson_gap: noise-scale R-hat 5.0)
INTEGRATION_STEPS = 2.0
# BlackJAX's first tuning pass holds L at integration steps × the initial step size (√d / 5 by
# default) while the step size shrinks, so a posterior that needs small steps runs trajectories
# of L / step ≫ integration steps there: snelson_sparse's tuning at 32 steps ran over 20 min
# against banana_sparse's 3. None: BlackJAX's initial step size.
INITIAL_STEP_SIZE = None
# BlackJAX's three tuning phases, as fractions of the tuning steps: the step size (dual
# averaging) and the preconditioner, L from the variances, L from the effective sample size
TUNING_FRACTIONS = (0.4, 0.4, 0.2)
TARGET_ACCEPTANCE = 0.9  # the MAMS paper's recommendation for the McLachlan integrator


def _kernel():
    """BlackJAX's MAMS kernel with a random number of steps around L / step size, in the
    signature its tuning calls (no partially refreshed momentum: L_proposal_factor = ∞)."""
    kernel = amd.build_kernel(
        integration_steps_fn=amd.make_random_trajectory_length_fn(True),
        integrator=isokinetic_mclachlan,
    )

    def step(
        rng_key, state, logdensity_fn, step_size, inverse_mass_matrix, integration_steps_params
    ):
        return kernel(
            rng_key,
            state,
            logdensity_fn,
            step_size,
            jnp.inf,
            inverse_mass_matrix,
            integration_steps_params,
        )

    return step


@functools.lru_cache(maxsize=32)
def _compiled(
    model,
    static: tuple,
    sites: tuple,
    num_warmup: int,
    target: float,
    thinning: int,
    integration_steps: float = INTEGRATION_STEPS,
    initial_step_size: float | None = INITIAL_STEP_SIZE,
):
    """The jitted, chain-vectorised MAMS programs of one (model, sites, settings):
    ``adapt(keys, z, arrays) -> (state, tuned)`` and ``sample(state, tuned, keys, arrays) ->
    (state, samples, stats)``, as :func:`.mcmc.nuts`'s chunked runner expects. ``sites``: the
    names and shapes of the unconstrained sites, in the order of the flat vector z."""
    template = {name: jnp.zeros(shape) for name, shape in sites}
    unravel = ravel_pytree(template)[1]
    kernel = _kernel()
    total = sum(TUNING_FRACTIONS)
    num_steps = max(int(round(num_warmup / total)), 1)  # BlackJAX tunes fractions of these

    def logdensity_of(arrays):
        kwargs = {**dict(static), **arrays}
        return lambda z: -potential_energy(model, (), kwargs, unravel(z))

    def adapt(key, z, arrays):
        logdensity = logdensity_of(arrays)
        k_init, k_tune = jax.random.split(key)
        state = amd.init(z, logdensity, k_init)
        f1, f2, f3 = TUNING_FRACTIONS
        start = None
        if initial_step_size is not None:  # BlackJAX pins L to the steps × this step size
            start = MCLMCAdaptationState(
                initial_step_size, initial_step_size, inverse_mass_matrix=jnp.ones(z.shape)
            )
        state, params, _ = adjusted_mclmc_find_L_and_step_size(
            kernel,
            logdensity,
            num_steps,
            state,
            k_tune,
            target,
            frac_tune1=f1 / total * num_warmup / num_steps,
            frac_tune2=f2 / total * num_warmup / num_steps,
            frac_tune3=f3 / total * num_warmup / num_steps,
            diagonal_preconditioning=True,
            target_num_integration_steps=integration_steps,
            params=start,
        )
        tuned = {
            "step_size": params.step_size,
            "L": params.L,
            "inverse_mass_matrix": params.inverse_mass_matrix,
        }
        return tuple(state), tuned

    def sample(state, tuned, keys, arrays):
        logdensity = logdensity_of(arrays)
        steps = (tuned["L"] / tuned["step_size"],)

        def one(state, key):
            state, info = kernel(
                key, state, logdensity, tuned["step_size"], tuned["inverse_mass_matrix"], steps
            )
            return state, (state.position, info)

        state, (z, info) = jax.lax.scan(one, amd.DynamicHMCState(*state), keys)
        z = z[thinning - 1 :: thinning]
        kwargs = {**dict(static), **arrays}
        samples = jax.vmap(
            lambda v: constrain_fn(model, (), kwargs, unravel(v), return_deterministic=True)
        )(z)
        stats = {
            "step_size": tuned["step_size"],
            "L": tuned["L"],
            "acceptance_rate": info.acceptance_rate,
            "num_steps": info.num_integration_steps,
            "diverging": info.is_divergent,
        }
        return tuple(state), samples, stats

    return (
        jax.jit(jax.vmap(adapt, in_axes=(0, 0, None))),
        jax.jit(jax.vmap(sample, in_axes=(0, 0, 0, None))),
    )


def mams(
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    init_positions: dict | None = None,
    target_acceptance_rate: float = TARGET_ACCEPTANCE,
    chunk_size: int | None = None,
    cache: bool | Path = False,
    progress: bool = False,
    thinning: int = 1,
    integration_steps: float = INTEGRATION_STEPS,
    initial_step_size: float | None = INITIAL_STEP_SIZE,
):
    """MAMS chains on the log joint of ``model``, as :func:`.mcmc.nuts` runs NUTS.

    ``num_warmup`` tuning steps (BlackJAX's three phases in the proportions of
    :data:`TUNING_FRACTIONS`, the step size tuned to ``target_acceptance_rate`` at a mean of
    ``integration_steps`` integration steps per proposal, L = that × the step size, from
    ``initial_step_size``: None for BlackJAX's √d / 5), then
    ``num_samples`` draws per chain, every ``thinning``-th kept. Starts: NumPyro's uniform
    start on [−2, 2] of the unconstrained space, one key per chain, or ``init_positions``
    (unconstrained sites with a leading chain axis). ``chunk_size``, ``cache``, ``progress``:
    the resumable chunks of :func:`.mcmc.nuts`.

    Returns ``(samples, stats)``: every sample and deterministic site (num_chains,
    num_samples // thinning, ...); per chain ``step_size`` and ``L`` (chains,) and per draw
    ``acceptance_rate``, ``num_steps`` (integration steps, one gradient each) and
    ``diverging`` (chains, num_samples).
    """
    where = "mams"
    mcmc._check_inputs(where, model_kwargs, num_chains, num_warmup, num_samples, 10)
    if not 0 < target_acceptance_rate < 1:
        raise ValueError(f"{where}: target_acceptance_rate must lie in (0, 1)")
    thinning, init_positions, keys_warm, keys = mcmc.chain_inputs(
        where,
        rng_key,
        model,
        model_kwargs,
        num_chains=num_chains,
        num_samples=num_samples,
        init_positions=init_positions,
        thinning=thinning,
        chunk_size=chunk_size,
    )
    arrays, static = mcmc.split_kwargs(model_kwargs)
    first = jax.tree.map(lambda a: a[0], init_positions)
    sites = tuple((k, tuple(np.shape(first[k]))) for k in sorted(first))
    z0 = jax.vmap(lambda p: ravel_pytree({k: p[k] for k, _ in sites})[0])(init_positions)
    if not integration_steps > 1.1:  # BlackJAX's floor on L / step size
        raise ValueError(f"{where}: integration_steps must exceed 1.1, got {integration_steps}")
    if initial_step_size is not None and not initial_step_size > 0:
        raise ValueError(f"{where}: initial_step_size must be positive, got {initial_step_size}")
    adapt, sample = _compiled(
        model,
        static,
        sites,
        int(num_warmup),
        float(target_acceptance_rate),
        thinning,
        float(integration_steps),
        None if initial_step_size is None else float(initial_step_size),
    )
    settings = dict(
        model=f"{model.__module__}.{model.__qualname__}",
        static=repr(static),
        num_warmup=int(num_warmup),
        target=float(target_acceptance_rate),
        thinning=thinning,
        # the default's units keep their keys
        **({} if integration_steps == INTEGRATION_STEPS else {"steps": float(integration_steps)}),
        **({} if initial_step_size is None else {"initial_step": float(initial_step_size)}),
    )
    directory = unit_cache.cache_location(cache)
    return mcmc._nuts_in_chunks(
        adapt,
        sample,
        (keys_warm, keys, z0, arrays),
        settings,
        chunk_size or num_samples,
        directory,
        progress,
        sampler="mams",
        version=CACHE_VERSION,
    )
