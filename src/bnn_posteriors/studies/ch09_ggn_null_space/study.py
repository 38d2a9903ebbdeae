"""Chapter 9's experiments: fits, and the evidence of claims C9.1, C9.2, C9.3 and C9.6.

Every function takes the chapter's settings ``cfg`` (:func:`.site.profiles.settings`) or the
values it needs, and returns :class:`.claims.checking.Evidence` for the chapter to check,
with the numbers behind each check; each check's rule and bound are the claims catalogue's
(``claims/catalogue/09_ggn_null_space.toml``), named by its ``part``. Run in float64
(``jax_enable_x64``): C9.1 and C9.3 compare to round-off.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy import linalg as sla

from bnn_posteriors.claims.checking import Evidence, Gate, catalogue_check
from bnn_posteriors.data import loaders
from bnn_posteriors.evaluation import cost, metrics
from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.inference import laplace, map_laplace
from bnn_posteriors.models import nets
from bnn_posteriors.site import tables
from bnn_posteriors.site.settings_classes import GGNNullSpaceSettings
from bnn_posteriors.util import streams
from bnn_posteriors.util.validate import positive


@dataclasses.dataclass(frozen=True)
class Fit:
    """A MAP θ̂ of an MLP with its tuned Laplace approximation and the training kernel.

    x (n, d), y (n,) training data (targets, or integer labels for a ``"categorical"``
    ``likelihood``); x_test, y_test the held-out points (the toy's gap); ``posterior`` the
    GGN Laplace q with the marginal-likelihood δ; ``jac`` the training Jacobian (n·O, P) and
    ``projector`` P_ker (P, P); ``activation`` the MLP's hidden activation.
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    theta: jnp.ndarray
    model_fn: Callable
    posterior: laplace.LaplacePosterior
    jac: jnp.ndarray
    projector: jnp.ndarray
    noise_scale: float
    likelihood: str = "gaussian"
    activation: str = "tanh"

    @property
    def prior_precision(self) -> float:
        return float(self.posterior.prior_precision)


def fit(
    name: str,
    x,
    y,
    x_test,
    y_test,
    *,
    rng_key,
    hidden,
    cfg: GGNNullSpaceSettings,
    noise_scale: float = 1.0,
    fit_noise: bool = False,
    likelihood: str = "gaussian",
    activation: str | None = None,
) -> Fit:
    """Train the MAP, fit the Laplace GGN at it and tune δ (:mod:`.map_laplace` with the
    chapter's ``map_laplace``); the kernel projector.

    Regression (one output, ``noise_scale`` σ) or, with ``likelihood="categorical"``, integer
    labels y and one output per class; ``activation`` defaults to ``cfg.activation``. With
    ``fit_noise`` the MAP is trained with ``noise_scale`` and σ is then fitted jointly with δ
    by the Laplace evidence at the MAP (:func:`.laplace.optimise_noise_scale`): the Fit's σ,
    which every method compared on it uses.
    """
    if fit_noise and likelihood != "gaussian":
        raise ValueError(f"fit: fit_noise needs the Gaussian likelihood, got {likelihood!r}")
    activation = cfg.activation if activation is None else activation
    x, x_test = np.asarray(x, np.float64), np.asarray(x_test, np.float64)
    if likelihood == "categorical":
        y, y_test = np.asarray(y, np.int32).ravel(), np.asarray(y_test, np.int32).ravel()
        targets, outputs = y, int(max(y.max(), y_test.max())) + 1
    else:
        y, y_test = np.asarray(y, np.float64).ravel(), np.asarray(y_test, np.float64).ravel()
        targets, outputs = y[:, None], 1
    delta = cfg.map_prior_precision
    choices = cfg.map_laplace
    if fit_noise:  # σ by the evidence too, jointly with δ
        choices = dataclasses.replace(choices, tune="noise")
    mode = map_laplace.fit_map(
        rng_key,
        (x.shape[1], *hidden, outputs),
        x,
        targets,
        choices,
        likelihood=likelihood,
        prior_precision=delta,
        num_steps=cfg.map_steps,
        learning_rate=cfg.map_learning_rate,
        activation=activation,
        noise_scale=noise_scale if likelihood == "gaussian" else None,
    )
    post = map_laplace.fit_laplace(
        mode,
        x,
        targets,
        choices,
        likelihood=likelihood,
        prior_precision=delta,
        activation=activation,
    )
    theta, model_fn = ns.flat_mlp(mode.params, activation)
    jac = ns.training_jacobian(model_fn, theta, x)
    return Fit(
        name,
        x,
        y,
        x_test,
        y_test,
        theta,
        model_fn,
        post,
        jac,
        ns.kernel_projector(jac, rtol=cfg.kernel_rtol),
        float(post.noise_scale) if likelihood == "gaussian" else float(noise_scale),
        likelihood,
        activation,
    )


def toy_fit(rng_key, cfg: GGNNullSpaceSettings) -> Fit:
    """The 1-D toy with a gap: Snelson's data, the points with 1.5 ≤ x ≤ 3 held out."""
    x, y, x_gap, y_gap = loaders.load_snelson(in_between=True)
    return fit(
        "toy",
        x,
        y,
        x_gap,
        y_gap,
        rng_key=rng_key,
        hidden=tuple(cfg.toy_widths[1:-1]),
        cfg=cfg,
        noise_scale=cfg.toy_noise_scale,
    )


NOISE_CHOICES = ("evidence",)  # the strings ``cfg.uci_noise`` may name besides a number


def uci_noise(cfg: GGNNullSpaceSettings) -> tuple[float, bool]:
    """The UCI sets' noise from ``cfg.uci_noise``: ``(σ of the MAP's loss, fit σ?)``.

    A number fixes σ for the MAP and every method; ``"evidence"`` trains the MAP with
    ``cfg.uci_map_noise_scale`` and fits σ jointly with δ by the Laplace evidence
    (:func:`.laplace.optimise_noise_scale`).
    """
    choice = cfg.uci_noise
    if isinstance(choice, str):
        if choice not in NOISE_CHOICES:
            raise ValueError(
                f"uci_noise must be a positive number or one of {NOISE_CHOICES}, got {choice!r}"
            )
        return positive("uci_map_noise_scale", cfg.uci_map_noise_scale, where="uci_noise"), True
    return positive("uci_noise", choice, where="uci_noise"), False


def uci_fit(rng_key, cfg: GGNNullSpaceSettings, seed: int, name: str) -> Fit:
    """The UCI set ``name``, split ``seed`` and standardised by :func:`loaders.load_split`;
    its noise σ as :func:`uci_noise` says (fitted by the evidence, or fixed)."""
    s = loaders.load_split(name, seed)
    sigma, fit_noise = uci_noise(cfg)
    return fit(
        name,
        s.x_train,
        s.y_train,
        s.x_test,
        s.y_test,
        rng_key=rng_key,
        hidden=tuple(cfg.uci_hidden),
        cfg=cfg,
        noise_scale=sigma,
        fit_noise=fit_noise,
    )


def uci_fits(rng_key, cfg: GGNNullSpaceSettings, seed: int) -> list[Fit]:
    """:func:`uci_fit` on each set of ``cfg.uci_names``: the first with ``rng_key``, the i-th
    after it with ``fold_in(rng_key, i)`` (a set added to the list leaves the others' fits
    as they were)."""
    names = tuple(cfg.uci_names)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"uci_names must be distinct UCI regression sets, got {names}")
    keys = [rng_key, *(jax.random.fold_in(rng_key, i) for i in range(1, len(names)))]
    return [uci_fit(k, cfg, seed, name) for k, name in zip(keys, names, strict=True)]


MNIST_SIDE = 8  # [VK]'s examples/mnist.py: 2-pixel crop, then 8 × 8


def mnist_fit(rng_key, cfg: GGNNullSpaceSettings, seed: int) -> Fit:
    """The MNIST subset (:func:`loaders.load_mnist_subset`, split ``seed``), downscaled as
    [VK]'s ``examples/mnist.py`` (:func:`loaders.mnist_downscale`): the first
    ``cfg.mnist_n_train`` training images, ``cfg.mnist_n_test`` test images, an MLP with
    ``cfg.mnist_hidden`` widths and ``cfg.mnist_activation``, categorical likelihood."""
    x, y, x_test, y_test = loaders.load_mnist_subset(seed, n_test=cfg.mnist_n_test)
    n, side = cfg.mnist_n_train, MNIST_SIDE
    return fit(
        "mnist",
        loaders.mnist_downscale(x[:n], side=side),
        y[:n],
        loaders.mnist_downscale(x_test, side=side),
        y_test,
        rng_key=rng_key,
        hidden=tuple(cfg.mnist_hidden),
        cfg=cfg,
        likelihood="categorical",
        activation=cfg.mnist_activation,
    )


# --------------------------------------------------------------------------- C9.1


def rank_study(rng_key, cfg: GGNNullSpaceSettings) -> dict:
    """rank(GGN), N·O, P and the kernel dimension (dense SVD, float64) for each N.

    Also the rank of the full Hessian of the NLL at the same random parameters, which the
    bound does not cover (the check's broken input), and, where the kernel is not empty, the
    network's first-order change of its N training outputs (:func:`.first_order_change`,
    central differences of the network) along ``cfg.rank_directions`` random unit directions
    in null_space(GGN), largest, and in the GGN's range, median (``kernel_change``,
    ``image_change``; NaN where the kernel is empty). Returns arrays over ``cfg.rank_points``.
    """
    widths = tuple(cfg.rank_widths)
    k_init, k_x, k_y = jax.random.split(rng_key, 3)
    params = nets.mlp_init(k_init, widths, scheme="glorot")
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
    theta, model_fn = ns.flat_mlp(params, cfg.activation)
    n_max, outputs = max(cfg.rank_points), widths[-1]
    x = jax.random.normal(k_x, (n_max, widths[0]), dtype=jnp.float64)
    y = jax.random.normal(k_y, (n_max, outputs), dtype=jnp.float64)
    jac = np.asarray(ns.training_jacobian(model_fn, theta, x))  # rows point-major

    @jax.jit
    def hessian(weights):  # of ½ Σ_i w_i ‖f(x_i) − y_i‖²: the first N points when w = 1[i < N]
        return jax.hessian(lambda t: 0.5 * jnp.sum(weights[:, None] * (model_fn(t, x) - y) ** 2))(
            theta
        )

    # a named stream from the key, so the network, inputs and targets keep their draws
    k_dir = jax.random.fold_in(rng_key, streams.name_word("C9.1/directions"))

    def changes(n, basis, k):  # first-order change along unit directions spanning ``basis``
        z = jax.random.normal(k, (basis.shape[1], cfg.rank_directions), dtype=jnp.float64)
        return np.asarray(ns.first_order_change(model_fn, theta, x[:n], (basis @ z).T))

    rows, kernel_change, image_change = [], [], []
    for n in cfg.rank_points:
        jac_n = jac[: n * outputs]
        ggn = jac_n.T @ jac_n  # the GGN with Λ = I (laplace.ggn_matrix; tested equal)
        report = ns.rank_report(jac_n, num_outputs=outputs)
        rank = ns.numerical_rank(np.linalg.svd(ggn, compute_uv=False), ggn.shape)
        null = sla.null_space(ggn)
        hess = np.asarray(hessian(jnp.asarray(np.arange(n_max) < n, dtype=jnp.float64)))
        h_rank = ns.numerical_rank(np.linalg.svd(hess, compute_uv=False), hess.shape)
        rows.append((n, n * outputs, theta.size, rank, report["rank_J"], null.shape[1], h_rank))
        k_ker, k_im = jax.random.split(jax.random.fold_in(k_dir, n))
        empty = null.shape[1] == 0
        kernel_change.append(np.nan if empty else float(changes(n, null, k_ker).max()))
        image_change.append(float(np.median(changes(n, sla.orth(ggn), k_im))))
    a = np.array(rows)
    keys = ("N", "NO", "P", "rank_ggn", "rank_J", "dim_ker", "rank_hessian")
    return {
        **{k: a[:, i] for i, k in enumerate(keys)},
        "kernel_change": np.array(kernel_change),
        "image_change": np.array(image_change),
    }


def rank_evidence(study: dict) -> list[Evidence]:
    """C9.1: rank(GGN) ≤ N·O and dim ker = P − rank at every N (part ``rank-bound``); the
    kernel's directions keep the training predictions to first order, against the range's
    (``preserves-predictions``, at every N with a kernel)."""
    ok = np.concatenate(
        [study["rank_ggn"] <= study["NO"], study["dim_ker"] == study["P"] - study["rank_ggn"]]
    )
    counts = ("N", "NO", "P", "rank_ggn", "rank_J", "dim_ker", "rank_hessian")
    ratio = study["kernel_change"] / study["image_change"]
    rows = [
        [*(int(study[k][i]) for k in counts), "—" if np.isnan(r) else f"{r:.2g}"]
        for i, r in enumerate(ratio)
    ]
    table = tables.markdown_table(
        ["N", "N·O", "P", "rank GGN", "rank J", "dim ker", "rank Hessian", "kernel / range"],
        rows,
    )
    breaks = study["rank_hessian"] > study["NO"]
    has_kernel = ~np.isnan(ratio)
    worst = float(np.nanmax(ratio)) if has_kernel.any() else float("nan")
    bound = catalogue_check("C9.1", "preserves-predictions")["bound"]
    return [
        Evidence(
            "C9.1",
            ok.tolist(),
            part="rank-bound",
            table=table,
            labels=[f"rank(GGN) ≤ N·O at N = {int(n)}" for n in study["N"]]
            + [f"dim ker = P − rank at N = {int(n)}" for n in study["N"]],
            note="rank(GGN) ≤ N·O, then dim null_space(GGN) == P − rank(GGN), per N (float64 SVD)",
            says="The GGN's rank never exceeds N·O and its kernel has dimension P − rank at "
            "every N, exactly; the full Hessian's rank does exceed N·O.",
            glue={
                "ch9_rank_P": int(study["P"][0]),
                "ch9_rank_O": int(study["NO"][0] // study["N"][0]),
                "ch9_rank_nmax": int(study["N"][-1]),
                "ch9_hessian_breaks": int(breaks.sum()),
                "ch9_rank_cases": len(study["N"]),
            },
        ),
        Evidence(
            "C9.1",
            ratio[has_kernel].tolist(),
            part="preserves-predictions",
            labels=[f"N = {int(n)}" for n in study["N"][has_kernel]],
            note="per N with a kernel: the network's largest first-order change of its "
            "training outputs (central differences) along random unit directions in "
            "null_space(GGN), / its median along random unit directions in the GGN's range",
            says=f"Directions in the GGN's null space change the training outputs to first "
            f"order by at most {worst:.2g} of what directions in its range do, at every N with "
            f"a kernel: they preserve the linearised model's training predictions."
            if worst < bound
            else f"Directions in the GGN's null space change the training outputs to first "
            f"order by up to {worst:.2g} of what directions in its range do: not the "
            f"preserved predictions the sentence states.",
            glue={"ch9_preserve_ratio": worst, "ch9_preserve_bound": bound},
        ),
    ]


# --------------------------------------------------------------------------- C9.2


def _nll_gaussian(y, mean, var) -> float:
    return float(-np.mean(metrics.pointwise_lppd64(y, mean, np.sqrt(var))))


def predictive_scores(f: Fit, rng_key, num_samples: int) -> dict:
    """Train and test RMSE and NLL of the MAP, the sampled LA and the linearised LA."""
    out = {}
    for part, x, y in (("train", f.x, f.y), ("test", f.x_test, f.y_test)):
        mu = np.asarray(f.model_fn(f.theta, x))[:, 0]
        out[("MAP", part)] = (
            float(metrics.rmse(y, mu)),
            _nll_gaussian(y, mu, f.noise_scale**2 * np.ones_like(mu)),
        )
        samples = np.asarray(laplace.predictive_samples(f.posterior, x, rng_key, num_samples))
        samples = samples[:, :, 0]
        out[("sampled LA", part)] = (
            float(metrics.rmse(y, samples.mean(0))),
            float(-np.mean(metrics.pointwise_lppd64(y, samples, f.noise_scale))),
        )
        mean, var = laplace.linearised_predictive(f.posterior, x)
        mean, var = np.asarray(mean)[:, 0], np.asarray(var)[:, 0]
        out[("linearised LA", part)] = (float(metrics.rmse(y, mean)), _nll_gaussian(y, mean, var))
    return out


def kernel_image_change(f: Fit, rng_key, num_samples: int) -> dict:
    """RMS change of the training predictions f(X; θ̂ + Δ) − f(X; θ̂) for sampled-LA Δ,
    and for its kernel part P_ker Δ and image part (I − P_ker) Δ alone ([RI] §4)."""
    delta = f.posterior.sample(rng_key, num_samples) - f.theta
    kernel, image = ns.split_kernel_image(f.projector, delta)
    base = f.model_fn(f.theta, f.x)

    def change(d):
        moved = jax.lax.map(lambda t: f.model_fn(f.theta + t, f.x), d)
        return float(jnp.sqrt(jnp.mean((moved - base) ** 2)))

    return {"full": change(delta), "kernel": change(kernel), "image": change(image)}


def underfitting_evidence(fits: list[Fit], rng_key, cfg: GGNNullSpaceSettings) -> list[Evidence]:
    """C9.2: the sampled LA underfits (training RMSE above the catalogue's multiple of the
    MAP's, part ``underfit``), the linearised LA does not (its training NLL below the sampled
    LA's, ``linearised-nll``), and the kernel part of the sampled perturbations moves the
    training predictions more than the image part (``kernel-split``)."""
    scores, changes = {}, {}
    for i, f in enumerate(fits):
        k1, k2 = jax.random.split(jax.random.fold_in(rng_key, i))
        scores[f.name] = predictive_scores(f, k1, cfg.pred_samples)
        changes[f.name] = kernel_image_change(f, k2, cfg.pred_samples)
    rows, glue = [], {}
    for name, s in scores.items():
        for method in ("MAP", "sampled LA", "linearised LA"):
            tr, te = s[(method, "train")], s[(method, "test")]
            rows.append([name, method, *(tables.number(v, ".3g") for v in (*tr, *te))])
    ratio = [s[("sampled LA", "train")][0] / s[("MAP", "train")][0] for s in scores.values()]
    nll_gap = [
        s[("linearised LA", "train")][1] - s[("sampled LA", "train")][1] for s in scores.values()
    ]
    split = [c["kernel"] / c["image"] for c in changes.values()]
    names = list(scores)
    for name, r, c in zip(names, ratio, changes.values(), strict=True):
        glue[f"ch9_underfit_{name}"] = r
        glue[f"ch9_kernel_change_{name}"] = c["kernel"]
        glue[f"ch9_image_change_{name}"] = c["image"]
        glue[f"ch9_delta_{name}"] = fits[names.index(name)].prior_precision
        glue[f"ch9_sigma_{name}"] = fits[names.index(name)].noise_scale
        glue[f"ch9_map_rmse_{name}"] = scores[name][("MAP", "train")][0]
    table = tables.markdown_table(
        ["data", "method", "train RMSE", "train NLL", "test RMSE", "test NLL"], rows
    )
    map_rmse = [s[("MAP", "train")][0] for s in scores.values()]
    sigmas = [f.noise_scale for f in fits]
    fits_ok = all(m <= 1.5 * s for m, s in zip(map_rmse, sigmas, strict=True))
    gate = Gate(
        bool(fits_ok),
        why="training RMSE of the MAPs "
        + ", ".join(f"{m:.3g} (σ {s:.3g})" for m, s in zip(map_rmse, sigmas, strict=True)),
        decide="MAPs that fit their training data (RMSE at most 1.5 σ)",
    )
    underfit_ratio = catalogue_check("C9.2", "underfit")["bound"]
    split_rows = [
        [n, *(tables.number(c[k], ".3g") for k in ("full", "kernel", "image"))]
        for n, c in changes.items()
    ]
    return [
        Evidence(
            "C9.2",
            ratio,
            part="underfit",
            gate=gate,
            table=table,
            labels=names,
            note=f"sampled-LA training RMSE / MAP training RMSE on {', '.join(names)}",
            says="The sampled LA's training RMSE is a multiple of the MAP's on every set: it "
            "underfits.",
            glue={**glue, "ch9_underfit_ratio": underfit_ratio},
        ),
        Evidence(
            "C9.2",
            nll_gap,
            part="linearised-nll",
            gate=gate,
            labels=names,
            note="linearised-LA training NLL − sampled-LA training NLL, per set",
            says="The linearised LA's training NLL is below the sampled LA's on every set.",
        ),
        Evidence(
            "C9.2",
            split,
            part="kernel-split",
            gate=gate,
            labels=list(changes),
            table=tables.markdown_table(
                ["data", "RMS change, Δ", "kernel part", "image part"], split_rows
            ),
            note="RMS change of the training predictions: kernel part / image part of sampled "
            "LA perturbations",
            says="The kernel part of the sampled-LA perturbations moves the network's training "
            "predictions more than the image part: the underfitting comes from the kernel.",
        ),
    ]


# --------------------------------------------------------------------------- C9.3


def sweep_errors(f: Fit, rng_key, cfg: GGNNullSpaceSettings) -> np.ndarray:
    """Relative error ‖P_AP^s v − P_ker v‖/‖P_ker v‖ after each sweep s, mean over vectors."""
    k_order, k_v = jax.random.split(rng_key)
    order = np.asarray(jax.random.permutation(k_order, f.x.shape[0]))
    b = cfg.ap_batch_size
    batches = [f.x[order[i : i + b]] for i in range(0, len(order), b)]
    v = jax.random.normal(k_v, (cfg.ap_vectors, f.theta.size), dtype=f.theta.dtype)
    iterates = ns.alternating_projections(
        f.model_fn, f.theta, batches, v, num_sweeps=cfg.ap_sweeps, rtol=cfg.kernel_rtol
    )
    exact = v @ f.projector
    err = jnp.linalg.norm(iterates - exact, axis=-1) / jnp.linalg.norm(exact, axis=-1)
    return np.asarray(err.mean(axis=1))


def projected_study(f: Fit, rng_key, cfg: GGNNullSpaceSettings, grid) -> dict:
    """Projected samples' first-order change of the training outputs, the sweep errors and
    the predictive sd on ``grid``.

    ``change_projected``: the network's first-order change of its training outputs along each
    projected sample's Δθ (:func:`.first_order_change`, central differences of the network);
    ``change_isotropic``: the same along isotropic draws, the samples before projection;
    ``residual``: ‖JΔθ‖/(‖J‖₂‖Δθ‖) of the projected samples with the autodiff J.
    """
    k_s, k_ap = jax.random.split(rng_key)
    alpha = f.prior_precision
    samples = ns.projected_samples(k_s, f.theta, f.projector, alpha, cfg.pred_samples)
    k_iso = jax.random.fold_in(k_s, streams.name_word("C9.3/isotropic"))
    isotropic = jax.random.normal(k_iso, samples.shape, dtype=samples.dtype)
    residual = np.asarray(ns.relative_residual(f.jac, samples - f.theta))
    _, var_train = ns.projected_linearised_predictive(f.model_fn, f.theta, f.projector, alpha, f.x)
    mean_grid, var_grid = ns.projected_linearised_predictive(
        f.model_fn, f.theta, f.projector, alpha, grid
    )
    return {
        "residual": residual,
        "change_projected": np.asarray(
            ns.first_order_change(f.model_fn, f.theta, f.x, samples - f.theta)
        ),
        "change_isotropic": np.asarray(ns.first_order_change(f.model_fn, f.theta, f.x, isotropic)),
        "errors": sweep_errors(f, k_ap, cfg),
        "sd_train": np.sqrt(np.asarray(var_train)[:, 0]),
        "grid_mean": np.asarray(mean_grid)[:, 0],
        "grid_sd": np.sqrt(np.asarray(var_grid)[:, 0]),
    }


def projected_evidence(f: Fit, study: dict, grid, cfg: GGNNullSpaceSettings) -> list[Evidence]:
    """C9.3: projected samples keep the training outputs to first order (part
    ``training-predictions``); alternating projections converge
    (the further findings ``alternating-projections`` and ``alternating-projections-error``);
    the predictive sd vanishes at the training inputs and grows in the gap and beyond the data
    (``sd-growth``). The bounds are the catalogue's."""
    g = np.asarray(grid)[:, 0]
    lo, hi = f.x[:, 0].min(), f.x[:, 0].max()
    gap_lo, gap_hi = f.x_test[:, 0].min(), f.x_test[:, 0].max()
    in_gap = (g >= gap_lo) & (g <= gap_hi)
    far = (g < lo - 0.5) | (g > hi + 0.5)
    sd_train = float(study["sd_train"].max())
    sd_gap, sd_far = (
        float(np.median(study["grid_sd"][in_gap])),
        float(np.median(study["grid_sd"][far])),
    )
    errors = study["errors"]
    steps = np.diff(np.asarray(errors, dtype=float))
    best = int(np.argmin(errors))
    trend = (
        f"falls after every one of the {len(errors)} sweeps"
        if np.all(steps < 0)
        else f"does not fall after every sweep: its smallest value, {errors[best]:.2g}, comes "
        f"after sweep {best + 1} of {len(errors)}"
    )
    keep_tol = catalogue_check("C9.3", "training-predictions")["bound"]
    ap_tol = catalogue_check("C9.3", "alternating-projections-error")["bound"]
    keep = float(study["change_projected"].max() / np.median(study["change_isotropic"]))
    return [
        Evidence(
            "C9.3",
            keep,
            part="training-predictions",
            note=f"the network's largest first-order change of its training outputs (central "
            f"differences) along the {len(study['change_projected'])} projected samples' Δθ / "
            f"its median along isotropic Δθ (the samples before projection); with the autodiff "
            f"J, max ‖JΔθ‖/(‖J‖₂‖Δθ‖) = {float(study['residual'].max()):.2g}",
            says="Projected-posterior samples leave the linearised training predictions "
            "unchanged: the network's training outputs move to first order by a negligible "
            "fraction of what unprojected draws move them."
            if keep < keep_tol
            else "Projected-posterior samples move the network's training outputs to first "
            "order: the projection does not keep the training predictions.",
            glue={
                "ch9_keep_ratio": keep,
                "ch9_keep_tol": keep_tol,
                "ch9_residual": float(study["residual"].max()),
            },
        ),
        Evidence(
            "C9.3",
            float(errors[-1] / errors[0]),
            part="alternating-projections",
            note=f"alternating projections: mean relative error to the dense P_ker after the "
            f"last of {len(errors)} sweeps / after the first (per sweep: "
            f"{', '.join(f'{e:.3g}' for e in errors)})",
            says=f"The sweeps do not converge: the error to the dense projector is "
            f"{errors[0]:.2g} after one sweep and {errors[-1]:.2g} after {len(errors)}, not an "
            f"order of magnitude smaller.",
            glue={
                "ch9_ap_first": float(errors[0]),
                "ch9_ap_last": float(errors[-1]),
                "ch9_ap_sweeps": len(errors),
                "ch9_ap_batch": cfg.ap_batch_size,
                "ch9_ap_tol": ap_tol,
                "ch9_ap_trend": trend,
                "ch9_ap_ratio": float(errors[-1] / errors[0]),
            },
        ),
        Evidence(
            "C9.3",
            float(errors[-1]),
            part="alternating-projections-error",
            note=f"relative error after {len(errors)} sweeps",
            says="After the last sweep the alternating projections match the dense projector.",
        ),
        Evidence(
            "C9.3",
            [sd_gap / sd_train, sd_far / sd_train],
            part="sd-growth",
            labels=["in the gap", "beyond the data"],
            note="linearised predictive sd of the projected posterior: median in the gap / max "
            "at the training inputs, median beyond the data / max at the training inputs",
            says="The projected posterior's predictive sd vanishes at the training inputs and "
            "grows in the gap and away from the data.",
            glue={"ch9_sd_train": sd_train, "ch9_sd_gap": sd_gap, "ch9_sd_far": sd_far},
        ),
    ]


# --------------------------------------------------------------------------- C9.6


def lanczos_study(f: Fit, rng_key, cfg: GGNNullSpaceSettings) -> dict:
    """SLQ log det(G + δI), its δ-gradient (matfree's adjoints) and the evidence's δ, each
    against the dense eigenvalues, at the tuned δ of the toy's Laplace fit; and XLA's
    temporary memory (bytes) of the compiled estimate (``memory_forward``) and of its
    δ-gradient through matfree's adjoints (``memory_adjoint``) or through the Lanczos
    iterations (``memory_iterations``)."""
    alpha = f.prior_precision
    x, theta, model_fn, sigma = f.x, f.theta, f.model_fn, f.noise_scale

    def matvec(v):
        return ns.ggn_vp(model_fn, theta, x, v, noise_scale=sigma)

    evidence = ns.slq_log_evidence(
        matvec, theta, rng_key, num_matvecs=cfg.slq_matvecs, num_probes=cfg.slq_probes
    )
    p, norm2 = theta.size, float(jnp.sum(theta**2))

    def logdet_and_grad(a):  # log det(G + aI) and its a-derivative, from log Z and its slope
        value, slope = (float(v) for v in evidence(jnp.log(jnp.asarray(a))))
        return p * math.log(a) - a * norm2 - 2 * value, (p - a * norm2 - 2 * slope) / a

    value, grad = logdet_and_grad(alpha)
    h = 1e-4 * alpha
    finite_diff = (logdet_and_grad(alpha + h)[0] - logdet_and_grad(alpha - h)[0]) / (2 * h)
    lam = jnp.clip(f.posterior.eigvals, 0.0)
    alpha_slq = ns.slq_prior_precision(matvec, theta, rng_key, evidence=evidence)

    def memory(fn_of_logdet, adjoint):  # XLA's temporary bytes of the compiled program
        def logdet(a):
            return ns.slq_logdet(
                matvec,
                p,
                a,
                rng_key,
                num_matvecs=cfg.slq_matvecs,
                num_probes=cfg.slq_probes,
                adjoint=adjoint,
            )

        return cost.xla_temp_bytes(fn_of_logdet(logdet), jnp.asarray(alpha))

    return {
        "memory_forward": memory(lambda g: g, True),
        "memory_adjoint": memory(jax.grad, True),
        "memory_iterations": memory(jax.grad, False),
        "alpha": alpha,
        "slq": float(value),
        "dense": float(ns.dense_logdet(lam, alpha)),
        "slq_grad": float(grad),
        "dense_grad": float(jnp.sum(1.0 / (lam + alpha))),
        "finite_diff": float(finite_diff),
        "alpha_slq": alpha_slq,
    }


def lanczos_evidence(study: dict, cfg: GGNNullSpaceSettings) -> list[Evidence]:
    """C9.6: SLQ log det and gradient vs dense (part ``slq``); the adjoint vs finite
    differences (``adjoint``); the evidence's δ (``evidence-delta``); the adjoint gradient's
    memory against differentiating through the iterations (``efficiency``). The tolerances
    are the catalogue's."""
    rel = [
        abs(study["slq"] - study["dense"]) / abs(study["dense"]),
        abs(study["slq_grad"] - study["dense_grad"]) / abs(study["dense_grad"]),
    ]
    adjoint = abs(study["slq_grad"] - study["finite_diff"]) / abs(study["finite_diff"])
    log_ratio = math.log(study["alpha_slq"] / study["alpha"])
    memory_ratio = study["memory_adjoint"] / study["memory_iterations"]
    slq_tol = catalogue_check("C9.6", "slq")["tol"]
    alpha_tol = catalogue_check("C9.6", "evidence-delta")["tol"]
    return [
        Evidence(
            "C9.6",
            rel,
            part="slq",
            labels=["log det", "its gradient in δ"],
            note="relative error of SLQ log det(G + δI) and of its δ-gradient vs dense eigh",
            says="matfree's Lanczos estimates the log-determinant and its gradient in δ "
            "within the tolerance of the dense values.",
            glue={
                "ch9_slq_rel": rel[0],
                "ch9_slq_grad_rel": rel[1],
                "ch9_slq_tol": slq_tol,
                "ch9_slq_probes": cfg.slq_probes,
                "ch9_slq_matvecs": cfg.slq_matvecs,
            },
        ),
        Evidence(
            "C9.6",
            adjoint,
            part="adjoint",
            note="relative gap between the Lanczos-adjoint gradient and a central finite "
            "difference of the same estimate (same probes)",
            says="The gradient through matfree's Lanczos adjoints is the derivative of the "
            "estimate, to round-off.",
            glue={"ch9_adjoint_rel": adjoint},
        ),
        Evidence(
            "C9.6",
            log_ratio,
            part="evidence-delta",
            note="log(δ chosen with SLQ / δ chosen with the dense eigenvalues)",
            says="The evidence's δ chosen with the Lanczos log-determinant agrees with the "
            "dense choice.",
            glue={
                "ch9_alpha_dense": study["alpha"],
                "ch9_alpha_slq": study["alpha_slq"],
                "ch9_alpha_tol": alpha_tol,
            },
        ),
        Evidence(
            "C9.6",
            memory_ratio,
            part="efficiency",
            note=f"XLA's temporary memory of the compiled δ-gradient: "
            f"{study['memory_adjoint'] / 1e6:.3g} MB through matfree's adjoints, "
            f"{study['memory_iterations'] / 1e6:.3g} MB through the Lanczos iterations "
            f"(the estimate alone: {study['memory_forward'] / 1e6:.3g} MB)",
            says=f"Through the adjoints the gradient needs {memory_ratio:.2g} of the memory "
            f"that differentiating through the Lanczos iterations needs."
            if memory_ratio < 1
            else f"Through the adjoints the gradient needs {memory_ratio:.2g} times the memory "
            f"of differentiating through the Lanczos iterations: no saving.",
            glue={
                "ch9_mem_adjoint": study["memory_adjoint"] / 1e6,
                "ch9_mem_iterations": study["memory_iterations"] / 1e6,
                "ch9_mem_forward": study["memory_forward"] / 1e6,
                "ch9_mem_ratio": memory_ratio,
            },
        ),
    ]
