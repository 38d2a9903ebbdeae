"""Chapter 5's fits from its settings (:mod:`bnn_posteriors.studies.ch05_symmetrised_vi.runs`)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.studies.ch05_symmetrised_vi import fits as sx
from bnn_posteriors.studies.ch05_symmetrised_vi import runs


def test_paired_runs_share_keys():
    keys, lam = runs.paired_runs(jax.random.key(0), 3)
    assert len(keys) == 6 and lam.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    np.testing.assert_array_equal(jax.random.key_data(keys[:3]), jax.random.key_data(keys[3:]))
    with pytest.raises(ValueError, match="n_seeds"):
        runs.paired_runs(jax.random.key(0), 0)


@pytest.mark.slow
def test_toy_runs_match_a_direct_fit_and_plain_q(tiny_cfg):
    k = jax.random.split(jax.random.key(1), 3)
    toy = runs.toy_runs(k[0], k[1], k[2], tiny_cfg)
    assert set(toy["fits"]) == {2, 3} and toy["x_train"].shape == (12, 1)
    assert toy["fits"][3]["extra"].shape[0] == 4 and toy["fits"][3]["extra"].shape[-1] == 200
    assert toy["overview"].glue == dict(toy_n_train=12, toy_n_test=8, n_seeds=2)
    assert toy["overview"].table.startswith("Per width, mean over seeds")
    x_tr, _ = sx.toy_regression(jax.random.split(k[0])[0], 12, 0.2)
    np.testing.assert_array_equal(toy["x_train"], x_tr)
    q = runs.plain_q(toy["fits"][2], 2)
    assert q.loc[0]["W"].shape[0] == 2
    np.testing.assert_array_equal(q.loc[1]["W"], toy["fits"][2]["q"].loc[1]["W"][:2])
    with pytest.raises(ValueError, match="n_seeds"):
        runs.plain_q(toy["fits"][2], 5)
    assert runs.toy_model_kw(tiny_cfg)["likelihood"] == "gaussian"


@pytest.mark.slow
def test_mnist_runs_on_random_images(tiny_cfg):
    rng = np.random.default_rng(0)
    arrays = (rng.random((8, 784)), np.arange(8) % 3, rng.random((4, 784)), np.arange(4) % 3)
    out = runs.mnist_runs(jax.random.key(2), jax.random.key(3), arrays, tiny_cfg)
    assert set(out["fits"]) == {2} and out["fits"][2]["accuracy"].shape == (4,)
    glue, table = out["overview"].glue, out["overview"].table
    assert glue["mnist_inputs"] == 49 and glue["mnist_n_pool"] == "12"
    assert glue["mnist_mi_short"] == "exact I" and "(the exact I)" in table
    with pytest.raises(ValueError, match="mnist_n_train"):
        runs.mnist_runs(
            jax.random.key(2), jax.random.key(3), (arrays[0][:3], *arrays[1:]), tiny_cfg
        )
