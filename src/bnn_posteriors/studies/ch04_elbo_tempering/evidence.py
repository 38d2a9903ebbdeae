"""What chapter 4 shows and checks: one :class:`Evidence` per check of C4.1-C4.5.

Each ``cNN_evidence`` function reads the fits of :mod:`.regression` (or the MNIST comparison
of :mod:`.mnist`) and returns the measured value of the check and the part of the claim's
catalogue entry it is checked as (the rule and its bound are the catalogue's,
``claims/catalogue/04_elbo_tempering.toml``; where a computation or the prose needs a bound it
reads it there), its note and finding in words, the values the chapter's prose glues and a
Markdown table of the numbers behind the value. The ``*_overview`` functions do the same for
the cells that show numbers without checking them (an :class:`Overview`). ``fits`` is
``{(name, r): fit}`` of :func:`.regression.fit_over_widths`; its data sets, splits and widths
are read from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from bnn_posteriors.claims.checking import Evidence, Gate, catalogue_check
from bnn_posteriors.site.tables import Overview, markdown_table, number_list
from bnn_posteriors.studies.ch04_elbo_tempering import regression
from bnn_posteriors.studies.ch04_elbo_tempering.regression import columns, loglog_slope

CI_PCT = 95  # the level of the intervals over the splits


# --------------------------------------------------------------------------- reading the fits


def names(fits: Mapping) -> list[str]:
    """The data sets of ``fits`` in order (the keys are ``(name, split)``)."""
    if not fits or not all(isinstance(k, tuple) and len(k) == 2 for k in fits):
        raise ValueError("fits must be a non-empty {(name, split): fit} dict")
    return list(dict.fromkeys(name for name, _ in fits))


def repeats(fits: Mapping) -> int:
    """The number of splits of each data set of ``fits``."""
    return sum(1 for name, _ in fits if name == names(fits)[0])


def widths(fits: Mapping) -> tuple:
    """The widths N of the fits, in the order fitted (as the settings' tuple)."""
    first = next(iter(fits.values()))
    return tuple(r["N"] for r in first["rows"] if not r["tempered"])


def _tag(name: str) -> str:
    return name.split("_")[0]


def fits_overview(fits: Mapping, splits: Mapping, pad_dev: float, *, n_max: int) -> Overview:
    """The fits over the width on the chapter's split (split 0): a table of their terms.

    Glues the sizes of the sets the prose cites (``n_max``, ``p_train``, test rows, ...),
    ``repeats``, ``ci_pct`` and the largest |μ| of a weight of the tempered fits (all splits)
    at the first and the last width (``max_loc_first``, ``max_loc_last``).
    """
    sets, ns = names(fits), widths(fits)
    p = regression.common_p(fits)
    rows = [
        (
            name,
            r["N"],
            f"{r['eta']:.4f}",
            f"{r['kl']:.2f}",
            f"{r['expected_log_lik']:.2f}",
            f"{r['elbo'] / fits[name, 0]['p']:.3f}",
            f"{r['rmse']:.3f}",
        )
        for name in sets
        for r in fits[name, 0]["rows"]
    ]
    header = ("data set", "N", "η", "KL(q‖P₀)", "E log L", "ELBO / p", "test RMSE")
    max_loc = [
        max(r["max_loc"] for f in fits.values() for r in f["rows"] if r["tempered"] and r["N"] == n)
        for n in ns
    ]
    sizes = markdown_table(
        ("data set", "p", "test rows", "test RMSE of the prior mean 0"),
        [
            (
                name,
                fits[name, 0]["p"],
                len(fits[name, 0]["y_test"]),
                f"{fits[name, 0]['rmse_prior']:.3f}",
            )
            for name in sets
        ],
    )
    extra = markdown_table(
        ("N", *ns),
        [("largest |μ| of a fitted weight (tempered, all splits)", *np.round(max_loc, 2))],
    )
    split0 = splits[sets[1], 0]
    glue = dict(
        max_loc_first=max_loc[0],
        max_loc_last=max_loc[-1],
        repeats=repeats(fits),
        n_test_syn=len(fits[sets[0], 0]["y_test"]),
        n_test_con=len(fits[sets[1], 0]["y_test"]),
        n_max=n_max,
        p_train=p,
        train_pct=100 * p / n_max,
        n_split_test=len(split0.y_test),
        test_pct=100 * len(split0.y_test) / n_max,
        d_concrete=split0.x_train.shape[1],
        ci_pct=CI_PCT,
    )
    text = (
        f"Split 0 of {repeats(fits)}; largest deviation from the prior of the weights of the "
        f"zero-padded inputs: {pad_dev:.1e}.\n\n"
    )
    return Overview(text + sizes + "\n" + markdown_table(header, rows) + "\n" + extra, glue)


def mc_overview(mc: Mapping, exact: Mapping, *, num_particles: int) -> Overview:
    """NumPyro's Monte-Carlo terms of the ELBO against their closed form, as a table."""
    rows = [
        ("KL(q‖P₀)", f"{float(mc['kl']):.4f}", f"{float(exact['kl']):.4f}"),
        (
            "E log L",
            f"{float(mc['expected_log_lik']):.3f}",
            f"{float(exact['expected_log_lik']):.3f}",
        ),
    ]
    return Overview(
        markdown_table(("term", f"NumPyro ({num_particles:,} draws)", "closed form"), rows)
    )


# --------------------------------------------------------------------------- C4.1


def c41_evidence(fits: Mapping):
    """C4.1, KL(q*_N‖P0) → 0 read as a limit on the untempered fits, and ``monotone-kl``.

    First check (catalogue part ``limit``): per set, the values of
    :func:`.regression.limit_values` (the KL ratios of the last two width steps, KL(largest N)
    / max KL, the relative RMSE gap to the prior mean), each below its bound in the catalogue,
    four per set (the prose glues the fraction of the peak and the RMSE tolerance of the
    first set as percentages). Second (``monotone-kl``): the KL ratio of every width step,
    against the catalogue's bound.
    """
    sets, ns, reps = names(fits), widths(fits), repeats(fits)
    limit_bound = list(catalogue_check("C4.1", "limit")["bound"])
    per_set = [1.0, 1.0, *limit_bound[2:4]]
    if len(limit_bound) != 4 * len(sets) or limit_bound != per_set * len(sets):
        raise ValueError(
            f"the catalogue's C4.1 check 'limit' has bounds {limit_bound}; the chapter reads "
            f"them as 1, 1, fraction, RMSE tolerance for each of the {len(sets)} sets"
        )
    fraction, rmse_tol = limit_bound[2], limit_bound[3]
    value_, steps_, kl_by_set, by_set, glue, rows = [], [], {}, {}, {}, []
    for name in sets:
        c41 = by_set[name] = regression.collapse_summary(fits, name)
        kl = kl_by_set[name] = c41["kl"]
        value = regression.limit_values(kl, c41["rel_gap"], tail=2)
        value_ += list(value)
        steps_ += list(c41["steps"])
        tag = _tag(name)
        glue.update(
            {
                f"kl_first_{tag}": kl[0],
                f"kl_last_{tag}": kl[-1],
                f"kl_second_{tag}": kl[1],
                f"kl_rise_{tag}": 100 * (c41["steps"][0] - 1),
                f"kl_rise_splits_{tag}": c41["rise_splits"],
                f"kl_tail_step_{tag}": value[1],
                f"kl_peak_pct_{tag}": 100 * value[2],
                f"rel_gap_pct_{tag}": 100 * c41["rel_gap"],
                f"rmse_untempered_{tag}": float(columns(fits, name, "rmse", False)[0, -1]),
                f"rmse_prior_{tag}": float(fits[name, 0]["rmse_prior"]),
            }
        )
        rows.append(
            (
                name,
                number_list(kl, ".3f"),
                number_list(c41["steps"], ".3f"),
                f"{value[-2]:.4f}",
                f"{c41['rel_gap']:.4f}",
            )
        )
    c41_value = np.array(value_)
    syn_c, con_c = (by_set[name] for name in sets)
    con_monotone = bool(np.all(con_c["steps"] < 1))
    glue.update(
        dict(
            n_largest=ns[-1],
            n_tail_from=ns[-3],
            c41_fraction_pct=100 * fraction,
            c41_rmse_pct=100 * rmse_tol,
            n_first=ns[0],
            n_second=ns[1],
            con_max_step=float(con_c["steps"].max()),
        )
    )
    table = markdown_table(
        (
            "data set (η = 1)",
            f"mean KL(q*‖P₀) over {reps} splits, per N",
            "KL(N′) / KL(N)",
            "KL(largest N) / max",
            f"|RMSE − RMSE(prior mean)| / RMSE(prior mean), N = {ns[-1]}",
        ),
        rows,
    )
    limit = Evidence(
        "C4.1",
        c41_value,
        part="limit",
        labels=[
            f"{name}: {what}"
            for name in sets
            for what in (
                f"KL ratio N = {ns[-3]} → {ns[-2]}",
                f"KL ratio N = {ns[-2]} → {ns[-1]}",
                f"KL at N = {ns[-1]} / its largest",
                f"relative RMSE gap to the prior mean at N = {ns[-1]}",
            )
        ],
        note=f"eta = 1, KL(q*||P0) averaged over {reps} splits; per set (synthetic, then "
        "concrete): KL(N_k+1)/KL(N_k) of the last two width steps (< 1: the tail falls), "
        "KL(largest N)/max_N KL (< 0.1), mean |RMSE - RMSE(prior mean)|/RMSE(prior mean) at the "
        "largest N (< 0.05). Mean KL per width: "
        + "; ".join(f"{name} {np.round(kl, 4).tolist()}" for name, kl in kl_by_set.items()),
        says=f"Without tempering the mean KL(q*||P0) falls over the last two width steps "
        f"(N = {ns[-3]} to {ns[-1]}) on both sets and at N = {ns[-1]} is "
        f"{100 * c41_value[2]:.2f} % (synthetic) and {100 * c41_value[6]:.2f} % (concrete) of "
        f"its largest value, with a test RMSE within "
        f"{100 * max(c41_value[3], c41_value[7]):.2f} % of predicting the prior mean: the KL "
        "tends to 0 and the fit ignores the data.",
        glue=glue,
        table=table,
    )
    monotone = Evidence(
        "C4.1",
        np.array(steps_),
        part="monotone-kl",
        labels=[
            f"{name}: N = {a} → {b}" for name in sets for a, b in zip(ns, ns[1:], strict=False)
        ],
        note=f"eta = 1, mean KL over {reps} splits: KL(N_k+1)/KL(N_k) for every step of the "
        f"widths {ns}, synthetic then concrete (< 1: decreasing at every step)",
        says=f"The untempered KL does not fall at every width: on the synthetic set it rises by "
        f"{100 * (syn_c['steps'][0] - 1):.0f} % from N = {ns[0]} to {ns[1]} "
        f"(on {syn_c['rise_splits']} of {reps} splits) before it collapses; on concrete "
        + (
            "it falls at every step."
            if con_monotone
            else f"it rises at one step too (ratio {con_c['steps'].max():.2f})."
        ),
    )
    return limit, monotone


def prior_advantage(fit: Mapping, width: int, *, noise_scale: float) -> Overview:
    """The ELBO of the untempered fit at ``width`` against that of q = P0 (glued in nats)."""
    prior_q = regression.prior_q(fit["x"].shape[1], width)
    elbo_prior = float(
        regression.elbo_terms(prior_q, fit["x"], fit["y"], noise_scale=noise_scale)["elbo"]
    )
    elbo_fit = next(r["elbo"] for r in fit["rows"] if not r["tempered"] and r["N"] == width)
    rows = [
        (f"fit, η = 1, N = {width}", f"{elbo_fit:.2f}"),
        ("q = P₀", f"{elbo_prior:.2f}"),
        ("the fit's advantage (nats)", f"{elbo_fit - elbo_prior:.2f}"),
    ]
    return Overview(
        markdown_table(("q", "ELBO"), rows), dict(elbo_advantage_64=float(elbo_fit - elbo_prior))
    )


# --------------------------------------------------------------------------- C4.2


def fixed_nu_overview(
    fam: Mapping, fit: Mapping, family_widths, ps, *, noise_scale: float, family_draws: int
) -> Overview:
    """The illustration of C4.2: log-log slopes of the terms for neurons i.i.d. from a fixed ν.

    ``fam``: :func:`.regression.fixed_nu_terms`; ``fit``: the chapter's split of the synthetic
    set (the share of the normalising constant in |E_q log L| of its widest tempered fit).
    """
    illustration = {
        "KL over N": loglog_slope(family_widths, fam["kl"]),
        "D over N": loglog_slope(family_widths, fam["expected_loss"]),
        "D over p": loglog_slope(ps, fam["expected_loss_p"]),
    }
    n_last = max(r["N"] for r in fit["rows"])
    last = next(r for r in fit["rows"] if r["tempered"] and r["N"] == n_last)
    const = 0.5 * fit["p"] * np.log(2 * np.pi * noise_scale**2)
    glue = {
        "const_share": float(const / -last["expected_log_lik"]),
        "family_draws": family_draws,
        **{f"fixed_slope_{k.split()[0]}_{k.split()[-1]}": v for k, v in illustration.items()},
    }
    table = markdown_table(
        ("fixed ν (by construction, not a check)", "log-log slope"),
        [(k, f"{v:.3f}") for k, v in illustration.items()],
    )
    return Overview(table, glue)


def c42_evidence(
    fits: Mapping, by_p: Mapping, ps, *, p_width: int, n_max: int
) -> tuple[Evidence, Evidence]:
    """C4.2, each O(·) of the slides as an upper bound on the tail, and ``data-term-linear``.

    First check (catalogue part ``tail``): per set and term (KL over N, D over N, D over p),
    the upper end of the 95 % interval over the splits of the tail slope
    (:func:`.regression.upper_bound_reading`, which reads it against the same bounds),
    against the catalogue's bounds 1 + tol, tol, 1 + tol per set (tol is glued as
    ``c42_tol``); gated on the readings deciding. Second (``data-term-linear``): per set, the
    excess of the exact linear rate 1 over the 95 % interval over the splits of the per-split
    slope of D over the whole range of p (:func:`.regression.rate_reading`; at most 0 where
    the interval contains 1), against the catalogue's bound.
    """
    sets, ns, reps, p = names(fits), widths(fits), repeats(fits), int(ps[-1])
    p_reps = repeats(by_p)  # the fits over p may use more splits than the fits over N
    split_counts = {"KL over N": reps, "D over N": reps, "D over p": p_reps}
    widths_ = np.array(ns)
    terms = ("KL over N", "D over N", "D over p")
    tail_bound = catalogue_check("C4.2", "tail")["bound"]
    tol = tail_bound[1] if len(tail_bound) == len(terms) * len(sets) else None
    if tol is None or list(tail_bound) != [1 + tol, tol, 1 + tol] * len(sets):
        raise ValueError(
            f"the catalogue's C4.2 check 'tail' has bounds {tail_bound}; the chapter reads them "
            f"as 1 + tol, tol, 1 + tol for each of the {len(sets)} sets"
        )
    bounds = dict(zip(terms, tail_bound[: len(terms)], strict=True))
    c42_terms, c42_slopes, c42_read, rows = {}, {}, {}, []
    glue = dict(
        p_width=p_width,
        p_list=", ".join(str(int(m)) for m in ps),
        c42_p_first=int(ps[0]),
        c42_p_last=int(ps[-1]),
    )
    for name in sets:
        tag = _tag(name)
        t, s, untempered = regression.term_slopes(fits, by_p, name, widths_, ps)
        c42_terms[name], c42_slopes[name] = t, s
        tails = regression.term_tails(fits, by_p, name, widths_, ps)
        c42_read[name] = {
            k: regression.upper_bound_reading(tails[k][0], b, before=tails[k][1])
            for k, b in bounds.items()
        }
        per_obs = t["D over p"] / ps
        glue.update(
            {
                **{f"c42_{tag}_{k.split()[0]}_{k.split()[-1]}": v for k, v in s.items()},
                **{
                    f"c42_{tag}_{k.split()[0]}_{k.split()[-1]}_untempered": v
                    for k, v in untempered.items()
                },
                **{
                    f"c42_{tag}_{k.split()[0]}_{k.split()[-1]}_tail{part}": r[key]
                    for k, r in c42_read[name].items()
                    for part, key in (
                        ("", "mean"),
                        ("_lo", "low"),
                        ("_hi", "high"),
                        ("_before", "before"),
                    )
                },
                f"c42_{tag}_per_obs_first": per_obs[0],
                f"c42_{tag}_per_obs_last": per_obs[-1],
                f"c42_{tag}_per_obs_change": 100 * abs(per_obs[-1] / per_obs[-2] - 1),
            }
        )
        for k, v in t.items():
            r = c42_read[name].get(k)
            tail = (
                ("—",) * 3
                if r is None
                else (
                    f"{r['mean']:.3f}",
                    f"[{r['low']:.3f}, {r['high']:.3f}] (bound {r['bound']:.2f})",
                    f"{r['before']:.3f}",
                )
            )
            rows.append((name, k, number_list(v, ".2f"), f"{s[k]:.3f}", *tail))
        rows.append((name, "D / m over p", number_list(per_obs, ".4f"), "—", "—", "—", "—"))
        rows += [
            (name, f"{k}, η = 1", "—", f"{v:.3f}", "—", "—", "—") for k, v in untempered.items()
        ]
    table = markdown_table(
        (
            f"data set (η_N; mean over {reps} splits over N, {p_reps} over p)",
            "term",
            "values",
            "slope over the range",
            "tail slope",
            f"{CI_PCT} % interval",
            "slope over the step before",
        ),
        rows,
    )
    c42_all = [(name, k, r) for name, rs in c42_read.items() for k, r in rs.items()]
    open_bounds = [(name, k, r) for name, k, r in c42_all if not r["decided"]]
    why = (
        "; ".join(
            f"on {name} the tail slope of {k} is {r['mean']:.3f} with a 95 % interval over the "
            f"{split_counts[k]} splits of [{r['low']:.3f}, {r['high']:.3f}], "
            + (
                f"which contains the bound {r['bound']:.2f}"
                if r["low"] < r["bound"]
                else f"above the bound {r['bound']:.2f}, but down from {r['before']:.3f} over "
                "the step before: the term grows faster than the bound allows, but more slowly "
                "than before"
            )
            for name, k, r in open_bounds
        )
        or "every bound is decided by its interval"
    )
    decide = (
        "a range that reaches the regime of the bound: fits over p on larger samples than the "
        f"{n_max}-row cut of this chapter (p = {p}), until the tail slope's interval lies "
        "below the bound or its growth stops slowing above it"
        if open_bounds
        else "nothing more: every bound is decided"
    )
    glue.update(
        dict(c42_tol=tol, c42_n_open=len(open_bounds), c42_p_prev=int(ps[-2]), c42_n_prev=ns[-2])
    )
    bound_check = Evidence(
        "C4.2",
        np.array([r["high"] for _, _, r in c42_all]),
        part="tail",
        labels=[f"{name}, {k}" for name, k, _ in c42_all],
        gate=Gate(passed=regression.decided(r for _, _, r in c42_all), why=why, decide=decide),
        note=f"fitted q* with eta_N = tau p/N; per set (synthetic, then concrete) and term (KL "
        "over N, D = sum_i E_q loss without the normalising constant over N, D over p): the "
        f"upper end of the 95% Student-t interval over the splits ({reps} over N, {p_reps} over "
        "p) of the log-log slope "
        f"between the two largest N (or m), against 1 + {tol}, {tol}, 1 + {tol}. "
        "Tail slopes mean [low, high]: "
        + "; ".join(
            f"{name} {k} {r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
            for name, k, r in c42_all
        )
        + f". Widths {ns}, p {ps.tolist()} (at N = {p_width}). Means: "
        + "; ".join(
            f"{name} " + ", ".join(f"{k} {np.round(v, 2).tolist()}" for k, v in t.items())
            for name, t in c42_terms.items()
        ),
        says="On the fitted tempered solutions the KL term grows at most like N (tail slopes "
        + " and ".join(f"{c42_read[n]['KL over N']['mean']:.3f}" for n in sets)
        + ") and the data term D does not grow with N ("
        + " and ".join(f"{c42_read[n]['D over N']['mean']:.3f}" for n in sets)
        + "); over p, D's tail slope is "
        + " and ".join(
            f"{c42_read[n]['D over p']['mean']:.3f} "
            f"[{c42_read[n]['D over p']['low']:.2f}, "
            f"{c42_read[n]['D over p']['high']:.2f}]"
            for n in sets
        )
        + f" (synthetic, concrete; bound {1 + tol:.1f})"
        + (
            ": every bound holds."
            if not open_bounds
            else ": for "
            + " and ".join(f"{k} on {name}" for name, k, _ in open_bounds)
            + " the sub-samples cannot tell whether the bound holds (see the gate)."
        ),
        glue=glue,
        table=table,
    )
    rates = {
        name: regression.rate_reading(
            regression.split_slopes(ps, regression.over_p_splits(by_p, name, "expected_loss", ps)),
            1.0,
        )
        for name in sets
    }
    growth = {
        name: "linear"
        if r["excess"] <= 0
        else "faster than linear"
        if r["low"] > 1
        else "slower than linear"
        for name, r in rates.items()
    }
    for name, r in rates.items():
        tag = _tag(name)
        glue.update(
            {
                f"c42_{tag}_D_p_whole_lo": r["low"],
                f"c42_{tag}_D_p_whole_hi": r["high"],
                f"c42_{tag}_D_p_growth": growth[name],
            }
        )
    linear = Evidence(
        "C4.2",
        np.array([rates[name]["excess"] for name in sets]),
        part="data-term-linear",
        labels=list(sets),
        note=f"per split, the log-log slope of D over the whole range p = {ps.tolist()}; "
        f"excess = max(low - 1, 1 - high) of its 95% Student-t interval over the {p_reps} "
        "splits (<= 0: the interval contains the exact linear rate 1), synthetic then "
        "concrete: "
        + "; ".join(
            f"{name} {r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}], excess {r['excess']:.3f}"
            for name, r in rates.items()
        ),
        says=f"Over the whole range of sub-samples (m = {ps[0]} to {ps[-1]}) the fitted data "
        "term grows "
        + " and ".join(
            f"with slope {r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}] on {n} ("
            + growth[n]
            + f"; loss per observation {c42_terms[n]['D over p'][0] / ps[0]:.3f} at the smallest "
            f"m, {c42_terms[n]['D over p'][-1] / ps[-1]:.3f} at the largest)"
            for n, r in rates.items()
        )
        + (
            "."
            if all(g == "linear" for g in growth.values())
            else ": where it grows faster, a smaller sample is fitted more closely."
        ),
    )
    return bound_check, linear


# --------------------------------------------------------------------------- C4.3


def c43_evidence(fits: Mapping, *, tau: float) -> tuple[Evidence, ...]:
    """C4.3, balanced tempering: per set, the mean RMSE gain over η = 1 at the largest N
    (catalogue part ``gain``, its bound glued as ``c43_gain_pct``) and the mean relative
    change of the tempered RMSE between the two largest N (``settles``), in that order."""
    reps, ns, out, rows = repeats(fits), widths(fits), [], []
    gain = catalogue_check("C4.3", "gain")["bound"]
    glue = dict(c43_gain_pct=100 * gain, tau=tau)
    for name in names(fits):
        c43 = regression.balance_summary(fits, name)
        rmse_t, gains, changes = c43["rmse"], c43["gains"], c43["changes"]
        elbo_p = columns(fits, name, "elbo", True)[0] / fits[name, 0]["p"]
        mean_gain, change = float(gains.mean()), float(changes.mean())
        rows.append(
            (
                name,
                number_list(rmse_t[0], ".3f"),
                number_list(elbo_p, ".3f"),
                number_list(gains, ".3f"),
                f"{mean_gain:.1%}",
                number_list(changes, ".4f"),
                f"{change:.1%}",
            )
        )
        tag = _tag(name)
        glue.update(
            {
                f"gain_{tag}": 100 * mean_gain,
                f"gain_min_{tag}": 100 * gains.min(),
                f"gain_max_{tag}": 100 * gains.max(),
                f"change_{tag}": 100 * change,
                f"rmse_tempered_{tag}": rmse_t[0, -1],
            }
        )
        out.append(
            Evidence(
                "C4.3",
                mean_gain,
                part="gain",
                note=f"{name}: 1 - RMSE(eta_N) / RMSE(eta = 1) at the largest N, "
                f"mean over {reps} splits (held-out rows)",
            )
        )
        out.append(
            Evidence(
                "C4.3",
                change,
                part="settles",
                note=f"{name}: relative change of the tempered test RMSE between "
                f"the two largest N, mean over {reps} splits",
            )
        )
    table = markdown_table(
        (
            "data set (η_N)",
            "test RMSE per N, split 0",
            "ELBO / p per N",
            f"RMSE gain over η = 1 at N = {ns[-1]}, per split",
            "mean gain",
            "change between the two largest N, per split",
            "mean change",
        ),
        rows,
    )
    return (replace(out[0], glue=glue, table=table), *out[1:])


# --------------------------------------------------------------------------- C4.4


def mnist_overview(
    sweep: Sequence[Mapping],
    etas,
    eta_bal: float,
    *,
    n_train: int,
    n_test: int,
    n_weights: int,
    width: int,
    ece_bins: int,
) -> Overview:
    """The MNIST temperature sweep (:func:`.mnist.temperature_sweep`) as a table; glues the
    subset's sizes and how the balanced temperature ranks on the test NLL."""
    marks = {eta_bal: "η_N", 1.0: "η = 1"}
    rows = [
        (
            f"{r['eta']:.2e}",
            marks.get(r["eta"], ""),
            f"{r['accuracy']:.3f}",
            f"{r['nll']:.3f}",
            f"{r['ece']:.3f}",
            f"{r['confidence']:.3f}",
        )
        for r in sweep
    ]
    nll_at = {r["eta"]: r["nll"] for r in sweep}
    if 1.0 not in nll_at or eta_bal not in nll_at:
        raise ValueError("the sweep must hold eta = 1 and the balanced temperature")
    below_one = [eta for eta in etas if eta < 1.0]
    glue = dict(
        mnist_total=n_train + n_test,
        mnist_train=n_train,
        mnist_n_test=n_test,
        mnist_one_image=1 / n_test,
        ece_bins=ece_bins,
        mnist_width=width,
        mnist_n_grid=len(below_one),
        mnist_n_beat_one=sum(nll_at[e] < nll_at[1.0] for e in below_one),
        mnist_n_beat_bal=sum(nll_at[e] < nll_at[eta_bal] for e in etas if e != eta_bal),
        mnist_best_eta=float(min(nll_at, key=lambda eta: nll_at[eta])),
    )
    text = (
        f"p = {n_train}, hidden width {width}, {n_weights} weights, "
        f"η_N = p / weights = {eta_bal:.4f}\n\n"
    )
    header = ("η", "", "accuracy", "NLL", "ECE", "confidence")
    return Overview(text + markdown_table(header, rows), glue)


def comparison_table(cmp: Mapping, n_pooled: int) -> str:
    """η_N against η = 1 (:func:`.mnist.balanced_against_one`) as a table: the differences per
    fold and on all ``n_pooled`` images with their paired bootstrap intervals."""
    (acc_lo, acc_hi), (nll_lo, nll_hi) = cmp["ci_acc"], cmp["ci_nll"]
    rows = [(f"fold {k}", f"{a:.4f}", f"{b:.4f}") for k, (a, b) in enumerate(cmp["per_fold"])]
    rows.append(
        (
            f"all {n_pooled} images ({CI_PCT} % paired bootstrap)",
            f"{cmp['d_acc']:.4f} [{acc_lo:.4f}, {acc_hi:.4f}]",
            f"{cmp['d_nll']:.4f} [{nll_lo:.4f}, {nll_hi:.4f}]",
        )
    )
    return markdown_table(("test images", "accuracy(η_N) − accuracy(1)", "NLL(1) − NLL(η_N)"), rows)


def c44_evidence(
    cmp: Mapping, sweep: Sequence[Mapping], eta_bal: float, *, num_folds: int, n_pooled: int
) -> Evidence:
    """C4.4: accuracy(η_N) − accuracy(1) and NLL(1) − NLL(η_N) on the pooled cross-fitted
    images (:func:`.mnist.balanced_against_one`), checked as the catalogue's part ``pooled``
    (both above 0)."""
    at = {r["eta"]: r for r in sweep}
    (acc_lo, acc_hi), (nll_lo, nll_hi) = cmp["ci_acc"], cmp["ci_nll"]
    glue = {
        **{
            f"mnist_{k}_{tag}": float(at[eta][k])
            for k in ("accuracy", "nll", "ece", "confidence")
            for tag, eta in (("bal", eta_bal), ("one", 1.0))
        },
        "eta_bal": float(eta_bal),
        "mnist_folds_minus_one": num_folds - 1,
        "mnist_pooled": n_pooled,
        "d_acc": cmp["d_acc"],
        "d_nll": cmp["d_nll"],
        "d_acc_lo": acc_lo,
        "d_acc_hi": acc_hi,
        "d_nll_lo": nll_lo,
        "d_nll_hi": nll_hi,
        "d_acc_fold_min": min(a for a, _ in cmp["per_fold"]),
    }
    table = comparison_table(cmp, n_pooled)
    return Evidence(
        "C4.4",
        np.array([cmp["d_acc"], cmp["d_nll"]]),
        part="pooled",
        labels=["accuracy gain of η_N", "NLL gain of η_N"],
        note=f"MNIST subset, {num_folds}-fold cross-fitting ({n_pooled} test images): "
        f"accuracy(eta_N) - accuracy(1) and NLL(1) - NLL(eta_N); 95% paired bootstrap "
        f"intervals [{acc_lo:.4f}, {acc_hi:.4f}] and [{nll_lo:.4f}, {nll_hi:.4f}]",
        glue=glue,
        table=table,
    )


def c44_deeper_evidence(deep: Mapping, *, width: int, num_folds: int) -> Evidence:
    """C4.4's part ``deeper`` ("generalizes to much more complex architectures than a one
    hidden layer"): accuracy(η_N) − accuracy(1) and NLL(1) − NLL(η_N) on the pooled
    cross-fitted images for ``deep["depth"]`` hidden layers of ``width`` units
    (:func:`.mnist.deeper_against_one`), both above 0 by the catalogue's rule."""
    (acc_lo, acc_hi), (nll_lo, nll_hi) = deep["ci_acc"], deep["ci_nll"]
    n_pooled = num_folds * len(deep["sweep"][0]["probs"])
    glue = {
        "deep_depth": deep["depth"],
        "deep_weights": deep["n_weights"],
        "deep_eta_bal": float(deep["eta_bal"]),
        "deep_d_acc": deep["d_acc"],
        "deep_d_nll": deep["d_nll"],
        "deep_d_acc_lo": acc_lo,
        "deep_d_acc_hi": acc_hi,
        "deep_d_nll_lo": nll_lo,
        "deep_d_nll_hi": nll_hi,
    }
    table = (
        f"{deep['depth']} hidden layers of {width} units, {deep['n_weights']} weights, "
        f"η_N = {deep['eta_bal']:.4f}\n\n" + comparison_table(deep, n_pooled)
    )
    ahead = deep["d_acc"] > 0 and deep["d_nll"] > 0
    behind = deep["d_acc"] < 0 and deep["d_nll"] < 0
    glue["deep_standing"] = "ahead of" if ahead else "behind" if behind else "not ahead of"
    return Evidence(
        "C4.4",
        np.array([deep["d_acc"], deep["d_nll"]]),
        part="deeper",
        labels=["accuracy gain of η_N", "NLL gain of η_N"],
        note=f"MNIST subset, {deep['depth']} hidden layers of {width} units, {num_folds}-fold "
        f"cross-fitting ({n_pooled} test images): accuracy(eta_N) - accuracy(1) and NLL(1) - "
        f"NLL(eta_N); 95% paired bootstrap intervals [{acc_lo:.4f}, {acc_hi:.4f}] and "
        f"[{nll_lo:.4f}, {nll_hi:.4f}]",
        says=f"With {deep['depth']} hidden layers η_N = {deep['eta_bal']:.4f} is "
        f"{glue['deep_standing']} η = 1: accuracy(η_N) − accuracy(1) = {deep['d_acc']:+.4f}, "
        f"NLL(1) − NLL(η_N) = {deep['d_nll']:+.3f} nats",
        glue=glue,
        table=table,
    )


# --------------------------------------------------------------------------- C4.5


def c45_evidence(
    fits: Mapping,
    by_p: Mapping,
    fam: Mapping,
    ps,
    family_widths,
    *,
    p_width: int,
) -> tuple[Evidence, Evidence]:
    """C4.5, the gap ELBO − F̃ read on the tail, and ``full-range-slope``.

    First check (catalogue part ``tail``): per set, the upper end of the 95 % interval over
    the splits of the gap's slope between the two largest widths, below the catalogue's
    bound (which the readings' gate uses too, glued as ``c45_bound``); gated on the readings
    deciding. Second (``full-range-slope``): the least-squares slope over all widths, against
    the catalogue's bound. ``fam``: the fixed-ν terms of :func:`.regression.fixed_nu_terms`
    (an illustration, in the note).
    """
    sets, ns, reps = names(fits), widths(fits), repeats(fits)
    bound = catalogue_check("C4.5", "tail")["bound"]
    family_widths = np.asarray(family_widths)
    gap_slope = loglog_slope(family_widths, fam["gap"])
    gap_p_slope = loglog_slope(ps, fam["gap_p"])
    gaps = {name: regression.gap_summary(fits, by_p, name, np.array(ns), ps) for name in sets}
    c45_read = {
        name: regression.upper_bound_reading(g["tail"], bound, before=g["before"])
        for name, g in gaps.items()
    }
    glue, rows = (
        {},
        [
            (
                "fixed ν (not a check)",
                number_list(fam["gap"], ".5f"),
                f"{gap_slope:.3f}",
                "—",
                "—",
                "—",
                f"{gap_p_slope:.3f}",
                "—",
            )
        ],
    )
    for name, g in gaps.items():
        tag, r = _tag(name), c45_read[name]
        rows.append(
            (
                name,
                number_list(g["gap"], ".4f"),
                f"{g['slope']:.3f}",
                number_list(g["local"], ".3f"),
                number_list(g["scaled"], ".3f"),
                f"{r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}]",
                f"{g['p_slope']:.3f}",
                number_list(g["sd_a"], ".3f"),
            )
        )
        glue.update(
            {
                f"fitted_gap_slope_{tag}": g["slope"],
                f"fitted_gap_local_{tag}": g["local"][-1],
                f"c45_tail_{tag}": r["mean"],
                f"c45_tail_lo_{tag}": r["low"],
                f"c45_tail_hi_{tag}": r["high"],
                f"scaled_growth_{tag}": 100 * (g["scaled"][-1] / g["scaled"][-2] - 1),
                f"scaled_growth_first_{tag}": 100 * (g["scaled"][1] / g["scaled"][0] - 1),
                f"fitted_gap_p_slope_{tag}": g["p_slope"],
                f"scaled_gap_first_{tag}": g["scaled"][0],
                f"scaled_gap_last_{tag}": g["scaled"][-1],
                f"sd_a_first_{tag}": g["sd_a"][0],
                f"sd_a_last_{tag}": g["sd_a"][-1],
            }
        )
    step = ns[-1] / ns[-2]
    glue.update(
        dict(
            gap_slope=gap_slope,
            gap_p_slope=gap_p_slope,
            c45_bound=bound,
            c45_growth_pct=100 * (step ** (1 + bound) - 1),
        )
    )
    table = markdown_table(
        (
            f"gap ELBO − F̃ (η_N; mean over {reps} splits)",
            "gap per N",
            "slope",
            "slopes between consecutive N",
            "N · gap / p",
            f"tail slope [{CI_PCT} % interval]",
            f"slope over p (N = {p_width})",
            "mean sd of the output weights (split 0)",
        ),
        rows,
    )
    c45_open = [name for name, r in c45_read.items() if not r["decided"]]
    tail = Evidence(
        "C4.5",
        np.array([c45_read[name]["high"] for name in sets]),
        part="tail",
        labels=[f"{name}: upper end of the tail slope's interval" for name in sets],
        gate=Gate(
            passed=regression.decided(c45_read.values()),
            why="; ".join(
                f"on {name} the 95 % interval of the tail slope, "
                f"[{c45_read[name]['low']:.3f}, {c45_read[name]['high']:.3f}], "
                f"contains the bound {bound} or lies above it while the slope falls "
                f"(from {c45_read[name]['before']:.3f})"
                for name in c45_open
            )
            or "every bound is decided by its interval",
            decide="larger widths, until the tail slope's interval lies below the bound or its "
            "growth stops slowing above it",
        ),
        note=f"ELBO - F~ = sum_i Var_q f(x_i)/2 along the fitted eta_N solutions; per set "
        f"(synthetic, concrete) the upper end of the 95% Student-t interval over {reps} "
        f"splits of the log-log slope of the gap between N = {ns[-2]} and "
        f"{ns[-1]}, against {bound}. Tail slopes: "
        + "; ".join(
            f"{name} {r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
            for name, r in c45_read.items()
        )
        + ". Mean gap per N: "
        + "; ".join(f"{name} {np.round(g['gap'], 4).tolist()}" for name, g in gaps.items())
        + ". N*gap/p: "
        + "; ".join(f"{name} {np.round(g['scaled'], 3).tolist()}" for name, g in gaps.items())
        + f". Fixed nu (not checked): slope {gap_slope:.3f}",
        says=f"Along the fitted tempered solutions the gap between the ELBO and the limit "
        f"functional falls between N = {ns[-2]} and {ns[-1]} with slope "
        + " and ".join(
            f"{r['mean']:.2f} [{r['low']:.2f}, {r['high']:.2f}]" for r in c45_read.values()
        )
        + f" (synthetic, concrete; bound {bound}): N gap/p, which the Theorem bounds by a "
        "constant, grows by "
        + " and ".join(
            f"{100 * (g['scaled'][-1] / g['scaled'][-2] - 1):.0f} %" for g in gaps.values()
        )
        + " over the last step of widths.",
        glue=glue,
        table=table,
    )
    full_range = Evidence(
        "C4.5",
        np.array([gaps[name]["slope"] for name in sets]),
        part="full-range-slope",
        labels=list(sets),
        note=f"least-squares log-log slope over all widths {ns} of the mean gap over "
        f"{reps} splits, synthetic then concrete: "
        + ", ".join(f"{gaps[name]['slope']:.3f}" for name in sets),
        says="Over the whole range of widths the gap falls more slowly than p/N (slopes "
        + " and ".join(f"{gaps[name]['slope']:.2f}" for name in sets)
        + "): N gap/p, half a fitted neuron's output variance, grows from "
        + " and ".join(f"{g['scaled'][0]:.2f} to {g['scaled'][-1]:.2f}" for g in gaps.values())
        + (
            ", by less at each larger width."
            if all(np.all(np.diff(g["scaled"][1:] / g["scaled"][:-1]) < 0) for g in gaps.values())
            else "."
        ),
    )
    return tail, full_range
