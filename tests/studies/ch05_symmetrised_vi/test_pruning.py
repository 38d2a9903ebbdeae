"""Units that mean-field VI prunes (:mod:`bnn_posteriors.studies.ch05_symmetrised_vi.pruning`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import mean_field as mf
from bnn_posteriors.studies.ch05_symmetrised_vi import pruning


@pytest.mark.slow
def test_pruned_fraction():
    q = mf.init(jax.random.key(0), (1, 4, 1), init_scale=0.1)
    q.loc[1]["W"] = jnp.array([[0.0], [1.0], [0.15], [-0.5]])
    batched = jax.tree.map(lambda v: v[None], q)
    np.testing.assert_allclose(pruning.pruned_fraction(batched), [0.5])


@pytest.mark.slow
def test_pruned_units_need_every_outgoing_weight_near_zero():
    q = mf.init(jax.random.key(0), (2, 3, 2), init_scale=0.1)
    q.loc[1]["W"] = jnp.array([[0.0, 0.1], [0.0, 1.0], [0.15, -0.15]])
    batched = jax.tree.map(lambda v: v[None], q)
    np.testing.assert_array_equal(pruning.pruned_units(batched), [[True, False, True]])
    np.testing.assert_allclose(pruning.pruned_fraction(batched), [2 / 3])
    np.testing.assert_array_equal(pruning.pruned_units(batched, threshold=20.0), [[True] * 3])
    with pytest.raises(ValueError, match="threshold"):
        pruning.pruned_units(batched, threshold=0.0)


@pytest.mark.slow
def test_unit_pruning_and_table():
    q = mf.init(jax.random.key(0), (2, 3, 2), init_scale=0.1)
    # unit 0: switched off and back at the prior N(0, 1); units 1, 2: used
    q.loc[0]["W"] = q.loc[0]["W"].at[:, 0].set(0.0)
    q.scale[1]["W"] = q.scale[1]["W"].at[0].set(1.0)
    q.scale[0]["W"] = q.scale[0]["W"].at[:, 0].set(1.0)
    q.scale[0]["b"] = q.scale[0]["b"].at[0].set(1.0)
    q.loc[1]["W"] = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, -2.0]])
    runs = jax.tree.map(lambda v: jnp.stack([v, v]), q)
    out = pruning.unit_pruning(runs)
    np.testing.assert_allclose(out["pruned"], [1 / 3, 1 / 3])
    np.testing.assert_array_equal(out["kept"], [2, 2])
    np.testing.assert_allclose(out["kl_pruned"], [0.0, 0.0], atol=1e-6)
    kl = np.asarray(mf.kl_per_unit(q)) / 5  # 2 + 1 + 2 parameters per unit
    np.testing.assert_allclose(out["kl_kept"], [kl[1:].mean()] * 2, rtol=1e-6)
    assert out["kl_kept"][0] > 1.0
    none = pruning.unit_pruning(
        jax.tree.map(
            lambda v: v[None],
            mf.init(jax.random.key(1), (2, 3, 2), loc_scale=10.0, init_scale=0.01),
        )
    )
    assert none["pruned"][0] == 0 and np.isnan(none["kl_pruned"][0])
    table = pruning.pruning_table({3: out, 4: none})
    lines = table.splitlines()
    assert len(lines) == 4 and lines[0].startswith("| H |") and lines[3].count("—") == 1
    summary = pruning.pruning_summary({3: out, 4: none})
    np.testing.assert_allclose(summary["pruned"], [1 / 3, 0.0])
    assert summary["kl_pruned"][0] == pytest.approx(0.0, abs=1e-6)
    assert np.isnan(summary["kl_pruned"][1]) and summary["kl_kept"][0] > 1.0
    assert summary["verdict"] == "plain MFVI prunes some units at these widths"
    assert "no unit" in pruning.pruning_summary({4: none})["verdict"]
    assert "most of them" in pruning.pruning_summary({3: none, 4: out | {"pruned": 0.5}})["verdict"]


@pytest.mark.slow
def test_collapse_by_width_fits_the_slope_of_the_deficits():
    def fit(width, mi):  # two plain runs (first) and two symmetrised ones of one width
        q = mf.init(jax.random.key(width), (1, width, 1), init_scale=0.1)
        runs = jax.tree.map(lambda v: jnp.stack([v] * 4), q)
        return dict(
            q=runs, mi=jnp.array([*mi, 0.0, 0.0]), elbo=jnp.arange(4.0), test_ll=jnp.full(4, -1.0)
        )

    # deficits log H! - I: 0.1 and 0.3 at H = 2, 1.1 and 1.3 at H = 4 -> slope 0.5 per unit
    fits = {
        2: fit(2, [math.log(2) - 0.1, math.log(2) - 0.3]),
        4: fit(4, [math.log(24) - 1.1, math.log(24) - 1.3]),
    }
    out = pruning.collapse_by_width(fits, 2)
    np.testing.assert_allclose(out["per_width"][4]["deficit"], [1.1, 1.3], rtol=1e-5)
    np.testing.assert_allclose(out["per_width"][2]["elbo"], [0.0, 1.0])
    assert out["slope"] == pytest.approx(0.5, rel=1e-5) and out["n_fits"] == 4
    lo, hi = out["slope_ci"]
    assert lo < 0.5 < hi and hi - lo > 0  # 2 degrees of freedom: a wide t-interval
    with pytest.raises(ValueError, match="n_runs"):
        pruning.collapse_by_width(fits, 0)
