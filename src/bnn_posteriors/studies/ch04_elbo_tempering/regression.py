"""The regression experiments of chapter 4 on the tempered ELBO of [TEMP] (C4.1-C4.3, C4.5).

The fitted q*_N of the slides' model (:mod:`bnn_posteriors.inference.tempering`) over the
width N and over the number of observations p, on several random splits of the regression
sets, with η = 1 and the balanced temperature η_N = τ p / N; the terms of
ELBO_η^N = −η KL(q‖P0) + Σ_i E_q log L(y_i | x_i, w) and the gap to the limit functional F̃
in closed form; neurons drawn i.i.d. from a fixed measure ν for the illustration of the
scalings; and the per-claim summaries of these fits.

A *set* is one (data set, split) pair ``(name, r)``; split 0 is the chapter's seed. All sets
of one width are fitted side by side by one vmapped :func:`tempering.fit_tempered`: every
set's inputs get the constant input of a hidden bias and are zero-padded to the widest set's
d, and the weights of the padded inputs start at the prior (and see no data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.inference import tempering
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.util.validate import positive_int

# closed-form evaluators of the slides' terms, compiled once per shape
elbo_terms = jax.jit(tempering.gaussian_elbo_terms, static_argnames=("prior_scale", "noise_scale"))
moments = jax.jit(tempering.predictive_moments)


# ------------------------------------------------------------------ a check of the objective


def mc_against_closed_form(
    rng_key, *, width: int = 64, n: int = 30, eta: float = 0.3, num_particles: int = 5_000
) -> tuple[dict, dict]:
    """NumPyro's estimate of the terms of ELBO_η^N against their closed form on a random q.

    Data: ``n`` points x on [−2, 2] (with the constant input), y = sin(2x); q: hidden means
    from the prior, output means N(0, 1) (``fold_in(rng_key, 1)``), sds 0.5. Returns
    ``(mc, exact)``: :func:`tempering.mc_elbo_terms` with ``num_particles`` draws and
    :func:`tempering.gaussian_elbo_terms`.
    """
    x = tempering.augment(jnp.linspace(-2, 2, n)[:, None])
    y = jnp.sin(2 * x[:, 0])
    q = tempering.init_params(rng_key, 2, width, prior_scale=1.0, init_scale=0.5)
    loc = [q.loc[0], {"W": jax.random.normal(jax.random.fold_in(rng_key, 1), (width, 1))}]
    q = MeanField(loc, q.scale)
    mc = tempering.mc_elbo_terms(
        rng_key, q, dict(x=x, y=y, width=width), eta=eta, num_particles=num_particles
    )
    return mc, tempering.gaussian_elbo_terms(q, x, y, eta=eta)


# --------------------------------------------------------------------------- data


def split_seeds(seed: int, repeats: int) -> list:
    """Seeds of the random splits: split 0 is ``seed``, the others are drawn from it."""
    repeats = positive_int("repeats", repeats)
    return [seed, *np.random.default_rng(seed).integers(2**31 - 1, size=repeats - 1)]


def load_splits(datasets: Sequence[str], seed: int, repeats: int, n_max: int) -> dict:
    """``{(name, r): data.Split}`` for every data set and split r of :func:`split_seeds`."""
    return {
        (name, r): data.load_split(name, int(s), n_max=n_max)
        for r, s in enumerate(split_seeds(seed, repeats))
        for name in datasets
    }


def held_out(name: str, split: data.Split) -> tuple[np.ndarray, np.ndarray]:
    """Test rows: the split's test rows and every row of the file outside its n_max rows.

    Standardised with the split's statistics; returns ``(x (n_test, d), y (n_test,))``.
    """
    x, y = data.load_dataset(name)
    unused = np.setdiff1d(np.arange(len(y)), np.concatenate(list(split.indices.values())))
    rows = np.concatenate([split.indices["test"], unused])
    return (x[rows] - split.x_mean) / split.x_std, (y[rows] - split.y_mean) / split.y_std


def pad_inputs(x, d_max: int):
    """Append the constant input and pad with zero columns to ``d_max``: (n, d) → (n, d_max)."""
    x = tempering.augment(jnp.asarray(x, jnp.float32))
    if x.shape[1] > d_max:
        raise ValueError(f"x has {x.shape[1]} inputs with the constant one, more than {d_max}")
    return jnp.pad(x, ((0, 0), (0, d_max - x.shape[1])))


def regression_sets(splits: dict) -> dict:
    """The training and held-out rows of every set, as the fits use them.

    Returns ``{(name, r): {"x", "y", "x_test", "y_test", "p", "d_in", "rmse_prior"}}``:
    inputs padded to the widest set's d (:func:`pad_inputs`), float32 targets, p training
    rows, d_in the set's own inputs with the constant one, and the test RMSE of predicting
    the prior mean 0.
    """
    d_in = {name: sp.x_train.shape[1] + 1 for (name, _), sp in splits.items()}
    d_max = max(d_in.values())
    sets = {}
    for (name, r), sp in splits.items():
        x_test, y_held_out = held_out(name, sp)
        y_test = jnp.asarray(y_held_out, jnp.float32)
        sets[name, r] = {
            "x": pad_inputs(sp.x_train, d_max),
            "y": jnp.asarray(sp.y_train, jnp.float32),
            "x_test": pad_inputs(x_test, d_max),
            "y_test": y_test,
            "p": len(sp.y_train),
            "d_in": d_in[name],
            "rmse_prior": float(metrics.rmse(y_test, jnp.zeros_like(y_test))),
        }
    return sets


def subsample_sizes(p: int, fractions: Sequence[float]) -> np.ndarray:
    """The sub-sample sizes m = round(f p) of the fits over p: (len(fractions),) ints."""
    return np.array([int(round(f * p)) for f in fractions])


# --------------------------------------------------------------------------- fits


def padded_init(rng_key, d_in: int, d_max: int, width: int, **init_kwargs) -> MeanField:
    """Initial q of :func:`tempering.init_params` over ``d_max`` inputs, the padded ones at P0.

    The hidden means of inputs ``d_in:`` are set to 0, so q equals the prior there.
    """
    q0 = tempering.init_params(rng_key, d_max, width, **init_kwargs)
    return MeanField([{"W": q0.loc[0]["W"].at[d_in:].set(0.0)}, q0.loc[1]], q0.scale)


def _fit_sets(init_keys, key_fit, sets: dict, rows: int | None, width: int, etas, fit: dict):
    """q* of every set at one width, vmapped: q with leading (sets, len(etas)) axes."""
    keys = list(sets)
    d_max = sets[keys[0]]["x"].shape[1]
    inits = [
        padded_init(
            k_init,
            sets[key]["d_in"],
            d_max,
            width,
            prior_scale=fit["prior_scale"],
            init_scale=fit["init_scale"],
        )
        for k_init, key in zip(init_keys, keys, strict=True)
    ]
    q, _ = tempering.fit_tempered(
        key_fit,
        dict(
            x=jnp.stack([sets[k]["x"][:rows] for k in keys]),
            y=jnp.stack([sets[k]["y"][:rows] for k in keys]),
            width=width,
            noise_scale=fit["noise_scale"],
            prior_scale=fit["prior_scale"],
        ),
        jax.tree.map(lambda *a: jnp.stack(a), *inits),
        jnp.asarray([etas] * len(keys)),
        num_steps=fit["num_steps"],
        learning_rate=fit["learning_rate"],
        num_particles=fit["num_particles"],
        batched=("x", "y"),
    )
    return q


def common_p(sets: Mapping) -> int:
    """The number p of training rows, which every set must share."""
    ps = {f["p"] for f in sets.values()}
    if len(ps) != 1:
        raise ValueError(f"all sets must have the same number of training rows, got {sorted(ps)}")
    return ps.pop()


def fit_over_widths(key_init, key_fit, sets: dict, widths: Sequence[int], *, tau: float, **fit):
    """Fitted q*_N of every set for each width N, with η = 1 and η_N = τ p / N ([TEMP]).

    Set k at width N starts from ``fold_in(key_init, 10 N + k)`` (:func:`padded_init`) and
    both temperatures of all sets are fitted by one :func:`tempering.fit_tempered` with key
    ``fold_in(key_fit, N)``. ``fit``: ``noise_scale``, ``prior_scale``, ``init_scale``,
    ``num_steps``, ``learning_rate``, ``num_particles``. Returns ``(fits, pad_dev)``: ``fits``
    is ``sets`` with ``"rows"``, per width and temperature the closed-form terms of
    :func:`tempering.gaussian_elbo_terms`, ``N``, ``tempered``, ``eta``, ``max_loc`` (the
    largest |μ| of a weight), ``rmse`` (held-out rows) and ``q`` (split 0 only);
    ``pad_dev`` is the largest deviation from the prior of a padded input's weights.
    """
    p = common_p(sets)
    fits = {key: {**f, "rows": []} for key, f in sets.items()}
    pad_dev = 0.0
    for n in widths:
        etas = (1.0, tempering.balanced_temperature(p, n, tau))
        init_keys = [jax.random.fold_in(key_init, 10 * n + k) for k in range(len(sets))]
        q_n = _fit_sets(init_keys, jax.random.fold_in(key_fit, n), sets, None, n, etas, fit)
        for k, ((_, r), f) in enumerate(fits.items()):
            for i, eta in enumerate(etas):
                q = jax.tree.map(lambda v, k=k, i=i: v[k, i], q_n)
                w0_loc, w0_scale = q.loc[0]["W"], q.scale[0]["W"]
                pad_dev = max(
                    pad_dev,
                    float(jnp.max(jnp.abs(w0_loc[f["d_in"] :]), initial=0.0)),
                    float(
                        jnp.max(jnp.abs(w0_scale[f["d_in"] :] - fit["prior_scale"]), initial=0.0)
                    ),
                )
                terms = elbo_terms(
                    q,
                    f["x"],
                    f["y"],
                    eta=eta,
                    prior_scale=fit["prior_scale"],
                    noise_scale=fit["noise_scale"],
                )
                mean, _ = moments(q, f["x_test"])
                f["rows"].append(
                    {
                        "N": n,
                        "tempered": i == 1,
                        "eta": eta,
                        "q": q if r == 0 else None,
                        **{key: float(v) for key, v in terms.items()},
                        "max_loc": float(
                            max(jnp.max(jnp.abs(w0_loc)), jnp.max(jnp.abs(q.loc[1]["W"])))
                        ),
                        "rmse": float(metrics.rmse(f["y_test"], mean[:, 0])),
                    }
                )
    return fits, pad_dev


def fit_over_p(key_init, key_fit, fits: dict, ps, *, width: int, tau: float, **fit) -> dict:
    """Tempered q* at ``width`` neurons on the first m training rows of every set, m in ``ps``.

    η = τ m / N; set k at m starts from ``fold_in(key_init, m · sets + k)``, all sets are
    fitted together with key ``fold_in(key_fit, m)``. ``fits``: the fits of
    :func:`fit_over_widths`, whose tempered fit at this width is the one at m = p (the last of
    ``ps``), or sets of :func:`regression_sets` without fits (larger cuts of the data), on
    which m = p is fitted too. ``fit`` as there. Returns ``{(name, r): {m: closed-form
    terms}}``.
    """
    p = common_p(fits)
    fitted = all("rows" in f for f in fits.values())
    at_width = not fitted or any(r["N"] == width for f in fits.values() for r in f["rows"])
    if ps[-1] != p or not at_width:
        raise ValueError("the largest p must be the full training set and width one of the widths")
    keys = list(fits)
    by_p: dict = {
        k: {p: next(r for r in fits[k]["rows"] if r["tempered"] and r["N"] == width)}
        if fitted
        else {}
        for k in keys
    }
    for m in (int(m) for m in (ps[:-1] if fitted else ps)):
        eta_m = tempering.balanced_temperature(m, width, tau)
        init_keys = [jax.random.fold_in(key_init, m * len(keys) + k) for k in range(len(keys))]
        q_m = _fit_sets(init_keys, jax.random.fold_in(key_fit, m), fits, m, width, [eta_m], fit)
        for k, key in enumerate(keys):
            q = jax.tree.map(lambda v, k=k: v[k, 0], q_m)
            terms = elbo_terms(
                q,
                fits[key]["x"][:m],
                fits[key]["y"][:m],
                eta=eta_m,
                prior_scale=fit["prior_scale"],
                noise_scale=fit["noise_scale"],
            )
            by_p[key][m] = {name: float(v) for name, v in terms.items()}
    return by_p


# --------------------------------------------------------------------------- reading the fits


def columns(fits: Mapping, name: str, key: str, tempered: bool) -> np.ndarray:
    """One quantity of the fits over the widths for every split of ``name``: (splits, widths)."""
    splits = [s for (n, s) in fits if n == name]
    return np.array(
        [[r[key] for r in fits[name, s]["rows"] if r["tempered"] == tempered] for s in splits]
    )


def fitted_q(fits: Mapping, name: str, width: int, tempered: bool) -> MeanField:
    """The fitted q* of split 0 of ``name`` at ``width`` neurons."""
    rows = fits[name, 0]["rows"]
    return next(r["q"] for r in rows if r["N"] == width and r["tempered"] == tempered)


def over_p_splits(by_p: Mapping, name: str, key: str, ps) -> np.ndarray:
    """One quantity of the fits over p for every split of ``name``: (splits, len(ps))."""
    splits = [s for (n, s) in by_p if n == name]
    return np.array([[by_p[name, s][int(m)][key] for m in ps] for s in splits])


def over_p(by_p: Mapping, name: str, key: str, ps) -> np.ndarray:
    """One quantity of the fits over p, averaged over the splits: (len(ps),)."""
    return over_p_splits(by_p, name, key, ps).mean(axis=0)


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of log ys against log xs (the exponent of a power law)."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def split_slopes(xs, ys) -> np.ndarray:
    """:func:`loglog_slope` over the whole range, one per split: ys (splits, len(xs)) →
    (splits,)."""
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if xs.ndim != 1 or xs.size < 2 or ys.ndim != 2 or ys.shape[1] != xs.size:
        raise ValueError(f"need at least 2 xs and ys (splits, {xs.size}), got ys {ys.shape}")
    if np.any(xs <= 0) or np.any(ys <= 0):
        raise ValueError("xs and ys must be positive (a log-log slope)")
    return np.polyfit(np.log(xs), np.log(ys).T, 1)[0]


def rate_reading(per_split, rate: float, *, level: float = 0.95) -> dict:
    """Whether exponents measured per split are consistent with one exact ``rate``.

    The Student-t interval of their mean over the splits (:func:`diagnostics.mean_interval`);
    ``excess`` = max(low − rate, rate − high) is at most 0 when the interval contains the rate
    and, when it excludes it, the distance from the rate to the interval. Returns ``mean``,
    ``low``, ``high``, ``sd``, ``rate`` and ``excess``.
    """
    summary = _split_interval(per_split, level)
    low, high = summary["low"], summary["high"]
    return {**summary, "rate": float(rate), "excess": float(max(low - rate, rate - high))}


def _split_interval(per_split, level: float) -> dict:
    """``mean``, ``low``, ``high`` (:func:`diagnostics.mean_interval`) and ``sd`` of estimates
    made one per split."""
    values = np.asarray(per_split, dtype=np.float64)
    mean, low, high = diagnostics.mean_interval(values, level=level)
    return {"mean": mean, "low": low, "high": high, "sd": float(values.std(ddof=1))}


def tail_slopes(xs, ys) -> np.ndarray:
    """Log-log slope between the two largest ``xs`` (the last two columns of ``ys``).

    The local exponent of a power law at the end of the range, where an asymptotic
    statement (a limit, an O(·) bound) is read: ys (..., len(xs)) → (...).
    """
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if xs.ndim != 1 or xs.size < 2 or ys.shape[-1] != xs.size:
        raise ValueError(f"need at least 2 xs and ys (..., {xs.size}), got ys {ys.shape}")
    if not xs[-1] > xs[-2] > 0 or np.any(ys[..., -2:] <= 0):
        raise ValueError("the two largest xs must be increasing and positive, their ys positive")
    return np.log(ys[..., -1] / ys[..., -2]) / np.log(xs[-1] / xs[-2])


def upper_bound_reading(per_split, bound: float, *, before=None, level: float = 0.95) -> dict:
    """An asymptotic upper bound ``exponent < bound`` read on the tail, one estimate per split.

    ``per_split``: the tail exponent of each split (:func:`tail_slopes`); ``before``: the
    exponent over the step before the tail, per split (optional). The Student-t interval of
    the mean over the splits (:func:`diagnostics.mean_interval`) decides: the bound ``holds``
    if the interval's upper end is below it; it ``fails`` if the lower end is at or above it
    and the exponent shows no sign of falling (the tail's mean is not below the mean of
    ``before``; without ``before``, the interval alone). Growth above the bound that is
    slowing down, or an interval that contains the bound, is undecided: a finite range cannot
    tell where it settles. Returns ``mean``, ``low``, ``high``, ``sd``, ``bound``,
    ``before`` (its mean, or None), ``slowing``, ``holds``, ``fails`` and ``decided``.
    """
    summary = _split_interval(per_split, level)
    before_mean = None if before is None else float(np.mean(before))
    slowing = before_mean is not None and summary["mean"] < before_mean
    holds = bool(summary["high"] < bound)
    fails = bool(summary["low"] >= bound and not slowing)
    return {
        **summary,
        "bound": float(bound),
        "before": before_mean,
        "slowing": bool(slowing),
        "holds": holds,
        "fails": fails,
        "decided": holds or fails,
    }


def decided(readings) -> bool:
    """Whether bound readings decide their claim: all decided, or one fails with its interval."""
    readings = list(readings)
    return all(r["decided"] for r in readings) or any(r["fails"] for r in readings)


def limit_values(kl, rel_gap: float, *, tail: int = 2) -> np.ndarray:
    """The Proposition's KL(q*_N‖P0) → 0 as N → ∞ read as a limit (C4.1): the values.

    ``kl``: the mean untempered KL over the widths (increasing N). The values, each to lie
    below its bound in the claims catalogue (C4.1, part ``limit``): the ratios
    KL(N_{k+1}) / KL(N_k) of the last ``tail`` steps (below 1: the tail falls), KL at the
    largest width over its largest value over the widths (below a small fraction: it has
    fallen most of the way to 0) and ``rel_gap``, the relative gap of the test RMSE to that
    of the prior mean at the largest width (below a small tolerance: the predictive is the
    prior's). No monotone decrease over the whole range is asked for.
    """
    kl = np.asarray(kl, dtype=np.float64)
    tail = positive_int("tail", tail)
    if kl.ndim != 1 or kl.size < tail + 1 or np.any(kl <= 0):
        raise ValueError(f"kl must hold at least {tail + 1} positive values, got {kl}")
    steps = kl[1:] / kl[:-1]
    return np.array([*steps[-tail:], kl[-1] / kl.max(), rel_gap])


def prior_q(d_in: int, width: int) -> MeanField:
    """q = P0 = N(0, 1) for every weight, as the q of :mod:`tempering`."""
    return MeanField(
        [{"W": jnp.zeros((d_in, width))}, {"W": jnp.zeros((width, 1))}],
        [{"W": jnp.ones((d_in, width))}, {"W": jnp.ones((width, 1))}],
    )


# --------------------------------------------------------------------------- a fixed ν


def draw_neurons(q_nu: MeanField, index) -> MeanField:
    """Sets of neurons drawn from the empirical measure ν of ``q_nu``'s neurons.

    ``index`` (R, N) picks the neurons; returns a q with leading (R,) axes.
    """

    def draw(layers):
        w0, w1 = np.asarray(layers[0]["W"]), np.asarray(layers[1]["W"])
        return [{"W": w0[:, index].transpose(1, 0, 2)}, {"W": w1[index]}]

    return MeanField(draw(q_nu.loc), draw(q_nu.scale))


@partial(jax.jit, static_argnames=("noise_scale", "prior_scale"))
def _family_terms(qs, x, y, noise_scale, prior_scale):
    terms_of = partial(
        tempering.gaussian_elbo_terms, noise_scale=noise_scale, prior_scale=prior_scale
    )
    return jax.lax.map(lambda q: terms_of(q, x, y), qs)


def fixed_nu_terms(rng_key, q_nu, x, y, widths, ps, *, num_draws: int, noise_scale, prior_scale):
    """The ELBO terms for neurons i.i.d. from a fixed ν (the scalings hold by construction).

    ν is the empirical measure of ``q_nu``'s neurons; for each N of ``widths``, ``num_draws``
    sets of N neurons (``jax.random.randint(rng_key, (num_draws, max(widths)), 0, N_nu)``, the
    first N of each row), their closed-form terms averaged over the draws. Over p: one q, the
    first draw of the largest N, on the first m rows for m in ``ps``. Returns a dict of arrays:
    ``kl``, ``expected_loss``, ``gap`` over ``widths``, ``expected_loss_p``, ``gap_p`` over ``ps``.
    """
    shape = (positive_int("num_draws", num_draws), max(widths))
    index = np.asarray(jax.random.randint(rng_key, shape, 0, q_nu.loc[0]["W"].shape[1]))
    fam = [
        _family_terms(draw_neurons(q_nu, index[:, : int(n)]), x, y, noise_scale, prior_scale)
        for n in widths
    ]
    out = {
        key: np.array([float(jnp.mean(t[key])) for t in fam])
        for key in ("kl", "expected_loss", "gap")
    }
    q_big = jax.tree.map(lambda v: v[0], draw_neurons(q_nu, index[:, : int(widths[-1])]))
    by_p = [elbo_terms(q_big, x[:m], y[:m], noise_scale=noise_scale) for m in ps]
    for key in ("expected_loss", "gap"):
        out[f"{key}_p"] = np.array([float(t[key]) for t in by_p])
    return out


# --------------------------------------------------------------------------- per-claim summaries


def collapse_summary(fits: Mapping, name: str) -> dict:
    """The Proposition's collapse of the untempered fits (η = 1) of ``name`` (C4.1).

    Returns ``kl`` (the mean KL(q*‖P0) over the splits per width), ``steps`` (KL(N_{k+1}) /
    KL(N_k)), ``last_over_first``, ``rel_gap`` (mean |RMSE − RMSE(prior mean)| / RMSE(prior
    mean) at the largest N) and ``rise_splits`` (splits whose KL rises between the first two
    widths).
    """
    kl_splits = columns(fits, name, "kl", False)
    kl = kl_splits.mean(axis=0)
    rmse_1 = columns(fits, name, "rmse", False)[:, -1]
    prior = np.array([fits[name, s]["rmse_prior"] for s in [s for (n, s) in fits if n == name]])
    return {
        "kl": kl,
        "steps": kl[1:] / kl[:-1],
        "last_over_first": kl[-1] / kl[0],
        "rel_gap": float(np.mean(np.abs(rmse_1 - prior) / prior)),
        "rise_splits": int(np.sum(kl_splits[:, 1] > kl_splits[:, 0])),
    }


def term_slopes(fits: Mapping, by_p: Mapping, name: str, widths, ps) -> tuple[dict, dict, dict]:
    """The two terms of ELBO_η^N of the fitted tempered q* over N and p and their slopes (C4.2).

    The KL term (1) and the data term D = Σ_i E_q ℓ(f_w(x_i), y_i) of (2) ("expected_loss"),
    averaged over the splits. Returns ``(terms, slopes, untempered)``: the means and log-log
    slopes of "KL over N", "D over N", "KL over p", "D over p", and the slopes over N of the
    untempered fits.
    """
    terms = {
        "KL over N": columns(fits, name, "kl", True).mean(axis=0),
        "D over N": columns(fits, name, "expected_loss", True).mean(axis=0),
        "KL over p": over_p(by_p, name, "kl", ps),
        "D over p": over_p(by_p, name, "expected_loss", ps),
    }
    slopes = {k: loglog_slope(widths if k.endswith("N") else ps, v) for k, v in terms.items()}
    untempered = {
        k: loglog_slope(widths, columns(fits, name, key, False).mean(axis=0))
        for k, key in (("KL over N", "kl"), ("D over N", "expected_loss"))
    }
    return terms, slopes, untempered


def term_tails(fits: Mapping, by_p: Mapping, name: str, widths, ps) -> dict:
    """Per split, the tail exponents of the terms of the fitted tempered q* (C4.2's bounds).

    The log-log slope between the two largest widths of the KL term (1) and of the data
    term D ("KL over N", "D over N") and between the two largest sub-samples of D ("D over
    p"), one per split of ``name`` (:func:`tail_slopes`), and the same over the step before.
    Returns ``{term: (tail, before)}``, each a (splits,) array (``before`` None if the
    range has only two points).
    """
    curves = {
        "KL over N": (widths, columns(fits, name, "kl", True)),
        "D over N": (widths, columns(fits, name, "expected_loss", True)),
        "D over p": (ps, over_p_splits(by_p, name, "expected_loss", ps)),
    }
    return {
        k: (
            tail_slopes(xs, ys),
            tail_slopes(np.asarray(xs)[:-1], ys[:, :-1]) if len(xs) > 2 else None,
        )
        for k, (xs, ys) in curves.items()
    }


def balance_summary(fits: Mapping, name: str) -> dict:
    """Held-out RMSE of the balanced temperature η_N = τ p / N against η = 1 (C4.3).

    Returns ``rmse`` (tempered, (splits, widths)), ``gains`` (1 − RMSE(η_N) / RMSE(η = 1) at
    the largest N, per split) and ``changes`` (relative change of the tempered RMSE between
    the two largest N, per split).
    """
    rmse_t, rmse_1 = columns(fits, name, "rmse", True), columns(fits, name, "rmse", False)
    return {
        "rmse": rmse_t,
        "gains": 1 - rmse_t[:, -1] / rmse_1[:, -1],
        "changes": np.abs(rmse_t[:, -1] - rmse_t[:, -2]) / rmse_t[:, -2],
    }


def gap_summary(fits: Mapping, by_p: Mapping, name: str, widths, ps) -> dict:
    """The gap ELBO − F̃ = Σ_i Var_q f(x_i) / 2σ² along the fitted tempered solutions (C4.5).

    Returns ``gap`` (mean over the splits per width), ``slope`` (its log-log slope over N),
    ``local`` (slopes between consecutive widths), ``scaled`` (N · gap / p), ``gap_p`` and
    ``p_slope`` (the gap over p and its slope), ``sd_a`` (mean sd of the output weights of
    split 0 per width), ``tail`` (per split, the slope between the two largest widths) and
    ``before`` (per split, the slope over the step before; None for two widths).
    """
    widths = np.asarray(widths)
    gap_splits = columns(fits, name, "gap", True)
    gap = gap_splits.mean(axis=0)
    gap_p = over_p(by_p, name, "gap", ps)
    return {
        "gap": gap,
        "slope": loglog_slope(widths, gap),
        "local": np.diff(np.log(gap)) / np.diff(np.log(widths)),
        "scaled": gap * widths / common_p(fits),  # N · gap / p: a neuron's mean variance / 2
        "gap_p": gap_p,
        "p_slope": loglog_slope(ps, gap_p),
        "sd_a": [
            float(jnp.mean(r["q"].scale[1]["W"])) for r in fits[name, 0]["rows"] if r["tempered"]
        ],
        "tail": tail_slopes(widths, gap_splits),
        "before": tail_slopes(widths[:-1], gap_splits[:, :-1]) if len(widths) > 2 else None,
    }
