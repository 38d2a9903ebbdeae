"""Chapter 06's tables, the values its prose cites from the settings and the claims
catalogue, and its full-profile record: what the chapter shows besides the checks
(:mod:`.evidence`) and figures (:mod:`.figures`). Each function returns Markdown or plain
values; nothing is printed.
"""

from __future__ import annotations

import math

from bnn_posteriors.claims.checking import catalogue_check
from bnn_posteriors.site import profiles, tables
from bnn_posteriors.site.settings_classes import MetricBNNSettings
from bnn_posteriors.studies.ch06_metricbnn import evidence, experiments
from bnn_posteriors.studies.ch06_metricbnn.evidence import arch, spaced
from bnn_posteriors.studies.ch06_metricbnn.snelson import LEVEL

UCI_HEADER = ("data set", "method", "NLL (mean ± sd)", "time (s)", "paper's NLL")


def gap_table(post) -> str:
    """Markdown: per method, sd(gap) / sd(data) and the gap NLL, and the LA's prior
    precision (:func:`snelson.posteriors`)."""
    table = tables.markdown_table(
        ("method", "sd(gap) / sd(data)", "gap NLL"),
        [
            (m, f"{r:.2f}", tables.number(post.nll_gap.get(m), ".2f"))
            for m, r in post.ratios.items()
        ],
    )
    return f"{table}\n\nPrior precision by marginal likelihood: {post.la.prior_precision:.3g}."


def uci_table(rows) -> str:
    """Markdown of :func:`experiments.uci_table`'s rows (or the full run's row dicts)."""
    rows = [tuple(r.values()) if isinstance(r, dict) else r for r in rows]
    return tables.markdown_table(
        UCI_HEADER,
        [
            (name, m, f"{mu:.3f} ± {sd:.2f}", f"{sec:.2f}", tables.number(paper, ".2f"))
            for name, m, mu, sd, sec, paper in rows
        ],
    )


def mnist_table(result: dict) -> str:
    """Markdown: the test NLL per method and the seconds after the MAP
    (:func:`experiments.mnist_study`)."""
    seconds = result["seconds"]
    return tables.markdown_table(
        ("method", "test NLL", "time (s)"),
        [(m, f"{v:.3f}", tables.number(seconds.get(m), ".1f")) for m, v in result["nll"].items()],
    )


def chapter_glue(
    cfg: MetricBNNSettings, committed: dict | None, run, banana_n: int, mnist: dict
) -> dict:
    """The values the prose cites from the settings, the checks' bounds in the claims
    catalogue and the data sizes (name → value).

    ``committed``: the committed full-profile record, None in the full profile; ``run``:
    :class:`snelson.SnelsonWalk`; ``banana_n``: Banana's training points; ``mnist``:
    :func:`experiments.mnist_study`.
    """
    full_cfg = profiles.settings_of(MetricBNNSettings, "full")
    decided = committed["config"] if committed is not None else vars(cfg)
    ae_decided = (decided["ae_updates"], decided["ae_batch"])
    app_a = ae_decided == (full_cfg.ae_updates, full_cfg.ae_batch)  # the full profile's
    solutions_full = full_cfg.num_particles * full_cfg.snelson_steps
    paper = [
        (n, m, experiments.PAPER_NLL[n][i])
        for n in experiments.PAPER_NLL
        for i, m in enumerate(experiments.METHODS)
    ]
    problem, paper_mnist = run.problem, experiments.PAPER_MNIST
    return {
        "ch6_sigma": cfg.snelson_sigma,
        "ch6_delta": cfg.prior_precision,
        "ch6_components": cfg.ae_components,
        "ch6_k": cfg.latent_dim,
        "ch6_N": cfg.num_particles,
        "ch6_M": cfg.num_refine,
        "ch6_eta_paper": cfg.refine_learning_rate,
        "ch6_snelson_drift": cfg.snelson_drift,
        "ch6_snelson_T": spaced(cfg.snelson_steps),
        "ch6_snelson_n": int(problem.x.shape[0] + problem.x_gap.shape[0]),
        "ch6_snelson_train": int(problem.x.shape[0]),
        "ch6_snelson_arch": arch(cfg.snelson_widths),
        "ch6_snelson_params": spaced(run.n_params),
        "ch6_ae_arch": f"{len(cfg.ae_hidden)}×{cfg.ae_hidden[0]}",
        "ch6_ae_updates": spaced(cfg.ae_updates),
        "ch6_ae_batch": cfg.ae_batch,
        "ch6_ae_updates_full": spaced(full_cfg.ae_updates),
        "ch6_ae_batch_full": full_cfg.ae_batch,
        "ch6_NT": spaced(solutions_full),
        "ch6_app_a_epochs": spaced(full_cfg.ae_updates // -(-solutions_full // full_cfg.ae_batch)),
        "ch6_ae_updates_committed": spaced(ae_decided[0]),
        "ch6_ae_batch_committed": ae_decided[1],
        "ch6_ae_committed_budget": "App. A's budget" if app_a else "a budget shorter than App. A's",
        "ch6_tol": catalogue_check("C6.1", "band")["bound"],
        "ch6_removed": 1 - catalogue_check("C6.1", "refinement")["bound"],
        "ch6_straight_min": cfg.straightness_threshold,
        "ch6_level": LEVEL,
        "ch6_pc_factor": catalogue_check("C6.1", "low-dimensional")["bound"],
        "ch6_ring": cfg.ring_radius,
        "ch6_banana_n": int(banana_n),
        "ch6_banana_arch": arch(cfg.banana_widths),
        "ch6_banana_drift": cfg.banana_drift,
        "ch6_banana_T": cfg.banana_steps,
        "ch6_uci_arch": arch((0, *cfg.uci_hidden, 0)),
        "ch6_uci_map_steps": spaced(cfg.uci_map_steps),
        "ch6_uci_drift": cfg.uci_drift,
        "ch6_uci_T": cfg.uci_steps,
        "ch6_app_a_uci_epochs": spaced(experiments.APP_A["uci_epochs"]),
        "ch6_app_a_uci_batch": experiments.APP_A["uci_batch"],
        # the fewest sets MetricBNN must win: the count must exceed the catalogue's bound
        "ch6_min_wins": math.floor(catalogue_check("C6.6", "sampled-la")["bound"]) + 1,
        "ch6_paper_wins_la": sum(experiments.wins_over(paper, "LA").values()),
        "ch6_paper_wins_lin": sum(experiments.wins_over(paper, "Lin LA").values()),
        "ch6_mnist_train": mnist["n_train"],
        "ch6_mnist_test": mnist["n_test"],
        "ch6_cnn_params": spaced(mnist["num_params"]),
        "ch6_mnist_refine": int(cfg.mnist_refine_n),
        "ch6_paper_mnist_la": paper_mnist["LA"],
        "ch6_paper_mnist_lin": paper_mnist["Lin LA"],
        "ch6_paper_mnist_mb": paper_mnist["MetricBNN"],
        "ch6_map_margin": catalogue_check("C6.7", "map")["bound"],
        "ch6_depths": f"{min(cfg.depths)}–{max(cfg.depths)}",
        "ch6_depth_width": cfg.depth_width,
        "ch6_n_depths": len(cfg.depths),
        "ch6_cost_steps": spaced(cfg.cost_steps),
        "ch6_cost_ae": spaced(cfg.cost_ae_updates),
        "ch6_cost_batch": spaced(cfg.cost_ae_batch),
        "ch6_samples": cfg.pred_samples,
        "ch6_uci_full_splits": len(decided["uci_seeds"]),
        "ch6_repeats_build": cfg.snelson_repeats,
        **{
            f"ch6_paper_la_{n}": experiments.PAPER_NLL[n][0]
            for n in ("australian", "breast_cancer", "ionosphere")
        },
    }


def full_record(
    cfg: MetricBNNSettings,
    wall_time_s: float,
    *,
    c61,
    summaries,
    per_map,
    run,
    post,
    banana,
    y_banana,
    rows,
    mnist,
    cost_rows,
    growth,
    accuracy,
) -> dict:
    """What the full profile's run writes to ``results/ch6_results_full.json``."""
    deciding = summaries["deciding (full profile)"]
    c64_keys = ("mean loss ratio - 1", "projected solutions: mean loss ratio - 1", "straightness")
    return {
        "chapter": "06_metricbnn",
        "seed": cfg.seed,
        "config": vars(cfg),
        "wall_time_s": round(wall_time_s, 1),
        "snelson": {
            "c61": c61,
            "c63": deciding["gap NLL: Gaussian - latent"],
            "c64": {k: deciding[k] for k in c64_keys},
            "per_map": per_map,
            "gap_sd_ratio": post.ratios,
            "gap_nll": post.nll_gap,
            "prior_precision": float(post.la.prior_precision),
            "mse_map": run.mse_map,
        },
        "banana": evidence.banana_scores(banana, y_banana),
        "uci_table": [
            dict(
                zip(
                    ("dataset", "method", "nll_mean", "nll_sd", "time_s", "paper_nll"),
                    (n, m, float(a), float(b), float(c), float(q)),
                    strict=True,
                )
            )
            for n, m, a, b, c, q in rows
        ],
        "mnist_nll": mnist["nll"],
        "mnist_time_s": mnist["seconds"],
        "flops_vs_depth": cost_rows,
        "flop_ratio_deepest_shallowest": growth,
        "gap_nll_vs_depth": accuracy,
    }


def full_run(full: dict) -> str:
    """Markdown of the committed full-profile record: its provenance, UCI table, MNIST NLLs
    and FLOP growths."""
    prov = full["provenance"]
    lines = [
        f"Full profile: commit {prov['commit']}, {prov['machine']}, {prov['date']}, wall time "
        f"{full['wall_time_s']:.0f} s, UCI seeds {full['config']['uci_seeds']}.",
        uci_table(
            (r["dataset"], r["method"], r["nll_mean"], r["nll_sd"], r["time_s"], r["paper_nll"])
            for r in full["uci_table"]
        ),
        "MNIST NLL: " + ", ".join(f"{k} {v:.3f}" for k, v in full["mnist_nll"].items()) + ".",
    ]
    if "flop_ratio_deepest_shallowest" in full:
        growth = full["flop_ratio_deepest_shallowest"]
        lines.append(
            "FLOP ratio deepest / shallowest: "
            + ", ".join(f"{k} {v:.2f}" for k, v in growth.items())
            + "."
        )
    return "\n\n".join(lines)
