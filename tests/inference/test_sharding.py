"""Many MCLMC chains in one program: the chain mesh, padding, replicated data, programs."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import mclmc, sharding


def _target(x, y, s, scale_of_y):
    """A Gaussian target of a flat z: z ~ N(mean(y), s²) per coordinate (x unused)."""

    def logdensity(z):
        return -0.5 * jnp.sum(((z - jnp.mean(y) * scale_of_y) / s) ** 2)

    return logdensity


_SHARD_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    from bnn_posteriors.inference import ensembles, mile
    assert jax.device_count() == 2
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 2)).astype(np.float32); y = x[:, 0].astype(np.float32)
    p, _ = ensembles.train_ensemble(jax.random.PRNGKey(0), x, y, x, y, widths=(2, 4, 1),
                                    n_members=3, max_epochs=5)
    starts = mile.warm_start_positions(p)
    # float round-off differs between layouts and MCLMC is chaotic: compare short runs
    kw = dict(widths=(2, 4, 1), tuning_steps=10, sampling_steps=3, thinning=1)
    a = mile.run_bde(jax.random.PRNGKey(1), x, y, starts, **kw)  # 3 chains on 2 devices
    b = mile.run_bde(jax.random.PRNGKey(1), x, y, starts, devices=jax.devices()[:1], **kw)
    np.testing.assert_allclose(a["samples"]["W0"], b["samples"]["W0"], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(a["step_size"], b["step_size"], rtol=1e-3)
    print("OK")
    """
)


@pytest.mark.slow
def test_sharded_and_unsharded_agree():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, "-c", _SHARD_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "OK" in done.stdout


def test_shard_chains_pads():
    mesh = sharding.chain_mesh()
    tree, n = sharding.shard_chains({"a": jnp.arange(3.0)}, mesh)
    assert n == 3 and tree["a"].shape[0] % mesh.devices.size == 0


def test_replicate_and_scale_for():
    mesh = sharding.chain_mesh()
    data = sharding.replicate({"x": jnp.ones((5, 2))}, mesh)
    assert data["x"].sharding.is_fully_replicated
    shared, per_chain = sharding.scale_for(jnp.asarray(0.5), [0, 1], mesh)
    assert not per_chain and float(shared) == 0.5
    scales, per_chain = sharding.scale_for(jnp.array([1.0, 2.0, 3.0]), [2, 0], mesh)
    assert per_chain and scales.shape[0] % mesh.devices.size == 0
    np.testing.assert_array_equal(scales[:2], [3.0, 1.0])


@pytest.mark.slow
def test_chain_programs_are_cached_and_whole_program_matches_run_chain():
    spec = (1.0,)
    a = sharding.chain_programs(_target, spec, 10, 5, 2)
    assert a is sharding.chain_programs(_target, spec, 10, 5, 2)  # no recompilation
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    z0 = jnp.ones((2, 3))
    x, y = jnp.zeros((4, 1)), jnp.full(4, 2.0)
    run = sharding.whole_program(_target, spec, 100, 5, 2)
    (z, _, _), L, eps, div = run(keys, z0, x, y, jnp.asarray(1.0))
    assert z.shape == (2, 5, 3) and L.shape == eps.shape == div.shape == (2,)
    energy_var = (mclmc.ENERGY_VAR_START, mclmc.ENERGY_VAR_END)
    (z1, _, _), L1, eps1, _ = jax.jit(
        lambda k, z: mclmc.run_chain(_target(x, y, 1.0, 1.0), k, z, 100, 5, 2, energy_var)
    )(keys[1], z0[1])
    # float round-off differs between the vmapped and the single program and MCLMC is
    # chaotic: agreement to about 1e-4 after 110 steps
    np.testing.assert_allclose(z[1], z1, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(L[1], L1, rtol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("per_chain", [False, True])
def test_tune_and_sample_chains(per_chain):
    mesh = sharding.chain_mesh()
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    z0 = jnp.ones((3, 2))
    x, y = sharding.replicate((jnp.zeros((4, 1)), jnp.full(4, 1.0)), mesh)
    all_scales = jnp.array([0.5, 1.0, 2.0]) if per_chain else jnp.asarray(1.0)
    scale = sharding.scale_for(all_scales, np.arange(3), mesh)
    tuned = sharding.tune_chains(_target, (1.0,), keys, z0, x, y, scale, 100, mesh, 3, False)
    assert len(tuned) == 3
    assert set(tuned[0]) == {
        "position",
        "momentum",
        "logdensity",
        "logdensity_grad",
        "L",
        "step_size",
        "tuning_divergences",
    }
    assert all(t["L"] > 0 and t["step_size"] > 0 for t in tuned)
    drawn = sharding.sample_chains(_target, (1.0,), keys, tuned, x, y, scale, 4, 2, mesh, False)
    assert len(drawn) == 3 and drawn[0]["z"].shape == (4, 2)
    assert drawn[0]["logdensity"].shape == drawn[0]["energy_var"].shape == (4,)
    assert all(np.all(np.isfinite(d["z"])) for d in drawn)
    with pytest.MonkeyPatch.context() as patch:  # phase 3 in groups of one chain each
        patch.setattr(sharding, "FINISH_GROUP", 1)
        grouped = sharding.tune_chains(_target, (1.0,), keys, z0, x, y, scale, 100, mesh, 3, False)
    for one, many in zip(grouped, tuned, strict=True):
        for name in ("position", "L", "step_size"):
            np.testing.assert_allclose(one[name], many[name], rtol=1e-6)


def test_chain_groups_cover_every_chain_in_mesh_multiples():
    assert sharding._groups(5, 2, 1) == [(0, 2), (2, 4), (4, 5)]
    assert sharding._groups(6, 3, 2) == [(0, 2), (2, 4), (4, 6)]  # 3 rounded down to 2
    assert sharding._groups(4, 1, 2) == [(0, 2), (2, 4)]  # at least the mesh size
    assert sharding._groups(3, 1024, 1) == [(0, 3)]
    tree = {"a": jnp.arange(4)}
    assert sharding._rows(tree, 0, 4) is tree
    assert sharding._rows(tree, 1, 3)["a"].tolist() == [1, 2]
