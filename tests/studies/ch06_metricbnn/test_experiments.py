"""Tests of the [MBNN] experiment units (``inference.metricbnn_experiments``) on tiny problems."""

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from scipy import stats
from scipy.special import logsumexp

from bnn_posteriors.inference import map_estimate, metricbnn
from bnn_posteriors.models import nets
from bnn_posteriors.site import profiles
from bnn_posteriors.studies.ch06_metricbnn import experiments as mbx

KEY = jax.random.PRNGKey(0)
CHOICES = profiles.settings("06_metricbnn").map_laplace  # the chapter's MAP → Laplace
RELU = partial(nets.mlp_apply, activation_name="relu")
WALK = partial(
    metricbnn.walk_and_embed,
    num_steps=5,
    drift=1e-2,
    ae_updates=20,
    num_particles=2,
    latent_dim=3,
    hidden=(8,),
    ae_batch=8,
    num_components=4,
)


def scaled_input(params, x):
    """f(x; θ) = θ₀ x: its sd over samples of θ₀ is |x| sd(θ₀)."""
    return params[0] * x


def linear_problem():
    x = jnp.array([[0.5], [1.0], [-1.5]])
    x_gap = jnp.array([[2.0], [-3.0]])
    return mbx.GapRegression(x, 2 * x, x_gap, np.array([4.0, -6.0]), 0.5, lambda t: t, scaled_input)


def test_fan_in_scheme_scales_weights_and_zeroes_biases():
    params = nets.mlp_init(KEY, (4, 3, 2), scheme="fan_in")
    reference = nets.mlp_init(KEY, (4, 3, 2))
    for p, r in zip(params, reference, strict=True):
        np.testing.assert_allclose(p["W"], r["W"] / np.sqrt(r["W"].shape[0]), rtol=1e-6)
        np.testing.assert_array_equal(p["b"], np.zeros_like(r["b"]))


def test_gap_ratio_and_gap_nll_closed_form():
    problem = linear_problem()
    thetas = jnp.array([[1.0], [2.0], [3.0]])
    expected = np.mean([2.0, 3.0]) / np.mean([0.5, 1.0, 1.5])
    assert mbx.gap_ratio(thetas, problem) == pytest.approx(expected, rel=1e-6)
    f = np.array([[2.0, -3.0], [4.0, -6.0], [6.0, -9.0]])  # (S, m) on the gap
    logp = stats.norm(f, 0.5).logpdf(np.array([4.0, -6.0]))
    nll = -np.mean(logsumexp(logp, axis=0) - np.log(3))
    assert mbx.gap_nll(thetas, problem) == pytest.approx(nll, rel=1e-5)


def snelson_like():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(-2, 2, (30, 1)), jnp.float32)
    y = jnp.sin(2 * x)
    x_gap = jnp.asarray([[2.5], [3.0]], jnp.float32)
    widths = (1, 8, 1)
    _, unravel = ravel_pytree(nets.mlp_init(KEY, widths, scheme="fan_in"))
    return mbx.GapRegression(
        x, y, x_gap, np.sin(2 * np.asarray(x_gap[:, 0])), 0.3, unravel, RELU
    ), widths


@pytest.mark.slow
def test_snelson_repeat_is_the_pipeline_then_the_metrics():
    problem, widths = snelson_like()
    loss = metricbnn.refinement_loss(
        problem.unravel, RELU, problem.x, problem.y, likelihood="gaussian", noise_scale=0.3
    )
    settings = dict(
        widths=widths, choices=CHOICES, prior_precision=1.0, map_steps=50, map_learning_rate=1e-2
    )
    out = mbx.snelson_repeat(
        KEY, problem, walk_fn=WALK, num_samples=16, refine_learning_rate=1e-3, **settings
    )
    assert set(out) == {
        "gap NLL: Gaussian - latent",
        "mean loss ratio - 1",
        "max loss ratio - 1",
        "projected solutions: mean loss ratio - 1",
        "straightness",
    }
    assert all(np.isfinite(v) for v in out.values())
    assert 0 < out["straightness"] <= 1 + 1e-6
    assert out["max loss ratio - 1"] >= out["mean loss ratio - 1"]
    # by hand: the same keys in the same order
    k_init, k_curv, k_walk, k_metrics = jax.random.split(KEY, 4)
    start = nets.mlp_init(k_init, widths, scheme="fan_in")
    p, _ = map_estimate.train_map(
        start,
        problem.x,
        problem.y,
        likelihood="gaussian",
        noise_scale=0.3,
        prior_precision=1.0,
        num_steps=50,
        learning_rate=1e-2,
    )
    th = ravel_pytree(p)[0]
    lr = metricbnn.stable_learning_rate(loss, th, k_curv, 1e-3)
    walk, latent, _ = WALK(k_walk, loss, th, learning_rate=lr)
    by_hand = mbx.latent_posterior_metrics(k_metrics, th, walk, latent, problem, num_samples=16)
    assert by_hand == out


@pytest.mark.slow
def test_snelson_repeats_fold_in_the_index_and_resume_from_the_cache(tmp_path, monkeypatch):
    problem, widths = snelson_like()
    settings = dict(
        walk_fn=WALK,
        widths=widths,
        choices=CHOICES,
        prior_precision=1.0,
        map_steps=20,
        map_learning_rate=1e-2,
        refine_learning_rate=1e-3,
        num_samples=8,
    )
    plain = mbx.snelson_repeats(KEY, problem, [2, 5], **settings)
    assert plain == [
        mbx.snelson_repeat(jax.random.fold_in(KEY, r), problem, **settings) for r in (2, 5)
    ]
    cached = mbx.snelson_repeats(KEY, problem, [2, 5], cache=tmp_path, **settings)
    np.testing.assert_allclose(
        [list(m.values()) for m in cached], [list(m.values()) for m in plain], rtol=1e-6
    )
    assert len(list((tmp_path / "mbnn-snelson-repeat").glob("*.npz"))) == 2
    # a second run reads every repeat from disk: nothing is computed
    monkeypatch.setattr(mbx, "snelson_repeat", lambda *a, **k: pytest.fail("recomputed"))
    assert mbx.snelson_repeats(KEY, problem, [2, 5], cache=tmp_path, **settings) == cached
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path))  # True: the default cache folder
    assert mbx.snelson_repeats(KEY, problem, [2, 5], cache=True, **settings) == cached
    with pytest.raises(pytest.fail.Exception, match="recomputed"):  # False: no cache
        mbx.snelson_repeats(KEY, problem, [2], cache=False, **settings)
    # other settings are other units
    for other in (
        {"map_steps": 21},
        {"walk_fn": partial(WALK, ae_updates=21)},
        {"choices": dataclasses.replace(CHOICES, init_scheme="glorot")},
    ):
        with pytest.raises(pytest.fail.Exception, match="recomputed"):
            mbx.snelson_repeats(KEY, problem, [2], cache=tmp_path, **{**settings, **other})


@pytest.mark.slow
def test_uci_run_table_and_wins(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)

    def fake_loader(name, seed):
        return x[:40], y[:40], None, None, x[40:], y[40:]

    monkeypatch.setattr(mbx.data, "load_uci_classification", fake_loader)
    run = mbx.uci_run(
        "toy",
        0,
        KEY,
        hidden=(8,),
        choices=CHOICES,
        prior_precision=1.0,
        map_steps=200,
        map_learning_rate=1e-2,
        num_samples=8,
        walk_fn=WALK,
    )
    assert set(run) == {"LA", "Lin LA", "MetricBNN", "MAP"}
    assert all(np.isfinite(nll) and sec >= 0 for nll, sec in run.values())
    assert run["MAP"][0] < np.log(2) and run["MAP"][1] == 0.0
    rows = mbx.uci_table({"toy": [run, run]}, {"toy": (0.7, 0.6, 0.5)})
    assert [r[1] for r in rows] == ["LA", "Lin LA", "MetricBNN", "MAP"]
    assert rows[0][2] == pytest.approx(run["LA"][0]) and rows[0][3] == pytest.approx(0.0)
    assert rows[2][5] == 0.5 and np.isnan(rows[3][5])
    table = [("a", "MetricBNN", 0.3), ("a", "LA", 0.4), ("b", "MetricBNN", 0.5), ("b", "LA", 0.4)]
    assert mbx.wins_over(table, "LA", names=("a", "b")) == {"a": True, "b": False}


def test_faster_than_needs_every_rival_slower():
    table = [
        ("a", "MetricBNN", 0.3, 0.0, 1.0),
        ("a", "LA", 0.6, 0.0, 2.0),
        ("a", "Lin LA", 0.6, 0.0, 3.0),
        ("b", "MetricBNN", 0.3, 0.0, 2.5),
        ("b", "LA", 0.6, 0.0, 2.0),
        ("b", "Lin LA", 0.6, 0.0, 3.0),
        ("c", "MetricBNN", 0.3, 0.0, 2.0),
        ("c", "LA", 0.6, 0.0, 2.0),
        ("c", "Lin LA", 0.6, 0.0, 3.0),
    ]
    found = mbx.faster_than(table, ("LA", "Lin LA"), names=("a", "b", "c"))
    assert found == {"a": True, "b": False, "c": False}  # a tie is not faster
    assert mbx.faster_than(table, ("Lin LA",), names=("a", "b", "c")) == dict.fromkeys("abc", True)


@pytest.mark.slow
def test_uci_fit_probs_and_settings(monkeypatch, tiny_cfg):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    split = (x[:30], y[:30], None, None, x[30:], y[30:])
    monkeypatch.setattr(mbx.data, "load_uci_classification", lambda name, seed: split)
    cfg = tiny_cfg()
    settings = mbx.uci_settings(cfg, mbx.walker(cfg))
    assert settings["hidden"] == cfg.uci_hidden and settings["num_samples"] == cfg.pred_samples
    assert settings["walk_fn"].keywords["num_steps"] == cfg.uci_steps
    fit = mbx.uci_fit("toy", 0, KEY, **settings)
    n_params = sum(a.size for a in jax.tree.leaves(fit.params))
    assert {k: v.shape for k, v in fit.samples.items()} == {
        "LA": (cfg.pred_samples, n_params),
        "MetricBNN": (cfg.pred_samples, n_params),
    }
    assert set(fit.seconds) == {"LA", "Lin LA", "MetricBNN"} and fit.x_test.shape == (20, 2)
    probs = mbx.uci_probs(fit, x[:7])
    assert set(probs) == {"MAP", "LA", "Lin LA", "MetricBNN"}
    for p, sec in probs.values():
        assert p.shape == (7, 2) and sec >= 0
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    # uci_run is uci_fit then uci_probs on the test set: the same NLLs from the same key
    run = mbx.uci_run("toy", 0, KEY, **settings)
    test = mbx.uci_probs(fit, fit.x_test)
    for m in ("MAP", "LA", "Lin LA", "MetricBNN"):
        assert run[m][0] == pytest.approx(mbx.metrics.categorical_nll(test[m][0], y[30:]))


@pytest.mark.slow
def test_banana_predictives_are_class_probabilities():
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.normal(size=(40, 2)), jnp.float32)
    y = jnp.asarray((x[:, 0] * x[:, 1] > 0).astype(np.int32))
    inputs = {"near": x[:5], "far": 10 * x[:3]}
    probs = mbx.banana_predictives(
        list(jax.random.split(KEY, 4)),
        x,
        y,
        inputs,
        widths=(2, 6, 2),
        choices=CHOICES,
        prior_precision=1.0,
        map_steps=100,
        map_learning_rate=1e-2,
        num_samples=8,
        walk_fn=WALK,
    )
    assert set(probs) == {"near", "far"} and set(probs["near"]) == {"LA", "Lin LA", "MetricBNN"}
    for where, xs in inputs.items():
        for values in probs[where].values():
            assert values.shape == (xs.shape[0], 2) and np.all(values >= 0)
            np.testing.assert_allclose(values.sum(1), 1.0, rtol=1e-5)


@pytest.mark.slow
def test_mnist_run_on_a_few_images():
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.uniform(size=(24, 784)), jnp.float32)
    y = jnp.asarray(np.arange(24) % 10)
    nll, seconds, size = mbx.mnist_run(
        list(jax.random.split(KEY, 4)),
        x[:16],
        y[:16],
        x[16:],
        np.asarray(y[16:]),
        choices=CHOICES,
        prior_precision=1.0,
        map_steps=5,
        map_learning_rate=1e-3,
        num_samples=4,
        refine_n=8,
        walk_fn=WALK,
    )
    assert set(nll) == {"LA (last layer)", "Lin LA (last layer)", "MetricBNN", "MAP"}
    assert all(np.isfinite(v) and v > 0 for v in nll.values())
    assert set(seconds) == {"LA (last layer)", "MetricBNN"} and min(seconds.values()) >= 0
    assert size == ravel_pytree(mbx.cnn.cnn_init(KEY))[0].size


def synthetic_cost_terms(sizes, *, autoencoder, solutions, walk_per_param=0.0):
    """Term dicts shaped like cost.flops_against_depth's, with known forms in P."""
    from bnn_posteriors.evaluation import cost

    return [
        (
            {"ggn": 3.0 * p**2 + 5.0 * p, "eigh": cost.eigh_flops(p), "predictive": 2.0 * p**3},
            {
                "walk": walk_per_param * p,
                "svd": cost.svd_flops(solutions, p) + 7.0 * p,
                "autoencoder": autoencoder,
                "predictive": 11.0 * p,
            },
        )
        for p in sizes
    ]


def test_flops_crossing_solves_the_extrapolated_counts():
    from scipy.optimize import brentq

    from bnn_posteriors.evaluation import cost

    sizes = [100, 200, 300, 400]
    terms = synthetic_cost_terms(sizes, autoencoder=1e11, solutions=50, walk_per_param=1e3)

    def gap(p):  # the same forms, by hand
        la = 3.0 * p**2 + 5.0 * p + 9.0 * p**3 + 2.0 * p**3
        return la - (1e3 * p + cost.svd_flops(50, p) + 7.0 * p + 1e11 + 11.0 * p)

    out = mbx.flops_crossing(sizes, terms, solutions=50, num_components=64)
    assert out["size"] == pytest.approx(brentq(gap, 400, 1e5), rel=1e-6)
    assert out["misfit"] < 1e-9
    assert out["la"] == pytest.approx(out["metricbnn"], rel=1e-6)
    assert gap(0.99 * out["size"]) < 0 < gap(1.01 * out["size"])


def test_flops_crossing_is_nan_without_a_crossing_and_flags_a_wrong_form():
    sizes = [100, 200, 300, 400]
    # an autoencoder so costly that the LA's 11 P³ does not reach it below `upper`
    terms = synthetic_cost_terms(sizes, autoencoder=1e30, solutions=50)
    out = mbx.flops_crossing(sizes, terms, solutions=50, num_components=64, upper=1e7)
    assert np.isnan(out["size"]) and np.isnan(out["la"]) and out["misfit"] < 1e-9
    # a walk that grows as P³ is not the linear form the model assumes: the misfit says so
    terms = synthetic_cost_terms(sizes, autoencoder=1e11, solutions=50)
    for la, mb in terms:
        mb["walk"] = 20.0 * sum(la.values())
    assert mbx.flops_crossing(sizes, terms, solutions=50, num_components=64)["misfit"] > 0.05
    with pytest.raises(ValueError, match="one pair"):
        mbx.flops_crossing(sizes[:3], terms, solutions=50, num_components=64)
    with pytest.raises(ValueError, match="at least 3 sizes"):
        mbx.flops_crossing(sizes, terms, solutions=50, num_components=250)


def test_wins_over_counts_flip_when_the_methods_are_swapped():
    # C6.6's count on a deliberately broken table: MetricBNN's and the LA's labels swapped
    table = [
        ("a", "MetricBNN", 0.3),
        ("a", "LA", 0.6),
        ("b", "MetricBNN", 0.2),
        ("b", "LA", 0.7),
        ("c", "MetricBNN", 0.5),
        ("c", "LA", 0.4),
    ]
    swap = {"MetricBNN": "LA", "LA": "MetricBNN"}
    broken = [(n, swap[m], v) for n, m, v in table]
    names = ("a", "b", "c")
    assert sum(mbx.wins_over(table, "LA", names=names).values()) == 2
    assert sum(mbx.wins_over(broken, "LA", names=names).values()) == 1


def test_chapter_keys_name_the_64_way_split_in_order(tiny_cfg):
    cfg = tiny_cfg(uci_seeds=(0, 1))
    keys = mbx.chapter_keys(KEY, cfg)
    split = list(jax.random.split(KEY, mbx.NUM_KEYS))
    named = [keys[n] for n in ("map", "walk", "la", "gaussian", "samples", "posterior")]
    named += [*keys["banana"], *keys["uci"], *keys["mnist"], *keys["cost"]]
    assert len(keys["uci"]) == 2 * len(mbx.data.UCI_CLASSIFICATION) and len(keys["cost"]) == 3
    for mine, theirs in zip(named, split, strict=False):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(keys["curvature"], jax.random.fold_in(KEY, 1))
    np.testing.assert_array_equal(keys["repeats"], jax.random.fold_in(KEY, 200))
    with pytest.raises(ValueError, match="more than 64"):
        mbx.chapter_keys(KEY, tiny_cfg(uci_seeds=tuple(range(10))))


def test_walker_binds_the_settings_of_alg_1(tiny_cfg):
    walk = mbx.walker(tiny_cfg())
    assert walk.func is metricbnn.walk_and_embed
    assert walk.keywords["num_particles"] == 2 and walk.keywords["num_components"] == 4


def test_cost_summary_growth_ratio_and_crossing(tiny_cfg):
    sizes = [100, 200, 300, 400]
    terms = synthetic_cost_terms(sizes, autoencoder=1e11, solutions=6, walk_per_param=1e3)
    rows = {
        "depth": [1, 2, 3, 4],
        "P": sizes,
        "LA": [sum(t[0].values()) for t in terms],
        "MetricBNN": [sum(t[1].values()) for t in terms],
        "MetricBNN, all P in": [2.0, 3.0, 4.0, 5.0],
    }
    out = mbx.cost_summary(rows, terms, tiny_cfg(num_particles=2, cost_steps=3))
    assert out["growth"]["MetricBNN, all P in"] == pytest.approx(2.5)
    assert out["growth"]["LA"] == pytest.approx(rows["LA"][-1] / rows["LA"][0])
    np.testing.assert_allclose(out["ratio"], np.divide(rows["MetricBNN"], rows["LA"]))
    crossing = mbx.flops_crossing(sizes, terms, solutions=6, num_components=4)
    assert out["crossing"] == crossing
    assert out["cross_depth"] == pytest.approx(1 + (crossing["size"] - 100) / 100)
    with pytest.raises(ValueError, match="two depths"):
        mbx.cost_summary({**rows, "P": [100]}, terms[:1], tiny_cfg())


@pytest.mark.slow
def test_cost_study_counts_one_row_per_depth(tiny_cfg):
    problem, _ = snelson_like()
    rows, terms = mbx.cost_study(list(jax.random.split(KEY, 2)), problem, tiny_cfg(depths=(1, 2)))
    assert list(rows["depth"]) == [1, 2] and len(terms) == 2
    assert rows["P"][1] > rows["P"][0] and min(rows["LA"]) > 0


@pytest.mark.slow
def test_depth_accuracy_scores_both_posteriors_on_the_gap_at_each_depth(tiny_cfg):
    problem, _ = snelson_like()
    cfg = tiny_cfg(depths=(1, 2))
    keys = list(jax.random.split(KEY, 2))
    rows = mbx.depth_accuracy(keys, problem, cfg, mbx.walker(cfg))
    assert rows["depth"] == [1, 2] and rows["P"] == [10, 22]  # 1-3-1 and 1-3-3-1 tanh MLPs
    assert all(np.isfinite(rows["LA"])) and all(np.isfinite(rows["MetricBNN"]))
    # the LA's draws scored on the gap: the same as gap_nll of its own draws, not a constant
    assert rows["LA"] != rows["MetricBNN"]
    with pytest.raises(ValueError, match="one key per depth"):
        mbx.depth_accuracy(keys[:1], problem, cfg, mbx.walker(cfg))


@pytest.mark.slow
def test_banana_run_grid_ring_and_test_points(tiny_cfg):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(20, 2)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    cfg = tiny_cfg()
    probs, g, radius = mbx.banana_run(jax.random.split(KEY, 4), x, y, x[:3], cfg, mbx.walker(cfg))
    assert g.shape == (61,) and radius == pytest.approx(2 * np.linalg.norm(x, axis=1).max())
    assert probs["grid"]["LA"].shape == (61 * 61, 2)
    assert probs["ring"]["MetricBNN"].shape == (200, 2)
    assert probs["test"]["Lin LA"].shape == (3, 2)


def test_uci_runs_one_run_per_set_and_split(monkeypatch, tiny_cfg):
    monkeypatch.setattr(mbx.data, "UCI_CLASSIFICATION", ("a", "b"))
    seen = []

    def fake_run(name, seed, key, **kw):
        seen.append((name, seed, np.asarray(key).tolist(), kw["walk_fn"].keywords["num_steps"]))
        return {"LA": (1.0, 0.0)}

    monkeypatch.setattr(mbx, "uci_run", fake_run)
    cfg = tiny_cfg(uci_seeds=(0, 1))
    keys = list(jax.random.split(KEY, 4))
    out = mbx.uci_runs(keys, cfg, mbx.walker(cfg))
    assert list(out) == ["a", "b"] and all(len(v) == 2 for v in out.values())
    assert [s[:2] for s in seen] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert [s[2] for s in seen] == [np.asarray(k).tolist() for k in keys] and seen[0][3] == 3


@pytest.mark.slow
def test_mnist_study_takes_the_first_training_images(tiny_cfg):
    rng = np.random.default_rng(6)
    x = rng.uniform(size=(20, 784)).astype(np.float32)
    y = np.arange(20) % 10
    cfg = tiny_cfg()
    out = mbx.mnist_study(jax.random.split(KEY, 4), x, y, x[:5], y[:5], cfg, mbx.walker(cfg))
    assert out["n_train"] == 12 and out["n_test"] == 5
    assert set(out["nll"]) == {"LA (last layer)", "Lin LA (last layer)", "MetricBNN", "MAP"}
    assert out["num_params"] == ravel_pytree(mbx.cnn.cnn_init(KEY))[0].size


def test_depth_map_trains_the_tanh_network_it_is_read_as(tiny_cfg):
    # C6.8 once trained a ReLU network's MAP and read its parameters as the tanh network's:
    # the MAP must be a stationary point of the network that the LA and MetricBNN read.
    problem, _ = snelson_like()
    cfg = tiny_cfg(snelson_map_steps=400, map_learning_rate=1e-2)
    mode, net = mbx.depth_map(KEY, problem, cfg, 2)
    assert net.apply_fn.keywords == {"activation_name": "tanh"}
    assert mode.noise_scale == problem.noise_scale
    theta = ravel_pytree(mode.params)[0]
    assert theta.size == 22  # 1-3-3-1

    def loss(t, apply_fn):
        r = apply_fn(net.unravel(t), problem.x) - problem.y
        return 0.5 * jnp.sum(r**2) / problem.noise_scale**2 + 0.5 * cfg.prior_precision * t @ t

    relu_map = ravel_pytree(
        map_estimate.train_map(
            nets.mlp_init(KEY, (1, 3, 3, 1), scheme="fan_in"),
            problem.x,
            problem.y,
            likelihood="gaussian",
            noise_scale=problem.noise_scale,
            prior_precision=cfg.prior_precision,
            activation="relu",
            num_steps=cfg.snelson_map_steps,
            learning_rate=cfg.map_learning_rate,
        )[0]
    )[0]
    tanh_grad = jnp.linalg.norm(jax.grad(loss)(theta, net.apply_fn))
    relu_read_as_tanh = jnp.linalg.norm(jax.grad(loss)(relu_map, net.apply_fn))
    assert tanh_grad < 0.1 * relu_read_as_tanh
