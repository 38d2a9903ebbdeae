"""The NUTS runs of chapter 02 on airfoil and what the chapter measures on them ([SAP] App. D.2).

``cfg`` is the chapter's settings (:func:`bnn_posteriors.site.profiles.settings`); a run is
the dict of :func:`sample_posterior` (``u`` and
``W1`` shaped (chains, draws, H, d), ``w2`` (chains, draws, H), ``sigma``, ``stats``,
``potential``); ``runs`` maps each width of ``cfg.widths_hidden`` to its run, in order.
Functions that draw random components take the chapter's one ``numpy`` generator and
consume it in the order the chapter calls them.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.inference import mcmc
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import ConvexifiedReluSettings
from bnn_posteriors.studies.ch02_convexified_relu import chain_marginals
from bnn_posteriors.theory import convexified_relu as convex


def flat(draws) -> np.ndarray:
    """Draws (chains, draws, ...) flattened after the draw axis: (chains, draws, components)."""
    draws = np.asarray(draws)
    if draws.ndim < 2:
        raise ValueError(f"draws must be shaped (chains, draws, ...), got shape {draws.shape}")
    return draws.reshape(*draws.shape[:2], -1)


def sample_posterior(
    key_warm,
    key_nuts,
    x,
    y,
    width: int,
    *,
    prior_scale: float,
    num_chains: int,
    warm_steps: int,
    warm_learning_rate: float,
    num_warmup: int,
    num_samples: int,
    target_acceptance_rate: float,
    max_tree_depth: int,
    chunk_size: int | None = None,
    cache: bool | Path = False,
    progress: bool = False,
) -> dict:
    """NUTS on the bias-free two-layer ReLU regression net, warm-started ([SAP] App. D.2).

    Every chain starts at its own MAP estimate (:func:`mcmc.warm_starts`) and runs NUTS
    (:func:`mcmc.nuts`) on :func:`models.mlp_regression` with widths (d, ``width``, 1) and
    log σ sampled. Returns ``u`` (chains, draws, H, d) (:func:`group_hadamard`), the paper's
    ``W1`` (chains, draws, H, d) and ``w2`` (chains, draws, H), ``sigma`` (chains, draws),
    the sampler's ``stats`` and the warm starts' final ``potential`` (chains,).
    ``chunk_size``, ``cache``, ``progress``: a long run in resumable chunks of draws
    (:func:`mcmc.nuts`).
    """
    kwargs = {
        "x": x,
        "y": y,
        "widths": (x.shape[1], width, 1),
        "bias": False,
        "prior_scale": prior_scale,
    }
    positions, potential = mcmc.warm_starts(
        key_warm,
        models.mlp_regression,
        kwargs,
        num_chains=num_chains,
        num_steps=warm_steps,
        learning_rate=warm_learning_rate,
    )
    samples, stats = mcmc.nuts(
        key_nuts,
        models.mlp_regression,
        kwargs,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        init_positions=positions,
        target_acceptance_rate=target_acceptance_rate,
        max_num_doublings=max_tree_depth,
        chunk_size=chunk_size,
        cache=cache,
        progress=progress,
    )
    samples = jax.tree_util.tree_map(np.asarray, samples)
    params = [{"W": samples["W0"]}, {"W": samples["W1"]}]  # (chains, draws, ...)
    return {
        "u": np.asarray(convex.group_hadamard(params)),
        "W1": np.swapaxes(samples["W0"], -1, -2),
        "w2": samples["W1"][..., 0],
        "sigma": np.exp(samples["log_sigma"]),
        "stats": stats,
        "potential": potential,
    }


def sample_widths(key_warm, key_nuts, x, y, cfg: ConvexifiedReluSettings) -> dict:
    """Warm-started NUTS at every width of ``cfg.widths_hidden`` (:func:`sample_posterior`).

    Each key is split into one key per width, used in order. Returns ``{width: run}``.
    """
    widths = tuple(cfg.widths_hidden)
    if not widths:
        raise ValueError("cfg.widths_hidden must name at least one width")
    n = len(widths)
    return {
        width: sample_posterior(
            k_warm,
            k_nuts,
            x,
            y,
            width,
            prior_scale=cfg.tau,
            num_chains=cfg.num_chains,
            warm_steps=cfg.warm_steps,
            warm_learning_rate=cfg.warm_learning_rate,
            num_warmup=cfg.num_warmup,
            num_samples=cfg.num_samples,
            target_acceptance_rate=cfg.target_acceptance_rate,
            max_tree_depth=cfg.max_tree_depth,
            chunk_size=cfg.nuts_chunk,
            cache=bool(cfg.cache),
        )
        for width, k_warm, k_nuts in zip(
            widths, jax.random.split(key_warm, n), jax.random.split(key_nuts, n), strict=True
        )
    }


def sampler_table(runs: dict) -> str:
    """A Markdown table of each run's warm starts and sampler statistics, one row per width."""
    header = [
        "H",
        "warm-start potential (per chain)",
        "step size",
        "mean tree size",
        "acceptance",
        "divergences",
        "posterior mean σ",
    ]
    rows = []
    for width, r in runs.items():
        s = r["stats"]
        rows.append(
            [
                width,
                tables.number_list(np.asarray(r["potential"]), ".0f"),
                f"{np.asarray(s['step_size']).mean():.1e}",
                f"{np.asarray(s['num_steps']).mean():.0f}",
                f"{np.asarray(s['acceptance_rate']).mean():.2f}",
                int(np.asarray(s["diverging"]).sum()),
                f"{np.asarray(r['sigma']).mean():.2f}",
            ]
        )
    return tables.markdown_table(header, rows, align="rlrrrrr")


def u_dips(rng: np.random.Generator, runs: dict, cfg: ConvexifiedReluSettings) -> tuple[dict, dict]:
    """The dip test on ``cfg.n_components`` random components of u per width (C2.2).

    Draws the components from ``rng`` width by width. Returns ``(dips, picks)``: width →
    :func:`chain_marginals.dip_pass_rate` at ``cfg.dip_alpha``, and width → the flat
    indices of the components.
    """
    dips, picks = {}, {}
    for width, r in runs.items():
        u = flat(r["u"])
        picks[width] = chain_marginals.random_components(rng, u.shape[-1], cfg.n_components)
        dips[width] = chain_marginals.dip_pass_rate(u[..., picks[width]], cfg.dip_alpha)
    return dips, picks


def pair_dip(
    rng: np.random.Generator, u, pair, cfg: ConvexifiedReluSettings
) -> tuple[float, np.ndarray, float]:
    """The dip test on ``cfg.n_directions`` random projections of two components of u (C2.4).

    ``u`` (chains, draws, ...), ``pair`` two flat component indices.
    """
    if len(pair) != 2:
        raise ValueError(f"pair must hold two component indices, got {pair!r}")
    pair_draws = flat(u)[..., np.asarray(pair)]
    projections = chain_marginals.random_projections(rng, pair_draws, cfg.n_directions)
    return chain_marginals.dip_pass_rate(projections, cfg.dip_alpha)


def weight_dips(rng: np.random.Generator, runs: dict, cfg: ConvexifiedReluSettings) -> dict:
    """The dip test on random entries of W1 and of w2 per width (C2.5).

    Per width, draws up to ``cfg.n_components`` entries of W1, then of w2, from ``rng``.
    Returns ``{(width, "W1"): dip, (width, "w2"): dip}`` (:func:`chain_marginals.dip_pass_rate`).
    """
    dips = {}
    for width, r in runs.items():
        w1 = flat(r["W1"])
        pick_w1 = chain_marginals.random_components(rng, w1.shape[-1], cfg.n_components)
        pick_w2 = chain_marginals.random_components(rng, width, cfg.n_components)
        dips[width, "W1"] = chain_marginals.dip_pass_rate(w1[..., pick_w1], cfg.dip_alpha)
        dips[width, "w2"] = chain_marginals.dip_pass_rate(
            np.asarray(r["w2"])[..., pick_w2], cfg.dip_alpha
        )
    return dips


def shrinkage(rng_key, runs: dict, cfg: ConvexifiedReluSettings) -> tuple[dict, dict, dict]:
    """A_H, B_H per width, ρ_A, ρ_B with bootstrap intervals, and the ESS of all of u (C2.3).

    Returns ``(per_width, shrink, ess_all)`` of :func:`chain_marginals.shrinkage_intervals`
    between the first and the last width, and width → median within-chain ESS of u.
    """
    small, large = cfg.widths_hidden[0], cfg.widths_hidden[-1]
    summaries = {width: chain_marginals.chain_summaries(r["u"]) for width, r in runs.items()}
    ess_all = {width: diagnostics.within_chain_ess(flat(r["u"])) for width, r in runs.items()}
    per_width, shrink = chain_marginals.shrinkage_intervals(
        rng_key, summaries, small, large, num_resamples=cfg.n_boot, level=cfg.boot_level
    )
    return per_width, shrink, ess_all


def ess_budget(runs: dict, cfg: ConvexifiedReluSettings) -> tables.Overview:
    """The median within-chain ESS of u on the first 1/8, 1/4, 1/2 and all draws of each chain.

    Returns an :class:`~bnn_posteriors.site.tables.Overview`: a Markdown table (one row per
    width) and the values the prose cites: the ESS per draw, the draws per chain the gate would
    need at that rate, ``cfg.min_ess · num_samples / ESS``, and the factor by which doubling
    the draws multiplied the ESS (2 for chains that mix).
    """
    small, large = cfg.widths_hidden[0], cfg.widths_hidden[-1]
    counts = [cfg.num_samples // k for k in (8, 4, 2, 1)]
    growth = {width: diagnostics.ess_growth(flat(r["u"]), counts) for width, r in runs.items()}
    rows = [[f"H = {w}", *(f"{e:.1f}" for e in growth[w])] for w in runs]
    table = tables.markdown_table(["draws per chain", *map(str, counts)], rows)
    draws_needed = {w: cfg.min_ess * cfg.num_samples / growth[w][-1] for w in runs}
    values = {
        **{f"ess_rate_{w}": growth[w][-1] / cfg.num_samples for w in runs},
        **{f"draws_needed_{w}": float(draws_needed[w]) for w in runs},
        "ess_rate_large": growth[large][-1] / cfg.num_samples,
        "draws_needed_small": float(draws_needed[small]),
        "draws_needed_large": float(draws_needed[large]),
        "ess_doubling_small": growth[small][-1] / growth[small][-2],
        "ess_doubling_large": growth[large][-1] / growth[large][-2],
        "num_warmup": cfg.num_warmup,
    }
    return tables.Overview(table, values)


def training_outputs(run: dict, x, max_inputs: int = 200, chunk: int = 500) -> np.ndarray:
    """The network's outputs f(x) = Σ_i w2_i ReLU(W1_i · x) along a run's draws, at up to
    ``max_inputs`` evenly spaced rows of ``x`` (n, d): (chains, draws, inputs), computed
    ``chunk`` draws at a time (a full-profile run holds tens of thousands of draws)."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must be (n, d), got shape {x.shape}")
    rows = x[np.unique(np.linspace(0, len(x) - 1, min(max_inputs, len(x))).astype(int))]
    w1, w2 = np.asarray(run["W1"]), np.asarray(run["w2"])  # (c, s, H, d), (c, s, H)
    if w1.shape[-1] != x.shape[1]:
        raise ValueError(f"the run's W1 takes {w1.shape[-1]} inputs, x has {x.shape[1]} columns")

    def outputs(first, second):  # one draw: the chapter's model's own forward pass
        return nets.mlp_apply([{"W": first.T}, {"W": second[:, None]}], rows)[:, 0]

    per_draw = jax.jit(jax.vmap(jax.vmap(outputs)))
    out = np.empty((*w2.shape[:2], len(rows)), dtype=np.float32)
    for start in range(0, w2.shape[1], chunk):
        part = slice(start, start + chunk)
        out[:, part] = np.asarray(per_draw(w1[:, part], w2[:, part]))
    return out


def where_chains_stall(runs: dict, x) -> tables.Overview:
    """Where the chains move and where they do not: per width the median within-chain ESS
    of u and of the network's training outputs (:func:`training_outputs`), and the fraction
    of (chain, unit) pairs whose output weight w2_i changes sign within the chain.

    Returns an :class:`~bnn_posteriors.site.tables.Overview` (a table, one row per width, and
    ``ess_f_<H>``, ``ess_uall_<H>``, their ratio ``ess_ratio_<H>`` and ``sign_flips_<H>`` to
    glue)."""
    rows, values = [], dict[str, float]()
    for width, r in runs.items():
        ess_u = diagnostics.within_chain_ess(flat(r["u"]))
        ess_f = diagnostics.within_chain_ess(training_outputs(r, x))
        w2 = np.sign(np.asarray(r["w2"]))
        flips = float(np.mean(np.any(w2[:, 1:] != w2[:, :-1], axis=1)))
        values |= {f"ess_uall_{width}": ess_u, f"ess_f_{width}": ess_f}
        values[f"ess_ratio_{width}"] = ess_f / ess_u
        values[f"sign_flips_{width}"] = flips
        rows.append([width, f"{ess_u:.1f}", f"{ess_f:.1f}", f"{flips:.0%}"])
    header = [
        "H",
        "median within-chain ESS of u",
        "of the training outputs f(x)",
        "(chain, unit) pairs whose w2 changes sign",
    ]
    return tables.Overview(tables.markdown_table(header, rows, align="rrrr"), values)


def rhat_diagnostics(runs: dict, ess_all: dict) -> dict:
    """Split-R-hat of every component of u across chains, raw and after matching units.

    Returns width → ``{"rhat_raw", "rhat_aligned"}`` (arrays over components,
    :func:`diagnostics.rhat`; units matched by :func:`convex.align_units`) and
    ``"ess_within"`` (from ``ess_all``).
    """
    return {
        width: {
            "rhat_raw": diagnostics.rhat(flat(r["u"])),
            "rhat_aligned": diagnostics.rhat(flat(convex.align_units(r["u"]))),
            "ess_within": ess_all[width],
        }
        for width, r in runs.items()
    }


def rhat_table(rhats: dict, num_samples: int) -> tables.Overview:
    """An :class:`~bnn_posteriors.site.tables.Overview`: a Markdown table of the median R-hat,
    raw and after matching, and the within-chain ESS per width; and the medians to glue
    (``rhat_raw_<H>``, ``rhat_aligned_<H>``)."""
    rows, values = [], dict[str, float]()
    for width, d in rhats.items():
        raw, aligned = (float(np.median(d[f"rhat_{k}"])) for k in ("raw", "aligned"))
        values |= {f"rhat_raw_{width}": raw, f"rhat_aligned_{width}": aligned}
        rows.append([width, f"{raw:.2f}", f"{aligned:.2f}", f"{d['ess_within']:.0f}"])
    header = [
        "H",
        "median R-hat, raw",
        "median R-hat, units matched",
        f"median within-chain ESS (of {num_samples} draws)",
    ]
    return tables.Overview(tables.markdown_table(header, rows, align="rrrr"), values)
