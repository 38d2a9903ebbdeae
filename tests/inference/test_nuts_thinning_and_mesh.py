"""Tests of NUTS's ``thinning`` and ``mesh`` options (inference/mcmc.py), which the reference
runs use: thinned draws are the unthinned ones at every k-th step, and chains sharded over a
mesh of devices (padded where the devices do not divide them) give the chains of one device."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from bnn_posteriors.inference import mcmc, sharding
from bnn_posteriors.models import numpyro_models as models

X = np.array([-1.0, 0.5, 2.0, 1.5])
KWARGS = {"x": X, "y": 0.5 * X, "depth": 2, "sigma": 0.5, "tau": 1.0}
BUDGET = {"num_chains": 2, "num_warmup": 20, "num_samples": 20}


@pytest.mark.slow
def test_thinning_keeps_every_kth_draw_and_every_statistic(tmp_path):
    full, full_stats = mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, **BUDGET)
    thin, stats = mcmc.nuts(
        jax.random.key(0),
        models.narrow_network,
        KWARGS,
        thinning=4,
        chunk_size=8,
        cache=tmp_path,
        **BUDGET,
    )
    assert thin["w"].shape == (2, 5, 2)
    np.testing.assert_allclose(thin["w"], full["w"][:, 3::4], rtol=1e-5, atol=1e-6)
    assert stats["num_steps"].shape == full_stats["num_steps"].shape == (2, 20)
    np.testing.assert_array_equal(stats["num_steps"], full_stats["num_steps"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"thinning": 3}, "num_samples=20 must be a multiple of thinning=3"),
        ({"thinning": 4, "chunk_size": 6}, "chunk_size=6 must be a multiple of thinning=4"),
        ({"thinning": 0}, "thinning must be a positive integer"),
    ],
)
def test_thinning_rejects_misaligned_budgets(change, message):
    with pytest.raises(ValueError, match=message):
        mcmc.nuts(jax.random.key(0), models.narrow_network, KWARGS, **BUDGET, **change)


@pytest.mark.slow
def test_a_one_device_mesh_gives_the_same_draws():
    plain, _ = mcmc.nuts(jax.random.key(1), models.narrow_network, KWARGS, **BUDGET)
    meshed, stats = mcmc.nuts(
        jax.random.key(1), models.narrow_network, KWARGS, mesh=sharding.chain_mesh(), **BUDGET
    )
    np.testing.assert_allclose(meshed["w"], plain["w"], rtol=1e-5, atol=1e-6)
    assert stats["step_size"].shape == (2,)


_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    from bnn_posteriors.inference import mcmc, sharding
    from bnn_posteriors.models import numpyro_models as models
    assert jax.device_count() == 2
    x = np.array([-1.0, 0.5, 2.0, 1.5])
    kw = {"x": x, "y": 0.5 * x, "depth": 2, "sigma": 0.5, "tau": 1.0}
    budget = dict(num_chains=3, num_warmup=20, num_samples=10)  # 3 chains on 2 devices: padded
    one = sharding.chain_mesh(jax.devices()[:1])
    two = sharding.chain_mesh()
    a, sa = mcmc.nuts(jax.random.key(0), models.narrow_network, kw, mesh=two, chunk_size=5,
                      cache=False, **budget)
    b, sb = mcmc.nuts(jax.random.key(0), models.narrow_network, kw, mesh=one, **budget)
    assert a["w"].shape == b["w"].shape == (3, 10, 2), a["w"].shape
    assert sa["step_size"].shape == (3,)
    # round-off differs between layouts and NUTS trajectories are chaotic: short runs agree
    np.testing.assert_allclose(a["w"], b["w"], rtol=1e-3, atol=1e-3)
    print("OK")
    """
)


@pytest.mark.slow
def test_chains_sharded_over_two_devices_match_one_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "OK" in done.stdout


@pytest.mark.slow
def test_warmup_stats_count_the_leapfrog_steps_of_the_adaptation(tmp_path):
    """``warmup_stats``: the adaptation's leapfrog steps per step, the draws unchanged."""
    plain, plain_stats = mcmc.nuts(jax.random.key(2), models.narrow_network, KWARGS, **BUDGET)
    assert "warmup_num_steps" not in plain_stats
    samples, stats = mcmc.nuts(
        jax.random.key(2), models.narrow_network, KWARGS, warmup_stats=True, **BUDGET
    )
    np.testing.assert_array_equal(samples["w"], plain["w"])
    warm = np.asarray(stats["warmup_num_steps"])
    assert warm.shape == (2, 20) and warm.min() >= 1 and warm.max() <= 1023
    assert warm.sum() > 40  # NUTS trees of more than one step, not a placeholder
    _, capped = mcmc.nuts(
        jax.random.key(2),
        models.narrow_network,
        KWARGS,
        warmup_stats=True,
        max_num_doublings=1,
        **BUDGET,
    )
    np.testing.assert_array_equal(capped["warmup_num_steps"], 1)
    with pytest.raises(ValueError, match="warmup_stats needs a run in one program"):
        mcmc.nuts(
            jax.random.key(2),
            models.narrow_network,
            KWARGS,
            warmup_stats=True,
            chunk_size=10,
            **BUDGET,
        )
