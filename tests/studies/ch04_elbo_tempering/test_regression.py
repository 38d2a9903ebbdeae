"""Tests of chapter 4's regression experiments on the tempered ELBO ([TEMP]) on tiny sets."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.claims import checking
from bnn_posteriors.data import loaders as data
from bnn_posteriors.inference import mean_field, tempering
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.studies.ch04_elbo_tempering import regression as study

KEY = jax.random.PRNGKey(0)
FIT = dict(
    noise_scale=1.0,
    prior_scale=1.0,
    init_scale=1.0,
    num_steps=20,
    learning_rate=0.03,
    num_particles=1,
)


def table(d):
    """A random table of 20 rows with ``d`` inputs."""
    rng = np.random.default_rng(d)
    return rng.normal(size=(20, d)), rng.normal(size=20)


def fake_split(d=2, split=None, n_train=10):
    """A standardised split of :func:`table`: n_train rows train, 2 val, 3 test, 5 unused.

    ``split=None`` keeps the rows in order; otherwise they are permuted with that seed.
    """
    x, y = table(d)
    order = np.arange(len(y)) if split is None else np.random.default_rng(split).permutation(20)
    idx = {
        "train": order[:n_train],
        "val": order[n_train : n_train + 2],
        "test": order[n_train + 2 : n_train + 5],
    }
    x_mean, x_std, y_mean, y_std = x.mean(0), x.std(0), float(y.mean()), float(y.std())
    xs, ys = (x - x_mean) / x_std, (y - y_mean) / y_std
    parts = {f"{v}_{k}": a[i] for k, i in idx.items() for v, a in (("x", xs), ("y", ys))}
    split = data.Split(
        "toy", "full", **parts, x_mean=x_mean, x_std=x_std, y_mean=y_mean, y_std=y_std, indices=idx
    )
    return split, (x, y)


def tiny_sets(monkeypatch):
    """Two data sets (d = 1 and d = 2) with two splits each, p = 10 training rows."""
    monkeypatch.setattr(study.data, "load_dataset", lambda name: table(len(name) - 2))
    splits = {
        (name, r): fake_split(d=len(name) - 2, split=r)[0]
        for r in range(2)
        for name in ("one", "four")
    }
    return study.regression_sets(splits)


# --------------------------------------------------------------------------- data


def test_split_seeds_start_with_the_seed_and_are_reproducible():
    seeds = study.split_seeds(7, 4)
    assert seeds[0] == 7 and len(seeds) == 4
    assert [int(s) for s in seeds] == [int(s) for s in study.split_seeds(7, 4)]
    assert study.split_seeds(7, 1) == [7]
    with pytest.raises(ValueError):
        study.split_seeds(7, 0)


def test_load_splits_keys_split_major(monkeypatch):
    calls = []

    def load_split(name, seed, n_max):
        calls.append((name, seed, n_max))
        return name

    monkeypatch.setattr(study.data, "load_split", load_split)
    splits = study.load_splits(("a", "b"), 3, 2, 50)
    assert list(splits) == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    assert calls[0] == ("a", 3, 50) and calls[1] == ("b", 3, 50)
    assert calls[2][1] == calls[3][1] == int(study.split_seeds(3, 2)[1])


def test_held_out_is_the_test_rows_and_the_unused_rows(monkeypatch):
    split, (x, y) = fake_split()
    monkeypatch.setattr(study.data, "load_dataset", lambda name: (x, y))
    x_test, y_test = study.held_out("toy", split)
    rows = np.r_[12:15, 15:20]  # the split's 3 test rows and the 5 rows outside its 15
    np.testing.assert_allclose(y_test, (y[rows] - split.y_mean) / split.y_std)
    np.testing.assert_allclose(x_test, (x[rows] - split.x_mean) / split.x_std)


def test_pad_inputs_appends_the_constant_and_zero_columns():
    out = study.pad_inputs(np.ones((3, 1)) * 2.0, 4)
    assert out.shape == (3, 4) and out.dtype == jnp.float32
    np.testing.assert_array_equal(out, [[2.0, 1.0, 0.0, 0.0]] * 3)
    with pytest.raises(ValueError, match="more than"):
        study.pad_inputs(np.ones((3, 4)), 4)


def test_regression_sets_pad_to_the_widest_set(monkeypatch):
    sets = tiny_sets(monkeypatch)
    assert list(sets) == [("one", 0), ("four", 0), ("one", 1), ("four", 1)]
    f = sets["one", 0]
    assert f["x"].shape == (10, 3) and f["d_in"] == 2 and f["p"] == 10
    assert f["x_test"].shape == (8, 3) and sets["four", 1]["d_in"] == 3
    np.testing.assert_array_equal(f["x"][:, 2], 0.0)
    assert f["rmse_prior"] == pytest.approx(float(np.sqrt(np.mean(np.square(f["y_test"])))))
    assert study.common_p(sets) == 10
    with pytest.raises(ValueError, match="same number"):
        study.common_p({**sets, ("x", 0): {**f, "p": 9}})


def test_subsample_sizes_round_fractions_of_p():
    np.testing.assert_array_equal(
        study.subsample_sizes(140, (0.125, 0.25, 0.5, 1.0)), [18, 35, 70, 140]
    )


def test_padded_init_puts_padded_inputs_at_the_prior():
    q = study.padded_init(KEY, 2, 4, 5, prior_scale=1.0, init_scale=0.5)
    ref = tempering.init_params(KEY, 4, 5, prior_scale=1.0, init_scale=0.5)
    np.testing.assert_array_equal(q.loc[0]["W"][:2], ref.loc[0]["W"][:2])
    np.testing.assert_array_equal(q.loc[0]["W"][2:], 0.0)
    for a, b in zip(
        jax.tree.leaves((q.scale, q.loc[1])), jax.tree.leaves((ref.scale, ref.loc[1])), strict=True
    ):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- fits


@pytest.fixture(scope="module")
def fitted():
    """``(sets, fits, pad_dev)``: the tiny sets fitted at N = 4 with keys 1 (init) and 2 (fit)."""
    with pytest.MonkeyPatch.context() as mp:
        sets = tiny_sets(mp)
    fits, pad_dev = study.fit_over_widths(
        jax.random.PRNGKey(1), jax.random.PRNGKey(2), sets, (4,), tau=0.1, **FIT
    )
    return sets, fits, pad_dev


@pytest.mark.slow
def test_fit_over_widths_matches_a_direct_fit_with_the_same_keys(fitted):
    sets, fits, pad_dev = fitted
    assert pad_dev == 0.0  # the padded inputs' weights see no data
    rows = fits["four", 1]["rows"]
    assert [(r["N"], r["tempered"]) for r in rows] == [(4, False), (4, True)]
    assert rows[1]["eta"] == pytest.approx(0.1 * 10 / 4) and rows[0]["q"] is None
    assert fits["four", 0]["rows"][0]["q"] is not None  # split 0 keeps its q
    # the same fit by hand: set k = 3, both temperatures, keys as documented
    keys = list(sets)
    inits = [
        study.padded_init(
            jax.random.fold_in(jax.random.PRNGKey(1), 10 * 4 + k),
            sets[s]["d_in"],
            3,
            4,
            prior_scale=1.0,
            init_scale=1.0,
        )
        for k, s in enumerate(keys)
    ]
    params, _ = tempering.fit_tempered(
        jax.random.fold_in(jax.random.PRNGKey(2), 4),
        dict(
            x=jnp.stack([sets[s]["x"] for s in keys]),
            y=jnp.stack([sets[s]["y"] for s in keys]),
            width=4,
            noise_scale=1.0,
            prior_scale=1.0,
        ),
        jax.tree.map(lambda *a: jnp.stack(a), *inits),
        jnp.asarray([(1.0, 0.1 * 10 / 4)] * 4),
        num_steps=20,
        learning_rate=0.03,
        num_particles=1,
        batched=("x", "y"),
    )
    q = jax.tree.map(lambda v: v[3, 1], params)
    terms = study.elbo_terms(
        q,
        sets["four", 1]["x"],
        sets["four", 1]["y"],
        eta=0.1 * 10 / 4,
        prior_scale=1.0,
        noise_scale=1.0,
    )
    assert rows[1]["elbo"] == float(terms["elbo"]) and rows[1]["gap"] == float(terms["gap"])


@pytest.mark.slow
def test_fit_over_p_reuses_the_full_fit_and_reads_back(fitted):
    _, fits, _ = fitted
    ps = study.subsample_sizes(10, (0.5, 1.0))
    by_p = study.fit_over_p(KEY, KEY, fits, ps, width=4, tau=0.1, **FIT)
    assert set(by_p["one", 0]) == {5, 10}
    assert by_p["one", 0][10] is fits["one", 0]["rows"][1]
    kl = study.over_p(by_p, "one", "kl", ps)
    assert kl.shape == (2,) and kl[1] == pytest.approx(
        np.mean([by_p["one", s][10]["kl"] for s in (0, 1)])
    )
    assert study.columns(fits, "one", "kl", True).shape == (2, 1)
    assert study.fitted_q(fits, "one", 4, True) is fits["one", 0]["rows"][1]["q"]
    with pytest.raises(ValueError, match="largest p"):
        study.fit_over_p(KEY, KEY, fits, np.array([5, 9]), width=4, tau=0.1, **FIT)
    with pytest.raises(ValueError, match="one of the widths"):
        study.fit_over_p(KEY, KEY, fits, ps, width=16, tau=0.1, **FIT)


@pytest.mark.slow
def test_fit_over_p_on_sets_without_fits_fits_every_m(fitted):
    sets, fits, _ = fitted
    ps = study.subsample_sizes(10, (0.5, 1.0))
    by_p = study.fit_over_p(KEY, KEY, sets, ps, width=4, tau=0.1, **FIT)
    reused = study.fit_over_p(KEY, KEY, fits, ps, width=4, tau=0.1, **FIT)
    assert set(by_p["one", 0]) == {5, 10}
    assert by_p["one", 0][5] == reused["one", 0][5]  # the same keys at m < p
    # m = p fitted anew (its own keys), not the fit over the widths: close, not the same
    fresh, kept = by_p["one", 0][10], reused["one", 0][10]
    assert fresh["kl"] != kept["kl"] and fresh["kl"] == pytest.approx(kept["kl"], rel=0.5)
    with pytest.raises(ValueError, match="largest p"):
        study.fit_over_p(KEY, KEY, sets, np.array([5, 9]), width=4, tau=0.1, **FIT)


# --------------------------------------------------------------------------- reading the fits


def test_loglog_slope_of_a_power_law():
    xs = np.array([16, 64, 256, 1024])
    assert study.loglog_slope(xs, 3.0 * xs**-1.0) == pytest.approx(-1.0)
    assert study.loglog_slope(xs, 0.5 * xs**2) == pytest.approx(2.0)


def test_prior_q_has_zero_kl():
    q = study.prior_q(3, 5)
    assert float(mean_field.kl_to_prior(q)) == 0.0 and q.loc[1]["W"].shape == (5, 1)


@pytest.mark.slow
def test_mc_against_closed_form_agrees():
    mc, exact = study.mc_against_closed_form(KEY, width=16, n=10, num_particles=500)
    assert float(mc["kl"]) == pytest.approx(float(exact["kl"]), rel=1e-4)
    assert float(mc["expected_log_lik"]) == pytest.approx(
        float(exact["expected_log_lik"]), rel=0.05
    )


def fake_fits():
    """Rows by hand: two splits of one set, widths 10 and 100, KL 4 → 1 / 1 → 2 (untempered)."""
    fits = {}
    for s, kl_1 in enumerate(((4.0, 1.0), (1.0, 2.0))):
        rows = []
        for n, k1 in zip((10, 100), kl_1, strict=True):
            rows.append(
                {"N": n, "tempered": False, "kl": k1, "rmse": 1.0 + 0.1 * s, "expected_loss": 5.0}
            )
            q = MeanField(
                [{"W": jnp.zeros((3, n))}, {"W": jnp.zeros((n, 1))}],
                [{"W": jnp.ones((3, n))}, {"W": jnp.full((n, 1), 0.1)}],
            )
            rows.append(
                {
                    "N": n,
                    "tempered": True,
                    "kl": 0.1 * n,
                    "rmse": 0.5,
                    "gap": 2.0 / n,
                    "expected_loss": 3.0,
                    "q": q,
                }
            )
        fits["set", s] = {"rows": rows, "rmse_prior": 1.0, "p": 20}
    return fits


def test_collapse_and_balance_summaries_by_hand():
    c = study.collapse_summary(fake_fits(), "set")
    np.testing.assert_allclose(c["kl"], [2.5, 1.5])
    assert c["steps"][0] == pytest.approx(0.6) and c["last_over_first"] == pytest.approx(0.6)
    assert c["rel_gap"] == pytest.approx(0.05) and c["rise_splits"] == 1
    b = study.balance_summary(fake_fits(), "set")
    np.testing.assert_allclose(b["gains"], [0.5, 1 - 0.5 / 1.1])
    np.testing.assert_allclose(b["changes"], 0.0)


def test_gap_summary_and_term_slopes_by_hand():
    fits, widths = fake_fits(), np.array([10, 100])
    by_p = {
        ("set", s): {
            10: {"gap": 0.1, "kl": 1.0, "expected_loss": 1.0},
            20: {"gap": 0.2, "kl": 1.0, "expected_loss": 2.0},
        }
        for s in (0, 1)
    }
    g = study.gap_summary(fits, by_p, "set", widths, np.array([10, 20]))
    assert g["slope"] == pytest.approx(-1.0) and g["p_slope"] == pytest.approx(1.0)
    np.testing.assert_allclose(g["scaled"], 2.0 / 20)
    assert g["sd_a"] == pytest.approx([0.1, 0.1])
    terms, slopes, untempered = study.term_slopes(fits, by_p, "set", widths, np.array([10, 20]))
    assert slopes["KL over N"] == pytest.approx(1.0) and slopes["D over N"] == pytest.approx(0.0)
    assert slopes["D over p"] == pytest.approx(1.0) and slopes["KL over p"] == pytest.approx(0.0)
    assert untempered["D over N"] == pytest.approx(0.0)
    np.testing.assert_allclose(terms["KL over N"], [1.0, 10.0])


# --------------------------------------------------------------------------- a fixed ν


def test_draw_neurons_picks_columns_and_rows():
    q = tempering.init_params(KEY, 2, 4)
    q = MeanField([q.loc[0], {"W": jnp.arange(4.0)[:, None]}], q.scale)
    drawn = study.draw_neurons(q, np.array([[0, 3], [2, 2]]))
    assert drawn.loc[0]["W"].shape == (2, 2, 2) and drawn.loc[1]["W"].shape == (2, 2, 1)
    np.testing.assert_array_equal(drawn.loc[1]["W"][:, :, 0], [[0.0, 3.0], [2.0, 2.0]])
    np.testing.assert_array_equal(drawn.loc[0]["W"][1, :, 0], q.loc[0]["W"][:, 2])
    np.testing.assert_array_equal(drawn.scale[0]["W"][1, :, 0], q.scale[0]["W"][:, 2])


@pytest.mark.slow
def test_fixed_nu_terms_scale_by_construction():
    """Identical neurons: the KL is N times one neuron's and the gap falls exactly like 1/N."""
    rng = np.random.default_rng(0)
    one = MeanField(
        [{"W": rng.normal(size=(2, 1))}, {"W": np.ones((1, 1))}],
        [{"W": np.full((2, 1), 0.8)}, {"W": np.full((1, 1), 0.5)}],
    )

    def repeat(layers):
        return [
            {"W": jnp.asarray(np.repeat(layers[i]["W"], 3, axis=1 - i), jnp.float32)}
            for i in (0, 1)
        ]

    q_nu = MeanField(repeat(one.loc), repeat(one.scale))
    x = tempering.augment(jnp.linspace(-1, 1, 8)[:, None])
    y = jnp.sin(x[:, 0])
    out = study.fixed_nu_terms(
        KEY,
        q_nu,
        x,
        y,
        (4, 16, 64),
        np.array([4, 8]),
        num_draws=3,
        noise_scale=1.0,
        prior_scale=1.0,
    )
    kl_one = float(mean_field.kl_to_prior(jax.tree.map(jnp.asarray, one)))
    np.testing.assert_allclose(out["kl"], kl_one * np.array([4, 16, 64]), rtol=1e-5)
    assert study.loglog_slope([4, 16, 64], out["gap"]) == pytest.approx(-1.0, abs=1e-4)
    assert out["gap_p"].shape == (2,) and out["gap_p"][1] > out["gap_p"][0]


# --------------------------------------------------------------------------- the readings


def test_tail_slopes_is_the_exponent_at_the_end_of_the_range():
    xs = np.array([16, 64, 256, 1024])
    ys = np.stack([3.0 * xs**-1.0, np.r_[1.0, 9.0, 2.0, 2.0 * 4**0.5]])  # the second: a bump
    np.testing.assert_allclose(study.tail_slopes(xs, ys), [-1.0, 0.5])
    assert float(study.tail_slopes(xs, xs**1.5)) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="increasing and positive"):
        study.tail_slopes(xs[::-1], xs)
    with pytest.raises(ValueError, match="at least 2"):
        study.tail_slopes(xs, np.ones(3))


def test_split_slopes_fits_one_power_law_per_split():
    xs = np.array([10.0, 20.0, 40.0, 80.0])
    ys = np.stack([2.0 * xs, 0.5 * xs**1.3, np.r_[1.0, 2.5, 3.5, 8.0]])
    slopes = study.split_slopes(xs, ys)
    np.testing.assert_allclose(slopes[:2], [1.0, 1.3])
    assert slopes[2] == pytest.approx(study.loglog_slope(xs, ys[2]))
    with pytest.raises(ValueError, match="splits, 4"):
        study.split_slopes(xs, ys[0])
    with pytest.raises(ValueError, match="positive"):
        study.split_slopes(xs, -ys)


def test_rate_reading_says_whether_the_interval_contains_the_rate():
    inside = study.rate_reading([0.97, 1.0, 1.03, 1.01], 1.0)
    assert inside["low"] < 1.0 < inside["high"] and inside["excess"] < 0
    faster = study.rate_reading([1.05, 1.07, 1.06, 1.08], 1.0)  # a concrete-like data term
    assert faster["excess"] == pytest.approx(faster["low"] - 1.0) and faster["excess"] > 0
    slower = study.rate_reading([0.8, 0.82, 0.81, 0.79], 1.0)
    assert slower["excess"] == pytest.approx(1.0 - slower["high"]) and slower["excess"] > 0
    assert (faster["rate"], round(faster["mean"], 3)) == (1.0, 1.065)


def test_upper_bound_reading_holds_fails_or_leaves_it_open():
    ok = study.upper_bound_reading([0.98, 1.0, 1.02, 1.0], 1.1)
    assert ok["holds"] and ok["decided"] and not ok["fails"] and ok["high"] < 1.1
    bad = study.upper_bound_reading([1.48, 1.5, 1.52, 1.5], 1.1)  # a term growing like p^1.5
    assert bad["fails"] and bad["decided"] and not bad["holds"]
    steady = study.upper_bound_reading([1.48, 1.5, 1.52, 1.5], 1.1, before=[1.5] * 4)
    assert steady["fails"] and not steady["slowing"] and steady["before"] == pytest.approx(1.5)
    slowing = study.upper_bound_reading([1.28, 1.3, 1.32, 1.3], 1.1, before=[1.5] * 4)
    assert slowing["slowing"] and not slowing["decided"]  # above the bound, but settling
    wide = study.upper_bound_reading([0.85, 1.3, 0.9, 1.25], 1.1)  # the interval contains 1.1
    assert not wide["decided"] and wide["low"] < 1.1 < wide["high"]
    assert study.decided([ok, ok]) and study.decided([wide, bad]) and not study.decided([ok, wide])


def test_limit_values_read_a_limit_and_fail_on_a_tail_that_grows_or_stalls():
    """KL → 0 read on the tail: a rise at small N passes, a rise or a plateau at the end fails."""

    def passes(kl, rel_gap=0.01):
        values = study.limit_values(kl, rel_gap)  # one set, decided as each set of C4.1
        return checking.verdict("C4.1", np.concatenate([values, values]), part="limit")[0]

    assert passes([22.9, 26.3, 0.09, 0.03])  # the synthetic set: rises, then collapses
    assert not passes([22.9, 26.3, 0.09, 0.5])  # grows at the tail
    assert not passes([22.0, 20.0, 18.0, 17.0])  # still falling, but nowhere near 0
    assert not passes([22.9, 2.3, 0.1, 0.05], rel_gap=0.2)  # the predictive is not the prior's
    values = study.limit_values([4.0, 2.0, 1.0], 0.01, tail=2)
    np.testing.assert_allclose(values, [0.5, 0.5, 0.25, 0.01])
    with pytest.raises(ValueError, match="positive"):
        study.limit_values([1.0, 0.0, 1.0], 0.0)


def test_term_tails_and_the_gap_tail_by_hand():
    fits = fake_fits()
    by_p = {
        ("set", s): {
            10: {"gap": 0.1, "kl": 1.0, "expected_loss": 1.0},
            20: {"gap": 0.2, "kl": 1.0, "expected_loss": 2.0 * 2**0.5},
        }
        for s in (0, 1)
    }
    fits_3 = {
        key: {
            **f,
            "rows": [
                *f["rows"],
                *[
                    {**r, "N": 1000, "kl": 10 * r["kl"], "gap": r.get("gap", 0.0) / 10}
                    for r in f["rows"][2:]
                ],
            ],
        }
        for key, f in fits.items()
    }  # a third width, N = 1000
    for s in (0, 1):
        by_p["set", s][40] = {"gap": 0.4, "kl": 1.0, "expected_loss": 4.0**1.5}  # D ∝ p^1.5
    widths_3, ps_3 = np.array([10, 100, 1000]), np.array([10, 20, 40])
    tails = study.term_tails(fits_3, by_p, "set", widths_3, ps_3)
    np.testing.assert_allclose(tails["KL over N"][0], [1.0, 1.0])
    np.testing.assert_allclose(tails["D over N"][0], [0.0, 0.0])
    tail, before = tails["D over p"]  # D ∝ p^1.5 on both steps: the bound fails
    np.testing.assert_allclose(tail, [1.5, 1.5])
    np.testing.assert_allclose(before, [1.5, 1.5])
    assert study.upper_bound_reading(tail + [0.02, 0.0], 1.1, before=before)["fails"]
    g = study.gap_summary(fits_3, by_p, "set", widths_3, ps_3)
    np.testing.assert_allclose(g["tail"], -1.0)
    np.testing.assert_allclose(g["before"], -1.0)
    np.testing.assert_allclose(study.over_p_splits(by_p, "set", "gap", [10, 20]), [[0.1, 0.2]] * 2)


def test_a_gap_falling_slower_than_one_over_n_fails_the_c45_reading():
    widths = np.array([16, 64, 256, 1024])
    rng = np.random.default_rng(0)
    gaps = np.exp(rng.normal(0, 0.01, (8, 4))) * widths**-0.5  # 8 splits, gap ∝ N^-0.5
    assert study.upper_bound_reading(study.tail_slopes(widths, gaps), -0.8)["fails"]
    assert study.upper_bound_reading(study.tail_slopes(widths, gaps * 30 / widths**0.5), -0.8)[
        "holds"
    ]
