"""The cost of an inference method as a count of floating-point operations, never a clock.

XLA's cost analysis counts the FLOPs of a compiled program, but it counts a loop's body
once, whatever its trip count, and sees nothing inside LAPACK calls (``eigh``, ``svd``).
So a method's cost is composed here: XLA's count of one loop-free step times the number
of steps the method takes, plus the standard operation counts of the dense
factorisations (Golub & Van Loan, *Matrix Computations*, 4th ed., §8.3 and
Fig. 8.6.1). The counts depend on the
shapes only, so they are the same on every machine and for every seed ([MBNN] Fig. 5,
claim C6.8).
"""

from __future__ import annotations

import functools
import hashlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from bnn_posteriors.inference import laplace, metricbnn
from bnn_posteriors.models import nets


def xla_flops(fn, *args) -> float:
    """FLOPs XLA's cost analysis assigns to one call of the compiled ``fn(*args)``.

    Exact for loop-free programs; a loop's body is counted once.
    """
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    if analysis is None:
        raise RuntimeError("xla_flops: XLA's cost analysis is not available for this backend")
    if isinstance(analysis, list | tuple):  # older JAX: one dict per device
        analysis = analysis[0]
    return float(analysis.get("flops", 0.0))


def xla_temp_bytes(fn, *args) -> int:
    """Bytes of temporary memory XLA allocates for one call of the compiled ``fn(*args)``.

    Its memory analysis of the whole program, loops included (a loop's carry and the
    residuals reverse mode stores across its iterations), without the arguments and outputs.
    """
    analysis = jax.jit(fn).lower(*args).compile().memory_analysis()
    if analysis is None:
        raise RuntimeError("xla_temp_bytes: XLA's memory analysis is not available here")
    return int(analysis.temp_size_in_bytes)


def eigh_flops(n: int) -> float:
    """Symmetric eigendecomposition with eigenvectors of an (n, n) matrix: 9n³ (GVL §8.3)."""
    return 9.0 * n**3


def svd_flops(m: int, n: int) -> float:
    """Thin SVD of an (m, n) matrix giving Σ and V: 2ab² + 11b³, a ≥ b (R-SVD, GVL Fig. 8.6.1)."""
    a, b = max(m, n), min(m, n)
    return 2.0 * a * b**2 + 11.0 * b**3


def _digest(array) -> tuple:
    array = np.ascontiguousarray(array)
    return array.shape, str(array.dtype), hashlib.sha256(array.tobytes()).hexdigest()


def gradient_flops(spec, x, y) -> float:
    """FLOPs of one full-batch gradient of the log joint of the Bayesian MLP ``spec``
    (:class:`~bnn_posteriors.models.numpyro_models.MLP`) on ``(x, y)``: the unit in which a
    gradient-based method's cost is counted (one NUTS leapfrog step, one optimiser or MCLMC
    step on the full batch). XLA's count of the compiled gradient at NumPyro's start.

    Compiling that gradient takes about a second, so the count is kept per ``spec`` and data
    (by their bytes' sha256) for the life of the process: scoring many methods on one problem
    compiles it once."""
    key = (spec, _digest(x), _digest(y))
    if key not in _GRADIENT_FLOPS:
        _GRADIENT_FLOPS[key] = _compiled_gradient_flops(spec, x, y)
    return _GRADIENT_FLOPS[key]


_GRADIENT_FLOPS: dict[tuple, float] = {}


def _compiled_gradient_flops(spec, x, y) -> float:
    from bnn_posteriors.inference import mcmc

    data = spec.kwargs(jnp.asarray(x), jnp.asarray(y))  # JAX arrays: the model indexes them
    logdensity, position, _ = mcmc.log_joint_fn(jax.random.PRNGKey(0), spec.model, data)
    return xla_flops(jax.grad(logdensity), position)


def laplace_flops(params, x, x_test, *, noise_scale: float, activation: str = "tanh") -> dict:
    """FLOPs of the full-GGN Laplace approximation of a regression MLP
    (Gaussian noise sd ``noise_scale``).

    Terms: ``ggn`` (per-point Jacobians and Σ JᵀΛJ over ``x``), ``eigh`` (of the P × P GGN),
    ``predictive`` (the covariance from the eigenpairs and J Σ Jᵀ on ``x_test``). The
    bisection for the prior precision costs O(P) per step and is left out.
    """
    theta, unravel = ravel_pytree(params)
    model_fn = laplace._FullModel(
        functools.partial(nets.mlp_apply, activation_name=activation), unravel
    )
    size = theta.size

    def ggn(t):
        return laplace._ggn_chunk(model_fn, t, jnp.asarray(x), noise_scale, "gaussian")

    def predictive(t, vecs, vals):
        cov = (vecs / (vals + 1.0)) @ vecs.T
        jac = laplace.output_jacobian(model_fn, t, jnp.asarray(x_test))
        return jnp.einsum("nap,pq,nbq->nab", jac, cov, jac)

    vecs, vals = jnp.eye(size), jnp.ones(size)
    return {
        "ggn": xla_flops(ggn, theta),
        "eigh": eigh_flops(size),
        "predictive": xla_flops(predictive, theta, vecs, vals),
    }


def metricbnn_flops(
    loss_fn,
    theta_map,
    apply_fn,
    unravel,
    x_test,
    *,
    num_particles: int,
    num_steps: int,
    num_refine: int,
    ae_updates: int,
    ae_batch: int,
    latent_dim: int,
    hidden,
    num_components: int | None,
    num_samples: int,
) -> dict:
    """FLOPs of MetricBNN (Alg. 1) from the flat MAP ``theta_map`` (P,), budgets as given.

    Terms: ``walk`` (N·T drifts and N·T·M gradient steps of ``loss_fn``), ``svd`` (the
    principal directions of the N·T solutions), ``autoencoder`` (``ae_updates`` Adam
    updates of eq. 6 on batches of ``ae_batch``) and ``predictive`` (``num_samples``
    decoded networks evaluated on ``x_test``). ``num_components``: the principal directions
    in front of the encoder (this book's implementation); None: the encoder takes all P
    parameters, as [MBNN] describes it, and ``svd`` is 0.
    """
    size = theta_map.size
    if num_components is None:
        rank = size
    else:
        rank = min(num_components, num_particles * num_steps, size)
    grad_step = xla_flops(lambda t: t - 1e-3 * jax.grad(loss_fn)(t), theta_map)
    walk = num_particles * num_steps * (num_refine * grad_step + 2.0 * size)
    solutions = num_particles * (num_steps + 1)
    projection = 0.0 if num_components is None else 2.0 * solutions * size * rank
    one_update = _ae_update_flops(rank, latent_dim, tuple(hidden), ae_batch, num_steps)
    ae = metricbnn.autoencoder_init(jax.random.PRNGKey(0), rank, latent_dim, hidden)
    model = {"ae": ae, "theta_map": theta_map, "basis": jnp.zeros((size, rank)), "scale": 1.0}

    def predictive(z):
        thetas = metricbnn.from_latent(model, z)
        return jax.vmap(lambda t: apply_fn(unravel(t), jnp.asarray(x_test)))(thetas)

    return {
        "walk": walk,
        "svd": 0.0
        if num_components is None
        else svd_flops(num_particles * num_steps, size) + projection,
        "autoencoder": ae_updates * one_update,
        "predictive": xla_flops(predictive, jnp.zeros((num_samples, latent_dim))),
    }


@functools.cache
def _ae_update_flops(rank: int, latent_dim: int, hidden: tuple, batch: int, num_steps: int):
    """FLOPs of one Adam update of the autoencoder (eq. 6) on a batch; depends on shapes only."""
    ae = metricbnn.autoencoder_init(jax.random.PRNGKey(0), rank, latent_dim, hidden)
    paths = jnp.zeros((2, num_steps + 1, rank))  # the update's cost does not depend on N

    def update(a, p):
        key = jax.random.PRNGKey(0)
        return metricbnn._train_ae(a, key, p, 1.0, 1.0, 1e-3, 1, batch, num_steps)

    return xla_flops(update, ae, paths)


def flops_against_depth(
    rng_keys,
    x,
    y,
    x_test,
    *,
    depths,
    width: int,
    noise_scale: float,
    prior_precision: float,
    **budgets,
):
    """FLOPs of the LA and of MetricBNN on tanh MLPs of growing depth ([MBNN] Fig. 5, C6.8).

    For each depth in ``depths`` (with its key of ``rng_keys``), an MLP 1 → width^depth → 1
    (N(0, 1/fan_in) weights) on the regression data x, y (n, 1): :func:`laplace_flops`
    and :func:`metricbnn_flops` with ``budgets`` (its keyword arguments) on ``x_test``, and
    once more with the encoder on all P parameters (``num_components=None``).
    Returns ``(rows, terms)``: rows ``{"depth", "P", "LA", "MetricBNN", "MetricBNN, all P
    in"}`` of lists (the totals) and, per depth, the pair of term dicts (LA, MetricBNN).
    """
    if len(rng_keys) != len(depths):
        raise ValueError(f"need one key per depth: {len(rng_keys)} keys, {len(depths)} depths")
    tanh_net = functools.partial(nets.mlp_apply, activation_name="tanh")
    rows: dict[str, list] = {
        "depth": [],
        "P": [],
        "LA": [],
        "MetricBNN": [],
        "MetricBNN, all P in": [],
    }
    terms: list[tuple[dict, dict]] = []
    for key, depth in zip(rng_keys, depths, strict=True):
        params = nets.mlp_init(key, (1, *([width] * depth), 1), scheme="fan_in")
        theta, unravel = ravel_pytree(params)
        loss = metricbnn.refinement_loss(
            unravel,
            tanh_net,
            x,
            y,
            likelihood="gaussian",
            noise_scale=noise_scale,
            prior_precision=prior_precision,
        )
        la_terms = laplace_flops(params, x, x_test, noise_scale=noise_scale)
        mb_terms = metricbnn_flops(loss, theta, tanh_net, unravel, x_test, **budgets)
        all_in = {**budgets, "num_components": None}
        mb_all = metricbnn_flops(loss, theta, tanh_net, unravel, x_test, **all_in)
        rows["depth"].append(depth)
        rows["P"].append(int(theta.size))
        rows["LA"].append(sum(la_terms.values()))
        rows["MetricBNN"].append(sum(mb_terms.values()))
        rows["MetricBNN, all P in"].append(sum(mb_all.values()))
        terms.append((la_terms, mb_terms))
    return rows, terms
