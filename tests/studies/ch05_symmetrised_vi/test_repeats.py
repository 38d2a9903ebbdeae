"""Chapter 5's summaries (:mod:`bnn_posteriors.studies.ch05_symmetrised_vi.repeats`)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from bnn_posteriors.inference import mean_field as mf
from bnn_posteriors.studies.ch05_symmetrised_vi import fits as sx
from bnn_posteriors.studies.ch05_symmetrised_vi import repeats as ss

Q = mf.init(jax.random.key(0), (1, 3, 1), loc_scale=0.3, init_scale=1.0)


def data(n=20):
    return sx.toy_regression(jax.random.key(1), n)


@pytest.mark.slow
def test_identity_repeats_stack_the_repeats_with_their_own_keys():
    x, y = data()
    reps = ss.identity_repeats(
        jax.random.key(2), Q, x, y, repeats=3, num_samples=200, fp_floor=1e-4, noise_scale=0.3
    )
    assert reps["z"].shape == (3,) and len(set(reps["mi"].tolist())) == 3
    first = sx.identity_test(jax.random.key(2), Q, x, y, num_samples=200, noise_scale=0.3)
    assert reps["gap"][0] == first["gap"]
    second = sx.identity_test(
        jax.random.fold_in(jax.random.key(2), 1), Q, x, y, num_samples=200, noise_scale=0.3
    )
    assert reps["mi"][1] == second["mi"]


@pytest.mark.slow
def test_mi_curves_rise_to_log_g_and_bound_i():
    out = ss.mi_curves(
        jax.random.key(3),
        Q,
        width=3,
        separations=(0.0, 0.1, 30.0),
        ks=(2, 6),
        infonce_samples=200,
        num_samples=200,
    )
    assert out["separation"].shape == (3, 2) and abs(out["separation"][0, 0]) < 1e-5
    assert out["separation"][-1, 0] == pytest.approx(math.log(6), abs=1e-3)
    assert out["unsaturated"] == 2 and out["step_z"].shape == (1,)
    assert out["infonce"].shape == (2, 2) and np.all(out["infonce"][:, 0] <= np.log([2, 6]) + 1e-5)
    assert np.all(out["infonce_z"] < 3) and 0 <= out["mi"][0] <= math.log(6) + 1e-4


@pytest.mark.slow
def test_nuts_arrangements_summarise_the_chains():
    x, y = data(15)
    out = ss.nuts_arrangements(
        jax.random.key(4),
        Q,
        x,
        y,
        width=3,
        num_chains=2,
        num_warmup=20,
        num_samples=10,
        target_acceptance_rate=0.8,
        noise_scale=0.3,
    )
    assert out["draws"]["W0"].shape == (2, 10, 1, 3)
    assert out["q_draws"][0]["W"].shape == out["qg_draws"][0]["W"].shape == (20, 1, 3)
    assert len(out["chain_modes"]) == 2 and all(0 <= m < 6 for m in out["chain_modes"])
    assert 0 <= out["moved"] <= 1 and 0.5 / 6 <= out["stay"] <= 1


def fake_fits(ll_gain, mi_plain, *, n=4, mi_sym=None, width=4):
    """Fits of :func:`sx.fit_width` at widths 2 and ``width``: plain runs first, then the
    symmetrised ones; at the largest width the symmetrised test log-lik is higher by
    ``ll_gain`` (+ seed noise) and the plain fits' I is ``mi_plain``."""
    rng = np.random.default_rng(0)
    fits = {}
    for w, gain, mi in ((2, 0.0, math.log(2)), (width, ll_gain, mi_plain)):
        sym_mi = mi if mi_sym is None or w == 2 else mi_sym
        ll = rng.normal(-1.0, 0.1, n)
        fits[w] = dict(
            elbo=np.concatenate([np.full(n, -50.0), np.full(n, -50.0)]),
            mi=np.concatenate([np.full(n, mi), np.full(n, sym_mi)]),
            test_ll=np.concatenate([ll, ll + gain + (rng.normal(0, 0.01, n) if gain else 0)]),
        )
    return fits


def swap(fits):
    """The broken input: symmetrised and plain runs exchanged."""
    out = {}
    for w, r in fits.items():
        n = len(r["elbo"]) // 2
        out[w] = {k: np.concatenate([v[n:], v[:n]]) for k, v in r.items()}
    return out


def test_mi_ceiling():
    assert ss.mi_ceiling(4) == pytest.approx(math.log(24))
    assert ss.mi_ceiling(128, 64) == pytest.approx(math.log(64))
    assert ss.mi_ceiling(3, 64) == pytest.approx(math.log(6))  # Î_K ≤ I ≤ log|G| too


def test_symmetrised_gains_decide_where_units_merge_and_fail_when_swapped():
    fits = fake_fits(0.2, mi_plain=math.log(24) - 2.0, mi_sym=math.log(24) - 0.5)
    out = ss.symmetrised_gains(fits, n_train=1)
    assert out["widths"] == (2, 4) and out["decidable"]
    assert out["deficit"][-1] == pytest.approx(2.0) and abs(out["deficit"][0]) < 1e-12
    np.testing.assert_allclose(out["elbo"][-1], [math.log(24) - 0.5] * 3)  # the sym fits' I
    assert out["training"][-1, 0] == pytest.approx(1.5)
    assert np.all(out["better"] > 1e-6) and np.all(out["not_worse"] > -1e-6)
    assert out["test_ll"][0].tolist() == [0.0, 0.0, 0.0]  # identical runs: a tie
    gate = ss.decidability_gate(out, np.array([0.3]))
    assert gate.passed and "merge units that the objective can see" in gate.why
    # better and not-worse read the ELBO gain from training, not the whole gain
    assert out["better"][0] == out["training"][-1, 1] and out["better"][1] == out["test_ll"][-1, 1]
    # the broken input: plain and symmetrised swapped. The whole ELBO gain stays positive (any
    # q_G gains its I over q), but the test log-lik and the training part of the ELBO fail
    broken = ss.symmetrised_gains(swap(fits), n_train=1)
    assert broken["elbo"][-1, 1] > 0
    assert broken["better"][0] < 0 and broken["better"][1] < 0
    assert broken["not_worse"].min() < -1e-6 and broken["training"][-1, 2] < 0
    table = ss.gains_interval_table(out)
    assert "95%" in table and "| 4 | 2.00 | +2.68 [+2.68, +2.68] | +1.50" in table


def test_symmetrised_gains_read_the_training_elbo_per_training_point():
    fits = fake_fits(0.2, mi_plain=math.log(24) - 2.0, mi_sym=math.log(24) - 0.5)
    # identical runs but one float32 spacing of an ELBO of -50 nats (2^-18 ≈ 3.8e-6) lower in
    # the symmetrised ones at the small width: a tie in nats per point, not a loss
    fits[2]["elbo"] = fits[2]["elbo"].astype(np.float32)
    fits[2]["elbo"][4:] = np.nextafter(np.float32(-50.0), np.float32(-np.inf))
    out = ss.symmetrised_gains(fits, n_train=40)
    assert out["n_train"] == 40 and out["training"][0, 2] < -1e-6  # in nats: beyond the tie
    assert out["not_worse"][0] > -1e-6  # per training point: within it
    assert out["better"][0] == pytest.approx(1.5 / 40)
    # a real loss of a tenth of a nat per training point is not a tie
    fits[2]["elbo"][4:] = -50.0 - 4.0
    assert ss.symmetrised_gains(fits, n_train=40)["not_worse"][0] < -1e-6
    with pytest.raises(ValueError, match="n_train"):
        ss.symmetrised_gains(fits, n_train=0)


def test_symmetrised_gains_gate_fails_where_i_is_saturated():
    k = 64
    fits = fake_fits(0.0, mi_plain=math.log(k), width=128)
    out = ss.symmetrised_gains(fits, n_train=1, num_perms=k)
    assert not out["decidable"] and out["saturation"] < 1e-12 and out["largest_tie"] == 0.0
    assert out["elbo_minus_ceiling"] == pytest.approx(0.0, abs=1e-9)
    assert out["better"][1] == 0.0  # test log-lik ties: the rule alone would say "not reproduced"
    gate = ss.decidability_gate(out, np.zeros(4), reference=" (toy: 0.5)")
    assert not gate.passed and "saturated" in gate.why and "log K = 4.159" in gate.why
    assert "(toy: 0.5)" in gate.why and "log 2" in gate.decide
    few = ss.symmetrised_gains(fake_fits(0.0, mi_plain=math.log(24) - 0.3), n_train=1)
    gate = ss.decidability_gate(few, np.ones(4))
    assert not gate.passed and "too few units" in gate.why and "0.30" in gate.why


@pytest.mark.slow
def test_mi_gradient_norm_vanishes_where_i_is_saturated():
    far = mf.init(jax.random.key(5), (1, 3, 1), loc_scale=30.0, init_scale=0.01)
    near = mf.init(jax.random.key(5), (1, 3, 1), loc_scale=0.1, init_scale=1.0)
    stack = jax.tree.map(lambda a, b: np.stack([a, b]), far, near)
    norms = ss.mi_gradient_norm(jax.random.key(6), stack, num_draws=16)
    assert norms.shape == (2,) and norms[0] < 1e-4 < norms[1]
    bound = ss.mi_gradient_norm(jax.random.key(6), stack, num_draws=16, num_perms=4)
    assert bound[0] < 1e-4 < bound[1]


def test_committed_gains_read_the_old_record():
    record = {
        "value": [0.0, 0.0, 0.0],
        "note": "gains. Gains per width: MNIST ELBO [+4.159, +4.159, +4.159]; toy [...]",
    }
    out = ss.committed_gains(record)
    np.testing.assert_array_equal(out["test_ll"], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(out["elbo"], [4.159] * 3)
    assert np.isnan(ss.committed_gains(None)["elbo"]).all()
    assert np.isnan(ss.committed_gains({"value": 0.0, "note": ""})["elbo"]).all()
