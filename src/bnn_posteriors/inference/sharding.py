"""Many MCLMC chains in one program: vectorised with ``jax.vmap``, sharded over devices.

The chains of :mod:`bnn_posteriors.inference.mclmc` are independent, so they run in one
jitted program, vectorised over a leading chain axis and sharded over that axis across
all local devices (``jax.sharding.Mesh``/``NamedSharding``/``PartitionSpec``): two host
CPU devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=2``, or every GPU.
A chain count that the devices do not divide is padded with copies of the last chain
whose results are dropped. On several hosts, call ``jax.distributed.initialize()``
first on every host: ``jax.devices()`` then lists the devices of all hosts and the
same mesh spreads the chains over them (each host must pass the same inputs).

The programs take a *target*: a module-level function ``target(x, y, s, *spec)`` that
returns the log density of a flat vector z (d,) given data ``(x, y)`` shared by all
chains, a scale ``s`` (shared, or one per chain) and a hashable ``spec``. Data and
scale are arguments of the compiled programs, so a new data set or scale does not
recompile.
"""

from __future__ import annotations

import functools
import sys

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from bnn_posteriors.inference import mclmc


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


def scale_for(scale, idx, mesh: Mesh):
    """The scale of the chains ``idx``: ``(replicated scale, False)`` if ``scale`` is shared
    (0-d), else ``(sharded scale[idx], True)`` (one scale per chain)."""
    if scale.ndim == 0:
        return replicate(scale, mesh), False
    return shard_chains(scale[jnp.asarray(idx)], mesh)[0], True


@functools.lru_cache(maxsize=64)
def chain_programs(
    target, spec, n3: int, n_kept: int, thinning: int, per_chain_scale: bool = False
):
    """Jitted, chain-vectorised ``(init, tune, finish, sample)`` programs of ``target``.

    The steps of :mod:`~bnn_posteriors.inference.mclmc` with a leading chain axis on keys,
    positions and carries; data and scale are arguments (no recompiles).
    ``per_chain_scale``: the scale has a chain axis (one scale per chain) instead of
    being shared by all chains.
    """

    def ld(x, y, s):
        return target(x, y, s, *spec)

    vm = functools.partial(jax.vmap, in_axes=(0, 0, None, None, 0 if per_chain_scale else None))
    init = jax.jit(vm(lambda k, z, x, y, s: mclmc.tune_init(ld(x, y, s), k, z)))
    tune = jax.jit(vm(lambda c, xs, x, y, s: mclmc.tune_scan(ld(x, y, s), c, xs)))
    finish = jax.jit(vm(lambda k, c, x, y, s: mclmc.tune_finish(ld(x, y, s), k, c, n3)))

    def sample_one(k, tuned, x, y, s):
        state, L, eps = tuned
        return mclmc.sample_scan(ld(x, y, s), k, state, L, eps, n_kept, thinning)

    sample = jax.jit(vm(sample_one))
    return init, tune, finish, sample


@functools.lru_cache(maxsize=64)
def whole_program(
    target, spec, tuning_steps: int, n_kept: int, thinning: int, per_chain_scale: bool = False
):
    """Tuning and sampling of every chain in one jitted program (no progress, no cache).

    ``program(keys, z, x, y, s)`` returns :func:`~bnn_posteriors.inference.mclmc.run_chain`'s
    output with a leading chain axis, at MILE's energy-variance schedule.
    """

    def one(k, z, x, y, s):
        logdensity = target(x, y, s, *spec)
        energy_var = (mclmc.ENERGY_VAR_START, mclmc.ENERGY_VAR_END)
        return mclmc.run_chain(logdensity, k, z, tuning_steps, n_kept, thinning, energy_var)

    scale_axis = 0 if per_chain_scale else None
    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None, scale_axis)))


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr, leave=False)


FINISH_GROUP = 1_024  # chains per phase-3 program (its memory grows with the chains)


def _groups(n: int, size: int, multiple: int) -> list[tuple[int, int]]:
    """Bounds ``(a, b)`` of consecutive groups of at most ``size`` of ``n`` chains; every
    group but the last a multiple of ``multiple`` (the mesh size), so each stays sharded."""
    size = max(multiple, size - size % multiple)
    return [(a, min(a + size, n)) for a in range(0, n, size)]


def _rows(tree, a: int, b: int):
    """Chains ``a:b`` of every leaf (leading chain axis); all of them: the tree itself."""
    if a == 0 and b == jax.tree.leaves(tree)[0].shape[0]:
        return tree
    return jax.tree.map(lambda leaf: leaf[a:b], tree)


def tune_chains(target, spec, keys, z0, x, y, scale, tuning_steps, mesh, chunks, progress):
    """Tune every chain (phases 1–3), sharded; phases 1–2 run in ``chunks`` equal pieces.

    ``keys`` (chains, 2), ``z0`` (chains, d); ``scale`` = the pair of :func:`scale_for`.
    Returns one dict per chain: the MCLMC state (``position``, ``momentum``,
    ``logdensity``, ``logdensity_grad``), ``L``, ``step_size`` and ``tuning_divergences``.
    """
    target_var, mask, n3 = mclmc.energy_var_schedule(tuning_steps)
    scale, per_chain = scale
    init, tune, finish, _ = chain_programs(target, spec, n3, 1, 1, per_chain)
    keys_s, n = shard_chains(keys, mesh)
    z_s, _ = shard_chains(z0, mesh)
    k_init, k_steps, k_finish, _ = jax.vmap(mclmc.chain_keys)(keys_s)  # as mclmc.run_chain
    carry = init(k_init, z_s, x, y, scale)
    n12 = len(target_var)
    step_keys = jax.vmap(lambda k: jax.random.split(k, n12))(k_steps)  # (chains, n12, 2)
    # equal chunks (one compiled program): the largest divisor of n12 not above `chunks`
    n_chunks = max(c for c in range(1, max(min(chunks, n12), 1) + 1) if n12 % c == 0)
    bounds = np.linspace(0, n12, n_chunks + 1).astype(int)
    divergences = []
    with _progress(n12, "MILE tuning", progress) as bar:
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            xs: tuple[jax.Array, ...] = (
                step_keys[:, a:b],
                jnp.asarray(target_var[a:b]),
                jnp.asarray(mask[a:b]),
            )
            xs = (xs[0], *(jnp.broadcast_to(v, (xs[0].shape[0], b - a)) for v in xs[1:]))
            carry, div = tune(carry, xs, x, y, scale)
            divergences.append(np.asarray(div))
            bar.update(b - a)
    # phase 3 in groups of chains: its ESS trace and FFT take ~16 MB a chain (d ≈ 1 000)
    groups = [
        finish(*_rows((k_finish, carry), a, b), x, y, _rows(scale, a, b) if per_chain else scale)
        for a, b in _groups(k_finish.shape[0], FINISH_GROUP, mesh.devices.size)
    ]
    state, L, eps = jax.tree.map(lambda *parts: jnp.concatenate(parts), *groups)
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


def sample_chains(target, spec, keys, tuned, x, y, scale, n_kept, thinning, mesh, progress):
    """Sample every chain from its tuned state (dicts of :func:`tune_chains`), sharded.

    Returns one dict per chain: ``z`` (n_kept, d), ``logdensity`` and ``energy_var``
    (n_kept,).
    """
    scale, per_chain = scale
    *_, sample = chain_programs(target, spec, 1, n_kept, thinning, per_chain)
    stack = {k: jnp.stack([jnp.asarray(t[k]) for t in tuned]) for k in tuned[0]}
    state = blackjax.mcmc.integrators.IntegratorState(
        stack["position"], stack["momentum"], stack["logdensity"], stack["logdensity_grad"]
    )
    (state_s, L_s, eps_s, keys_s), n = shard_chains(
        (state, stack["L"], stack["step_size"], keys), mesh
    )
    with _progress(n, "MILE sampling (chains)", progress) as bar:
        _, (z, logdensity, energy_var) = sample(keys_s, (state_s, L_s, eps_s), x, y, scale)
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
