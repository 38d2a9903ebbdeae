"""The chapter-5 experiments (:mod:`bnn_posteriors.studies.ch05_symmetrised_vi.fits`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.inference import mean_field as mf
from bnn_posteriors.inference import symmetrised as sym
from bnn_posteriors.models.symmetry import permutations
from bnn_posteriors.studies.ch05_symmetrised_vi import fits as sx
from bnn_posteriors.studies.ch05_symmetrised_vi import pruning


def test_toy_regression():
    x, y = sx.toy_regression(jax.random.key(0), 500, noise_scale=0.0)
    assert x.shape == (500, 1) and y.shape == (500,)
    assert float(x.min()) >= -2.0 and float(x.max()) <= 2.0
    np.testing.assert_allclose(y, np.sin(2 * x[:, 0]) + 0.5 * x[:, 0], atol=1e-6)
    with pytest.raises(ValueError, match="n"):
        sx.toy_regression(jax.random.key(0), 0)


def test_pool_images_averages_blocks():
    images = np.arange(2 * 784, dtype=np.float64).reshape(2, 784)
    pooled = sx.pool_images(images, 2)
    assert pooled.shape == (2, 196) and pooled.dtype == np.float32
    np.testing.assert_allclose(pooled[0, 0], np.mean([0, 1, 28, 29]))
    np.testing.assert_allclose(sx.pool_images(images, 1), images.astype(np.float32))
    with pytest.raises(ValueError, match="block"):
        sx.pool_images(images, 5)


@pytest.mark.slow
def test_orbit_summary():
    out = sx.orbit_summary(jax.random.key(0), (2, 3, 1), 2, num_points=8, noise_scale=0.3)
    assert len(out) == 2 and all(m["copies"] == m["size"] == 6 for m in out)
    assert max(m["joint_change"] for m in out) < 1e-5
    assert min(m["min_distance"] for m in out) > 1e-2
    cls = sx.orbit_summary(jax.random.key(1), (2, 3, 3), 1, num_points=8)
    assert cls[0]["size"] == 6 and cls[0]["joint_change"] < 1e-5


@pytest.fixture(scope="module")
def toy_fits():
    x, y = sx.toy_regression(jax.random.key(0), 20)
    x_te, y_te = sx.toy_regression(jax.random.key(1), 10)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    run_keys, lam = jnp.concatenate([keys, keys]), jnp.repeat(jnp.array([0.0, 1.0]), 2)
    fit = dict(num_steps=50, learning_rate=0.02, num_particles=1, init_scale=0.1)
    kw = dict(likelihood="gaussian", noise_scale=0.3)
    fits = {
        w: sx.fit_width(
            run_keys,
            lam,
            x,
            y,
            jnp.concatenate([x_te, x_te[:3]]),
            y_te,
            jax.random.PRNGKey(3),
            width=w,
            fit=fit,
            eval_samples=16,
            **kw,
        )
        for w in (2, 3)
    }
    return x, y, fits


@pytest.mark.slow
def test_fit_width_and_tables(toy_fits):
    _, _, fits = toy_fits
    r = fits[3]
    assert r["elbo"].shape == r["mi"].shape == r["test_ll"].shape == (4,)
    assert r["extra"].shape == (4, 16, 3) and np.all(np.isfinite(r["test_ll"]))
    assert np.all(r["mi"] >= -1e-4) and np.all(r["mi"] <= math.log(6) + 1e-4)
    assert len(sx.fits_table(fits).splitlines()) == 2 + len(fits)  # header, rule, widths
    g = sx.gains(fits)
    np.testing.assert_allclose(g[3]["elbo"], r["elbo"][2:] + r["mi"][2:] - r["elbo"][:2])
    np.testing.assert_allclose(g[3]["post_hoc"] + g[3]["training"], g[3]["elbo"], rtol=1e-6)
    assert "test_ll gain" in sx.gains_table(g) and "accuracy" not in sx.gains_table(g)
    assert pruning.pruned_fraction(r["q"]).shape == (4,)


@pytest.mark.slow
def test_evaluate_categorical():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 2)).astype(np.float32)
    y = rng.integers(0, 3, size=12)
    q = mf.init(jax.random.key(0), (2, 3, 3), init_scale=0.1)
    ev = sx.evaluate(jax.random.key(1), q, x, y, x[:5], num_samples=8, likelihood="categorical")
    assert ev["predictive"].shape == (5, 3) and "outputs" not in ev
    np.testing.assert_allclose(ev["predictive"].sum(-1), 1.0, rtol=1e-5)
    assert float(ev["elbo"]) < 0 and math.isfinite(float(ev["mi"]))


@pytest.mark.slow
def test_identity_test_is_calibrated_on_a_fit(toy_fits):
    x, y, fits = toy_fits
    q = jax.tree.map(lambda v: v[0], fits[3]["q"])
    out = sx.identity_test(jax.random.key(0), q, x, y, num_samples=2000, noise_scale=0.3)
    assert abs(out["z"]) < 4 and 0 <= out["mi"] <= math.log(6) + 1e-4
    assert out["gap_se"] <= out["elbo_q_se"] + 1e-6  # pairing removes the shared noise


@pytest.mark.slow
def test_fit_width_with_sampled_permutations_beyond_the_exact_width():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = rng.integers(0, 3, size=16)
    keys = jax.random.split(jax.random.PRNGKey(0), 1)
    fit = dict(num_steps=10, learning_rate=0.01, num_particles=1, init_scale=0.1, num_perms=4)
    width = permutations.MAX_EXACT_WIDTH + 2  # the exact I would refuse this width
    r = sx.fit_width(
        jnp.concatenate([keys, keys]),
        jnp.array([0.0, 1.0]),
        x,
        y,
        x[:5],
        y[:5],
        jax.random.PRNGKey(1),
        width=width,
        fit=fit,
        eval_samples=8,
        likelihood="categorical",
    )
    assert r["mi"].shape == r["accuracy"].shape == (2,)
    assert np.all(r["mi"] >= 0) and np.all(r["mi"] <= math.log(4) + 1e-5)  # Î_K ≤ log K
    assert pruning.unit_pruning(r["q"])["pruned"].shape == (2,)


@pytest.mark.slow
def test_fit_width_in_cached_groups_equals_one_batch_and_resumes(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 2)).astype(np.float32)
    y = rng.integers(0, 3, size=16)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    keys, mi = jnp.concatenate([keys, keys]), jnp.array([0.0, 0.0, 1.0, 1.0])
    fit = dict(num_steps=10, learning_rate=0.01, num_particles=1, init_scale=0.1)
    kw = dict(width=3, fit=fit, eval_samples=8, likelihood="categorical")
    args = (keys, mi, x, y, x[:5], y[:5], jax.random.PRNGKey(1))
    whole = sx.fit_width(*args, **kw)
    grouped = sx.fit_width(*args, chunk=3, cache=tmp_path, **kw)  # groups of 3 and 1
    for name in ("elbo", "mi", "test_ll", "accuracy"):
        np.testing.assert_allclose(grouped[name], whole[name], rtol=1e-4, atol=1e-5)
    assert len(list(tmp_path.rglob("*.npz"))) == 2
    monkeypatch.setattr(sx, "_fit_runs", lambda *a, **k: pytest.fail("recomputed a cached group"))
    again = sx.fit_width(*args, chunk=3, cache=tmp_path, **kw)
    np.testing.assert_array_equal(again["elbo"], grouped["elbo"])
    with pytest.raises(ValueError, match="chunk"):
        sx.fit_width(*args, chunk=0, **kw)
    with pytest.raises(ValueError, match="3 keys for 4 mi_weights"):
        sx.fit_width(keys[:3], *args[1:], **kw)


@pytest.mark.slow
def test_separation_curve_and_steps():
    base = mf.init(jax.random.key(0), (1, 3, 1), loc_scale=1.0, init_scale=0.3)
    curve = sx.separation_curve(jax.random.key(1), base, [0.0, 1.0, 30.0], 200)
    assert curve.shape == (3, 2) and abs(curve[0, 0]) < 1e-5
    assert curve[-1, 0] == pytest.approx(math.log(6), abs=1e-3)
    steps, m = sx.separation_steps(np.array([[0.0, 0.1], [0.5, 0.1], [1.79, 0.0]]), math.log(6))
    assert m == 2 and steps.shape == (1,)
    np.testing.assert_allclose(steps, 0.5 / math.hypot(0.1, 0.1))


@pytest.mark.slow
def test_nearest_arrangement_finds_the_permutation():
    q = mf.init(jax.random.key(0), (2, 3, 1), loc_scale=3.0, init_scale=0.01)
    group = permutations.permutation_group(3)
    moved = permutations.permute_params(q.loc, group)
    np.testing.assert_array_equal(sx.nearest_arrangement(q, moved, group)[0], 0)
    idx = sx.nearest_arrangement(q, moved, group)
    # q(g·ω) is largest where g undoes the permutation that made ω
    for i, j in enumerate(idx):
        w = jax.tree.map(lambda v, i=i: v[i], moved)
        back = jax.tree.map(lambda v: v[0], permutations.permute_params(w, group[j][None]))
        np.testing.assert_allclose(back[0]["W"], q.loc[0]["W"], rtol=1e-6)
    assert sym.mean_se(np.array([1.0, 3.0]))[0] == 2.0
