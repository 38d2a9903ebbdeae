"""Units that mean-field VI prunes (:mod:`bnn_posteriors.studies.pruning`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import mean_field_family as mf
from bnn_posteriors.studies import pruning


def test_pruned_fraction():
    q = mf.init_mean_field(jax.random.key(0), (1, 4, 1), init_scale=0.1)
    q["loc"][1]["W"] = jnp.array([[0.0], [1.0], [0.15], [-0.5]])
    batched = jax.tree.map(lambda v: v[None], q)
    np.testing.assert_allclose(pruning.pruned_fraction(batched), [0.5])


def test_pruned_units_need_every_outgoing_weight_near_zero():
    q = mf.init_mean_field(jax.random.key(0), (2, 3, 2), init_scale=0.1)
    q["loc"][1]["W"] = jnp.array([[0.0, 0.1], [0.0, 1.0], [0.15, -0.15]])
    batched = jax.tree.map(lambda v: v[None], q)
    np.testing.assert_array_equal(pruning.pruned_units(batched), [[True, False, True]])
    np.testing.assert_allclose(pruning.pruned_fraction(batched), [2 / 3])
    np.testing.assert_array_equal(pruning.pruned_units(batched, threshold=20.0), [[True] * 3])
    with pytest.raises(ValueError, match="threshold"):
        pruning.pruned_units(batched, threshold=0.0)


def test_unit_pruning_and_table():
    q = mf.init_mean_field(jax.random.key(0), (2, 3, 2), init_scale=0.1)
    # unit 0: switched off and back at the prior N(0, 1); units 1, 2: used
    q["loc"][0]["W"] = q["loc"][0]["W"].at[:, 0].set(0.0)
    q["log_scale"][1]["W"] = q["log_scale"][1]["W"].at[0].set(0.0)
    q["log_scale"][0]["W"] = q["log_scale"][0]["W"].at[:, 0].set(0.0)
    q["log_scale"][0]["b"] = q["log_scale"][0]["b"].at[0].set(0.0)
    q["loc"][1]["W"] = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, -2.0]])
    runs = jax.tree.map(lambda v: jnp.stack([v, v]), q)
    out = pruning.unit_pruning(runs)
    np.testing.assert_allclose(out["pruned"], [1 / 3, 1 / 3])
    np.testing.assert_array_equal(out["kept"], [2, 2])
    np.testing.assert_allclose(out["kl_pruned"], [0.0, 0.0], atol=1e-6)
    kl = np.asarray(mf.unit_kl(q)) / 5  # 2 + 1 + 2 parameters per unit
    np.testing.assert_allclose(out["kl_kept"], [kl[1:].mean()] * 2, rtol=1e-6)
    assert out["kl_kept"][0] > 1.0
    none = pruning.unit_pruning(jax.tree.map(lambda v: v[None], mf.init_mean_field(
        jax.random.key(1), (2, 3, 2), loc_scale=10.0, init_scale=0.01)))  # fmt: skip
    assert none["pruned"][0] == 0 and np.isnan(none["kl_pruned"][0])
    table = pruning.pruning_table({3: out, 4: none})
    lines = table.splitlines()
    assert len(lines) == 4 and lines[0].startswith("| H |") and lines[3].count("—") == 1
