"""MILE: deep-ensemble warm starts + tuned MCLMC, one chain per member ([SAP] §3.2, App. D.1).

MILE (Sommer et al., ICLR 2025) samples a Bayesian MLP for mean regression in two stages:
(1) a deep ensemble (:func:`bnn_posteriors.inference.ensembles.train_ensemble`) gives one
warm start per chain; (2) each chain runs microcanonical Langevin Monte Carlo (MCLMC,
BlackJAX ``mclmc`` kernel with the ``isokinetic_mclachlan`` integrator), full batch, after
a three-phase tuning of the step size ε and the momentum decoherence length L.

The tuning is BlackJAX's ``mclmc_find_L_and_step_size`` (same predictor, same NaN handling,
same L estimates) with MILE's settings, re-written here for one reason: MILE lowers the
target energy variance per dimension linearly from 0.5 towards 0.1 over phases 1 and 2
(:func:`energy_var_schedule`), while BlackJAX keeps it constant. Phases (fractions of
``tuning_steps``, MILE: 50 000 steps):

1. 80 %: adapt ε so that Var[ΔE]/d tracks the (decreasing) target, starting from
   ε = 0.01 and L = max(√d, 15); no preconditioning.
2. 10 %: keep adapting ε at the (still decreasing) target and average x and x²
   (weights ε); L = √(Σ_i Var[x_i]).
3. 10 %: fixed (L, ε); L = 0.4 · ε · mean_i(N₃ / ESS_i) over at most 2000 coordinates.

Then ``sampling_steps`` steps (MILE: 10 000), every ``thinning``-th kept (MILE: 10).

Chains run in one program, vectorised with ``jax.vmap`` and sharded over the chain axis
across all local devices (``jax.sharding.Mesh``/``NamedSharding``/``PartitionSpec``): two
host CPU devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=2``, or every
GPU. A chain count that the devices do not divide is padded with copies of the last chain
whose results are dropped. On several hosts, call ``jax.distributed.initialize()`` first
on every host: ``jax.devices()`` then lists the devices of all hosts and the same mesh
spreads the chains over them (each host must pass the same inputs).

Long runs resume: with ``cache_dir`` each chain's tuning and each chain's sampling is a
unit of :func:`bnn_posteriors.cache.cached`, so an interrupted run recomputes only the
chains that did not finish.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.mclmc_adaptation import handle_nans
from blackjax.diagnostics import effective_sample_size
from blackjax.mcmc.integrators import isokinetic_mclachlan
from jax.flatten_util import ravel_pytree
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from numpyro.infer.util import potential_energy

from bnn_posteriors import cache, models, nets
from bnn_posteriors.inference import mcmc
from bnn_posteriors.inference.ensembles import check_xy
from bnn_posteriors.validate import positive, positive_int

# MILE's tuning settings (Sommer et al. 2025, App.; [SAP] App. D.1).
TUNING_FRACTIONS = (0.8, 0.1, 0.1)
ENERGY_VAR_START, ENERGY_VAR_END = 0.5, 0.1
TRUST_IN_ESTIMATE = 1.5
NUM_EFFECTIVE_SAMPLES = 100
INITIAL_STEP_SIZE = 0.01
MIN_INITIAL_L = 15.0
L_FACTOR = 0.4
MAX_ESS_COORDINATES = 2000


def model_kwargs(x, y, widths: Sequence[int], prior_scale=1.0, activation: str = "relu") -> dict:
    """Keyword arguments of :func:`bnn_posteriors.models.mlp_regression` with log σ sampled."""
    return {
        "x": x,
        "y": y,
        "widths": tuple(widths),
        "activation": activation,
        "prior_scale": prior_scale,
        "noise": None,
    }


def log_density(position: dict, x, y, *, widths, prior_scale=1.0, activation: str = "relu"):
    """log p(y, θ) of mean regression with log σ sampled ([SAP] §5, App. D.1).

    Every weight and bias ~ N(0, prior_scale²), log σ ~ N(0, 1), y_i ~ N(f_θ(x_i), σ²):
    the log joint of :func:`bnn_posteriors.models.mlp_regression` (``noise=None``).
    ``position``: dict of sites ``W{i}`` (d_in, d_out), ``b{i}`` (d_out,), ``log_sigma`` ().
    """
    kwargs = model_kwargs(x, y, widths, prior_scale, activation)
    return -potential_energy(models.mlp_regression, (), kwargs, position)


def warm_start_positions(params: list[dict], log_sigma=0.0) -> dict:
    """Ensemble parameters (leading member axis) → MCMC positions (leading chain axis).

    Sites ``W{i}``, ``b{i}`` and ``log_sigma`` (members,), as :func:`log_density` and
    :func:`bnn_posteriors.inference.mcmc.nuts` expect. ``log_sigma`` = 0 is σ = 1, the
    noise the members were trained with.
    """
    if not isinstance(params, (list, tuple)) or not params:
        raise TypeError("params must be a non-empty list of layer dicts with a member axis")
    n = params[0]["W"].shape[0]
    position = {}
    for i, layer in enumerate(params):
        if layer["W"].ndim != 3 or layer["W"].shape[0] != n:
            raise ValueError("every W needs shape (members, d_in, d_out)")
        position[f"W{i}"] = jnp.asarray(layer["W"])
        if "b" in layer:
            position[f"b{i}"] = jnp.asarray(layer["b"])
    position["log_sigma"] = jnp.broadcast_to(jnp.asarray(log_sigma, jnp.float32), (n,))
    return position


def params_of(position: dict) -> list[dict]:
    """Positions (any leading axes) → the parameter list of :mod:`bnn_posteriors.nets`."""
    n_layers = sum(1 for k in position if k.startswith("W"))
    if n_layers == 0:
        raise ValueError("position has no W{i} sites")
    return [
        {"W": position[f"W{i}"], **({"b": position[f"b{i}"]} if f"b{i}" in position else {})}
        for i in range(n_layers)
    ]


def predict(samples: dict, x, activation: str = "relu"):
    """Predictive means and scales of every sample: ``(mean (..., n), sigma (...))``.

    ``samples``: positions with leading axes (...) (e.g. chains, samples); ``x`` (n, d).
    """
    params = params_of(samples)
    lead = samples["log_sigma"].shape
    flat = jax.tree.map(lambda a: a.reshape(-1, *a.shape[len(lead) :]), params)
    mean = jax.lax.map(lambda p: nets.mlp_apply(p, x, activation)[:, 0], flat, batch_size=256)
    return mean.reshape(*lead, -1), jnp.exp(samples["log_sigma"])


# ---------------------------------------------------------------------------------------------
# Sharding over the chain axis


def chain_mesh(devices=None) -> Mesh:
    """A one-axis mesh named ``"chain"`` over ``devices`` (default: all devices, all hosts)."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), ("chain",))


def shard_chains(tree, mesh: Mesh):
    """Pad the leading (chain) axis to a multiple of the mesh size and shard it.

    Padding repeats the last chain; returns ``(sharded_tree, n_chains)``.
    """
    leaves = jax.tree.leaves(tree)
    n = leaves[0].shape[0]
    size = mesh.devices.size
    pad = (-n) % size

    def put(a):
        a = jnp.asarray(a)
        if pad:
            a = jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)])
        return jax.device_put(a, NamedSharding(mesh, PartitionSpec("chain")))

    return jax.tree.map(put, tree), n


def replicate(tree, mesh: Mesh):
    """Place arrays on every device of ``mesh`` (data shared by all chains)."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


# ---------------------------------------------------------------------------------------------
# Tuning and sampling of one chain (vectorised and sharded by the callers)


@functools.lru_cache(maxsize=64)
def _unravel(widths: tuple):
    """Flat vector → sites of the MLP with ``widths`` (the order of ``ravel_pytree``)."""
    return ravel_pytree(_site_shapes(widths))[1]


def _flat_logdensity(x, y, prior_scale, widths, activation):
    unravel = _unravel(widths)

    def logdensity(z):
        return log_density(
            unravel(z), x, y, widths=widths, prior_scale=prior_scale, activation=activation
        )

    return logdensity


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


def _tune_init(logdensity, key, z):
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


def _tune_scan(logdensity, carry, xs):
    """Phases 1–2 of the tuning over a chunk of steps; ``xs`` = (keys, target, mask)."""
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


def _tune_finish(logdensity, key, carry, n3):
    """End of phase 2 (L from the variances) and phase 3 (L from the ESS)."""
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


def _sample_scan(logdensity, key, state, L, eps, n_kept, thinning):
    kernel = blackjax.mcmc.mclmc.build_kernel(integrator=isokinetic_mclachlan)
    d = state.position.shape[0]

    def inner(state, k):
        state, info = kernel(k, state, logdensity, jnp.ones(d), L, eps)
        return state, info.energy_change

    def outer(state, k):
        state, energy = jax.lax.scan(inner, state, jax.random.split(k, thinning))
        return state, (state.position, state.logdensity, jnp.mean(energy**2) / d)

    return jax.lax.scan(outer, state, jax.random.split(key, n_kept))


@functools.lru_cache(maxsize=64)
def _programs(spec, n3: int, n_kept: int, thinning: int, per_chain_scale: bool = False):
    """Jitted, chain-vectorised programs; data and prior scale are arguments (no recompiles).

    ``per_chain_scale``: the prior scale has a chain axis (one scale per chain) instead of
    being shared by all chains.
    """
    widths, activation = spec

    def ld(x, y, s):
        return _flat_logdensity(x, y, s, widths, activation)

    vm = functools.partial(jax.vmap, in_axes=(0, 0, None, None, 0 if per_chain_scale else None))
    init = jax.jit(vm(lambda k, z, x, y, s: _tune_init(ld(x, y, s), k, z)))
    tune = jax.jit(vm(lambda c, xs, x, y, s: _tune_scan(ld(x, y, s), c, xs)))
    finish = jax.jit(vm(lambda k, c, x, y, s: _tune_finish(ld(x, y, s), k, c, n3)))

    def sample_one(k, tuned, x, y, s):
        state, L, eps = tuned
        return _sample_scan(ld(x, y, s), k, state, L, eps, n_kept, thinning)

    sample = jax.jit(vm(sample_one))
    return init, tune, finish, sample


@functools.lru_cache(maxsize=64)
def _whole_program(
    spec, tuning_steps: int, n_kept: int, thinning: int, per_chain_scale: bool = False
):
    """Tuning and sampling of every chain in one jitted program (no progress, no cache)."""
    widths, activation = spec

    def one(k, z, x, y, s):
        logdensity = _flat_logdensity(x, y, s, widths, activation)
        target, mask, n3 = energy_var_schedule(tuning_steps)
        k_init, k_steps, k_finish, k_sample = jax.random.split(k, 4)
        carry = _tune_init(logdensity, k_init, z)
        xs = (jax.random.split(k_steps, len(target)), jnp.asarray(target), jnp.asarray(mask))
        carry, div = _tune_scan(logdensity, carry, xs)
        state, L, eps = _tune_finish(logdensity, k_finish, carry, n3)
        _, out = _sample_scan(logdensity, k_sample, state, L, eps, n_kept, thinning)
        return out, L, eps, jnp.sum(div)

    scale_axis = 0 if per_chain_scale else None
    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None, scale_axis)))


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
    :func:`run_bde` runs the same steps for many chains of the BNN posterior.
    """
    if not isinstance(energy_var, tuple | list) or len(energy_var) != 2:
        raise ValueError(f"energy_var must be a pair (start, end), got {energy_var!r}")
    start, end = energy_var
    target, mask, n3 = energy_var_schedule(tuning_steps, start=start, end=end)
    thinning = positive_int("thinning", thinning)
    n_kept = positive_int("sampling_steps", sampling_steps, thinning) // thinning
    k_init, k_steps, k_finish, k_sample = jax.random.split(rng_key, 4)
    carry = _tune_init(logdensity_fn, k_init, jnp.asarray(position))
    xs = (jax.random.split(k_steps, len(target)), jnp.asarray(target), jnp.asarray(mask))
    carry, _ = _tune_scan(logdensity_fn, carry, xs)
    state, L, eps = _tune_finish(logdensity_fn, k_finish, carry, n3)
    _, (z, _, _) = _sample_scan(logdensity_fn, k_sample, state, L, eps, n_kept, thinning)
    return z, L, eps


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr, leave=False)


def _scale_for(prior_scale, idx, mesh):
    """The prior scale of the chains ``idx``: replicated if shared, else sharded per chain."""
    if prior_scale.ndim == 0:
        return replicate(prior_scale, mesh), False
    return shard_chains(prior_scale[jnp.asarray(idx)], mesh)[0], True


def _run_tuning(keys, z0, x, y, prior_scale, spec, tuning_steps, mesh, chunks, progress):
    target, mask, n3 = energy_var_schedule(tuning_steps)
    prior_scale, per_chain = prior_scale
    init, tune, finish, _ = _programs(spec, n3, 1, 1, per_chain)
    keys_s, n = shard_chains(keys, mesh)
    z_s, _ = shard_chains(z0, mesh)
    k_init, k_steps, k_finish = (
        jax.vmap(lambda k, i=i: jax.random.fold_in(k, i))(keys_s) for i in range(3)
    )
    carry = init(k_init, z_s, x, y, prior_scale)
    n12 = len(target)
    step_keys = jax.vmap(lambda k: jax.random.split(k, n12))(k_steps)  # (chains, n12, 2)
    # equal chunks (one compiled program): the largest divisor of n12 not above `chunks`
    n_chunks = max(c for c in range(1, max(min(chunks, n12), 1) + 1) if n12 % c == 0)
    bounds = np.linspace(0, n12, n_chunks + 1).astype(int)
    divergences = []
    with _progress(n12, "MILE tuning", progress) as bar:
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            xs = (step_keys[:, a:b], jnp.asarray(target[a:b]), jnp.asarray(mask[a:b]))
            xs = (xs[0], *(jnp.broadcast_to(v, (xs[0].shape[0], b - a)) for v in xs[1:]))
            carry, div = tune(carry, xs, x, y, prior_scale)
            divergences.append(np.asarray(div))
            bar.update(b - a)
    state, L, eps = finish(k_finish, carry, x, y, prior_scale)
    div = np.concatenate(divergences, axis=1).sum(axis=1)
    return [
        {
            "position": np.asarray(state.position[i]),
            "momentum": np.asarray(state.momentum[i]),
            "logdensity": np.asarray(state.logdensity[i]),
            "logdensity_grad": np.asarray(state.logdensity_grad[i]),
            "L": np.asarray(L[i]),
            "step_size": np.asarray(eps[i]),
            "tuning_divergences": int(div[i]),
        }
        for i in range(n)
    ]


def _run_sampling(keys, tuned, x, y, prior_scale, spec, n_kept, thinning, mesh, progress):
    prior_scale, per_chain = prior_scale
    *_, sample = _programs(spec, 1, n_kept, thinning, per_chain)
    stack = {k: jnp.stack([jnp.asarray(t[k]) for t in tuned]) for k in tuned[0]}
    state = blackjax.mcmc.integrators.IntegratorState(
        stack["position"], stack["momentum"], stack["logdensity"], stack["logdensity_grad"]
    )
    (state_s, L_s, eps_s, keys_s), n = shard_chains(
        (state, stack["L"], stack["step_size"], keys), mesh
    )
    with _progress(n, "MILE sampling (chains)", progress) as bar:
        _, (z, logdensity, energy_var) = sample(keys_s, (state_s, L_s, eps_s), x, y, prior_scale)
        z.block_until_ready()
        bar.update(n)
    return [
        {
            "z": np.asarray(z[i]),
            "logdensity": np.asarray(logdensity[i]),
            "energy_var": np.asarray(energy_var[i]),
        }
        for i in range(n)
    ]


def _per_chain(name, parts, compute, cache_dir):
    """Per-chain units: compute (in one batch) only the chains not cached yet."""
    if cache_dir is None:
        return compute(list(range(len(parts))))
    directory = None if cache_dir is True else cache_dir
    missing = [i for i, p in enumerate(parts) if not cache.is_cached(name, p, directory)]
    fresh = dict(zip(missing, compute(missing), strict=True)) if missing else {}

    def from_store(i):
        if i in fresh:
            return cache.cached(name, parts[i], lambda: fresh[i], directory)
        return cache.cached(name, parts[i], lambda: _recompute_error(name), directory)

    return [from_store(i) for i in range(len(parts))]


def _recompute_error(name):
    raise RuntimeError(f"unit {name!r} vanished from the cache during the run")


def run_bde(
    rng_key,
    x_train,
    y_train,
    warm_starts: dict,
    *,
    widths: Sequence[int],
    prior_scale=1.0,
    activation: str = "relu",
    tuning_steps: int = 50_000,
    sampling_steps: int = 10_000,
    thinning: int = 10,
    devices=None,
    chunks: int = 20,
    progress: bool = False,
    cache_dir=None,
):
    """Bayesian deep ensemble by MILE: one tuned MCLMC chain per warm start ([SAP] App. D.1).

    ``warm_starts``: positions with a leading chain axis (see :func:`warm_start_positions`).
    ``widths`` = (d_in, hidden..., 1). ``prior_scale``: one scale s of the N(0, s²) prior
    shared by all chains, or an array of one scale per chain (chains,), so that a study of
    prior scales runs as one vectorised program. Tuning: ``tuning_steps`` split 80/10/10 % into the
    three phases of the module docstring; then ``sampling_steps`` MCLMC steps of which
    every ``thinning``-th is kept. Full batch. Chains are sharded over ``devices``
    (default: all); ``chunks`` splits the tuning loop for the progress bar (``progress``,
    to stderr). ``cache_dir``: None (no cache), True (the default cache directory) or a
    directory: each chain's tuning and sampling is then a resumable unit.

    Returns a dict: ``samples`` (sites ``W{i}``, ``b{i}``, ``log_sigma`` with shape
    (chains, sampling_steps // thinning, ...)), ``logdensity`` (chains, samples),
    ``L``, ``step_size``, ``tuning_divergences`` (chains,), ``energy_var`` (chains,
    samples): Var[ΔE]/d over each thinning window.
    """
    widths = nets.check_widths(widths)
    x, y = check_xy(x_train, y_train, "run_bde", widths[0])
    scales = np.asarray(prior_scale, dtype=np.float64)
    if scales.ndim > 1:
        raise ValueError(f"prior_scale must be a number or one per chain, got shape {scales.shape}")
    for s in scales.ravel():
        positive("prior_scale", s, where="run_bde")
    nets.activation(activation)
    thinning = positive_int("thinning", thinning)
    sampling_steps = positive_int("sampling_steps", sampling_steps, thinning)
    n_kept = sampling_steps // thinning
    if not isinstance(warm_starts, dict) or "log_sigma" not in warm_starts:
        raise TypeError("warm_starts must be a dict of sites with a leading chain axis")
    n_chains = warm_starts["log_sigma"].shape[0]
    if scales.ndim == 1 and scales.shape[0] != n_chains:
        raise ValueError(f"prior_scale has {scales.shape[0]} entries for {n_chains} chains")
    template = jax.tree.map(lambda a: a[0], warm_starts)
    shapes = {k: v.shape for k, v in _site_shapes(widths).items()}
    if {k: jnp.shape(v) for k, v in template.items()} != shapes:
        raise ValueError(f"warm_starts do not match widths {widths}: expected sites {shapes}")
    unravel = _unravel(widths)
    z0 = jax.vmap(lambda p: ravel_pytree(p)[0])(warm_starts)
    if not bool(jnp.all(jnp.isfinite(z0))):
        raise ValueError("warm_starts must be finite")
    spec = (widths, activation)
    mesh = chain_mesh(devices)
    xr, yr = replicate((x, y), mesh)
    per_chain = scales.ndim == 1
    scale_all = jnp.asarray(scales, jnp.float32)
    keys = jax.random.split(rng_key, n_chains)
    config = {
        "x": np.asarray(x),
        "y": np.asarray(y),
        "widths": list(widths),
        "activation": activation,
        "tuning_steps": int(tuning_steps),
    }
    if cache_dir is None and not progress:
        keys_s, _ = shard_chains(keys, mesh)
        z_s, _ = shard_chains(z0, mesh)
        scale, _ = _scale_for(scale_all, np.arange(n_chains), mesh)
        run = _whole_program(spec, int(tuning_steps), n_kept, thinning, per_chain)
        (z, logdensity, energy_var), L, eps, div = run(keys_s, z_s, xr, yr, scale)
        return {
            "samples": jax.vmap(jax.vmap(unravel))(z[:n_chains]),
            "logdensity": np.asarray(logdensity[:n_chains]),
            "energy_var": np.asarray(energy_var[:n_chains]),
            "L": np.asarray(L[:n_chains], dtype=np.float64),
            "step_size": np.asarray(eps[:n_chains], dtype=np.float64),
            "tuning_divergences": np.asarray(div[:n_chains]),
        }
    tune_parts = [
        {
            **config,
            "prior_scale": float(scales[i] if per_chain else scales),
            "key": _key_data(keys[i]),
            "start": np.asarray(z0[i]),
        }
        for i in range(n_chains)
    ]

    def compute_tuning(idx):
        return _run_tuning(
            keys[jnp.asarray(idx)], z0[jnp.asarray(idx)], xr, yr, _scale_for(scale_all, idx, mesh),
            spec,
            tuning_steps, mesh, chunks, progress,
        )  # fmt: skip

    tuned = _per_chain("mile-tune", tune_parts, compute_tuning, cache_dir)
    sample_keys = jax.vmap(lambda k: jax.random.fold_in(k, 7))(keys)
    sample_parts = [
        {**p, "sampling_steps": sampling_steps, "thinning": thinning} for p in tune_parts
    ]

    def compute_sampling(idx):
        return _run_sampling(
            sample_keys[jnp.asarray(idx)], [tuned[i] for i in idx], xr, yr,
            _scale_for(scale_all, idx, mesh), spec, n_kept, thinning, mesh, progress,
        )  # fmt: skip

    drawn = _per_chain("mile-sample", sample_parts, compute_sampling, cache_dir)
    z = jnp.stack([jnp.asarray(d["z"]) for d in drawn])
    samples = jax.vmap(jax.vmap(unravel))(z)
    return {
        "samples": samples,
        "logdensity": np.stack([d["logdensity"] for d in drawn]),
        "energy_var": np.stack([d["energy_var"] for d in drawn]),
        "L": np.array([float(t["L"]) for t in tuned]),
        "step_size": np.array([float(t["step_size"]) for t in tuned]),
        "tuning_divergences": np.array([int(t["tuning_divergences"]) for t in tuned]),
    }


def _key_data(key) -> np.ndarray:
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key)


def _site_shapes(widths) -> dict:
    shapes = {}
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        shapes[f"W{i}"] = jnp.zeros((a, b))
        shapes[f"b{i}"] = jnp.zeros((b,))
    shapes["log_sigma"] = jnp.zeros(())
    return shapes


def run_nuts_bde(
    rng_key,
    x_train,
    y_train,
    warm_starts: dict,
    *,
    widths: Sequence[int],
    prior_scale: float = 1.0,
    activation: str = "relu",
    num_warmup: int = 1000,
    num_samples: int = 1000,
    target_acceptance_rate: float = 0.8,
    max_num_doublings: int = 10,
):
    """BDE with NUTS instead of MCLMC: same warm starts, BlackJAX window adaptation + NUTS.

    Uses :func:`bnn_posteriors.inference.mcmc.nuts` on the same model as :func:`run_bde`.
    Returns ``(samples, stats)`` with samples shaped (chains, num_samples, ...) (sites and
    the deterministic ``mean`` on the training inputs).
    """
    widths = nets.check_widths(widths)
    x, y = check_xy(x_train, y_train, "nuts_bde", widths[0])
    n_chains = warm_starts["log_sigma"].shape[0]
    return mcmc.nuts(
        rng_key,
        models.mlp_regression,
        model_kwargs(x, y, widths, float(prior_scale), activation),
        num_chains=n_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        init_positions=warm_starts,
        target_acceptance_rate=target_acceptance_rate,
        max_num_doublings=max_num_doublings,
    )


def dead_relu_start(params: list[dict], layer: int = 0, offset: float = 10.0, x=None) -> list[dict]:
    """A start where hidden layer ``layer`` is dead on all data ([SAP] §3.4).

    Sets the layer's biases to ``−offset − max_i |pre-activation_i|`` so every
    pre-activation is negative on ``x`` (or to ``−offset`` when ``x`` is None): the ReLU
    outputs are 0, the gradient of the likelihood w.r.t. every earlier weight vanishes.
    ``params``: one network (no member axis).
    """
    if not math.isfinite(offset) or offset <= 0:
        raise ValueError(f"offset must be a positive number, got {offset}")
    n_hidden = len(params) - 1
    if not 0 <= layer < n_hidden:
        raise ValueError(f"layer must index a hidden layer in [0, {n_hidden - 1}], got {layer}")
    new = [dict(p) for p in params]
    shift = 0.0
    if x is not None:
        h = jnp.asarray(x)
        for p in params[:layer]:
            h = jax.nn.relu(h @ p["W"] + p["b"])
        shift = jnp.max(jnp.abs(h @ params[layer]["W"]), axis=0)
    new[layer]["b"] = -offset - shift * jnp.ones_like(params[layer]["b"])
    return new
