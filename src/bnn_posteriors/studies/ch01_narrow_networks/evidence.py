"""Chapter 01's claim checks as evidence: what each check measured, with its table and glue.

Each ``c1_N_evidence`` function takes the computed results of the chapter (the dicts of
:mod:`.narrow_minima` and :mod:`.narrow_posterior`) and returns one
:class:`~bnn_posteriors.claims.checking.Evidence` per check of claim C1.N ([SAP] §2.1,
App. F.1), in the chapter's order; the chapter passes them to ``show_and_check``. An
Evidence names its check's ``part``: the rule and its bound are the claims catalogue's
(``claims/catalogue/01_narrow_networks.toml``), never set here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.site.settings_classes import NarrowNetworksSettings
from bnn_posteriors.site.tables import Overview, markdown_table
from bnn_posteriors.studies.ch01_narrow_networks.narrow_posterior import collapse_depth


def _nonempty(name: str, results) -> None:
    if not results:
        raise ValueError(f"{name} is empty: the check needs at least one result")


def _has_depths(name: str, results: Mapping, depths: Sequence[int]) -> None:
    missing = [depth for depth in depths if depth not in results]
    if missing:
        raise ValueError(f"{name} lacks depth(s) {missing}; the check compares L = {list(depths)}")


def settings_glue(cfg: NarrowNetworksSettings) -> dict:
    """The settings the chapter's prose cites, by glue name.

    ``cfg``: the chapter's settings (``profiles.settings("01_narrow_networks")``); reads
    ``n_obs``, ``sigma``, ``tau``, ``sigmas_weak``, ``depths_g``, ``depths_vi``,
    ``depths_mcmc``, ``num_chains``, ``num_samples``, ``target_acceptance_rate``,
    ``svi_steps`` and ``svi_particles``.
    """
    _nonempty("cfg.sigmas_weak", cfg.sigmas_weak)
    return dict(
        n_obs=cfg.n_obs,
        sigma=cfg.sigma,
        tau=cfg.tau,
        sigmas_weak=" and ".join(f"{s:g}" for s in cfg.sigmas_weak),
        **{f"sigma_weak_{i}": s for i, s in enumerate(cfg.sigmas_weak, 1)},
        depths_g=", ".join(str(depth) for depth in cfg.depths_g),
        sigma_plot=cfg.sigmas_weak[-1],
        depth_vi_max=max(cfg.depths_vi),
        depth_mcmc_max=max(cfg.depths_mcmc),
        draws_total=cfg.num_chains * cfg.num_samples * len(cfg.depths_mcmc),
        target_acceptance=cfg.target_acceptance_rate,
        svi_steps=cfg.svi_steps,
        svi_particles=cfg.svi_particles,
    )


def c1_1_evidence(orbit_dev: Mapping[int, float]) -> Evidence:
    """C1.1: the likelihood is constant on scaling orbits; ``orbit_dev`` is ``{L: largest
    relative change of the NLL}`` (:func:`narrow_minima.max_orbit_deviation`)."""
    _nonempty("orbit_dev", orbit_dev)
    worst = max(orbit_dev.values())
    rows = [(depth, f"{dev:.1e}") for depth, dev in orbit_dev.items()]
    return Evidence(
        "C1.1",
        worst,
        part="orbit",
        note="max relative change of the NLL over 20 random orbits per depth L=2..6 (float64)",
        glue={"orbit_dev_max": worst},
        table=markdown_table(("L", "max relative change of the NLL on the orbits"), rows),
    )


def c1_2_c1_3_evidence(penalty: Mapping) -> tuple[Evidence, Evidence, Evidence, Evidence]:
    """C1.2 in three parts (2^(L−1) sign patterns; equal magnitudes; the parenthesis "or 2^L if
    L is even and sgn(β̂) = 1", on the even depths with a positive slope) and C1.3 (eqs. 2 and
    3 have the same minima); ``penalty`` is ``{(L, ψ): dict}`` of
    :func:`narrow_minima.penalised_minima_grid`. Glues ``c12_zero_starts``, the starts that end
    at w = 0 for L ≥ 3."""
    _nonempty("penalty", penalty)
    even = {(d, psi): r for (d, psi), r in penalty.items() if d % 2 == 0 and r["beta_sign"] == 1}
    if not even:
        raise ValueError("C1.2's parenthesis needs an even depth with a positive slope β_pen")
    found = [r["patterns"] for r in penalty.values()]
    expected = [2 ** (depth - 1) for (depth, _) in penalty]
    header = (
        "L",
        "ψ",
        "sign patterns",
        "2^(L−1)",
        "|w| − |b_pen|^(1/L)",
        "rel. gap eq. 2 − eq. 3",
        "starts → 0",
    )
    rows = [
        (
            depth,
            f"{psi:.1f}",
            r["patterns"],
            2 ** (depth - 1),
            f"{r['magnitude_gap']:.1e}",
            f"{r['rel_gap']:.1e}",
            r["zero_starts"],
        )
        for (depth, psi), r in penalty.items()
    ]
    zero_starts = sum(r["zero_starts"] for (depth, _), r in penalty.items() if depth >= 3)
    return (
        Evidence(
            "C1.2",
            np.array(found) == np.array(expected),
            part="sign-patterns",
            labels=[f"L = {depth}, ψ = {psi:.1f}" for depth, psi in penalty],
            note="the number of distinct sign patterns among the global minimisers of eq. (2) "
            "equals 2^(L−1), for L = 2 … 6",
            glue={"c12_zero_starts": zero_starts},
            table=markdown_table(header, rows),
        ),
        Evidence(
            "C1.2",
            max(r["magnitude_gap"] for r in penalty.values()),
            part="magnitude",
            note="global minimisers have |w_l| = |beta_pen|^(1/L) for all l",
        ),
        Evidence(
            "C1.2",
            np.array([r["patterns"] for r in even.values()]),
            part="even-depth",
            bound=np.array([2**d for d, _ in even]),
            labels=[f"L = {d}, ψ = {psi:.1f}" for d, psi in even],
            note="distinct sign patterns among the global minimisers at the even depths, where "
            "sgn(beta_pen) = 1, against the parenthesis's 2^L",
            says="at the even depths the minimisers have "
            + ", ".join(f"{r['patterns']}" for r in even.values())
            + " sign patterns where the parenthesis counts "
            + ", ".join(f"{2**d}" for d, _ in even)
            + " = 2^L"
            + (
                ": only the sign vectors whose product is sgn(β̂) minimise eq. (2)"
                if any(r["patterns"] != 2**d for (d, _), r in even.items())
                else ""
            ),
        ),
        Evidence(
            "C1.3",
            max(r["rel_gap"] for r in penalty.values()),
            part="minima",
            note="max relative difference of the minima of eqs. (2) and (3), L=2..6, "
            "psi in settings",
        ),
    )


def c1_7_evidence(minima: Mapping[int, Mapping]) -> tuple[Evidence, Evidence, Evidence]:
    """C1.7: eq. (24) over w and g over β have the same minimum and minimiser, and the same
    local minima (part ``local-minima``); ``minima`` is ``{L: dict}`` of
    :func:`narrow_minima.matching_minima`."""
    _nonempty("minima", minima)
    header = ("L", "min −log p(w | y, x)", "min g", "∏ w*", "argmin g")
    rows = [
        (
            depth,
            f"{r['min_w']:.10f}",
            f"{r['min_g']:.10f}",
            f"{r['beta_of_w']:.8f}",
            f"{r['beta_g']:.8f}",
        )
        for depth, r in minima.items()
    ]
    return (
        Evidence(
            "C1.7",
            max(abs(r["min_w"] - r["min_g"]) / abs(r["min_g"]) for r in minima.values()),
            part="minima",
            note="relative gap of the minima of eq. (24) and g, L=2,3,4",
            table=markdown_table(header, rows),
        ),
        Evidence(
            "C1.7",
            max(abs(r["beta_of_w"] - r["beta_g"]) for r in minima.values()),
            part="minimiser",
            note="the minimiser of eq. (24) maps to the minimiser of g under beta = prod w",
        ),
        Evidence(
            "C1.7",
            [_local_gap(r["local_w"], r["local_g"]) for r in minima.values()],
            part="local-minima",
            labels=[f"L = {depth}" for depth in minima],
            note="per L, the largest relative gap between the values of the local minima of "
            "eq. (24) over w and of g over β, sorted by β (∞ where their numbers differ)",
            table=markdown_table(
                ("L", "local minima of eq. (24): (∏ w, value)", "local minima of g: (β, value)"),
                [
                    (depth, _pairs(r["local_w"]), _pairs(r["local_g"]))
                    for depth, r in minima.items()
                ],
            ),
            glue={
                "c1_7_local_counts": ", ".join(
                    f"{len(r['local_g'])} at L = {depth}" for depth, r in minima.items()
                )
            },
        ),
    )


def _pairs(minima) -> str:
    return "; ".join(f"({b:.6f}, {v:.6f})" for b, v in minima)


def _local_gap(local_w, local_g) -> float:
    """The largest relative gap of two lists of (β, value) local minima, both sorted by β;
    ∞ when they have different lengths (a minimum one side has and the other lacks)."""
    if len(local_w) != len(local_g) or not local_g:
        return math.inf
    return max(abs(vw - vg) / abs(vg) for (_, vw), (_, vg) in zip(local_w, local_g, strict=True))


def c1_8_evidence(lasso: Mapping[str, Mapping]) -> Evidence:
    """C1.8: at L = 2 the posterior mode is the closed-form lasso mode; ``lasso`` is
    ``{case: {"tau", "closed", "numerical"}}`` of :func:`narrow_minima.lasso_modes`."""
    _nonempty("lasso", lasso)
    rows = [
        (name, f"{m['tau']:.4f}", f"{m['closed']:.8f}", f"{m['numerical']:.8f}")
        for name, m in lasso.items()
    ]
    return Evidence(
        "C1.8",
        np.array([abs(m["numerical"] - m["closed"]) for m in lasso.values()]),
        part="mode",
        labels=list(lasso),
        note="|closed-form lasso mode - numerical posterior mode| for the "
        "data prior and a thresholded case",
        table=markdown_table(("case", "τ", "closed form (eq. lasso)", "numerical mode"), rows),
    )


def c1_9_evidence(depths: Sequence[int], shape: Mapping) -> tuple[Evidence, ...]:
    """C1.9: g is not convex for L > 2 (but is at L = 2), the likelihood's share falls with
    depth, and it goes to 0: it falls by a factor per decade of L bounded away from 1, out to
    L = 10⁶ (part ``limit``); ``shape`` is :func:`narrow_minima.g_shape` over ``depths``
    (which include 2)."""
    second, ratio = shape["min_second_diff"], shape["ratio_g1_g2"]
    far, limit = shape["limit_depths"], np.asarray(shape["ratio_limit"], dtype=float)
    if len(far) < 2 or len(limit) != len(far):
        raise ValueError("ratio_limit needs one ratio per limit depth, at two depths at least")
    factors = limit[:-1] / limit[1:]
    _has_depths("shape['min_second_diff']", second, (*depths, 2))
    if len(ratio) != len(depths):
        raise ValueError(f"ratio_g1_g2 has {len(ratio)} values for {len(depths)} depths")
    rows = [
        (depth, f"{second[depth]:.2e}", f"{r:.4f}") for depth, r in zip(depths, ratio, strict=True)
    ]
    return (
        Evidence(
            "C1.9",
            np.array([second[depth] < 0 for depth in depths if depth > 2]),
            part="non-convex",
            labels=[f"L = {depth}" for depth in depths if depth > 2],
            note="g has a negative second difference on [-1.5, 1.5] for every L > 2",
            table=markdown_table(("L", "min second difference of g", "g1/g2 at β̂"), rows),
        ),
        Evidence(
            "C1.9",
            second[2],
            part="convex-at-2",
            note="and none for L = 2 (convex lasso)",
        ),
        Evidence(
            "C1.9",
            ratio,
            part="ratio",
            labels=[f"L = {depth}" for depth in depths],
            note="the ratio g1/g2 at β̂ over the depths",
        ),
        Evidence(
            "C1.9",
            factors.tolist(),
            part="limit",
            labels=[f"L = {a} → {b}" for a, b in zip(far[:-1], far[1:], strict=True)],
            note="the factor by which g1/g2 at β̂ falls per decade of L, L = "
            + ", ".join(f"{d:g}" for d in far)
            + " (ratios "
            + ", ".join(f"{r:.3g}" for r in limit)
            + ")",
            glue={"c1_9_limit_ratio": float(limit[-1]), "c1_9_limit_depth": int(far[-1])},
        ),
    )


def c1_4_kl_evidence(kl: Mapping) -> Evidence:
    """C1.4, first check: the closed-form mean-field KL against Monte Carlo; ``kl`` is
    :func:`narrow_posterior.kl_against_monte_carlo` (``mu``, ``s``, ``closed``, ``mc``,
    ``se``). The value is the Monte-Carlo estimate minus the closed form in standard errors,
    (mc − closed) / se, which the catalogue's rule holds within 4 of 0."""
    if not kl["se"] > 0:
        raise ValueError(f"the Monte-Carlo standard error must be positive, got {kl['se']!r}")
    header = ("μ of q", "s of q", "KL, closed form (eq. KL)", "KL, Monte Carlo ± se")
    rows = [
        (
            ", ".join(f"{m:g}" for m in kl["mu"]),
            ", ".join(f"{v:g}" for v in kl["s"]),
            f"{kl['closed']:.4f}",
            f"{kl['mc']:.4f} ± {kl['se']:.4f}",
        )
    ]
    return Evidence(
        "C1.4",
        (kl["mc"] - kl["closed"]) / kl["se"],
        part="kl",
        note="Monte-Carlo KL within 4 standard errors of eq. (KL)",
        table=markdown_table(header, rows),
    )


def aitken_limit(values: Sequence[float]) -> float:
    """The limit of a sequence extrapolated from its last three terms by Aitken's Δ²:
    x − (Δx)²/Δ²x. Where the last steps do not shrink (Δ²x of the other sign than the
    steps, or 0), the sequence is not converging geometrically and its last term is
    returned. ValueError for fewer than three terms."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 3:
        raise ValueError(f"aitken_limit needs a sequence of at least 3 terms, got {x.shape}")
    d1, d2 = x[-2] - x[-3], x[-1] - x[-2]
    dd = d2 - d1
    if dd == 0 or np.sign(dd) == np.sign(d2):  # the steps do not shrink
        return float(x[-1])
    return float(x[-1] - d2**2 / dd)


def c1_4_c1_5_evidence(
    depths: Sequence[int], mfvi: Mapping[float, Mapping], sigma: float
) -> tuple[Evidence, Evidence, Evidence, Evidence]:
    """C1.4 (the MFVI means have equal magnitudes, L = 2..8) and C1.5 (the individual |μ_l|
    converge to 0 with depth, read as the Aitken limit of |ν|^(1/L) over its value at the
    first depth; |ν| shrinks; the KL's share grows) on the exact MFVI optima of the chapter's
    likelihood.

    ``mfvi``: ``{σ: dict}`` of :func:`narrow_posterior.mfvi_over_depth` over ``depths``, the
    chapter's ``sigma`` first, then the weaker likelihoods. Glues ``mfvi_ratio_max`` and the
    depth at which MFVI collapses to ν = 0: ``collapse_main``, ``collapse_weak_1``, ….
    """
    if sigma not in mfvi:
        raise ValueError(f"mfvi has no fit for the chapter's sigma {sigma!r}")
    main = mfvi[sigma]
    ratio_2_8 = [r for depth, r in zip(depths, main["ratio"], strict=True) if 2 <= depth <= 8]
    _nonempty("the MFVI fits of depths 2..8", ratio_2_8)
    collapse = {s: collapse_depth(depths, m["nu"]) for s, m in mfvi.items()}
    names = ["collapse_main"] + [f"collapse_weak_{i}" for i in range(1, len(mfvi))]
    glue = {
        name: f"none up to L = {max(depths)}" if depth is None else f"L = {depth}"
        for name, depth in zip(names, collapse.values(), strict=True)
    }
    individual = np.abs(np.asarray(main["nu"], dtype=float)) ** (1.0 / np.asarray(depths))
    rows = [
        (depth, f"{nu:.4f}", f"{share:.4f}", f"{r:.6f}")
        for depth, nu, share, r in zip(
            depths, main["nu"], main["kl_share"], main["ratio"], strict=True
        )
    ]
    return (
        Evidence(
            "C1.4",
            max(ratio_2_8),
            part="equal-means",
            note="max over L=2..8 of max|mu_l|/min|mu_l| of the fitted MFVI means",
            glue={"mfvi_ratio_max": max(ratio_2_8), **glue},
            table=markdown_table(("L", "ν", "KL share", "max|μ| / min|μ|"), rows),
        ),
        Evidence(
            "C1.5",
            aitken_limit(individual) / individual[0],
            part="individual-means",
            note="the limit of |mu_l| = |nu|^(1/L) of the MFVI optimum over the depths, "
            "extrapolated from the last three by Aitken's delta-squared, over its value at L = "
            f"{depths[0]}; |mu_l| per depth: " + ", ".join(f"{v:.5f}" for v in individual),
            says=f"the individual means |μ_l| = |ν|^(1/L) go from {individual[0]:.4f} at L = "
            f"{depths[0]} to {individual[-1]:.4f} at L = {depths[-1]}, with shrinking steps: "
            f"their extrapolated limit, {aitken_limit(individual):.3f}, is not 0",
            glue={
                "c15_mu_first": individual[0],
                "c15_mu_last": individual[-1],
                "c15_mu_limit": aitken_limit(individual),
            },
        ),
        Evidence(
            "C1.5",
            np.abs(main["nu"]),
            part="nu",
            labels=[f"L = {depth}" for depth in depths],
            note="|ν| of the MFVI optimum over the depths",
        ),
        Evidence(
            "C1.5",
            main["kl_share"],
            part="kl-share",
            labels=[f"L = {depth}" for depth in depths],
            note="the KL's share of the negative ELBO over the depths",
        ),
    )


def svi_summary(svi: Mapping[int, Mapping], depths: Sequence[int], nu_exact) -> Overview:
    """The stochastic-SVI cross-check of the exact MFVI fit, an :class:`Overview`: a table and
    the glue ``svi_ratio_max``. ``svi``: :func:`narrow_posterior.svi_over_depth`; ``nu_exact``: the
    exact fits' ν over ``depths`` (which include every SVI depth)."""
    _nonempty("svi", svi)
    _has_depths("depths", dict.fromkeys(depths), list(svi))
    exact = dict(zip(depths, nu_exact, strict=True))
    header = ("L", "ν (SVI)", "ν (exact)", "ELBO of the SVI fit", "max|μ| / min|μ| (SVI)")
    rows = [
        (depth, f"{r['nu']:.4f}", f"{exact[depth]:.4f}", f"{r['elbo']:.3f}", f"{r['ratio']:.3f}")
        for depth, r in svi.items()
    ]
    return Overview(
        markdown_table(header, rows), {"svi_ratio_max": max(r["ratio"] for r in svi.values())}
    )


def c1_6_rate_evidence(suppression: Mapping, sigma: float) -> Evidence:
    """C1.6, "exponentially suppressed": the per-layer decrease of log P(|β| ≥ |β̂|/2 | y)
    over its last interval of depths, against its largest over the depths (1 for a
    constant rate, an exponential; towards 0 for a power law or a floor). ``suppression`` is
    :func:`narrow_posterior.nonzero_suppression` at the weak likelihood ``sigma``."""
    rate, depths, prob = (suppression[k] for k in ("rate", "depths", "prob"))
    if len(rate) != len(depths) - 1 or len(prob) != len(depths) or len(rate) < 2:
        raise ValueError("suppression needs a probability per depth and two rates at least")
    share = float(rate[-1] / max(rate)) if max(rate) > 0 else 0.0
    rows = [
        (depth, f"{p:.3g}", "" if i == 0 else f"{rate[i - 1]:.3f}")
        for i, (depth, p) in enumerate(zip(depths, prob, strict=True))
    ]
    return Evidence(
        "C1.6",
        share,
        part="exponential-rate",
        note=f"σ = {sigma:g}: the per-layer decrease of log P(|β| ≥ |β̂|/2 | y), exact, over "
        f"L = {depths[-2]}..{depths[-1]}, / its largest over L = {depths[0]}..{depths[-1]} "
        "(rates " + ", ".join(f"{r:.3f}" for r in rate) + ")",
        table=markdown_table(("L", "P(|β| ≥ |β̂|/2 | y)", "−Δ log P / ΔL"), rows),
        glue={
            "c1_6_rate_sigma": sigma,
            "c1_6_rate_last": float(rate[-1]),
            "c1_6_rate_prob_last": float(prob[-1]),
            "c1_6_rate_depth_last": int(depths[-1]),
        },
    )


def c1_6_evidence(nuts_runs: Mapping[int, Mapping]) -> tuple[Evidence, ...]:
    """C1.6: the exact E|β| decreases with depth, NUTS agrees with it, the weights' marginals
    approach the prior (L = 2 against L = 8) and the chains mix (R-hat).

    ``nuts_runs``: ``{L: dict}`` of :func:`narrow_posterior.nuts_over_depth`, with L = 2 and
    8. Glues ``ks_2``, ``ks_8``, the largest and smallest decrease of the exact E|β|
    (``exact_step_max``, ``exact_step_min``) and ``divergences_total``.
    """
    _has_depths("nuts_runs", nuts_runs, (2, 8))
    runs = nuts_runs.values()
    ks = {depth: r["ks"] for depth, r in nuts_runs.items()}
    exact_means = [r["exact"] for r in runs]
    z_scores = [abs(r["mean"] - r["exact"]) / r["mcse"] for r in runs]
    header = (
        "L",
        "E|β| (NUTS)",
        "MCSE",
        "exact",
        "z",
        "KS(|w|, half-normal)",
        "R-hat",
        "divergences",
    )
    rows = [
        (
            depth,
            f"{r['mean']:.4f}",
            f"{r['mcse']:.4f}",
            f"{r['exact']:.4f}",
            f"{(r['mean'] - r['exact']) / r['mcse']:.1f}",
            f"{ks[depth]:.3f}",
            f"{r['rhat']:.3f}",
            r["divergences"],
        )
        for depth, r in nuts_runs.items()
    ]
    glue = dict(
        ks_2=ks[2],
        ks_8=ks[8],
        exact_step_max=float(-np.diff(exact_means).max()),
        exact_step_min=float(-np.diff(exact_means).min()),
        divergences_total=sum(r["divergences"] for r in runs),
    )
    return (
        Evidence(
            "C1.6",
            exact_means,
            part="exact-mean",
            labels=[f"L = {depth}" for depth in nuts_runs],
            note="the exact posterior mean of |β| over the depths",
            glue=glue,
            table=markdown_table(header, rows),
        ),
        Evidence(
            "C1.6",
            max(z_scores),
            part="nuts-z",
            note="NUTS estimates of E|beta| agree with the exact values: max |z| over L=1..8",
        ),
        Evidence(
            "C1.6",
            ks[2],
            part="ks",
            bound=ks[8],
            note="KS distance of |w_l| to the prior half-normal: L=2 above L=8",
        ),
        Evidence(
            "C1.6",
            max(r["rhat"] for r in runs),
            part="rhat",
            note="max R-hat of |beta| and |w_l| over L=1..8 (sign-flip invariant quantities)",
        ),
    )
