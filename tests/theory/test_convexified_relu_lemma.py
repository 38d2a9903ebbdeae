"""Tests of Lemma E.1 on random networks, unit matching and the posterior of u ([SAP] App. E)."""

from __future__ import annotations

import types

import jax
import numpy as np
import pytest

from bnn_posteriors.theory import convexified_relu as convex

pytestmark = pytest.mark.usefixtures("x64")

RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(20, 3)), RNG.normal(size=20)


@pytest.mark.slow
def test_lemma_gaps_gap_is_the_imbalance():
    out = {
        k: np.asarray(v)
        for k, v in convex.lemma_gaps(jax.random.key(0), X, Y, 5, 16, 1.0, 1.3).items()
    }
    assert out["gap"].shape == (16,)
    np.testing.assert_allclose(out["gap"], out["imbalance"], rtol=1e-9, atol=1e-12)
    assert np.all(out["gap"] >= 0) and np.max(np.abs(out["gap_balanced"])) < 1e-9
    assert np.max(out["change_of_f"]) < 1e-9


@pytest.mark.slow
def test_lemma_check_and_summary(monkeypatch):
    split = types.SimpleNamespace(x_train=X, y_train=Y)
    monkeypatch.setattr(convex.data, "load_split", lambda name, seed: split)
    gaps = convex.lemma_check(
        jax.random.key(1), ("a", "b"), (4, 6), 10, num_rows=15, split_seed=0, tau=1.0
    )
    assert list(gaps) == [("a", 4), ("a", 6), ("b", 4), ("b", 6)]
    assert all(v["gap"].shape == (3,) for v in gaps.values())  # ceil(10 / 4) per combination
    pooled = convex.lemma_summary(gaps)
    assert pooled["gap"].size == 12
    assert pooled["rel_identity"] < 1e-9 and pooled["rel_balanced"] < 1e-9
    assert pooled["max_change"] < 1e-9


def test_align_units_undoes_a_permutation():
    u = RNG.normal(size=(1, 50, 4, 2)) + 3 * np.arange(4)[None, None, :, None]
    perm = np.array([2, 0, 3, 1])
    aligned = convex.align_units(np.concatenate([u, u[:, :, perm]]))
    np.testing.assert_array_equal(aligned[1], u[0])
    with pytest.raises(ValueError, match="chains, draws, H, d"):
        convex.align_units(u[0])
