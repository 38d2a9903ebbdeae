"""NUTS with several chains on the log joint of a NumPyro model.

Two backends run the same model: BlackJAX (``nuts``, the default: Stan-style
window adaptation then NUTS, chains vectorised with ``jax.vmap``, loops in
``jax.lax.scan``) and NumPyro's own ``MCMC(NUTS)`` (``nuts_numpyro``).
``benchmarks/nuts_backends.py`` measures both on the book's models; BlackJAX was
the faster one there (see the README).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.mcmc.hmc import HMCState
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import constrain_fn, initialize_model, potential_energy

from bnn_posteriors.inference.optim import multistart_minimise
from bnn_posteriors.store import cache as unit_cache
from bnn_posteriors.util import validate


def _check_inputs(where, model_kwargs, num_chains, num_warmup, num_samples, min_warmup=0):
    """The data in ``model_kwargs`` (finite, matching rows) and the sampling budget."""
    validate.check_model_data(model_kwargs, where=where)
    validate.positive_int("num_chains", num_chains, where=where)
    validate.positive_int("num_warmup", num_warmup, min_warmup, where=where)
    validate.positive_int("num_samples", num_samples, where=where)


def log_joint_fn(rng_key, model, model_kwargs: dict):
    """The log joint of ``model`` on its unconstrained space.

    Returns ``(logdensity, init_position, postprocess)``: ``logdensity(position)``
    is log p(y, θ) (+ log-Jacobian), ``init_position`` NumPyro's default start
    (uniform in [-2, 2] on the unconstrained space; a dict), ``postprocess`` maps unconstrained
    positions to constrained values and deterministic sites.
    """
    info, potential_fn, postprocess_fn, _ = initialize_model(
        rng_key, model, model_kwargs=model_kwargs, dynamic_args=False
    )
    return (lambda position: -potential_fn(position)), info.z, postprocess_fn


def split_kwargs(model_kwargs: dict) -> tuple[dict, tuple]:
    """Split model kwargs into array data (traced) and hashable settings (static)."""
    arrays = {k: jnp.asarray(v) for k, v in model_kwargs.items() if _is_array(v)}
    static = tuple(sorted((k, v) for k, v in model_kwargs.items() if not _is_array(v)))
    return arrays, static


def _is_array(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype")


@functools.lru_cache(maxsize=64)
def _compiled_nuts(
    model,
    static: tuple,
    num_warmup: int,
    target: float,
    max_doublings: int,
    thinning: int = 1,
    dense_mass: bool = False,
):
    """The jitted, chain-vectorised NUTS programs of one (model, settings, warm-up budget).

    Returns ``(whole, adapt, sample)``: ``whole(keys_warm, keys_draws, positions, arrays)``
    runs the window adaptation and every draw in one program (its statistics add
    ``warmup_num_steps``, the leapfrog steps of every adaptation step); ``adapt`` and ``sample``
    split it at the end of the adaptation so that the draws can run in resumable chunks
    (``sample(state, tuned, keys_draws, arrays)`` continues from ``state``). Data arrays
    are arguments, not constants, so new data of the same shape and new keys reuse the
    compiled programs. ``thinning``: the samples keep every ``thinning``-th draw (the last
    of each block of ``thinning``); the statistics keep every draw. ``dense_mass``: the
    adaptation estimates a dense inverse mass matrix instead of a diagonal one.
    """

    def logdensity_of(arrays):
        kwargs = {**dict(static), **arrays}
        return lambda z: -potential_energy(model, (), kwargs, z)

    def adapt_with_steps(key_w, position, arrays):
        run = blackjax.window_adaptation(
            blackjax.nuts,
            logdensity_of(arrays),
            is_mass_matrix_diagonal=not dense_mass,
            target_acceptance_rate=target,
            max_num_doublings=max_doublings,
        ).run
        (state, params), info = run(key_w, position, num_steps=num_warmup)
        tuned = {k: params[k] for k in ("step_size", "inverse_mass_matrix")}
        return tuple(state), tuned, info.info.num_integration_steps

    def adapt(key_w, position, arrays):
        return adapt_with_steps(key_w, position, arrays)[:2]

    def sample(state, tuned, keys, arrays):
        kernel = blackjax.nuts(logdensity_of(arrays), **tuned, max_num_doublings=max_doublings).step

        def step(state, key):
            state, info = kernel(key, state)
            return state, (state.position, info)

        state, (positions, info) = jax.lax.scan(step, HMCState(*state), keys)
        positions = jax.tree.map(lambda a: a[thinning - 1 :: thinning], positions)
        kwargs = {**dict(static), **arrays}
        samples = jax.vmap(lambda z: constrain_fn(model, (), kwargs, z, return_deterministic=True))(
            positions
        )
        stats = {
            "step_size": tuned["step_size"],
            "acceptance_rate": info.acceptance_rate,
            "num_steps": info.num_integration_steps,
            "diverging": info.is_divergent,
        }
        return tuple(state), samples, stats  # tuples: a cached unit stores no NamedTuple

    def whole(key_w, keys, position, arrays):
        state, tuned, warmup_steps = adapt_with_steps(key_w, position, arrays)
        _, samples, stats = sample(state, tuned, keys, arrays)
        return samples, {**stats, "warmup_num_steps": warmup_steps}

    return (
        jax.jit(jax.vmap(whole, in_axes=(0, 0, 0, None))),
        jax.jit(jax.vmap(adapt, in_axes=(0, 0, None))),
        jax.jit(jax.vmap(sample, in_axes=(0, 0, 0, None))),
    )


CACHE_VERSION = "nuts-1"  # of the cached units "nuts-adapt" and "nuts-draws": bump it when
# the sampler's numerics change (bnn_posteriors.store.cache)


def chain_inputs(
    where: str,
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_chains: int,
    num_samples: int,
    init_positions: dict | None,
    thinning: int,
    chunk_size: int | None,
):
    """What every chain sampler here (:func:`nuts`, :func:`.mams.mams`) derives the same way:
    the checked ``thinning`` (``num_samples`` and ``chunk_size`` multiples of it), the starts
    (``init_positions``, else NumPyro's uniform start, one key per chain) and the keys: one
    per chain for the adaptation and one per draw, (chains, draws). Returns ``(thinning,
    init_positions, keys_warm, keys)``."""
    thinning = validate.positive_int("thinning", thinning, where=where)
    if chunk_size is not None:
        validate.positive_int("chunk_size", chunk_size, where=where)
    for name, value in (("num_samples", num_samples), ("chunk_size", chunk_size)):
        if value is not None and value % thinning:
            raise ValueError(f"{where}: {name}={value} must be a multiple of thinning={thinning}")
    key_init, key_warm, key_sample = jax.random.split(rng_key, 3)
    if init_positions is None:
        init_positions = jax.vmap(lambda k: log_joint_fn(k, model, model_kwargs)[1])(
            jax.random.split(key_init, num_chains)
        )
    lead = {k: v.shape[0] for k, v in init_positions.items()}
    if set(lead.values()) != {num_chains}:
        raise ValueError(
            f"{where}: init_positions need a leading axis of {num_chains} chains, got {lead}"
        )
    keys_warm = jax.random.split(key_warm, num_chains)
    keys = jax.vmap(lambda k: jax.random.split(k, num_samples))(
        jax.random.split(key_sample, num_chains)
    )  # (chains, draws, key): one key per draw
    return thinning, init_positions, keys_warm, keys


def nuts(
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    init_positions: dict | None = None,
    target_acceptance_rate: float = 0.8,
    max_num_doublings: int = 10,
    chunk_size: int | None = None,
    cache: bool | Path = False,
    progress: bool = False,
    thinning: int = 1,
    mesh=None,
    warmup_stats: bool = False,
    dense_mass: bool = False,
):
    """NUTS by BlackJAX with per-chain window adaptation, chains in ``vmap``.

    ``model_kwargs``: arrays (data) are traced, everything else (depth, scales) is
    static and must be hashable. ``init_positions``: optional dict of
    unconstrained arrays with a leading chain axis (warm starts); default:
    NumPyro's uniform start, one key per chain. ``max_num_doublings``: the
    largest tree depth (at most 2^depth − 1 leapfrog steps per draw).
    Returns ``(samples, stats)``: ``samples`` maps every sample site (observed
    ones excluded) and deterministic site to an array (num_chains, num_samples,
    ...); ``stats`` holds per-chain ``step_size`` (chains,) and
    ``acceptance_rate``, ``num_steps``, ``diverging`` (chains, samples).

    Long runs: ``chunk_size`` draws the samples in chunks of that many steps after the
    adaptation (the same draws as one run: every draw has its own key), with a progress
    bar (``progress``); with ``cache`` (a directory, or True for the default one; False: none,
    :func:`bnn_posteriors.store.cache.cache_location`) the
    adaptation and every chunk are units of :func:`bnn_posteriors.store.cache.cached` (version
    :data:`CACHE_VERSION`), so an interrupted run resumes at its last finished chunk.

    ``thinning``: keep every ``thinning``-th draw of the samples (``num_samples`` and
    ``chunk_size`` must be multiples of it), so ``samples`` hold ``num_samples // thinning``
    draws per chain while ``stats`` cover every draw. ``mesh``: a chain mesh
    (:func:`bnn_posteriors.inference.sharding.chain_mesh`) over which the chains are sharded
    (keys, starts and sampler states split along the chain axis, data replicated; a chain
    count the devices do not divide is padded and the padding dropped), so several devices
    or a GPU run more chains in one program; None: one device, as before.

    ``warmup_stats``: ``stats`` also hold ``warmup_num_steps`` (chains, num_warmup), the
    leapfrog steps of every adaptation step, so that a caller can count every gradient the
    run spent; only for a run in one program (no ``chunk_size``, no ``cache``).

    ``dense_mass``: the window adaptation estimates a dense inverse mass matrix (the
    parameters' covariance) instead of the diagonal one, for posteriors whose correlations
    keep a diagonal metric's trees at the depth cap.
    """
    _check_inputs("nuts", model_kwargs, num_chains, num_warmup, num_samples, 1)  # adaptation
    directory = unit_cache.cache_location(cache)
    if warmup_stats and (chunk_size is not None or directory is not None):
        raise ValueError(
            "nuts: warmup_stats needs a run in one program: chunk_size and cache must be unset"
        )
    validate.positive_int("max_num_doublings", max_num_doublings, where="nuts")
    thinning, init_positions, keys_warm, keys = chain_inputs(
        "nuts",
        rng_key,
        model,
        model_kwargs,
        num_chains=num_chains,
        num_samples=num_samples,
        init_positions=init_positions,
        thinning=thinning,
        chunk_size=chunk_size,
    )
    arrays, static = split_kwargs(model_kwargs)
    try:
        hash(static)
    except TypeError:
        raise TypeError(
            f"non-array model settings must be hashable (use tuples, not lists): {dict(static)}"
        ) from None
    whole, adapt, sample = _compiled_nuts(
        model,
        static,
        num_warmup,
        float(target_acceptance_rate),
        max_num_doublings,
        thinning,
        bool(dense_mass),
    )
    place = _placement(mesh)
    keys_warm, keys, init_positions = place((keys_warm, keys, init_positions))
    if mesh is not None:
        from bnn_posteriors.inference import sharding

        arrays = sharding.replicate(arrays, mesh)
    if chunk_size is None and directory is None:
        samples, stats = whole(keys_warm, keys, init_positions, arrays)
        if not warmup_stats:
            stats = {k: v for k, v in stats.items() if k != "warmup_num_steps"}
        return _first_chains((samples, stats), num_chains)
    settings = dict(
        model=f"{model.__module__}.{model.__qualname__}",
        static=repr(static),
        num_warmup=num_warmup,
        target=float(target_acceptance_rate),
        max_num_doublings=max_num_doublings,
    )
    if thinning != 1:  # the units of unthinned runs keep their keys
        settings["thinning"] = thinning
    if dense_mass:  # so do the units of runs with a diagonal metric
        settings["dense_mass"] = True
    return _first_chains(
        _nuts_in_chunks(
            adapt,
            sample,
            (keys_warm, keys, init_positions, arrays),
            settings,
            chunk_size or num_samples,
            directory,
            progress,
            place,
        ),
        num_chains,
    )


def _placement(mesh):
    """The map that puts chain-leading arrays on ``mesh`` (padded, sharded), or the identity."""
    if mesh is None:
        return lambda tree: tree
    from bnn_posteriors.inference import sharding

    return lambda tree: sharding.shard_chains(tree, mesh)[0]


def _first_chains(result, num_chains: int):
    """``(samples, stats)`` without the chains that padding to the mesh added."""
    samples, stats = result
    return jax.tree.map(lambda a: a[:num_chains], (samples, stats))


def _nuts_in_chunks(
    adapt,
    sample,
    inputs,
    settings,
    chunk_size,
    directory,
    progress,
    place=None,
    *,
    sampler: str = "nuts",
    version: str = CACHE_VERSION,
):
    """:func:`nuts` (or another ``sampler`` with the same pair of programs: ``adapt(keys_warm,
    positions, arrays) -> (state, tuned)`` and ``sample(state, tuned, keys, arrays) -> (state,
    samples, stats)``) after the adaptation in chunks of draws, each a cached unit
    ``<sampler>-adapt`` / ``<sampler>-draws`` of ``version`` in ``directory`` (None: not
    cached); ``place`` puts each chunk's starting state back on the chain mesh. A statistic
    with one value per chain (the tuned step size) is taken from the first chunk, the others
    are joined along the draws."""
    place = place or (lambda tree: tree)
    from tqdm.auto import tqdm

    keys_warm, keys, positions, arrays = inputs
    parts = {
        **settings,
        "keys_warm": unit_cache.key_data(keys_warm),
        "keys": unit_cache.key_data(keys),
        "positions": jax.tree.map(np.asarray, positions),
        "arrays": jax.tree.map(np.asarray, arrays),
    }

    def unit(name, extra, compute):
        if directory is None:
            return compute()
        return unit_cache.cached(name, {**parts, **extra}, compute, directory, version=version)

    adapted = unit(
        f"{sampler}-adapt",
        {},
        lambda: jax.tree.map(np.asarray, adapt(keys_warm, positions, arrays)),
    )
    state, tuned = place(adapted)
    num_samples = keys.shape[1]
    bounds = [(a, min(a + chunk_size, num_samples)) for a in range(0, num_samples, chunk_size)]
    chunks = []
    desc = f"{sampler.upper()} draws"
    bar = tqdm(total=num_samples, desc=desc, disable=not progress, file=sys.stderr)
    for a, b in bounds:
        state, draws, stats = unit(
            f"{sampler}-draws",
            {"draws": (a, b)},
            lambda s=state, a=a, b=b: jax.tree.map(
                np.asarray, sample(s, tuned, keys[:, a:b], arrays)
            ),
        )
        state = place(state)
        chunks.append((draws, stats))
        bar.update(b - a)
    bar.close()
    joined = jax.tree.map(lambda *c: np.concatenate(c, axis=1), *(c[0] for c in chunks))
    stats = {
        k: v if np.ndim(v) == 1 else np.concatenate([c[1][k] for c in chunks], 1)
        for k, v in chunks[0][1].items()
    }
    return joined, stats


def warm_starts(
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_chains: int,
    num_steps: int = 2000,
    learning_rate: float = 1e-2,
    init_scale: float = 0.1,
):
    """Per-chain MAP estimates of ``model`` to start NUTS from ([SAP] App. D.2 warm starts).

    Each chain starts from its own draw of N(0, init_scale²) for every unconstrained
    site and minimises the potential energy −log p(y, θ) with Adam
    (:func:`bnn_posteriors.inference.optim.multistart_minimise`), so chains land in
    different (often permuted) modes. Returns ``(positions, final_potential (chains,))``
    with ``positions`` a dict of unconstrained arrays with a leading chain axis,
    ready for ``nuts(..., init_positions=positions)``.
    """
    validate.check_model_data(model_kwargs, where="warm_starts")
    validate.positive_int("num_chains", num_chains, where="warm_starts")
    validate.positive("init_scale", init_scale, where="warm_starts")
    key_shape, key_init = jax.random.split(rng_key)
    template = log_joint_fn(key_shape, model, model_kwargs)[1]
    names = sorted(template)
    keys = jax.random.split(key_init, len(names))
    inits = {
        name: init_scale * jax.random.normal(key, (num_chains, *jnp.shape(template[name])))
        for name, key in zip(names, keys, strict=True)
    }
    arrays, static = split_kwargs(model_kwargs)
    potential = _potential(model, static)
    positions, final, _ = multistart_minimise(
        potential, inits, arrays, num_steps=num_steps, learning_rate=learning_rate
    )
    return positions, final


@functools.lru_cache(maxsize=64)
def _potential(model, static: tuple):
    """−log p(y, θ) on the unconstrained space as a function of (position, data arrays)."""

    def potential(position, arrays):
        return potential_energy(model, (), {**dict(static), **arrays}, position)

    return potential


def nuts_numpyro(
    rng_key,
    model,
    model_kwargs: dict,
    *,
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    progress_bar: bool = False,
):
    """NUTS by NumPyro's ``MCMC`` (vectorised chains); same output layout as :func:`nuts`."""
    _check_inputs("nuts_numpyro", model_kwargs, num_chains, num_warmup, num_samples)
    mcmc = MCMC(
        NUTS(model),
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method="vectorized",
        progress_bar=progress_bar,
    )
    mcmc.run(rng_key, **model_kwargs, extra_fields=("accept_prob", "num_steps", "diverging"))
    extra = mcmc.get_extra_fields(group_by_chain=True)
    stats = {
        "acceptance_rate": extra["accept_prob"],
        "num_steps": extra["num_steps"],
        "diverging": extra["diverging"],
    }
    return mcmc.get_samples(group_by_chain=True), stats


def to_arviz(samples: dict, var_names=None):
    """ArviZ ``InferenceData`` of samples shaped (chain, draw, ...)."""
    import arviz as az

    names = var_names or list(samples)
    return az.from_dict(posterior={k: jnp.asarray(samples[k]) for k in names})
