"""Chapter 9's C9.4: [RI]'s Laplace diffusion against sampled LA, on the toy and UCI sets.

The diffusion (:func:`.inference.laplace_diffusion.laplace_diffusion`) starts at each fit's
MAP with the fit's marginal-likelihood δ as α and rank k = the number of GGN eigenvalues at
the MAP above δ: the directions in which the data, not the prior, set the Laplace variance
(MacKay's effective number of parameters Σ λ/(λ + δ) rounds to within one of it on the
toy and yacht). Scores: training NLL and test LPPD (log mixture density with the noise σ, as the
sampled LA's in :func:`.study.predictive_scores`), beside the MAP, the sampled LA and the
linearised LA. Run in float64.
"""

from __future__ import annotations

import jax
import numpy as np

from bnn_posteriors.claims.checking import Evidence
from bnn_posteriors.evaluation import metrics
from bnn_posteriors.inference import laplace_diffusion
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import GGNNullSpaceSettings
from bnn_posteriors.studies.ch09_ggn_null_space import study
from bnn_posteriors.util.validate import positive_int

METHODS = ("MAP", "sampled LA", "linearised LA", "Laplace diffusion")


def diffusion_rank(f: study.Fit) -> int:
    """k: the number of GGN eigenvalues at the MAP above the fit's prior precision δ (≥ 1),
    :func:`.laplace_diffusion.data_rank`."""
    return laplace_diffusion.data_rank(f.posterior.eigvals, f.prior_precision)


def sample_scores(f: study.Fit, samples) -> dict:
    """Train and test (RMSE of the mean, NLL) of parameter samples (S, P) of ``f``'s network."""
    out = {}
    for part, x, y in (("train", f.x, f.y), ("test", f.x_test, f.y_test)):
        pred = np.asarray(jax.vmap(lambda t, x=x: f.model_fn(t, x))(samples))[:, :, 0]
        nll = -np.mean(metrics.pointwise_lppd64(y, pred, f.noise_scale))
        out[("Laplace diffusion", part)] = (float(metrics.rmse(y, pred.mean(0))), float(nll))
    return out


def diffusion_study(
    fits: list[study.Fit], rng_key, cfg: GGNNullSpaceSettings, grid=None, *, project=True
) -> dict:
    """Per fit: the diffusion's samples scored beside :func:`.study.predictive_scores`.

    A fit whose rank k (:func:`diffusion_rank`) exceeds ``cfg.diffusion_max_rank`` is left
    out: each Euler step runs k Lanczos iterations with full reorthogonalisation, so a run
    costs about T·S·k GGN-vector products and T·S·k²·P for the reorthogonalisation.
    Returns ``{"scores": {name: {(method, part): (rmse, nll)}}, "ranks": {name: k},
    "skipped": {name: k}, "grid_mean", "grid_sd"}``, the last two the diffusion's predictive
    mean and epistemic sd on ``grid`` for the first fit (None without a grid).
    ``project=False`` runs the unprojected diffusion (the broken input of the tests).
    """
    max_rank = positive_int("diffusion_max_rank", cfg.diffusion_max_rank, where="diffusion_study")
    scores, ranks, skipped = {}, {}, {}
    out = {"grid_mean": None, "grid_sd": None}
    for i, f in enumerate(fits):
        k_base, k_diff = jax.random.split(jax.random.fold_in(rng_key, i))
        rank = diffusion_rank(f)
        if rank > max_rank:
            skipped[f.name] = rank
            continue
        ranks[f.name] = rank
        samples = laplace_diffusion.laplace_diffusion(
            k_diff,
            f.model_fn,
            f.theta,
            f.x,
            prior_precision=f.prior_precision,
            noise_scale=f.noise_scale,
            rank=rank,
            num_steps=cfg.diffusion_steps,
            num_samples=cfg.diffusion_samples,
            project=project,
        )
        scores[f.name] = {
            **study.predictive_scores(f, k_base, cfg.pred_samples),
            **sample_scores(f, samples),
        }
        if i == 0 and grid is not None:
            pred = np.asarray(jax.vmap(lambda t, f=f: f.model_fn(t, grid))(samples))[:, :, 0]
            out["grid_mean"], out["grid_sd"] = pred.mean(0), pred.std(0)
    if not scores:
        raise ValueError(f"diffusion_study: every fit's rank exceeds {max_rank}: {skipped}")
    return {**out, "scores": scores, "ranks": ranks, "skipped": skipped}


def diffusion_evidence(result: dict, cfg: GGNNullSpaceSettings) -> list[Evidence]:
    """C9.4: the diffusion's training NLL below the sampled LA's (part ``train-nll``) and its
    test LPPD above it (``test-lppd``), on every set; the rules are the catalogue's."""
    scores = result["scores"]
    names = list(scores)
    rows, glue = [], {}
    for name, s in scores.items():
        for method in METHODS:
            (tr_rmse, tr_nll), (te_rmse, te_nll) = s[(method, "train")], s[(method, "test")]
            numbers = (tr_rmse, tr_nll, te_rmse, -te_nll)
            rows.append([name, method, *(tables.number(v, ".3g") for v in numbers)])
        for method, tag in (
            ("Laplace diffusion", "diff"),
            ("sampled LA", "sla"),
            ("linearised LA", "lla"),
        ):
            glue[f"ch9_{tag}_train_nll_{name}"] = s[(method, "train")][1]
            glue[f"ch9_{tag}_test_lppd_{name}"] = -s[(method, "test")][1]
        glue[f"ch9_diff_rank_{name}"] = result["ranks"][name]
    nll_gap = [
        s[("Laplace diffusion", "train")][1] - s[("sampled LA", "train")][1]
        for s in scores.values()
    ]
    lppd_gap = [
        s[("sampled LA", "test")][1] - s[("Laplace diffusion", "test")][1] for s in scores.values()
    ]
    table = tables.markdown_table(
        ["data", "method", "train RMSE", "train NLL", "test RMSE", "test LPPD"], rows
    )
    sizes = f"{cfg.diffusion_steps} steps, {cfg.diffusion_samples} samples"
    left_out = ", ".join(f"{n} (k = {k})" for n, k in result.get("skipped", {}).items())
    if left_out:
        sizes += f"; left out, rank above {cfg.diffusion_max_rank}: {left_out}"
    glue.update(
        ch9_diff_steps=cfg.diffusion_steps,
        ch9_diff_samples=cfg.diffusion_samples,
        ch9_diff_max_rank=cfg.diffusion_max_rank,
        ch9_diff_skipped=left_out or "none",
    )
    return [
        Evidence(
            "C9.4",
            nll_gap,
            part="train-nll",
            table=table,
            glue=glue,
            labels=list(scores),
            note=f"training NLL of the Laplace diffusion − of the sampled LA on "
            f"{', '.join(names)} ({sizes}; ranks "
            f"{', '.join(str(result['ranks'][n]) for n in names)})",
            says="The Laplace diffusion fits the training data better than sampled LA: its "
            "training NLL is lower on every set.",
        ),
        Evidence(
            "C9.4",
            lppd_gap,
            part="test-lppd",
            labels=list(scores),
            note=f"test LPPD of the Laplace diffusion − of the sampled LA on {', '.join(names)}",
            says="The Laplace diffusion's test LPPD is higher than the sampled LA's on every set.",
        ),
    ]
