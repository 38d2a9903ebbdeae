"""MCLMC with MILE's tuning of the step size ε and the decoherence length L ([SAP] App. D.1).

Microcanonical Langevin Monte Carlo (BlackJAX ``mclmc`` kernel, ``isokinetic_mclachlan``
integrator, no preconditioning) on the log density of a flat vector, after a
three-phase tuning of (L, ε). The tuning is BlackJAX's ``mclmc_find_L_and_step_size``
(same predictor, same NaN handling, same L estimates) with MILE's settings, re-written
here for one reason: MILE lowers the target energy variance per dimension linearly
from 0.5 towards 0.1 over phases 1 and 2 (:func:`energy_var_schedule`), while
BlackJAX keeps it constant. Phases (fractions of ``tuning_steps``, MILE: 50 000 steps):

1. 80 %: adapt ε so that Var[ΔE]/d tracks the (decreasing) target, starting from
   ε = 0.01 and L = max(√d, 15); no preconditioning.
2. 10 %: keep adapting ε at the (still decreasing) target and average x and x²
   (weights ε); L = √(Σ_i Var[x_i]).
3. 10 %: fixed (L, ε); L = 0.4 · ε · mean_i(N₃ / ESS_i) over at most 2000 coordinates.

Then ``sampling_steps`` steps (MILE: 10 000), every ``thinning``-th kept (MILE: 10).

The steps of one chain are pure functions of a log density ``logdensity(z)`` of a flat
vector z (d,): :func:`tune_init`, :func:`tune_scan` (phases 1–2, in chunks),
:func:`tune_finish` (end of phase 2 and phase 3) and :func:`sample_scan`;
:func:`mclmc_chain` chains them for one chain. :mod:`bnn_posteriors.inference.sharding`
runs the same steps for many chains, vectorised and sharded.
"""

from __future__ import annotations

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.mclmc_adaptation import handle_nans
from blackjax.diagnostics import effective_sample_size
from blackjax.mcmc.integrators import isokinetic_mclachlan

from bnn_posteriors.util.validate import positive, positive_int

# MILE's tuning settings (Sommer et al. 2025, App.; [SAP] App. D.1).
TUNING_FRACTIONS = (0.8, 0.1, 0.1)
ENERGY_VAR_START, ENERGY_VAR_END = 0.5, 0.1
TRUST_IN_ESTIMATE = 1.5
NUM_EFFECTIVE_SAMPLES = 100
INITIAL_STEP_SIZE = 0.01
MIN_INITIAL_L = 15.0
L_FACTOR = 0.4
MAX_ESS_COORDINATES = 2000


def energy_var_schedule(
    tuning_steps: int, *, start: float = ENERGY_VAR_START, end: float = ENERGY_VAR_END
) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-step target energy variance and averaging mask of phases 1–2, and phase 3's length.

    The target Var[ΔE]/d falls linearly from ``start`` towards ``end`` over the
    n = n₁ + n₂ steps of phases 1 and 2 together: at step i = 0, …, n − 1 it is
    ``start − (start − end) · min(i / (n + 1), 1)``, so it begins at ``start`` and ends
    just above ``end`` (``start = end`` gives a constant target, as in BlackJAX). This
    follows the authors' code, ``get_desired_energy_var_linear`` in
    ``make_L_step_size_adaptation`` in the [SAP] authors' repository
    EmanuelSommer/sampled-approx-posteriors, ``src/sai/kernels/warmup.py`` (which
    switches to an exponential decay for ``start`` > 2, a case MILE's settings never
    reach; only the linear rule is used here).
    The mask is 0 in phase 1 and 1 in phase 2 (the steps whose x and x² are averaged).
    Returns ``(target (n,), mask (n,), n₃)`` with float32 arrays.
    """
    tuning_steps = positive_int("tuning_steps", tuning_steps, 10)
    start = positive("start", start, where="energy_var_schedule")
    end = positive("end", end, where="energy_var_schedule")
    n1, n2 = (round(f * tuning_steps) for f in TUNING_FRACTIONS[:2])
    n12 = n1 + n2
    n3 = tuning_steps - n12
    progress = np.minimum(np.arange(n12) / (n12 + 1), 1.0)
    target = (start - (start - end) * progress).astype(np.float32)
    mask = np.concatenate([np.zeros(n1), np.ones(n2)]).astype(np.float32)
    return target, mask, n3


def tune_init(logdensity, key, z):
    """Initial tuning carry of one chain at ``z`` (d,): ``(state, (L, ε), adapt, stream)``.

    ``state``: BlackJAX MCLMC state; L = max(√d, 15), ε = 0.01; ``adapt`` = (time,
    weighted average of ξ/ε⁶, largest ε without divergence = ∞); ``stream`` = (Σw, Σw x,
    Σw x²) of phase 2, all zero.
    """
    d = z.shape[0]
    state = blackjax.mcmc.mclmc.init(z, logdensity, key)
    adapt = (
        jnp.zeros(()),  # time
        jnp.zeros(()),  # weighted average of xi / eps^6
        jnp.asarray(jnp.inf),  # largest step size without divergence
    )
    stream = (jnp.zeros(()), jnp.zeros(d), jnp.zeros(d))  # Σw, Σw x, Σw x²
    params = (jnp.maximum(jnp.sqrt(d * 1.0), MIN_INITIAL_L), jnp.asarray(INITIAL_STEP_SIZE))
    return state, params, adapt, stream


def tune_scan(logdensity, carry, xs):
    """Phases 1–2 of the tuning over a chunk of steps; ``xs`` = (keys, target, mask).

    ``carry`` from :func:`tune_init` (or a previous chunk); ``keys`` (n, 2), ``target``
    and ``mask`` (n,) from :func:`energy_var_schedule`. Returns ``(carry, diverged (n,))``.
    """
    kernel = blackjax.mcmc.mclmc.build_kernel(integrator=isokinetic_mclachlan)
    decay = (NUM_EFFECTIVE_SAMPLES - 1.0) / (NUM_EFFECTIVE_SAMPLES + 1.0)

    def step(carry, inputs):
        state, (L, eps), (time, x_avg, eps_max), (w_sum, m1, m2) = carry
        key, target, mask = inputs
        key, nan_key = jax.random.split(key)
        d = state.position.shape[0]
        new, info = kernel(key, state, logdensity, jnp.ones(d), L, eps)
        ok, new, eps_max, energy_change = handle_nans(
            state, new, eps, eps_max, info.energy_change, info.nonans, nan_key
        )
        xi = jnp.square(energy_change) / (d * target) + 1e-8
        weight = jnp.exp(-0.5 * jnp.square(jnp.log(xi) / (6.0 * TRUST_IN_ESTIMATE)))
        x_avg = decay * x_avg + weight * (xi / jnp.power(eps, 6.0))
        time = decay * time + weight
        eps_new = jnp.minimum(jnp.power(x_avg / time, -1.0 / 6.0), eps_max)
        w = mask * ok * eps_new
        z = new.position
        stream = (w_sum + w, m1 + w * z, m2 + w * z**2)
        return (new, (L, eps_new), (time, x_avg, eps_max), stream), ~ok

    return jax.lax.scan(step, carry, xs)


def tune_finish(logdensity, key, carry, n3: int):
    """End of phase 2 (L from the variances) and phase 3 (L from the ESS): ``(state, L, ε)``.

    ``n3``: phase 3's number of steps (from :func:`energy_var_schedule`); below 2 there is
    no phase 3 and L stays √(Σ_i Var[x_i]).
    """
    kernel = blackjax.mcmc.mclmc.build_kernel(integrator=isokinetic_mclachlan)
    state, (L, eps), _, (w_sum, m1, m2) = carry
    d = state.position.shape[0]
    mean = m1 / jnp.maximum(w_sum, 1e-30)
    var = jnp.maximum(m2 / jnp.maximum(w_sum, 1e-30) - mean**2, 0.0)
    L = jnp.where(w_sum > 0, jnp.sqrt(jnp.sum(var)), L)
    if n3 < 2:
        return state, L, eps
    key_coords, key_steps = jax.random.split(key)
    coords = jax.random.choice(key_coords, d, (min(d, MAX_ESS_COORDINATES),), replace=False)

    def step(state, k):
        state, _ = kernel(k, state, logdensity, jnp.ones(d), L, eps)
        return state, state.position[coords]

    state, trace = jax.lax.scan(step, state, jax.random.split(key_steps, n3))
    ess = effective_sample_size(trace[None])
    tau = n3 / ess
    finite = jnp.isfinite(tau)
    L = jnp.where(jnp.any(finite), L_FACTOR * eps * jnp.mean(tau, where=finite), L)
    return state, L, eps


def sample_scan(logdensity, key, state, L, eps, n_kept: int, thinning: int):
    """``n_kept · thinning`` MCLMC steps at fixed (L, ε), every ``thinning``-th kept.

    Returns ``(state, (z (n_kept, d), logdensity (n_kept,), energy_var (n_kept,)))``;
    ``energy_var`` is the mean of ΔE²/d over each window of ``thinning`` steps.
    """
    kernel = blackjax.mcmc.mclmc.build_kernel(integrator=isokinetic_mclachlan)
    d = state.position.shape[0]

    def inner(state, k):
        state, info = kernel(k, state, logdensity, jnp.ones(d), L, eps)
        return state, info.energy_change

    def outer(state, k):
        state, energy = jax.lax.scan(inner, state, jax.random.split(k, thinning))
        return state, (state.position, state.logdensity, jnp.mean(energy**2) / d)

    return jax.lax.scan(outer, state, jax.random.split(key, n_kept))


def chain_keys(key):
    """The four keys of one chain: ``(init, tuning steps, phase 3, sampling)``.

    :func:`run_chain` and the chunked, cached path of :mod:`.sharding` both draw from
    these, so they sample the same chain (up to round-off).
    """
    return tuple(jax.random.split(key, 4))


def run_chain(logdensity, key, z, tuning_steps: int, n_kept: int, thinning: int, energy_var):
    """Tuning then sampling of one chain from ``z`` (d,), without input checks (jit-able).

    ``energy_var`` = (start, end) of :func:`energy_var_schedule`. Returns
    ``((z, logdensity, energy_var) of the kept steps, L, ε, tuning divergences)``.
    """
    start, end = energy_var
    target, mask, n3 = energy_var_schedule(tuning_steps, start=start, end=end)
    k_init, k_steps, k_finish, k_sample = chain_keys(key)
    carry = tune_init(logdensity, k_init, z)
    xs = (jax.random.split(k_steps, len(target)), jnp.asarray(target), jnp.asarray(mask))
    carry, div = tune_scan(logdensity, carry, xs)
    state, L, eps = tune_finish(logdensity, k_finish, carry, n3)
    _, out = sample_scan(logdensity, k_sample, state, L, eps, n_kept, thinning)
    return out, L, eps, jnp.sum(div)


def mclmc_chain(
    rng_key,
    logdensity_fn,
    position,
    *,
    tuning_steps: int,
    sampling_steps: int,
    thinning: int = 1,
    energy_var: tuple[float, float] = (ENERGY_VAR_START, ENERGY_VAR_END),
):
    """One MCLMC chain with MILE's tuning on any log density of a flat vector (jit-able).

    ``position`` (d,). ``energy_var`` = (start, end) of the target energy variance
    schedule (:func:`energy_var_schedule`; equal values tune at a constant target).
    Returns ``(samples (sampling_steps // thinning, d), L, step_size)``.
    :func:`bnn_posteriors.inference.mile.run_bde` runs the same steps for many chains of
    the BNN posterior.
    """
    if not isinstance(energy_var, tuple | list) or len(energy_var) != 2:
        raise ValueError(f"energy_var must be a pair (start, end), got {energy_var!r}")
    start, end = energy_var
    energy_var_schedule(tuning_steps, start=start, end=end)  # validates before tracing
    thinning = positive_int("thinning", thinning)
    n_kept = positive_int("sampling_steps", sampling_steps, thinning) // thinning
    (z, _, _), L, eps, _ = run_chain(
        logdensity_fn, rng_key, jnp.asarray(position), tuning_steps, n_kept, thinning, energy_var
    )
    return z, L, eps
