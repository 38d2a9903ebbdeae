"""Tests of symmetrised mean-field VI ([SYM]): log q_G, I(g; ω), Î_K, the ELBO and the fit."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro.infer import TraceMeanField_ELBO

from bnn_posteriors.inference import mean_field as mf
from bnn_posteriors.inference import symmetrised as sym
from bnn_posteriors.inference import vi
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.models.symmetry import actions, permutations

WIDTHS = (2, 3, 1)


def make_q(key=0, widths=WIDTHS, spread=1.0, scale=0.5):
    """A mean-field q with random means (times ``spread``) and one common scale."""
    q = mf.init(jax.random.key(key), widths, loc_scale=1.0, init_scale=scale)
    q = mf.MeanField(jax.tree.map(lambda v: spread * v, q.loc), q.scale)
    q.loc[0]["b"] = spread * jax.random.normal(jax.random.key(key + 1), (widths[1],))
    return q


def symmetric_q(widths=WIDTHS):
    """Every hidden unit has the same factor: q∘g = q for every g."""
    q = make_q(widths=widths)
    q.loc[0]["W"] = jnp.ones_like(q.loc[0]["W"]) * 0.3
    q.loc[0]["b"] = jnp.full_like(q.loc[0]["b"], -0.2)
    q.loc[1]["W"] = jnp.ones_like(q.loc[1]["W"]) * 0.7
    return q


def toy_data(n=12):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(n, WIDTHS[0])).astype(np.float32)
    return x, (np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)).astype(np.float32)


@pytest.mark.slow
def test_log_q_symmetrised_two_ways():
    q = make_q()
    w = jax.tree.map(lambda v: v[0], mf.sample(jax.random.key(1), q, 1))
    group = permutations.permutation_group(3)
    direct = jnp.log(
        jnp.mean(
            jnp.stack([jnp.exp(mf.log_density(q, actions.permute_hidden(w, 0, g))) for g in group])
        )
    )
    np.testing.assert_allclose(sym.log_q_symmetrised(q, w), direct, rtol=1e-5)
    np.testing.assert_allclose(sym.log_q_symmetrised(q, w, group), direct, rtol=1e-5)


@pytest.mark.slow
def test_sample_symmetrised_permutes_the_draws_of_q():
    q = make_q()
    key = jax.random.key(4)
    base = mf.sample(jax.random.split(key)[0], q, 50)
    moved = sym.sample_symmetrised(key, q, 50)
    for i in range(50):
        one = jax.tree.map(lambda v, i=i: v[i], base)
        out = jax.tree.map(lambda v, i=i: v[i], moved)
        # the same function: g permutes hidden units only
        np.testing.assert_allclose(
            nets.mlp_apply(one, np.ones((1, 2))), nets.mlp_apply(out, np.ones((1, 2))), rtol=1e-5
        )
    assert not np.allclose(base[1]["W"], moved[1]["W"])


@pytest.mark.slow
def test_mi_zero_for_symmetric_q():
    value, se = sym.mutual_information(jax.random.key(0), symmetric_q(), 200)
    assert abs(float(value)) < 1e-5 and float(se) < 1e-5


@pytest.mark.slow
def test_mi_tends_to_log_group_size_for_separated_copies():
    log_g = math.log(6)
    near, _ = sym.mutual_information(jax.random.key(0), make_q(spread=0.05), 500)
    far, _ = sym.mutual_information(jax.random.key(0), make_q(spread=20.0, scale=0.05), 500)
    assert 0.0 <= float(near) < 0.5 * log_g
    assert float(far) == pytest.approx(log_g, abs=1e-3)
    assert float(far) <= log_g + 1e-6


@pytest.mark.slow
def test_infonce_is_a_lower_bound_that_tightens_with_k():
    q = make_q(spread=1.0, scale=0.6)
    exact, se = sym.mutual_information(jax.random.key(0), q, 4000)
    estimates = {k: sym.infonce_bound(jax.random.key(1), q, k, 4000) for k in (1, 2, 8, 64, 1024)}
    assert float(estimates[1][0]) == 0.0  # K = 1: the positive alone carries no information
    means = [float(m) for m, _ in estimates.values()]
    for (m, s), k in zip(estimates.values(), estimates, strict=True):
        assert float(m) <= float(exact) + 4 * float(np.hypot(s, se)), k
        assert float(m) <= math.log(k) + 1e-6
    assert means == sorted(means)
    assert float(estimates[1024][0]) == pytest.approx(float(exact), abs=4 * float(se) + 0.02)
    curve, curve_se = sym.infonce_curve(jax.random.key(2), q, (1, 2, 8, 1024), 2000)
    assert float(curve[0]) == 0.0 and bool(jnp.all(jnp.diff(curve) > 0))
    assert float(curve[-1]) == pytest.approx(float(exact), abs=4 * float(curve_se[-1] + se) + 0.02)
    # paired: the gap Î_K − I itself, negative for small K and within noise of 0 at K ≫ |G|,
    # with a smaller standard error than the two estimates' combined one
    key = jax.random.key(2)
    gap, gap_se = sym.infonce_curve(key, q, (1, 2, 8, 1024), 2000, paired=True)
    same_draws = sym.mutual_information(jax.random.split(key)[0], q, 2000)[0]
    assert float(gap[0]) == pytest.approx(-float(same_draws), rel=1e-5)  # Î_1 = 0
    assert bool(jnp.all(gap[:3] < -3 * gap_se[:3]))
    assert float(gap[-1]) < 3 * float(gap_se[-1])
    assert float(gap_se[-1]) < float(np.hypot(curve_se[-1], se))


@pytest.mark.slow
def test_elbo_identity():
    """ELBO(q_G) − ELBO(q) = I within Monte-Carlo error ([SYM] §4)."""
    x, y = toy_data()
    q = make_q(spread=0.8, scale=0.4)
    kw = dict(noise_scale=0.3)
    e_q = sym.elbo_samples(jax.random.key(1), q, x, y, 20_000, **kw)
    e_g = sym.elbo_samples(jax.random.key(2), q, x, y, 20_000, symmetrised=True, **kw)
    mi, mi_se = sym.mutual_information(jax.random.key(3), q, 20_000)
    gap = float(e_g.mean() - e_q.mean())
    se = math.sqrt(float(e_g.var() + e_q.var()) / 20_000 + float(mi_se) ** 2)
    assert 0.0 < float(mi) < math.log(6)
    assert abs(gap - float(mi)) < 4 * se


@pytest.mark.slow
def test_mi_term_exact_and_infonce():
    q = make_q(spread=1.0, scale=0.6)
    exact = sym.mutual_information(jax.random.key(0), q, 4000)[0]
    assert float(sym.mi_term(jax.random.key(1), q, 4000)) == pytest.approx(float(exact), abs=0.05)
    bound = sym.mi_term(jax.random.key(1), q, 4000, num_perms=4)
    assert float(bound) <= math.log(4) + 1e-6 and float(bound) < float(exact) + 0.05
    grad = jax.grad(lambda q: sym.mi_term(jax.random.key(2), q, 8))(q)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grad))


@pytest.mark.slow
def test_symmetrised_elbo_is_the_mean_field_elbo_minus_lambda_i():
    x, y = toy_data()
    q = make_q(spread=0.8, scale=0.4)
    spec = models.MLP(WIDTHS, noise_scale=0.3)
    model, kwargs = spec.model, spec.kwargs(x, y)
    guide = vi.mean_field_guide(model, init_loc=nets.sites(q.loc), scale_transform="exp")
    numpyro.handlers.seed(guide, rng_seed=0)(**kwargs)  # build the prototype before the ELBOs
    params, key = mf.to_auto_normal(q), jax.random.key(7)
    k_elbo, k_mi = jax.random.split(key)
    plain = TraceMeanField_ELBO(num_particles=3).loss(k_elbo, params, model, guide, **kwargs)
    mi = sym.mi_term(k_mi, q, 3)
    for lam in (0.0, 1.0, 2.5):
        got = sym.SymmetrisedELBO(lam, num_particles=3).loss(key, params, model, guide, **kwargs)
        np.testing.assert_allclose(got, plain - lam * mi, rtol=1e-5)


@pytest.mark.slow
def test_fit_symmetrised_raises_mi():
    x, y = toy_data(20)
    keys = jnp.stack([jax.random.key_data(jax.random.key(0))] * 2)
    q, losses = sym.fit_mean_field(
        keys,
        x,
        y,
        jnp.array([0.0, 1.0]),
        widths=WIDTHS,
        num_steps=300,
        noise_scale=0.3,
        learning_rate=0.02,
        num_particles=2,
    )
    assert losses.shape == (2, 300) and bool(jnp.all(jnp.isfinite(losses)))
    assert q.loc[0]["W"].shape == (2, *WIDTHS[:2]) and isinstance(q, mf.MeanField)
    assert float(losses[0, -20:].mean()) < float(losses[0, :20].mean())
    runs = [jax.tree.map(lambda v, r=r: v[r], q) for r in range(2)]
    mis = [float(sym.mutual_information(jax.random.key(1), run, 500)[0]) for run in runs]
    assert mis[1] >= mis[0] - 0.05


@pytest.mark.slow
def test_fit_starts_from_mean_field_init():
    """One step of tiny size leaves q at the start of :func:`mf.init`."""
    x, y = toy_data()
    key = jax.random.key(3)
    keys = jax.random.key_data(key)[None]
    q, _ = sym.fit_mean_field(
        keys,
        x,
        y,
        jnp.zeros(1),
        widths=WIDTHS,
        num_steps=1,
        learning_rate=1e-9,
        init_scale=0.2,
        noise_scale=0.3,
    )
    start = mf.init(jax.random.split(key)[0], WIDTHS, init_scale=0.2)
    for got, want in zip(jax.tree.leaves(q), jax.tree.leaves(start), strict=True):
        np.testing.assert_allclose(got[0], want, atol=1e-6)


@pytest.mark.slow
def test_fit_categorical_runs():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 2)).astype(np.float32)
    y = rng.integers(0, 3, size=16)
    keys = jnp.stack([jax.random.key_data(jax.random.key(0))] * 2)
    q, losses = sym.fit_mean_field(
        keys,
        x,
        y,
        jnp.array([0.0, 1.0]),
        widths=(2, 3, 3),
        num_steps=20,
        likelihood="categorical",
        num_perms=4,
    )
    assert q.loc[1]["W"].shape == (2, 3, 3) and bool(jnp.all(jnp.isfinite(losses)))


@pytest.mark.slow
def test_input_validation():
    q = make_q()
    x, y = toy_data()
    with pytest.raises(ValueError, match="num_perms"):
        sym.infonce_bound(jax.random.key(0), q, 0)
    with pytest.raises(TypeError, match="must be a MeanField"):
        sym.mutual_information(jax.random.key(0), {"loc": q.loc})
    deep = mf.init(jax.random.key(0), (2, 3, 3, 1))
    with pytest.raises(ValueError, match="one hidden layer"):
        sym.mutual_information(jax.random.key(0), deep)
    with pytest.raises(ValueError, match="increasing"):
        sym.infonce_curve(jax.random.key(0), q, (4, 2))
    with pytest.raises(ValueError, match=r"elbo_samples: x must have shape \(n, d\)"):
        sym.elbo_samples(jax.random.key(0), q, x[:, 0], y, 10)
    keys = jnp.stack([jax.random.key_data(jax.random.key(0))])
    with pytest.raises(ValueError, match="num_perms"):
        sym.fit_mean_field(keys, x, y, jnp.ones(1), widths=WIDTHS, num_perms=1)
    with pytest.raises(ValueError, match="H ≤"):
        sym.fit_mean_field(keys, x, y, jnp.ones(1), widths=(2, 17, 1))
    with pytest.raises(ValueError, match="one row per run"):
        sym.fit_mean_field(keys, x, y, jnp.ones(2), widths=WIDTHS)
    with pytest.raises(ValueError, match="one hidden layer"):
        sym.fit_mean_field(keys, x, y, jnp.ones(1), widths=(2, 3, 3, 1))
    with pytest.raises(ValueError, match="likelihood"):
        sym.fit_mean_field(keys, x, y, jnp.ones(1), widths=WIDTHS, likelihood="poisson")
    with pytest.raises(ValueError, match="fit_mean_field: noise_scale"):
        sym.fit_mean_field(keys, x, y, jnp.ones(1), widths=WIDTHS, noise_scale=0.0)
