"""The package's Laplace code (``inference.laplace``) vs ``laplax`` on one small regression.

Chapter 9's 1-D toy: Snelson's data without the gap 1.5 ≤ x ≤ 3, a tanh MLP 1-32-32-1
(P = 1153) at its MAP (``map_estimate.train_map``), Gaussian likelihood σ = 0.3, prior
precision δ tuned by the package's evidence; float64. Both libraries build the full GGN
Laplace posterior N(θ̂, (G + δI)⁻¹) with G = Jᵀ J / σ², and predict on a grid across the
data, the gap and beyond:

- package: ``laplace.laplace`` (dense GGN from per-point Jacobians, eigendecomposition),
  ``linearised_predictive``, ``predictive_samples``;
- laplax (0.0.2): ``curv.ggn.create_ggn_mv`` (loss ``"mse"``, Hessian 2I, so
  ``sigma_squared = 1/(2σ²)`` in the prior arguments gives G / … = JᵀJ/σ²),
  ``curv.cov.create_posterior_fn("full", …)`` (dense curvature, Cholesky scale),
  ``eval.pushforward.set_lin_pushforward`` and ``set_nonlin_pushforward``.

Agreement: max relative difference of the GGN, of the posterior covariance, of the
linearised predictive mean and variance (exact in both: round-off expected), and of the
sampled predictive's mean and variance (Monte Carlo: compared with the package against
itself under another key, the noise floor). Speed: best-of-``repeats`` wall time of each
stage after a first, compiling call, as laplax / package ratios, side by side in one run.

Run: ``pip install -e ".[compare]"`` (laplax), then
``python benchmarks/laplax_comparison.py [--clock cpu]`` (prints one table).
"""

import argparse
import time

import jax
import jax.flatten_util

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from laplax.curv.cov import create_posterior_fn  # noqa: E402
from laplax.curv.ggn import create_ggn_mv  # noqa: E402
from laplax.eval import pushforward as pf  # noqa: E402
from laplax.util.flatten import create_pytree_flattener  # noqa: E402
from laplax.util.mv import to_dense  # noqa: E402

from bnn_posteriors.data import loaders  # noqa: E402
from bnn_posteriors.inference import laplace, map_estimate  # noqa: E402
from bnn_posteriors.models import nets  # noqa: E402

SIGMA = 0.3  # chapter 9's toy_noise_scale


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
CLOCK = CLOCKS["wall"]


def best_time(fn, repeats):
    """(result of the first call, best time of ``repeats`` further calls on ``CLOCK``)."""
    out = jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = CLOCK()
        jax.block_until_ready(fn())
        times.append(CLOCK() - t0)
    return out, min(times)


def rel(a, b):
    """max |a − b| / max |b|."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def main(map_steps=3000, num_samples=2000, repeats=3, seed=20250609):
    x, y, _, _ = loaders.load_snelson(in_between=True)
    x, y = jnp.asarray(x, jnp.float64), jnp.asarray(y, jnp.float64)[:, None]
    grid = jnp.linspace(x.min() - 2.0, x.max() + 2.0, 200)[:, None]
    init = nets.mlp_init(jax.random.PRNGKey(seed), (1, 32, 32, 1), scheme="glorot")
    init = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), init)
    params, _ = map_estimate.train_map(
        init,
        x,
        y,
        likelihood="gaussian",
        noise_scale=SIGMA,
        activation="tanh",
        num_steps=map_steps,
        learning_rate=1e-2,
    )
    delta = float(
        laplace.optimise_prior_precision(
            laplace.laplace(
                params, x, y, likelihood="gaussian", noise_scale=SIGMA, activation="tanh"
            )
        ).prior_precision
    )
    k_pkg, k_lx, k_floor = jax.random.split(jax.random.PRNGKey(seed + 1), 3)

    # ---------------------------------------------------------------- package
    def pkg_fit():
        return laplace.laplace(
            params,
            x,
            y,
            likelihood="gaussian",
            noise_scale=SIGMA,
            prior_precision=delta,
            activation="tanh",
        )

    def pkg_lin(post):
        return laplace.linearised_predictive(post, grid)

    def pkg_samples(post, key):
        f = laplace.predictive_samples(post, grid, key, num_samples)
        return f.mean(0), f.var(0)

    # ---------------------------------------------------------------- laplax
    def model_fn(input, params):  # laplax's signature: one input (vmapped over the data)
        return nets.mlp_apply(params, input[None], activation_name="tanh")[0]

    data = {"input": x, "target": y}
    prior = {"prior_prec": delta, "sigma_squared": 1.0 / (2.0 * SIGMA**2)}
    flatten, _ = create_pytree_flattener(params)

    def lx_fit():
        ggn_mv = create_ggn_mv(model_fn, params, data, loss_fn="mse")
        posterior_fn = create_posterior_fn("full", mv=ggn_mv, layout=params)
        state = posterior_fn(prior)  # G·σ²-scaling + δI and its Cholesky scale
        return ggn_mv, posterior_fn, state.state

    def lx_lin(posterior_fn):
        pred = pf.set_lin_pushforward(
            model_fn,
            params,
            posterior_fn,
            prior,
            pushforward_fns=[pf.lin_setup, pf.lin_pred_mean, pf.lin_pred_var],
        )
        out = jax.vmap(pred)(grid)
        return out["pred_mean"], out["pred_var"]

    def lx_samples(posterior_fn, key):
        pred = pf.set_nonlin_pushforward(
            lambda input, params: nets.mlp_apply(params, input, activation_name="tanh"),
            params,
            posterior_fn,
            prior,
            key=key,
            num_samples=num_samples,
            pushforward_fns=[pf.nonlin_setup, pf.nonlin_pred_mean, pf.nonlin_pred_var],
        )
        out = pred(grid)
        return out["pred_mean"], out["pred_var"]

    post, t_pkg_fit = best_time(pkg_fit, repeats)
    (ggn_mv, posterior_fn, _), t_lx_fit = best_time(lx_fit, repeats)
    (m_pkg, v_pkg), t_pkg_lin = best_time(lambda: pkg_lin(post), repeats)
    (m_lx, v_lx), t_lx_lin = best_time(lambda: lx_lin(posterior_fn), repeats)
    (sm_pkg, sv_pkg), t_pkg_s = best_time(lambda: pkg_samples(post, k_pkg), repeats)
    (sm_lx, sv_lx), t_lx_s = best_time(lambda: lx_samples(posterior_fn, k_lx), repeats)
    # laplax's predictives as closures under one jax.jit (the package jits per chunk inside)
    lin_jit = jax.jit(lambda: lx_lin(posterior_fn))
    _, t_lx_lin_jit = best_time(lin_jit, repeats)
    samples_jit = jax.jit(lambda: lx_samples(posterior_fn, k_lx))
    (sm_jit, _), t_lx_s_jit = best_time(samples_jit, repeats)
    sm_floor, sv_floor = pkg_samples(post, k_floor)

    # the dense objects: package's GGN (P, P) and covariance vs laplax's, same flat order
    p = post.num_params
    ggn_pkg = post.eigvecs * post.eigvals @ post.eigvecs.T
    ggn_lx = to_dense(lambda v: flatten(ggn_mv(_unflat(v, params))), layout=p) / (2 * SIGMA**2)
    state = posterior_fn(prior)
    cov_lx = to_dense(lambda v: flatten(state.cov_mv(state.state)(_unflat(v, params))), layout=p)
    ggn_direct = laplace.ggn_matrix(
        post.model_fn, post.mean, x, likelihood="gaussian", noise_scale=SIGMA
    )
    noise = SIGMA**2
    rows = [
        ("GGN (dense)", rel(ggn_lx, ggn_direct), t_lx_fit / t_pkg_fit, "fit"),
        ("GGN, eigh round trip", rel(ggn_pkg, ggn_direct), float("nan"), ""),
        ("posterior covariance", rel(cov_lx, post.covariance), float("nan"), ""),
        ("linearised mean", rel(m_lx[:, 0], m_pkg[:, 0]), t_lx_lin / t_pkg_lin, "lin. pred."),
        (
            "linearised mean, jit",
            rel(lin_jit()[0][:, 0], m_pkg[:, 0]),
            t_lx_lin_jit / t_pkg_lin,
            "lin. pred.",
        ),
        ("linearised variance", rel(v_lx[:, 0], v_pkg[:, 0] - noise), float("nan"), ""),
        ("sampled mean", rel(sm_lx[:, 0], sm_pkg[:, 0]), t_lx_s / t_pkg_s, "sampled pred."),
        ("  noise floor (pkg vs pkg)", rel(sm_floor[:, 0], sm_pkg[:, 0]), float("nan"), ""),
        (
            "sampled mean, jit",
            rel(sm_jit[:, 0], sm_lx[:, 0]),
            t_lx_s_jit / t_pkg_s,
            "sampled pred.",
        ),
        ("sampled variance", rel(sv_lx[:, 0], sv_pkg[:, 0]), float("nan"), ""),
        ("  noise floor (pkg vs pkg)", rel(sv_floor[:, 0], sv_pkg[:, 0]), float("nan"), ""),
    ]
    print(
        f"toy 1-32-32-1 tanh, P = {p}, N = {x.shape[0]}, grid {grid.shape[0]}, δ = {delta:.4g},"
        f" {num_samples} samples, float64, best of {repeats}"
    )
    print(f"{'quantity':28s} {'max rel. diff':>14s} {'time laplax/pkg':>16s}  stage")
    for name, d, r, stage in rows:
        ratio = "" if np.isnan(r) else f"{r:.2f}x"
        print(f"{name:28s} {d:14.2e} {ratio:>16s}  {stage}")
    print(
        f"seconds ({CLOCK.__name__}) pkg/laplax: fit {t_pkg_fit:.3f}/{t_lx_fit:.3f}, linearised "
        f"{t_pkg_lin:.3f}/{t_lx_lin:.3f}, sampled {t_pkg_s:.3f}/{t_lx_s:.3f}"
    )


def _unflat(v, like):
    """Flat vector (P,) → pytree shaped like ``like`` (ravel_pytree's order)."""
    return jax.flatten_util.ravel_pytree(like)[1](v)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--map-steps", type=int, default=3000, help="AdamW steps of the MAP")
    parser.add_argument("--samples", type=int, default=2000, help="draws of the sampled predictive")
    parser.add_argument("--repeats", type=int, default=3, help="timings per stage (best kept)")
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="wall",
        help="wall time, or this process's CPU time (all threads; steadier on a shared machine)",
    )
    args = parser.parse_args()
    CLOCK = CLOCKS[args.clock]
    main(map_steps=args.map_steps, num_samples=args.samples, repeats=args.repeats)
