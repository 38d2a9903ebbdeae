"""The evidence of chapter 03's claims C3.1–C3.7: one :class:`Evidence` per check.

Each function takes what the chapter computed (with :mod:`.runs` and
:mod:`bnn_posteriors.models.symmetry.priors`) and returns the measured value, the part of the
claim's catalogue entry it is checked as (the rule, its bound and tolerance are the
catalogue's, ``claims/catalogue/03_symmetries.toml``), the note, the values the prose cites
and a table of the numbers behind the value, for
:func:`bnn_posteriors.claims.checking.show_and_check`. ``cfg`` is the chapter's settings
(:func:`bnn_posteriors.site.profiles.settings`).
"""

from __future__ import annotations

import numpy as np

from bnn_posteriors.claims.checking import Evidence, Gate, catalogue_check
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import SymmetriesSettings
from bnn_posteriors.studies.ch01_narrow_networks import narrow_posterior

# Symmetries of App. B that leave an MLP's function unchanged: (activation, operation).
INVARIANT = (
    ("relu", "permutation"),
    ("tanh", "permutation"),
    ("relu", "rescaling"),
    ("tanh", "sign flip"),
)
# the smallest prior variance [SAP] Fig. 2 may show: its panel says tau^2 = 0.1, the authors'
# figure script names that run's configuration SCALE01 (a prior scale 0.1: tau^2 = 0.01)
PAPER_SMALLEST_TAU2 = 0.01


def _quantities(rows) -> str:
    return tables.markdown_table(("quantity", "value"), rows, align="lr")


def c3_1(changes: dict) -> tuple[Evidence, Evidence]:
    """C3.1, Defs. B.1–B.3: the invariant operations change an MLP at round-off only, the
    ReLU sign flip always changes it.

    ``changes``: (activation, operation) → per network and layer, max |f − f_transformed|
    (:func:`bnn_posteriors.models.symmetry.priors.mlp_symmetry_changes`).
    """
    missing = [k for k in (*INVARIANT, ("relu", "sign flip")) if k not in changes]
    if missing:
        raise ValueError(f"changes lacks the (activation, operation) pairs {missing}")
    rows = [(act, op, f"{min(v):.2e}", f"{max(v):.2e}") for (act, op), v in changes.items()]
    header = ("activation", "operation", "smallest change", "largest change")
    invariant = Evidence(
        "C3.1",
        max(max(changes[k]) for k in INVARIANT),
        part="invariant",
        note="max |f - f_transformed| for permutations (ReLU, tanh), ReLU rescaling, "
        "tanh sign flip",
        table=tables.markdown_table(header, rows),
    )
    relu_flip = Evidence(
        "C3.1",
        min(changes[("relu", "sign flip")]),
        part="relu-flip",
        note="min over networks and layers of max |f - f_flipped| for the ReLU sign flip",
    )
    return invariant, relu_flip


def c3_2(flip_gap: dict, num_draws: int, num_weights: int = 6) -> Evidence:
    """C3.2, Prop. B.4: symmetric factorised priors are invariant under sign flips.

    ``flip_gap``: prior → max |log p(θ) − log p(Σθ)| over ``num_draws`` draws of
    ``num_weights`` weights (:func:`.runs.sign_flip_gaps`).
    """
    if not flip_gap:
        raise ValueError("flip_gap holds no prior")
    draws = f"{num_draws:,}".replace(",", " ")
    rows = [(kind, f"{gap:.1e}") for kind, gap in flip_gap.items()]
    return Evidence(
        "C3.2",
        max(flip_gap.values()),
        part="sign-flip",
        note=f"Gaussian and Laplace priors, {draws} random draws of {num_weights} weights and "
        "random signs",
        table=tables.markdown_table(("prior", "max |log p(θ) − log p(Σθ)|"), rows, align="lr"),
    )


def c3_3(roots_ok, min_gap_away, cases=None) -> tuple[Evidence, Evidence]:
    """C3.3, Prop. B.10: the only positive roots of ϖ(c) are 1 and |θ2/θ1|, and ϖ ≠ 0 away
    from them; ``roots_ok``, ``min_gap_away``: :func:`.runs.pairwise_roots`, and ``cases``
    the names of its cases (:func:`.runs.pairwise_case_names`), which the finding cites."""
    roots_ok = np.array(roots_ok)
    if roots_ok.size == 0 or len(min_gap_away) != roots_ok.size:
        raise ValueError(
            f"need one entry per case in both, got {roots_ok.size} and {len(min_gap_away)}"
        )
    table = _quantities(
        [
            ("(θ₁, θ₂, prior) cases", roots_ok.size),
            ("roots exactly {1, |θ₂/θ₁|}", int(roots_ok.sum())),
            ("smallest |ϖ| at distance > 0.05 from the roots", f"{min(min_gap_away):.2e}"),
        ]
    )
    roots = Evidence(
        "C3.3",
        roots_ok,
        part="roots",
        labels=cases,
        note="the only positive roots of ϖ(c) for c in [0.05, 20] are 1 and |θ2/θ1|",
        table=table,
    )
    away = Evidence(
        "C3.3",
        min(min_gap_away),
        part="away",
        note="varpi(c) != 0 away from the two roots on the grid",
    )
    return roots, away


def c3_4(cx: dict, ce: dict, paper_root: float) -> tuple[Evidence, ...]:
    """C3.4, Fig. 6: the non-trivial root of h, its closed form, its distance to the excluded
    values, and its identity with Prop. B.10's swap root of (‖(w1, b1)‖, |w2|).

    ``cx``: :func:`bnn_posteriors.models.symmetry.priors.counterexample_study` for the
    weights ``ce`` (w1, w2, b1) and the value ``paper_root`` marked in the authors' figure.
    """
    c_star, c_num = cx["c_star"], cx["c_num"]
    swap_gap, swap_root, norm_l2 = cx["swap_gap"], cx["swap_root"], cx["norm_l2"]
    paper_key = f"paper's {paper_root}"
    if paper_key not in cx["h_at"]:
        raise ValueError(f"cx['h_at'] has no value at the paper's root {paper_root}")
    w2 = abs(ce["w2"])
    root_rows = [
        ("closed form c*", f"{c_star:.6f}"),
        ("numerical root", f"{c_num:.6f}"),
        ("all positive roots of h", ", ".join(f"{r:.6f}" for r in cx["numeric"])),
        *[(f"h(c) ({name})", f"{v:.2e}") for name, v in cx["h_at"].items()],
    ]
    swap_rows = [
        ("‖(w₁, b₁)‖₂", f"{norm_l2:.6f}"),
        ("|w₂|", f"{w2:g}"),
        ("‖c*(w₁, b₁)‖₂", f"{c_star * norm_l2:.6f}"),
        ("|w₂|/c*", f"{w2 / c_star:.6f}"),
        *[(f"swap root |w₂|/‖(w₁, b₁)‖ ({k})", f"{v:.6f}") for k, v in swap_root.items()],
        *[(f"max |gap − pairwise gap of the norm| ({k})", f"{v:.1e}") for k, v in swap_gap.items()],
    ]
    glue = dict(
        c_star=c_star,
        paper_root=paper_root,
        w2_abs=w2,
        h_paper=abs(cx["h_at"][paper_key]),
        h_root=abs(cx["h_at"]["numerical"]),
        norm_w1b1=norm_l2,
        swap_root_laplace=swap_root["laplace"],
    )
    return (
        Evidence(
            "C3.4",
            c_num,
            part="root",
            note="the non-trivial positive root of h (paper: approx. 0.777)",
            glue=glue,
            table=_quantities(root_rows),
        ),
        Evidence(
            "C3.4",
            abs(c_num - c_star),
            part="closed-form",
            note="numerical root equals the closed form",
        ),
        Evidence(
            "C3.4",
            cx["excluded_gap"],
            part="excluded",
            note="the root is none of the excluded values 1, w2/w1, w2/b1",
        ),
        Evidence(
            "C3.4",
            max(swap_gap.values()),
            part="swap-gap",
            note="log-ratio of h = Prop. B.10 gap of (||(w1, b1)||, |w2|), Gaussian (l2) and "
            "Laplace (l1), c in [0.05, 20]",
            table=_quantities(swap_rows),
        ),
        Evidence(
            "C3.4",
            abs(c_num - swap_root["gaussian"]),
            part="swap-root",
            note="the root of h is the swap root |w2|/||(w1, b1)||_2 of Prop. B.10",
        ),
    )


def c3_5(printed, distant, depth: int) -> tuple[Evidence, Evidence]:
    """C3.5, App. B.2: the distant-layer rescaling as printed ("w_1 and w_2 scaled with c,
    w_l and w_{l+1} with 1/c"), which decides the claim, and the invariant version that swaps
    the related layers (further finding ``corrected``), each on a factorised N(0, 1) prior.

    ``printed``, ``distant``: |log-prior change| per random depth-``depth`` chain of the two
    scalings (:func:`bnn_posteriors.models.symmetry.priors.distant_scaling_draws`).
    """
    if len(distant) == 0 or len(printed) == 0:
        raise ValueError("distant and printed must hold draws")
    return (
        Evidence(
            "C3.5",
            max(printed),
            part="printed",
            note=f"factorised N(0,1) prior, the printed distant-layer scaling (c, c, 1/c, 1/c), "
            f"{len(printed)} random depth-{depth} chains",
            says=f"scaled as printed, the related weights change the N(0, 1) log-prior by up to "
            f"{max(printed):.3g}: the printed transformation keeps the function, not the prior",
        ),
        Evidence(
            "C3.5",
            max(distant),
            part="corrected",
            note=f"factorised N(0,1) prior, distant-layer rescaling (c, 1/c, c, 1/c), "
            f"{len(distant)} random depth-{depth} chains",
        ),
    )


def c3_6(
    fits: dict, n_train: int, beta_hat: float, tau2_threshold: float, cfg: SymmetriesSettings
) -> Evidence:
    """C3.6, Fig. 2: the four parts of the claim, measured by
    :func:`narrow_posterior.hyperbola_parts` from ``fits`` (:func:`.runs.figure2_fits`), each to
    lie below its bound in the catalogue's check ``four-parts`` (shown in the table)."""
    smallest = min(cfg.tau2s)
    if smallest not in fits or PAPER_SMALLEST_TAU2 not in fits:
        raise ValueError(f"fits must hold tau2 = {smallest} and {PAPER_SMALLEST_TAU2}")
    parts = narrow_posterior.hyperbola_parts(fits, beta_hat, cfg.tau2s_figure)
    values = list(parts.values())
    bounds = catalogue_check("C3.6", "four-parts")["bound"]
    if len(bounds) != len(values):
        raise ValueError(
            f"C3.6 measures {len(values)} parts but its catalogue check has {len(bounds)} bounds"
        )
    rows = [
        (text, f"{value:.4g}", f"< {bound:g}", "yes" if value < bound else "no")
        for text, value, bound in zip(parts, values, bounds, strict=True)
    ]
    mfvi_by_tau2 = {f"{t:g}": round(abs(r["svi_nu"]), 4) for t, r in fits.items()}
    glue = dict(
        n_rows=cfg.n_max,
        n_train=n_train,
        num_chains=cfg.num_chains,
        tau2_threshold=tau2_threshold,
        nuts_mass_smallest=fits[smallest]["nuts_mass"],
        exact_beta_smallest=fits[smallest]["exact_abs_beta"],
        svi_nu_tau01=fits[PAPER_SMALLEST_TAU2]["svi_nu"],
        exact_beta_tau01=fits[PAPER_SMALLEST_TAU2]["exact_abs_beta"],
    )
    return Evidence(
        "C3.6",
        np.array(values),
        part="four-parts",
        labels=list(parts),
        note="[MFVI |mu1 mu2| at the smallest tau2 (< 0.05), NUTS P(|beta| <= 0.05) there "
        "(< 0.5: mass away from (0,0)), MFVI 1 - |mu1 mu2|/beta_hat at tau2 = 1 (< 0.5), "
        f"chains changing the sign of w1 at tau2 in {cfg.tau2s_figure} (< 1)]; "
        f"MFVI |mu1 mu2| per tau2: {mfvi_by_tau2}",
        glue=glue,
        table=tables.markdown_table(
            ("part of the claim", "measured", "claim", "holds"), rows, align="lrrl"
        ),
    )


def _trap_gate(gain: dict, progress: dict, tau2_c: float, cfg: SymmetriesSettings) -> Gate:
    return Gate(
        passed=bool(gain["trapped"]),
        why=f"plain MFVI is {'trapped' if gain['trapped'] else 'not trapped'} in this network: "
        f"above tau2_c = {tau2_c:.5f} the median plain run reaches "
        f"{min(progress.values()):.2f} of the plain optimum nu* or more at every tau2 / tau2_c "
        f"in {list(cfg.adjusted_scan)}, and (0, 0) is a stable fixed point of the plain ELBO "
        "only for tau2 <= tau2_c, where it is the optimum; so there is no failure of plain "
        "MFVI for the adjusted prior to improve on",
        decide="a network and initialisation in which plain MFVI is trapped (its median run "
        "ends below half of its optimum, at a symmetric fixed point), e.g. a deeper or wider "
        "network with spurious fixed points started at mu = 0, and there plain and adjusted "
        "runs with the same keys: better convergence if the adjusted runs end nearer the "
        "optimum, by more than their seed-to-seed spread",
    )


def c3_7(
    scan: dict, summary: dict, tau2_c: float, beta_hat: float, cfg: SymmetriesSettings
) -> tuple[Evidence, ...]:
    """C3.7, Prop. B.5, on the two-weight network: three further findings (better convergence
    where plain MFVI is trapped, gated on a trap existing, ``two-weight-trap``; the adjusted
    prior breaks the fixed point μ = 0; it does not lift MFVI out of Fig. 2's collapse). The
    claim is decided where a trap exists, by :func:`c3_7_deep_trap`.

    ``scan``: :func:`.runs.adjusted_runs`; ``summary``: :func:`.runs.adjusted_summary`;
    ``tau2_c``: the τ² below which MFVI's optimum is (0, 0).
    """
    smallest = min(cfg.tau2s)
    if smallest not in scan:
        raise ValueError(f"scan must hold the smallest tau2 of cfg.tau2s, {smallest}")
    trap, gain = summary["trap"], summary["gain"]
    grad_zero, grad_plain = np.asarray(summary["grad_zero"]), summary["grad_plain"]
    above, progress, n_short, jitter = (trap[k] for k in ("above", "progress", "n_short", "jitter"))
    at_smallest = scan[smallest]
    at = {
        t: (float(a), float(p))
        for t, a, p in zip(gain["at"], gain["adjusted"], gain["plain"], strict=True)
    }
    n_runs_above = len(above) * cfg.n_adjusted_seeds
    r0 = cfg.adjusted_scan[0]
    table = _quantities(
        [
            (f"ν* at τ² = {r0:g} τ²_c", f"{jitter[1]:.4f}"),
            ("ν* at τ² / (1 + ε), τ² / (1 − ε)", f"{jitter[0]:.4f}, {jitter[2]:.4f}"),
            *[
                (f"median plain |μ₁μ₂| / ν* at τ² = {t / tau2_c:.2f} τ²_c", f"{p:.3f}")
                for t, p in progress.items()
            ],
            ("plain runs below ν*/2 above τ²_c", f"{n_short['plain']} of {n_runs_above}"),
            ("adjusted runs below ν*/2 above τ²_c", f"{n_short['adjusted']} of {n_runs_above}"),
        ]
    )
    glue = dict(
        adjusted_scan=", ".join(f"{r:g}" for r in cfg.adjusted_scan),
        n_adjusted=cfg.n_adjusted_seeds,
        adjusted_sigma0=cfg.adjusted_sigma0,
        adjusted_eps=cfg.adjusted_eps,
        tau2_critical=tau2_c,
        min_progress=min(progress.values()),
        n_short_plain=n_short["plain"],
        n_short_adjusted=n_short["adjusted"],
        n_runs_above=n_runs_above,
        adjusted_max_smallest=float(at_smallest["adjusted"].max()),
        beta_hat=beta_hat,
        jitter_r=r0,
        jitter_lo=jitter[0],
        jitter_mid=jitter[1],
        jitter_hi=jitter[2],
        adjusted_gain_at=gain["at"][0] / tau2_c,
        adjusted_at_progress=at[gain["at"][0]][0],
        plain_at_progress=at[gain["at"][0]][1],
        grad_zero_min=float(grad_zero.min()),
        grad_zero_max=float(grad_zero.max()),
        grad_zero_n=grad_zero.size,
        grad_plain=float(grad_plain),
        adjusted_theta0_smallest=float(np.median(at_smallest["theta0"])),
        smallest_tau2=smallest,
    )
    if gain["trapped"]:
        trapped = [round(t / tau2_c, 2) for t in gain["trapped"]]
        opening = f"plain MFVI is trapped at tau2 / tau2_c = {trapped}; "
    else:
        opening = (
            "no trap to escape: above tau2_c the median plain run reaches "
            f"{min(progress.values()):.2f} of its optimum or more; where it gets least far "
        )
    at_text = {f"{t / tau2_c:.2f} tau2_c": [round(a, 4), round(p, 4)] for t, (a, p) in at.items()}
    progress_text = {f"{t / tau2_c:.2f}": round(p, 4) for t, p in progress.items()}
    claim = Evidence(
        "C3.7",
        gain["adjusted"],
        part="two-weight-trap",
        labels=[f"τ² = {t:g}" for t in np.atleast_1d(gain["at"])],
        gate=_trap_gate(gain, progress, tau2_c, cfg),
        note="median adjusted |mu1 mu2| / nu* "
        f"({cfg.n_adjusted_seeds} runs, the plain runs' SVI keys) at the tau2 where plain MFVI "
        "is trapped (median plain run below nu*/2), else where it gets least far, as "
        "{tau2: [adjusted, plain]}: "
        + str(at_text)
        + "; median plain |mu1 mu2| / nu* per tau2 / tau2_c: "
        + str(progress_text),
        says=opening
        + ", ".join(
            f"({t / tau2_c:.2f} tau2_c) the median adjusted run reaches {a:.2f} of the "
            f"optimum against the plain runs' {p:.2f}"
            for t, (a, p) in at.items()
        ),
        glue=glue,
        table=table,
    )
    breaks = Evidence(
        "C3.7",
        grad_zero,
        part="breaks-fixed-point",
        labels=[f"adjusted prior {i + 1}" for i in range(np.size(grad_zero))],
        note=f"|grad_mu ELBO| at mu = 0 under each of the {grad_zero.size} adjusted priors "
        "N(theta0, Sigma) of the scan (q's sd at the plain optimum's; the gradient there is "
        f"|theta0 / Sigma| whatever the sd); under the plain prior it is {grad_plain:g}",
        says="the adjusted prior breaks the sign-flip symmetry that keeps mu = 0 a fixed point "
        f"of MFVI: the ELBO's gradient at mu = 0 is {grad_plain:g} under the plain prior and "
        f"between {grad_zero.min():.3g} and {grad_zero.max():.3g} under each of the "
        f"{grad_zero.size} adjusted priors drawn",
    )
    theta0 = float(np.median(at_smallest["theta0"]))
    collapse = Evidence(
        "C3.7",
        at_smallest["adjusted"],
        part="fig2-collapse",
        bound=beta_hat / 2,
        labels=[f"run {i + 1}" for i in range(np.size(at_smallest["adjusted"]))],
        note=f"adjusted-prior |mu1 mu2| per run at tau2 = {smallest:g} (below tau2_c), where "
        f"plain SVI sits at (0,0) (max plain |mu1 mu2| {float(at_smallest['plain'].max()):.1e}), "
        f"must move at least halfway to beta_hat; median |theta01 theta02| = {theta0:.2e}",
        says=f"where Fig. 2's MFVI collapses (tau2 = {smallest:g}, below tau2_c) the adjusted "
        f"runs stay there too: |mu1 mu2| <= {float(at_smallest['adjusted'].max()):.1e}, on the "
        f"scale of their prior means' |theta01 theta02| (median {theta0:.1e}), against "
        f"beta_hat = {beta_hat:.3f}",
    )
    return claim, breaks, collapse


def c3_7_deep_trap(trap: dict, depth: int) -> tuple[Evidence, Evidence]:
    """C3.7, Prop. B.5, where plain MFVI is trapped (the narrow network of ``depth`` started
    near μ = 0): "better convergence", the share of adjusted runs that reach half of the
    plain optimum ν* minus the share of plain runs that do, from the same starts
    (``trap-better``); "ensures", the share of adjusted runs that reach it (``trap-ensures``),
    per θ0 scale σ0. Gated on the trap: the median plain run below ν*/2.
    ``trap``: :func:`.runs.deep_trap_runs`."""
    if not trap:
        raise ValueError("trap holds no σ0")
    rows, better, ensures, plain_medians = [], [], [], []
    for sigma0, r in trap.items():
        reach_adj = float(np.mean(r["adjusted"] >= r["nu_star"] / 2))
        reach_plain = float(np.mean(r["plain"] >= r["nu_star"] / 2))
        better.append(reach_adj - reach_plain)
        ensures.append(reach_adj)
        plain_medians.append(float(np.median(r["plain"]) / r["nu_star"]))
        rows.append(
            (
                f"{sigma0:g}",
                f"{r['nu_star']:.4f}",
                f"{plain_medians[-1]:.3g}",
                f"{int(np.sum(r['plain'] >= r['nu_star'] / 2))} of {r['plain'].size}",
                f"{int(np.sum(r['adjusted'] >= r['nu_star'] / 2))} of {r['adjusted'].size}",
            )
        )
    trapped = max(plain_medians) < 0.5
    gate = Gate(
        passed=bool(trapped),
        why=f"the median plain run ends at {max(plain_medians):.3g} of the plain optimum nu* "
        f"(L = {depth}, started near mu = 0): "
        + ("a trap" if trapped else "no trap, nothing to improve on"),
        decide="a network and initialisation in which the median plain MFVI run ends below "
        "half of its optimum",
    )
    labels = [f"σ0 = {s0:g}" for s0 in trap]
    table = tables.markdown_table(
        ("σ0", "ν*", "median plain |∏μ| / ν*", "plain runs ≥ ν*/2", "adjusted runs ≥ ν*/2"),
        rows,
    )
    first = next(iter(trap.values()))
    glue = {
        "trap_depth": depth,
        "trap_runs": int(first["plain"].size),
        "trap_nu_star": float(first["nu_star"]),
        "trap_plain_median": max(plain_medians),
        "trap_ensures_min": min(ensures),
        "trap_ensures_min_sigma0": float(list(trap)[int(np.argmin(ensures))]),
        "trap_sigma0s": ", ".join(f"{s0:g}" for s0 in trap),
    }
    return (
        Evidence(
            "C3.7",
            better,
            part="trap-better",
            labels=labels,
            gate=gate,
            note=f"L = {depth}, per σ0: share of adjusted runs reaching ν*/2 − share of plain "
            "runs reaching it, same starts near μ = 0",
            says="Where plain MFVI is trapped at μ = 0, the adjusted prior gets more runs out "
            "of the trap at every σ0."
            if min(better) > 0
            else "Where plain MFVI is trapped at μ = 0, the adjusted prior does not get more runs "
            "out at every σ0.",
            glue=glue,
            table=table,
        ),
        Evidence(
            "C3.7",
            ensures,
            part="trap-ensures",
            labels=labels,
            gate=gate,
            note=f"L = {depth}, per σ0: share of adjusted runs reaching ν*/2",
            says=f"Every adjusted run leaves the trap at every σ0 of {glue['trap_sigma0s']}."
            if min(ensures) >= 1
            else f"The adjusted prior does not ensure it: at σ0 = "
            f"{glue['trap_ensures_min_sigma0']:g} only {min(ensures):.3g} of the adjusted runs "
            "leave the trap.",
        ),
    )
