"""The null space of the generalised Gauss–Newton (GGN) matrix and the posteriors built in it.

For a network f(x; θ) with P parameters, N training inputs and O outputs, the training
Jacobian J = ∂f(X; θ)/∂θ is (N·O, P) and the GGN is G = Jᵀ Λ J with Λ the Hessian of the
negative log likelihood in the outputs (I/σ² for a Gaussian likelihood). So rank G ≤ N·O
and its kernel has dimension P − rank G ≥ P − N·O ([RI] §3, [NS] §2). Along the kernel the
*linearised* model's training predictions do not move.

- :func:`flat_mlp` gives θ and a flat model ``model_fn(θ, x)`` of the package's MLP;
- :func:`ggn_vp` is the GGN-vector product Jᵀ Λ (J v), a ``jax.jvp`` then a ``jax.vjp``;
- :func:`training_jacobian`, :func:`rank_report` (rank and kernel by a dense SVD);
- :func:`kernel_projector`: the dense P_ker = I − Jᵀ (J Jᵀ)⁺ J ([NS] eq. 5);
- :func:`alternating_projections`: the matrix-free projection of [NS] Alg. 1, one exact
  projection onto the kernel of each minibatch's Jacobian per step, swept over the batches;
- :func:`projected_samples`: θ ~ N(θ̂, α⁻¹ P_ker), the projected posterior of [NS];
- :func:`projected_linearised_predictive`: its linearised predictive, in closed form;
- :func:`split_kernel_image`: a perturbation's kernel and image parts ([RI] §4);
- :func:`first_order_change`: the network's first-order change along directions, by central
  differences of the network (no Jacobian), to test that kernel directions keep the
  training predictions;
- :func:`slq_logdet`: log det(G + αI) by stochastic Lanczos quadrature (matfree), which
  ``jax.grad`` differentiates through matfree's Lanczos adjoints ([LZ]);
  :func:`slq_log_evidence` the Laplace evidence with it, :func:`slq_prior_precision` its α.

Shapes: θ (P,), x (n, d), outputs (n, O), perturbations (S, P).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from matfree import decomp, funm, stochtrace
from scipy import optimize

from bnn_posteriors.models import nets
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int


def flat_mlp(params: list[dict], activation: str = "tanh") -> tuple[jnp.ndarray, Callable]:
    """The MLP ``params`` as flat parameters θ (P,) and ``model_fn(θ, x)`` → (n, O)."""
    nets.activation(activation)  # a clear error for an unknown name
    theta, unravel = nets.flatten(params)

    def model_fn(t, x):
        return nets.mlp_apply(unravel(t), x, activation_name=activation)

    return theta, model_fn


def _theta(theta, where: str):
    theta = jnp.asarray(theta)
    if theta.ndim != 1:
        raise ValueError(f"{where}: theta must be a flat vector (P,), got shape {theta.shape}")
    validate.finite("theta", theta, where=where)
    return theta


def _x(x, where: str):
    return jnp.asarray(validate.check_x(x, where=where, ndim=(2,)))


def _check_vector(name: str, v, size: int, where: str):
    v = jnp.asarray(v)
    if v.shape[-1:] != (size,):
        raise ValueError(f"{where}: {name} must end in the P = {size} axis, got shape {v.shape}")
    return v


def output_hessian_vp(outputs, u, likelihood: str, noise_scale: float):
    """Λ u per point, the Hessian of the negative log-likelihood in the outputs f (n, O) times
    u (n, O): u/σ² (Gaussian) or diag(p)u − p(pᵀu) (categorical, p = softmax f). Traceable."""
    if likelihood == "gaussian":
        return u / noise_scale**2
    p = jax.nn.softmax(outputs, axis=-1)
    return p * u - p * jnp.sum(p * u, axis=-1, keepdims=True)


def ggn_vp(
    model_fn: Callable, theta, x, v, *, likelihood: str = "gaussian", noise_scale: float = 1.0
):
    """G v = Jᵀ Λ (J v): a ``jax.jvp`` (J v, (n, O)) then a ``jax.vjp`` (Jᵀ u); (P,).

    Equals :func:`bnn_posteriors.inference.laplace.ggn_matrix` times ``v`` without forming G.
    """
    validate.check_likelihood(likelihood, where="ggn_vp")
    noise_scale = positive("noise_scale", noise_scale, where="ggn_vp")
    theta = _theta(theta, "ggn_vp")
    v = _check_vector("v", v, theta.size, "ggn_vp")
    return _ggn_vp(model_fn, theta, _x(x, "ggn_vp"), v, likelihood, noise_scale)


def _ggn_vp(model_fn, theta, x, v, likelihood, noise_scale):
    outputs, jv = jax.jvp(lambda t: model_fn(t, x), (theta,), (v,))
    _, vjp = jax.vjp(lambda t: model_fn(t, x), theta)
    return vjp(output_hessian_vp(outputs, jv, likelihood, noise_scale))[0]


def training_jacobian(model_fn: Callable, theta, x):
    """The Jacobian J of the stacked training outputs in θ: (n·O, P), rows point-major."""
    theta = _theta(theta, "training_jacobian")
    x = _x(x, "training_jacobian")
    jac = jax.jacrev(lambda t: model_fn(t, x))(theta)  # (n, O, P)
    return jac.reshape(-1, theta.size)


def numerical_rank(singular_values, shape: tuple[int, int], rtol: float | None = None) -> int:
    """Singular values above rtol·σ_max (default rtol = max(shape)·eps, as NumPy's)."""
    s = np.asarray(singular_values)
    if rtol is None:
        rtol = max(shape) * np.finfo(s.dtype).eps
    rtol = positive("rtol", rtol, where="numerical_rank")
    return int(np.sum(s > rtol * (s.max() if s.size else 0.0)))


def rank_report(jac, *, num_outputs: int, rtol: float | None = None) -> dict:
    """Rank of J and of the GGN JᵀJ by a dense SVD, and the kernel dimension.

    ``jac`` (N·O, P); returns ``{"P", "NO", "rank_J", "rank_ggn", "dim_ker",
    "singular_values"}`` with dim_ker = P − rank_ggn; rank_ggn ≤ N·O is the claim.
    """
    jac = np.asarray(jac)
    if jac.ndim != 2:
        raise ValueError(f"rank_report: jac must be (N·O, P), got shape {jac.shape}")
    num_outputs = positive_int("num_outputs", num_outputs, where="rank_report")
    if jac.shape[0] % num_outputs:
        raise ValueError(
            f"rank_report: jac has {jac.shape[0]} rows, not a multiple of O = {num_outputs}"
        )
    s_j = np.linalg.svd(jac, compute_uv=False)
    s_g = np.linalg.svd(jac.T @ jac, compute_uv=False)  # (P,) eigenvalues of JᵀJ
    p = jac.shape[1]
    rank_g = numerical_rank(s_g, (p, p), rtol)
    return {
        "P": p,
        "NO": jac.shape[0],
        "rank_J": numerical_rank(s_j, jac.shape, rtol),
        "rank_ggn": rank_g,
        "dim_ker": p - rank_g,
        "singular_values": s_j,
    }


def _row_space(jac, rtol: float | None):
    """(U_r, s_r, V_r) of the SVD of J, the singular values above rtol·σ_max only.

    Zeroed (not dropped) where they fall below, so shapes stay static; rtol defaults to
    max(shape)·eps (NumPy's ``matrix_rank``). The SVD of J, not the eigendecomposition of
    J Jᵀ, keeps the directions with σ ≪ √eps·σ_max accurate.
    """
    u, s, vt = jnp.linalg.svd(jac, full_matrices=False)
    if rtol is None:
        rtol = max(jac.shape) * jnp.finfo(jac.dtype).eps
    keep = s > rtol * jnp.max(s)
    return u * keep, jnp.where(keep, s, 0.0), vt * keep[:, None]


def kernel_projector(jac, *, rtol: float | None = None):
    """P_ker = I − Jᵀ (J Jᵀ)⁺ J = I − V_r V_rᵀ, the orthogonal projector onto ker J ([NS] eq. 5).

    V_r: the right singular vectors of J with σ > rtol·σ_max (default rtol max(shape)·eps);
    (P, P).
    """
    jac = jnp.asarray(jac)
    if jac.ndim != 2:
        raise ValueError(f"kernel_projector: jac must be (N·O, P), got shape {jac.shape}")
    validate.finite("jac", jac, where="kernel_projector")
    if rtol is not None:
        rtol = positive("rtol", rtol, where="kernel_projector")
    _, _, vt = _row_space(jac, rtol)
    return jnp.eye(jac.shape[1], dtype=jac.dtype) - vt.T @ vt


def alternating_projections(
    model_fn: Callable,
    theta,
    x_batches: Sequence,
    vectors,
    *,
    num_sweeps: int,
    rtol: float | None = None,
):
    """[NS] Alg. 1: project ``vectors`` onto ker J by alternating minibatch projections.

    Each step applies v ← v − J_bᵀ (J_b J_bᵀ)⁺ J_b v for one batch b (J_b v a ``jvp``,
    J_bᵀ u a ``vjp``; only the (b·O, b·O) matrix J_b J_bᵀ is formed), in order over the
    batches; a sweep visits every batch once. ``rtol``: singular values of J_b at most
    rtol·σ_max count as zero (default max(shape)·eps). Returns the iterates after each
    sweep, (num_sweeps, S, P), for ``vectors`` (S, P).
    """
    theta = _theta(theta, "alternating_projections")
    vectors = _check_vector("vectors", vectors, theta.size, "alternating_projections")
    if vectors.ndim != 2:
        raise ValueError(
            f"alternating_projections: vectors must be (S, P), got shape {vectors.shape}"
        )
    num_sweeps = positive_int("num_sweeps", num_sweeps, where="alternating_projections")
    batches = [_x(xb, "alternating_projections") for xb in x_batches]
    if not batches:
        raise ValueError("alternating_projections: x_batches is empty")
    if rtol is not None:
        rtol = positive("rtol", rtol, where="alternating_projections")
    pinvs = []
    for xb in batches:  # (J_b J_bᵀ)⁺ = U diag(σ⁻²) Uᵀ from the SVD of J_b, (b·O, b·O)
        jb = jax.jacrev(lambda t, xb=xb: model_fn(t, xb))(theta).reshape(-1, theta.size)
        u, sv, _ = _row_space(jb, rtol)
        inv = jnp.where(sv > 0, 1.0 / jnp.where(sv > 0, sv, 1.0) ** 2, 0.0)
        pinvs.append((u * inv) @ u.T)

    def project(v, xb, m_pinv):
        f = functools.partial(lambda t, xb: model_fn(t, xb), xb=xb)
        _, jv = jax.jvp(f, (theta,), (v,))
        out, vjp = jax.vjp(f, theta)
        u = (m_pinv @ jv.reshape(-1)).reshape(out.shape)
        return v - vjp(u)[0]

    @jax.jit
    def sweep(v):
        for xb, m_pinv in zip(batches, pinvs, strict=True):
            v = jax.vmap(lambda w, xb=xb, m=m_pinv: project(w, xb, m))(v)
        return v

    out = []
    v = vectors
    for _ in range(num_sweeps):
        v = sweep(v)
        out.append(v)
    return jnp.stack(out)


def projected_samples(rng_key, theta, projector, prior_precision: float, num_samples: int):
    """θ_s = θ̂ + α^{-1/2} P_ker z_s, z_s ~ N(0, I): draws of N(θ̂, α⁻¹ P_ker) ([NS] §3); (S, P).

    ``projector`` is the (P, P) matrix of :func:`kernel_projector` or a function v ↦ P_ker v
    on (S, P) rows (e.g. :func:`alternating_projections`' last sweep).
    """
    theta = _theta(theta, "projected_samples")
    alpha = positive("prior_precision", prior_precision, where="projected_samples")
    num_samples = positive_int("num_samples", num_samples, where="projected_samples")
    z = jax.random.normal(rng_key, (num_samples, theta.size), dtype=theta.dtype)
    if callable(projector):
        pz = projector(z)
    else:
        projector = jnp.asarray(projector)
        if projector.shape != (theta.size, theta.size):
            raise ValueError(
                f"projected_samples: projector must be (P, P) = {(theta.size,) * 2}, "
                f"got {projector.shape}"
            )
        pz = z @ projector  # P_ker is symmetric
    return theta + pz / math.sqrt(alpha)


def projected_linearised_predictive(
    model_fn: Callable, theta, projector, prior_precision: float, x, *, noise_scale: float = 0.0
):
    """Linearised predictive of N(θ̂, α⁻¹ P_ker): mean f(x; θ̂), var α⁻¹ J_x P_ker J_xᵀ + σ².

    Returns ``(mean (n, O), var (n, O))`` (the diagonal of the output covariance);
    ``noise_scale`` σ = 0 gives the epistemic part alone.
    """
    theta = _theta(theta, "projected_linearised_predictive")
    alpha = positive("prior_precision", prior_precision, where="projected_linearised_predictive")
    noise_scale = validate.non_negative(
        "noise_scale", noise_scale, where="projected_linearised_predictive"
    )
    x = _x(x, "projected_linearised_predictive")
    projector = jnp.asarray(projector)
    if projector.shape != (theta.size, theta.size):
        raise ValueError(
            f"projected_linearised_predictive: projector must be (P, P), got {projector.shape}"
        )
    mean = model_fn(theta, x)
    jac = jax.jacrev(lambda t: model_fn(t, x))(theta)  # (n, O, P)
    var = jnp.einsum("nap,pq,naq->na", jac, projector, jac) / alpha
    return mean, jnp.clip(var, 0.0) + noise_scale**2


def split_kernel_image(projector, perturbations):
    """(P_ker Δ, (I − P_ker) Δ) of perturbations Δ (S, P): their kernel and image parts."""
    projector = jnp.asarray(projector)
    delta = jnp.asarray(perturbations)
    if projector.ndim != 2 or projector.shape[0] != projector.shape[1]:
        raise ValueError(f"split_kernel_image: projector must be (P, P), got {projector.shape}")
    delta = _check_vector("perturbations", delta, projector.shape[0], "split_kernel_image")
    kernel = delta @ projector
    return kernel, delta - kernel


def first_order_change(model_fn: Callable, theta, x, directions, *, step: float = 1e-4):
    """The network's first-order change of its outputs at ``x`` along each row v of
    ``directions`` (S, P): ‖f(x; θ + h v̂) − f(x; θ − h v̂)‖ / (2h), v̂ = v/‖v‖; (S,).

    Central finite differences of the network itself, with no Jacobian: the truncation error
    is O(h²), so it measures ‖J v̂‖ independently of the autodiff Jacobian a kernel was built
    from. Zero along the kernel of J to O(h²); the linearised model's change along v̂.
    """
    theta = _theta(theta, "first_order_change")
    x = _x(x, "first_order_change")
    directions = jnp.atleast_2d(
        _check_vector("directions", directions, theta.size, "first_order_change")
    )
    step = positive("step", step, where="first_order_change")
    norms = jnp.linalg.norm(directions, axis=1, keepdims=True)
    if not bool(jnp.all(norms > 0)):
        raise ValueError("first_order_change: a direction is zero; it has no first-order change")
    unit = directions / norms

    def change(v):
        diff = model_fn(theta + step * v, x) - model_fn(theta - step * v, x)
        return jnp.linalg.norm(diff) / (2 * step)

    return jax.vmap(change)(unit)


def relative_residual(jac, perturbations):
    """‖J Δ_s‖ / (‖J‖₂ ‖Δ_s‖) per row Δ_s of (S, P): 0 in the kernel, ≤ 1 always; (S,)."""
    jac = jnp.asarray(jac)
    delta = _check_vector("perturbations", perturbations, jac.shape[-1], "relative_residual")
    delta = jnp.atleast_2d(delta)
    norm_j = jnp.linalg.norm(jac, ord=2)
    return jnp.linalg.norm(delta @ jac.T, axis=1) / (norm_j * jnp.linalg.norm(delta, axis=1))


def slq_logdet(
    matvec: Callable,
    dim: int,
    prior_precision,
    rng_key,
    *,
    num_matvecs: int = 30,
    num_probes: int = 50,
    dtype=None,
    adjoint: bool = True,
):
    """log det(G + αI) by stochastic Lanczos quadrature with matfree ([LZ]).

    ``matvec(v)`` = G v on (dim,) vectors; Rademacher probes; ``num_matvecs`` Lanczos steps
    with full reorthogonalisation and matfree's custom adjoint, so ``jax.grad`` in α (and
    in whatever ``matvec`` closes over) is the gradient of this estimate. A scalar.
    ``adjoint=False`` lets JAX differentiate through the Lanczos iterations instead (the
    alternative [LZ]'s adjoints replace; same value and gradient).
    """
    dim = positive_int("dim", dim, where="slq_logdet")
    num_matvecs = positive_int("num_matvecs", num_matvecs, where="slq_logdet")
    if num_matvecs > dim:
        raise ValueError(f"slq_logdet: num_matvecs {num_matvecs} exceeds the dimension {dim}")
    num_probes = positive_int("num_probes", num_probes, where="slq_logdet")
    alpha = positive("prior_precision", prior_precision, where="slq_logdet")
    dtype = jnp.result_type(float) if dtype is None else dtype
    tridiag = decomp.tridiag_sym(num_matvecs, reortho="full", custom_vjp=bool(adjoint))
    integrand = funm.monte_carlo_funm_sym_logdet(tridiag)
    sampler = stochtrace.sampler_signs(jnp.zeros(dim, dtype=dtype), num=num_probes)
    estimate = stochtrace.estimator_monte_carlo(integrand, sampler)
    return estimate(lambda v, a: matvec(v) + a * v, rng_key, jnp.asarray(alpha, dtype=dtype))


def dense_logdet(eigvals, prior_precision):
    """log det(G + αI) = Σ log(λ_i + α) from the GGN eigenvalues λ (P,)."""
    alpha = positive("prior_precision", prior_precision, where="dense_logdet")
    return jnp.sum(jnp.log(jnp.clip(jnp.asarray(eigvals), 0.0) + alpha))


def slq_log_evidence(
    matvec: Callable, theta, rng_key, *, num_matvecs: int = 30, num_probes: int = 50
) -> Callable:
    """log α ↦ (log Z(α), d log Z / d log α), jitted, with an SLQ log-determinant.

    log Z(α) = (P/2) log α − (α/2)‖θ̂‖² − ½ log det(G + αI), the Laplace evidence up to
    terms free of α (:func:`.laplace.log_marginal_likelihood`); the derivative comes from
    ``jax.grad`` through matfree's Lanczos adjoints, with the same probes at every α.
    """
    theta = _theta(theta, "slq_log_evidence")
    p, norm2 = theta.size, jnp.sum(theta**2)

    def log_evidence(log_alpha):
        alpha = jnp.exp(log_alpha)
        logdet = slq_logdet(
            matvec, p, alpha, rng_key, num_matvecs=num_matvecs, num_probes=num_probes
        )
        return 0.5 * p * log_alpha - 0.5 * alpha * norm2 - 0.5 * logdet

    return jax.jit(jax.value_and_grad(log_evidence))


def slq_prior_precision(
    matvec: Callable,
    theta,
    rng_key,
    *,
    lower: float | None = None,
    upper: float | None = None,
    num_matvecs: int = 30,
    num_probes: int = 50,
    xtol: float = 1e-6,
    max_iter: int = 100,
    evidence: Callable | None = None,
) -> float:
    """The α that maximises the Laplace evidence with an SLQ log-determinant ([LZ] §6).

    The root of the derivative of :func:`slq_log_evidence` in log α (fixed probes), by
    Brent's method to ``xtol`` in log α. The root solves Σ λ_i/(λ_i + α) = α‖θ̂‖² and so is
    at most P/‖θ̂‖²: the default bracket is [10⁻⁶, 1]·P/‖θ̂‖². ``evidence`` reuses a
    compiled :func:`slq_log_evidence`. The dense twin is :func:`.laplace.optimise_prior_precision`.
    """
    theta = _theta(theta, "slq_prior_precision")
    bound = theta.size / max(float(jnp.sum(theta**2)), np.finfo(np.float64).tiny)
    upper = positive("upper", bound if upper is None else upper, where="slq_prior_precision")
    lower = positive("lower", 1e-6 * upper if lower is None else lower, where="slq_prior_precision")
    if not lower < upper:
        raise ValueError(f"slq_prior_precision: lower {lower} must be below upper {upper}")
    xtol = positive("xtol", xtol, where="slq_prior_precision")
    max_iter = positive_int("max_iter", max_iter, where="slq_prior_precision")
    if evidence is None:
        evidence = slq_log_evidence(
            matvec, theta, rng_key, num_matvecs=num_matvecs, num_probes=num_probes
        )

    def slope(log_alpha):
        value = float(evidence(jnp.asarray(log_alpha, dtype=theta.dtype))[1])
        if not math.isfinite(value):
            raise ValueError(
                f"slq_prior_precision: the evidence's slope is {value} at α = "
                f"{math.exp(log_alpha):.3g} (Lanczos broke down); narrow [lower, upper]"
            )
        return value

    lo, hi = math.log(lower), math.log(upper)
    if slope(lo) <= 0:
        return lower
    if slope(hi) >= 0:
        return upper
    root = optimize.brentq(slope, lo, hi, xtol=xtol, maxiter=max_iter)
    return math.exp(root)
