"""Chapter 5's summaries (:mod:`bnn_posteriors.studies.symmetrised_summaries`)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from bnn_posteriors.inference import mean_field_family as mf
from bnn_posteriors.studies import symmetrised_experiments as sx
from bnn_posteriors.studies import symmetrised_summaries as ss

Q = mf.init_mean_field(jax.random.key(0), (1, 3, 1), loc_scale=0.3, init_scale=1.0)


def data(n=20):
    return sx.toy_regression(jax.random.key(1), n)


def test_identity_repeats_stack_the_repeats_with_their_own_keys():
    x, y = data()
    reps = ss.identity_repeats(jax.random.key(2), Q, x, y, repeats=3, num_samples=200,
                               fp_floor=1e-4, noise_scale=0.3)  # fmt: skip
    assert reps["z"].shape == (3,) and len(set(reps["mi"].tolist())) == 3
    first = sx.identity_test(jax.random.key(2), Q, x, y, num_samples=200, noise_scale=0.3)
    assert reps["gap"][0] == first["gap"]
    second = sx.identity_test(jax.random.fold_in(jax.random.key(2), 1), Q, x, y,
                              num_samples=200, noise_scale=0.3)  # fmt: skip
    assert reps["mi"][1] == second["mi"]


def test_mi_curves_rise_to_log_g_and_bound_i():
    out = ss.mi_curves(jax.random.key(3), Q, width=3, separations=(0.0, 0.1, 30.0), ks=(2, 6),
                       infonce_samples=200, num_samples=200)  # fmt: skip
    assert out["separation"].shape == (3, 2) and abs(out["separation"][0, 0]) < 1e-5
    assert out["separation"][-1, 0] == pytest.approx(math.log(6), abs=1e-3)
    assert out["unsaturated"] == 2 and out["step_z"].shape == (1,)
    assert out["infonce"].shape == (2, 2) and np.all(out["infonce"][:, 0] <= np.log([2, 6]) + 1e-5)
    assert np.all(out["infonce_z"] < 3) and 0 <= out["mi"][0] <= math.log(6) + 1e-4


def test_nuts_arrangements_summarise_the_chains():
    x, y = data(15)
    out = ss.nuts_arrangements(
        jax.random.key(4), Q, x, y, width=3, num_chains=2, num_warmup=20, num_samples=10,
        target_acceptance_rate=0.8, noise_scale=0.3,
    )  # fmt: skip
    assert out["draws"]["W0"].shape == (2, 10, 1, 3)
    assert out["q_draws"][0]["W"].shape == out["qg_draws"][0]["W"].shape == (20, 1, 3)
    assert len(out["chain_modes"]) == 2 and all(0 <= m < 6 for m in out["chain_modes"])
    assert 0 <= out["moved"] <= 1 and 0.5 / 6 <= out["stay"] <= 1


def test_mnist_verdict_ties_and_gains():
    tied = {3: {"test_ll": np.zeros(2)}, 4: {"test_ll": np.array([1e-7, -1e-7])}}
    out = ss.mnist_verdict({"test_ll": np.zeros(2)}, tied, widths=(3, 4), tie=1e-6)
    np.testing.assert_array_equal(out["bounds"], [-1e-6, 1e-6])
    assert not out["passes"] and "does not reproduce" in out["verdict"]
    assert out["tie_text"].startswith("the paired runs end at the same q")
    gains = {3: {"test_ll": np.array([0.0, 0.01])}, 4: {"test_ll": np.array([0.02, 0.03])}}
    out = ss.mnist_verdict({"test_ll": np.array([0.005, 0.025])}, gains, widths=(3, 4), tie=1e-6)
    assert out["passes"] and out["verdict"].startswith("holds (test log-likelihood gains +0.0050")
    assert "from +0.0000 to +0.0300" in out["tie_text"]
