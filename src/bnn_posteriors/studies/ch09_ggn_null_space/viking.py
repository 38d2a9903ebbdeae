"""Chapter 9's VIKING study ([VK], :mod:`bnn_posteriors.inference.viking`): claim C9.5.

The closed-form KL against a dense Gaussian KL (:func:`kl_study`), the orthogonality of the
kernel and image parts of the draws (:func:`orthogonality_study`), and VIKING's test NLL and
RMSE (NLL, ECE and accuracy on MNIST) against mean-field VI, the linearised Laplace and
MetricBNN on the toy with a gap, the UCI sets and an MNIST subset (:func:`comparison`), each
with its :class:`.claims.checking.Evidence` (the rules and bounds are the claims catalogue's,
``claims/catalogue/09_ggn_null_space.toml``). Float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from bnn_posteriors.claims.checking import Evidence, catalogue_check
from bnn_posteriors.evaluation import metrics
from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.inference import laplace, mean_field, metricbnn, vi
from bnn_posteriors.inference import viking as vk
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import GGNNullSpaceSettings
from bnn_posteriors.studies.ch09_ggn_null_space.study import MNIST_SIDE, Fit

METHODS = ("VIKING", "mean-field VI", "linearised LA", "MetricBNN")


def dense_kl(mean, cov, prior_precision: float) -> float:
    """KL(N(μ, Σ) ‖ N(0, α⁻¹ I)) from the dense Σ: −H(q) (scipy) − E_q[log p]."""
    mean, cov = np.asarray(mean, np.float64), np.asarray(cov, np.float64)
    if cov.shape != (mean.size, mean.size):
        raise ValueError(f"dense_kl: cov must be (P, P) = {(mean.size,) * 2}, got {cov.shape}")
    alpha = float(prior_precision)
    if not alpha > 0:
        raise ValueError(f"dense_kl: prior_precision must be positive, got {alpha}")
    entropy = stats.multivariate_normal(mean, cov).entropy()
    cross = 0.5 * (
        mean.size * math.log(2 * math.pi / alpha) + alpha * (np.trace(cov) + mean @ mean)
    )
    return float(cross - entropy)


def kl_study(rng_key, cfg: GGNNullSpaceSettings) -> dict:
    """Closed-form vs dense KL on ``cfg.rank_widths`` at random θ, N = ``cfg.vk_kl_points``.

    Several (α, σ_ker, σ_im) from ``cfg.vk_kl_scales``; R = P − rank J (dense SVD). Returns
    arrays ``closed``, ``dense`` and the sizes ``P``, ``R``.
    """
    k_init, k_x = jax.random.split(rng_key)
    params = nets.mlp_init(k_init, tuple(cfg.rank_widths), scheme="glorot")
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
    theta, model_fn = ns.flat_mlp(params, cfg.activation)
    x = jax.random.normal(k_x, (cfg.vk_kl_points, cfg.rank_widths[0]), dtype=jnp.float64)
    jac = ns.training_jacobian(model_fn, theta, x)
    projector = ns.kernel_projector(jac)
    r = theta.size - ns.rank_report(jac, num_outputs=cfg.rank_widths[-1])["rank_J"]
    closed, dense = [], []
    for alpha, s_k, s_im in cfg.vk_kl_scales:
        closed.append(float(vk.kl_divergence(theta, alpha, s_im, r, scale_kernel=s_k)))
        dense.append(dense_kl(theta, vk.covariance(projector, s_k, s_im), alpha))
    return {"closed": np.array(closed), "dense": np.array(dense), "P": theta.size, "R": int(r)}


def kl_evidence(study: dict) -> Evidence:
    """C9.5, further finding ``closed-form-kl`` (its part): the closed-form KL equals the dense
    Gaussian KL (relative error below the catalogue's bound)."""
    rel = np.abs(study["closed"] - study["dense"]) / np.abs(study["dense"])
    return Evidence(
        "C9.5",
        float(rel.max()),
        part="closed-form-kl",
        note=f"max relative gap, closed-form KL vs scipy's dense KL, {len(rel)} (α, σ_ker, σ_im) "
        f"with P = {study['P']}, R = {study['R']}",
        says="VIKING's closed-form KL equals the KL computed from the dense covariance.",
        glue={
            "ch9_vk_kl_rel": float(rel.max()),
            "ch9_vk_kl_P": study["P"],
            "ch9_vk_kl_R": study["R"],
            "ch9_vk_kl_tol": catalogue_check("C9.5", "closed-form-kl")["bound"],
        },
    )


def fit_posterior(f: Fit, rng_key, cfg: GGNNullSpaceSettings) -> vk.VikingPosterior:
    """VIKING from the MAP of ``f`` (a warm start; the authors start from the initialisation),
    with the KL weight β and the optimiser of the authors' examples: β = 1 and
    ``cfg.vk_optimiser`` at ``cfg.vk_learning_rate`` (``sinusoid.py``: Adam 1e-2) for
    regression, ``cfg.vk_class_kl_weight`` and ``cfg.vk_class_optimiser`` at
    ``cfg.vk_class_learning_rate`` (``mnist.py``: RAdam 1e-3) for classification."""
    if f.likelihood == "categorical":
        beta, opt, lr = cfg.vk_class_kl_weight, cfg.vk_class_optimiser, cfg.vk_class_learning_rate
    else:
        beta, opt, lr = 1.0, cfg.vk_optimiser, cfg.vk_learning_rate
    return vk.fit_viking(
        rng_key,
        f.model_fn,
        f.theta,
        f.x,
        f.y,
        likelihood=f.likelihood,
        noise_scale=f.noise_scale,
        num_steps=cfg.vk_steps,
        learning_rate=lr,
        num_mc_samples=cfg.vk_mc_samples,
        kl_weight=beta,
        rtol=cfg.kernel_rtol,
        optimiser=opt,
    )


def orthogonality_study(f: Fit, post: vk.VikingPosterior, rng_key, num_samples: int) -> dict:
    """Per draw: ‖J Δ_ker‖/(‖J‖‖Δ_ker‖), ‖P_ker Δ_im‖/‖Δ_im‖ and |⟨Δ_ker, Δ_im⟩|/(‖·‖‖·‖)."""
    kernel, image = vk.sample_parts(
        rng_key, post.projector, post.scale_kernel, post.scale_image, num_samples
    )
    jac = ns.training_jacobian(f.model_fn, post.theta, f.x)
    norm = jnp.linalg.norm
    return {
        "kernel_residual": np.asarray(ns.relative_residual(jac, kernel)),
        "image_in_kernel": np.asarray(norm(image @ post.projector, axis=1) / norm(image, axis=1)),
        "cosine": np.asarray(
            jnp.abs(jnp.sum(kernel * image, 1)) / (norm(kernel, axis=1) * norm(image, axis=1))
        ),
    }


def orthogonality_evidence(study: dict) -> Evidence:
    """C9.5, further finding ``orthogonal-subspaces`` (its part): kernel parts in ker J, image
    parts in its complement, the parts orthogonal (each below the catalogue's bound)."""
    worst = [float(np.max(study[k])) for k in ("kernel_residual", "image_in_kernel", "cosine")]
    return Evidence(
        "C9.5",
        worst,
        part="orthogonal-subspaces",
        labels=["kernel part's ‖JΔ_ker‖", "image part in the kernel", "|cosine| of the parts"],
        note="max over draws of ‖JΔ_ker‖/(‖J‖‖Δ_ker‖), ‖P_ker Δ_im‖/‖Δ_im‖ and the |cosine| "
        "between Δ_ker and Δ_im (toy)",
        says="The kernel part of every VIKING draw leaves the linearised training predictions "
        "unchanged, the image part lies in the row space of J, and the two are orthogonal.",
        glue={"ch9_vk_orth": max(worst)},
    )


def band_study(f: Fit, post: vk.VikingPosterior, grid) -> dict:
    """VIKING's linearised predictive on ``grid``: the mean and the epistemic sd of the
    kernel part (σ_ker² J P_ker Jᵀ) and of the image part (σ_im² J (I − P_ker) Jᵀ); (n,)."""
    grid = jnp.asarray(grid)
    jac = jax.jacrev(lambda t: f.model_fn(t, grid))(post.theta)[:, 0, :]  # (n, P)
    jk = jac @ post.projector
    var_k = post.scale_kernel**2 * jnp.sum(jk * jac, 1)
    var_i = post.scale_image**2 * jnp.sum((jac - jk) * jac, 1)
    return {
        "mean": np.asarray(f.model_fn(post.theta, grid))[:, 0],
        "sd_kernel": np.sqrt(np.clip(np.asarray(var_k), 0.0, None)),
        "sd_image": np.sqrt(np.clip(np.asarray(var_i), 0.0, None)),
    }


def _scores(f: Fit, samples=None, *, mean=None, var=None) -> dict:
    """Test scores of a predictive: from output draws ``samples`` (S, m, O), or from the
    linearised predictive's ``mean`` and epistemic ``var`` (m, O). Regression: "NLL" and
    "RMSE" (noise σ added); classification: "NLL", "ECE" and "accuracy" (the samples' mean
    softmax, or the probit approximation :func:`.laplace.probit_probs`)."""
    if f.likelihood == "categorical":
        if samples is None:
            probs = np.asarray(laplace.probit_probs(mean, var), np.float64)
        else:
            probs = np.asarray(jax.nn.softmax(jnp.asarray(samples), -1).mean(0), np.float64)
        probs = probs / probs.sum(1, keepdims=True)
        y = f.y_test
        return {
            "NLL": metrics.categorical_nll(probs, y),
            "ECE": metrics.ece(probs, y),
            "accuracy": metrics.accuracy(probs, y),
        }
    if samples is None:
        mean, sd = np.asarray(mean)[:, 0], np.sqrt(np.asarray(var)[:, 0] + f.noise_scale**2)
        nll = -np.mean(metrics.pointwise_lppd64(f.y_test, mean, sd))
    else:
        samples = np.asarray(samples, np.float64)[:, :, 0]
        mean = samples.mean(0)
        nll = -np.mean(metrics.pointwise_lppd64(f.y_test, samples, f.noise_scale))
    return {"NLL": float(nll), "RMSE": float(metrics.rmse(f.y_test, mean))}


def mfvi_scores(f: Fit, rng_key, cfg: GGNNullSpaceSettings) -> dict:
    """Test scores (:func:`_scores`) of the book's mean-field VI (:func:`.vi.fit_mfvi`), same
    MLP, activation, prior and likelihood."""
    k_init, k_fit, k_pred = jax.random.split(rng_key, 3)
    widths = (f.x.shape[1], *_hidden(f), int(f.model_fn(f.theta, f.x[:1]).shape[-1]))
    kwargs = dict(
        x=f.x,
        y=jnp.asarray(f.y),
        widths=widths,
        activation=f.activation,
        prior_scale=1.0 / math.sqrt(cfg.map_prior_precision),
    )
    model: Callable = models.mlp_classification
    if f.likelihood == "gaussian":
        model, kwargs["noise_scale"] = models.mlp_regression, f.noise_scale
    q, _ = vi.fit_mfvi(
        k_fit,
        model,
        kwargs,
        num_steps=cfg.vk_mfvi_steps,
        learning_rate=cfg.vk_mfvi_learning_rate,
        init_loc=nets.sites(nets.mlp_init(k_init, widths, scheme="glorot")),
    )
    return _scores(
        f, mean_field.outputs(k_pred, q, f.x_test, cfg.pred_samples, activation=f.activation)
    )


def _hidden(f: Fit) -> tuple[int, ...]:
    """The hidden widths of the fit's MLP (from its parameter pytree)."""
    layers = f.posterior.unravel(f.theta)
    return tuple(int(layer["W"].shape[1]) for layer in layers[:-1])


def metricbnn_scores(f: Fit, rng_key, cfg: GGNNullSpaceSettings) -> dict:
    """Test scores (:func:`_scores`) of MetricBNN ([MBNN] Alg. 1,
    :func:`.metricbnn.walk_and_embed`) from the MAP of ``f``."""
    k_walk, k_s = jax.random.split(rng_key)
    targets = f.y if f.likelihood == "categorical" else f.y[:, None]
    loss = metricbnn.refinement_loss(
        lambda t: t,
        f.model_fn,
        f.x,
        targets,
        likelihood=f.likelihood,
        noise_scale=f.noise_scale,
        prior_precision=cfg.map_prior_precision,
    )
    _, latent, _ = metricbnn.walk_and_embed(
        k_walk,
        loss,
        f.theta,
        num_steps=cfg.vk_mbnn_steps,
        drift=cfg.vk_mbnn_drift,
        ae_updates=cfg.vk_mbnn_ae_updates,
    )
    thetas = metricbnn.latent_sample(latent, k_s, cfg.pred_samples)
    return _scores(f, metricbnn.push_forward(thetas, lambda t: t, f.model_fn, f.x_test))


def comparison(
    fits: list[Fit], posts: list[vk.VikingPosterior], rng_key, cfg: GGNNullSpaceSettings
) -> dict:
    """Test scores (:func:`_scores`) per data set and method (:data:`METHODS`): the
    linearised predictives of VIKING and the LA in closed form (probit for classes), MFVI
    and MetricBNN from ``cfg.pred_samples`` draws."""
    out = {}
    for i, (f, post) in enumerate(zip(fits, posts, strict=True)):
        k_mf, k_mb = jax.random.split(jax.random.fold_in(rng_key, i))
        mean, var = vk.linearised_predictive(post, f.model_fn, f.x_test)
        lmean = f.posterior.model_fn(f.posterior.mean, jnp.asarray(f.x_test))
        lvar = jnp.diagonal(laplace.linearised_variance(f.posterior, f.x_test), axis1=1, axis2=2)
        out[f.name] = {
            "VIKING": _scores(f, mean=mean, var=var),
            "mean-field VI": mfvi_scores(f, k_mf, cfg),
            "linearised LA": _scores(f, mean=lmean, var=lvar),
            "MetricBNN": metricbnn_scores(f, k_mb, cfg),
        }
    return out


SCORES = ("NLL", "RMSE", "ECE", "accuracy")  # the table's columns (:func:`_scores`)


def comparison_evidence(
    scores: dict, posts: list[vk.VikingPosterior], cfg: GGNNullSpaceSettings
) -> list[Evidence]:
    """C9.5, part ``nll-margin``: VIKING's test NLL minus the best baseline's (state of the
    art: below the catalogue's margin), per data set; the table of every method's test
    scores (NLL and RMSE, or NLL, ECE and accuracy); glue ``ch9_vk_<score>_<set>_<method>``
    for each."""
    rows, gap_best, glue = [], [], dict[str, float]()
    columns = [k for k in SCORES if any(k in s[m] for s in scores.values() for m in METHODS)]
    for name, s in scores.items():
        for m in METHODS:
            rows.append([name, m, *(tables.number(s[m].get(k), ".3g") for k in columns)])
            method = m.split()[0].replace("-", "_").lower()
            glue |= {f"ch9_vk_{k.lower()}_{name}_{method}": v for k, v in s[m].items()}
        best = min(s[m]["NLL"] for m in METHODS[1:])
        gap_best.append(s["VIKING"]["NLL"] - best)
    for post, name in zip(posts, scores, strict=True):
        glue[f"ch9_vk_alpha_{name}"] = post.prior_precision
        glue[f"ch9_vk_sim_{name}"] = post.scale_image
        glue[f"ch9_vk_R_{name}"] = post.kernel_dim
    table = tables.markdown_table(["data", "method", *(f"test {k}" for k in columns)], rows)
    names = ", ".join(scores)
    margin = catalogue_check("C9.5", "nll-margin")["bound"]
    says = nll_margin_text(dict(zip(scores, gap_best, strict=True)), margin)
    return [
        Evidence(
            "C9.5",
            gap_best,
            part="nll-margin",
            table=table,
            labels=list(scores),
            note=f"VIKING's test NLL − the lowest test NLL of mean-field VI, linearised LA and "
            f"MetricBNN, on {names}",
            says=says,
            glue={
                **glue,
                "ch9_vk_margin": margin,
                "ch9_vk_says": says,
                "ch9_vk_steps": cfg.vk_steps,
                "ch9_vk_draws": cfg.vk_mc_samples,
                "ch9_vk_mnist": mnist_text(scores),
                "ch9_vk_beta": cfg.vk_class_kl_weight,
                **mnist_settings(cfg),
            },
        ),
    ]


def nll_margin_text(gaps: dict, margin: float) -> str:
    """The verdict of part ``nll-margin`` in words, from VIKING's gap to the best baseline
    per set (``{name: gap}``): within ``margin`` on every set, or behind on which."""
    fmt = ", ".join
    behind = [f"{n} ({g:+.2f})" for n, g in gaps.items() if not g < margin]
    within = [f"{n} ({g:+.2f})" for n, g in gaps.items() if g < margin]
    lowest = [n for n, g in gaps.items() if g <= 0]
    if not behind:
        best = f"the lowest of the four on {fmt(lowest)}" if lowest else "the lowest on no set"
        return (
            f"VIKING's test NLL is within {margin} nats of the best baseline on every set "
            f"(VIKING − best: {fmt(within)}); {best}."
        )
    rest = f"; within it on {fmt(within)}" if within else ""
    return (
        f"VIKING's test NLL is more than {margin} nats above the best baseline on "
        f"{fmt(behind)}{rest}: not within the margin of the best on every set."
    )


OPTIMISER_NAMES = {"adam": "Adam", "radam": "RAdam"}  # as the prose names them


def mnist_settings(cfg: GGNNullSpaceSettings) -> dict:
    """Glue for the MNIST set-up: the MLP's widths, its size P, the training and test sizes;
    VIKING's optimiser and learning rate for regression and for MNIST."""
    widths = (MNIST_SIDE**2, *cfg.mnist_hidden, 10)  # the MLP of :func:`.study.mnist_fit`
    size = sum((a + 1) * b for a, b in zip(widths[:-1], widths[1:], strict=True))
    return {
        "ch9_mnist_widths": "–".join(map(str, widths)),
        "ch9_mnist_P": size,
        "ch9_mnist_train": cfg.mnist_n_train,
        "ch9_mnist_test": cfg.mnist_n_test,
        "ch9_vk_optimiser": OPTIMISER_NAMES[cfg.vk_optimiser],
        "ch9_vk_lr": cfg.vk_learning_rate,
        "ch9_vk_class_optimiser": OPTIMISER_NAMES[cfg.vk_class_optimiser],
        "ch9_vk_class_lr": cfg.vk_class_learning_rate,
    }


def mnist_text(scores: dict) -> str:
    """The prose's sentence on MNIST: each method's test NLL, ECE and accuracy, or that this
    build leaves MNIST out (the quick profile)."""
    if "mnist" not in scores:
        return "This build (the quick profile) leaves MNIST out; the full profile runs it."
    parts = [
        f"{m} {s['NLL']:.3g}, {s['ECE']:.3g} and {s['accuracy']:.3g}"
        for m, s in scores["mnist"].items()
    ]
    return "On MNIST the test NLL, ECE and accuracy are: " + "; ".join(parts) + "."
