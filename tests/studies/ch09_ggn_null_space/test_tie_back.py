"""Tests of chapter 9's tie back to chapter 6 on tiny problems (no data files)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.data import loaders
from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.site.settings_classes import MetricBNNSettings
from bnn_posteriors.studies.ch06_metricbnn import experiments as ch6
from bnn_posteriors.studies.ch09_ggn_null_space import study, tie_back


@pytest.fixture(scope="module")
def cfg6(make_cfg):
    """Chapter 6's quick settings (the tie back's) with tiny UCI budgets."""
    return make_cfg(
        MetricBNNSettings,
        uci_hidden=(4,),
        prior_precision=1.0,
        uci_map_steps=50,
        map_learning_rate=1e-2,
        pred_samples=6,
        uci_steps=3,
        uci_drift=0.1,
        uci_ae_updates=2,
        refine_learning_rate=1e-3,
        num_refine=2,
        num_particles=2,
        latent_dim=2,
        ae_hidden=(8,),
        ae_batch=4,
        ae_learning_rate=1e-3,
        lam_plus=1.0,
        lam_minus=1.0,
        ae_components=3,
    )


def _classes(name, seed):
    """A 3-class problem standing in for a UCI set: (x_tr, y_tr, x_va, y_va, x_te, y_te)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(60, 3))
    y = np.argmax(x @ rng.normal(size=(3, 3)), axis=1)
    return x[:30], y[:30], x[30:40], y[30:40], x[40:], y[40:]


@pytest.fixture(autouse=True)
def x64():
    jax.config.update("jax_enable_x64", True)
    yield


@pytest.fixture()
def fake_uci(monkeypatch):
    monkeypatch.setattr(loaders, "load_uci_classification", _classes)


@pytest.mark.slow
def test_kernel_split_of_a_linear_model_has_no_kernel_change():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(2, 5)))

    def model_fn(t, x):
        return (x @ t)[:, None]

    theta = jnp.zeros(5)
    projector = ns.kernel_projector(ns.training_jacobian(model_fn, theta, x))
    delta = jnp.asarray(rng.normal(size=(4, 5)))
    split = tie_back.kernel_split(model_fn, theta, x, projector, delta)
    assert split["kernel"] < 1e-12  # a linear model's outputs ignore the kernel part
    np.testing.assert_allclose(split["image"], split["full"], rtol=1e-12)
    assert 0 < split["kernel_fraction"] < 1
    inside = tie_back.kernel_split(model_fn, theta, x, projector, delta @ projector)
    np.testing.assert_allclose(inside["kernel_fraction"], 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="zero"):
        tie_back.kernel_split(model_fn, theta, x, projector, jnp.zeros((1, 5)))


@pytest.mark.slow
def test_kernel_split_is_c92s_split(make_cfg):
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (12, 1))
    cfg = make_cfg(
        map_prior_precision=1.0,
        activation="tanh",
        map_steps=100,
        map_learning_rate=1e-2,
        kernel_rtol=1e-6,
    )
    f = study.fit(
        "toy",
        x,
        np.sin(x[:, 0]),
        x[:3],
        np.sin(x[:3, 0]),
        rng_key=jax.random.PRNGKey(0),
        hidden=(6,),
        cfg=cfg,
        noise_scale=0.3,
    )
    key = jax.random.PRNGKey(1)
    expected = study.kernel_image_change(f, key, 5)
    delta = f.posterior.sample(key, 5) - f.theta
    got = tie_back.kernel_split(f.model_fn, f.theta, f.x, f.projector, delta)
    for part in ("full", "kernel", "image"):
        np.testing.assert_allclose(got[part], expected[part], rtol=1e-10)


@pytest.mark.slow
def test_uci_samples_gives_chapter_6s_test_nlls(fake_uci, cfg6):
    key = jax.random.PRNGKey(2)
    run = tie_back.uci_samples("glass", 0, key, cfg6)
    walk = ch6.walker(cfg6)
    reference = ch6.uci_run(
        "glass",
        0,
        key,
        hidden=cfg6.uci_hidden,
        choices=cfg6.map_laplace,
        prior_precision=cfg6.prior_precision,
        map_steps=cfg6.uci_map_steps,
        map_learning_rate=cfg6.map_learning_rate,
        num_samples=cfg6.pred_samples,
        walk_fn=lambda *a, **k: walk(
            *a, num_steps=cfg6.uci_steps, drift=cfg6.uci_drift, ae_updates=cfg6.uci_ae_updates, **k
        ),
    )
    for method in ("MAP", "LA", "Lin LA", "MetricBNN"):
        np.testing.assert_allclose(run.test_nll[method], reference[method][0], rtol=1e-6)
    assert run.samples["MetricBNN"].shape == (6, run.theta.size)
    assert set(run.train_nll) == {"MAP", "LA", "Lin LA", "MetricBNN"}


@pytest.mark.slow
def test_tie_back_study_and_evidence(fake_uci, cfg6):
    result = tie_back.tie_back_study(jax.random.PRNGKey(3), cfg6, names=("glass",), seed=0)
    r = result["glass"]
    assert r["rank"] <= min(r["NO"], r["P"])
    for sampler in tie_back.SAMPLERS:
        assert 0 <= r["split"][sampler]["kernel_fraction"] <= 1
    ev = tie_back.tie_back_evidence(result)
    assert ev.claim == "C9.2" and ev.part == "metricbnn-tie-back"
    assert checking.catalogue_check(ev.claim, ev.part)["finding"] == "metricbnn-tie-back"
    assert "kernel fraction" in ev.table and "ch9_tb_ratio_glass" in ev.glue


def _summary(la_change, mb_change):
    split = {"norm": 1.0, "kernel_fraction": 0.5, "kernel": 0.1, "image": 0.1}
    nll = {"MAP": 0.3, "LA": 1.0, "Lin LA": 0.5, "MetricBNN": 0.4}
    return {
        "glass": {
            "split": {
                "sampled LA": {**split, "full": la_change},
                "MetricBNN": {**split, "full": mb_change},
            },
            "test_nll": nll,
            "train_nll": nll,
            "P": 10,
            "NO": 4,
            "rank": 4,
        }
    }


def _passes(ev) -> bool:
    return ev.verdict()[0]


def test_tie_back_evidence_can_fail():
    ok = tie_back.tie_back_evidence(_summary(30.0, 0.8))
    assert _passes(ok)
    bound = checking.catalogue_check("C9.2", "metricbnn-tie-back")["bound"]
    assert ok.glue["ch9_tb_expect"] == bound and f"below {bound} on every set" in ok.note
    broken = tie_back.tie_back_evidence(_summary(30.0, 30.0))  # MetricBNN moves as much as LA
    assert not _passes(broken)


def test_the_catalogues_bound_decides_the_tie_back(catalogue_rules):
    """The same evidence (a ratio of 0.8/30 ≈ 0.027) reproduces under the catalogue's bound
    and not under a stricter one: the check reads its bound from the catalogue."""
    ev = tie_back.tie_back_evidence(_summary(30.0, 0.8))
    assert _passes(ev)
    strict = {"part": "metricbnn-tie-back", "rule": "less", "bound": 0.01}
    catalogue_rules({"C9.2": [{**strict, "finding": "metricbnn-tie-back"}]})
    assert not _passes(ev)


def test_tie_back_study_rejects_bad_input(cfg6):
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="UCI sets"):
        tie_back.tie_back_study(key, cfg6, names=("yacht",))
    with pytest.raises(ValueError, match="kernel_rtol"):
        tie_back.tie_back_study(key, cfg6, kernel_rtol=0.0)
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="float64"):
            tie_back.tie_back_study(key, cfg6)
    finally:
        jax.config.update("jax_enable_x64", True)
