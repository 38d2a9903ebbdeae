"""[RI]'s Laplace diffusion: Euler steps of the Laplace covariance on the GGN's image.

[RI] (Roy et al., 2024, §5) extend the reparameterisation invariance of the linearised
Laplace approximation to the network itself with a diffusion whose steps never leave the
non-kernel (image) subspace of the GGN at the *current* parameters. Starting at the MAP θ̂,
for t = 0, …, T − 1 with step h = 1/T (unit total time)::

    G(θ_t) ≈ U_t Λ_t U_tᵀ           (rank-k Lanczos on GGN-vector products at θ_t)
    θ_{t+1} = θ_t + √h · U_t (Λ_t + α I_k)^{-1/2} ε_t,   ε_t ~ N(0, I_k).

Each increment has the Laplace covariance (G + αI)⁻¹ restricted to the top-k eigenspace
of G(θ_t); in the linear limit (G constant) the T steps add up to a draw of
N(θ̂, U (Λ + αI)⁻¹ Uᵀ), the Laplace approximation with its kernel part removed. Settings as
the authors' code, ``h-roy/geometric-laplace``: ``src/sampling/lanczos_diffusion.py``
(``lanczos_diffusion``, ``diffusion_type="non-kernel-eigvals"``: Ritz pairs of a rank-k
Lanczos, increments 1/√T · U (Λ + α)^{-1/2} ε) and ``experiments/sine_curve.py`` (their
toy regression: T = 1000 steps, k = 7, 50 samples). Two departures, both stated: here T
steps of variance 1/T each (theirs take T − 1, a total time of 1 − 1/T), and Lanczos started
at G z for a fresh Gaussian z per step (theirs starts at (ε, 1, …, 1), whose kernel part
enters the Krylov space).

``project=False`` is the broken twin the tests and the chapter use: each increment then
also carries the prior's α^{-1/2} (I − U Uᵀ) ε' on the rest of parameter space, so that the
steps add up to sampled Laplace's full covariance (the authors' ``"full-ggn"`` type).

Shapes: θ (P,), x (n, d); samples (S, P).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from matfree import decomp

from bnn_posteriors.inference import ggn_null_space
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int


def lanczos_eigenpairs(matvec: Callable, start, rank: int):
    """Ritz pairs (λ (k,), U (P, k)) of a symmetric operator by k steps of Lanczos (matfree).

    ``matvec(v)`` on (P,) vectors; full reorthogonalisation. λ ascending; U's columns are
    orthonormal and span the Krylov space of ``start``, which for a rapidly decaying spectrum
    holds the top eigenvectors first. Traceable (used inside ``jit``); ``rank`` ≤ P.
    """
    start = jnp.asarray(start)
    rank = positive_int("rank", rank, where="lanczos_eigenpairs")
    if start.ndim != 1 or rank > start.size:
        raise ValueError(
            f"lanczos_eigenpairs: start must be a vector (P,) with P ≥ rank = {rank}, "
            f"got shape {start.shape}"
        )
    tridiag = decomp.tridiag_sym(rank, reortho="full", custom_vjp=False)
    basis, small, *_ = tridiag(matvec, start)  # basis (k, P) rows orthonormal; small (k, k)
    eigvals, vecs = jnp.linalg.eigh(small)
    return eigvals, basis.T @ vecs


def diffusion_increment(
    rng_key,
    model_fn,
    theta,
    x,
    *,
    prior_precision,
    noise_scale,
    rank: int,
    step_size,
    project: bool = True,
    likelihood: str = "gaussian",
):
    """One Euler step's increment √h · U (Λ + α)^{-1/2} ε at θ (P,), from the GGN at θ.

    (U, Λ): :func:`lanczos_eigenpairs` of G(θ) = Jᵀ H J (H = I/σ² for the Gaussian
    likelihood, diag(p) − ppᵀ per point for the categorical one:
    :func:`.ggn_null_space.output_hessian_vp`), GGN-vector products as in
    :func:`.ggn_null_space.ggn_vp` (a ``jvp`` then a ``vjp``, here linearised once per step),
    started at G z for a Gaussian z, so that the Krylov space, and U, lie in G's image (a
    start with a kernel part would put one Ritz vector, with a Ritz value near 0 and so the
    prior's variance, partly in the kernel). ``project=False`` adds √(h/α) (I − U Uᵀ) ε' (the
    unprojected, sampled-LA step). Traceable; (P,).
    """
    k_start, k_eps, k_rest = jax.random.split(rng_key, 3)
    start = jax.random.normal(k_start, theta.shape, dtype=theta.dtype)

    def f(t):
        return model_fn(t, x)

    outputs, jvp = jax.linearize(f, theta)  # J v and Jᵀ u at θ, the forward pass done once
    _, vjp = jax.vjp(f, theta)

    def ggn(v):  # Jᵀ H J v, as :func:`.ggn_null_space.ggn_vp`
        return vjp(ggn_null_space.output_hessian_vp(outputs, jvp(v), likelihood, noise_scale))[0]

    lam, u = lanczos_eigenpairs(ggn, ggn(start), rank)  # K_k(G, Gz) lies in the image of G
    lam = jnp.clip(lam, 0.0)  # round-off below 0 on the kernel
    eps = jax.random.normal(k_eps, (rank,), dtype=theta.dtype)
    step = u @ (eps / jnp.sqrt(lam + prior_precision))
    if not project:
        rest = jax.random.normal(k_rest, theta.shape, dtype=theta.dtype)
        step = step + (rest - u @ (u.T @ rest)) / jnp.sqrt(prior_precision)
    return jnp.sqrt(step_size) * step


def laplace_diffusion(
    rng_key,
    model_fn: Callable,
    theta,
    x,
    *,
    prior_precision: float,
    noise_scale: float | None,
    rank: int,
    num_steps: int,
    num_samples: int,
    project: bool = True,
    likelihood: str = "gaussian",
):
    """[RI] §5's Laplace diffusion from the MAP θ̂ (P,): ``num_samples`` endpoints, (S, P).

    T = ``num_steps`` Euler steps of size h = 1/T, each :func:`diffusion_increment` at the
    current θ_t with rank k = ``rank`` and α = ``prior_precision``; ``likelihood``
    ``"gaussian"`` (σ = ``noise_scale``) or ``"categorical"`` (logits; ``noise_scale`` None).
    The samples run in parallel (``vmap``), the steps in a ``lax.scan``. ``project=False``
    gives the unprojected (sampled-LA) diffusion.
    """
    where = "laplace_diffusion"
    theta = jnp.asarray(theta)
    if theta.ndim != 1:
        raise ValueError(f"{where}: theta must be a flat vector (P,), got shape {theta.shape}")
    validate.finite("theta", theta, where=where)
    x = jnp.asarray(validate.check_x(x, where=where, ndim=(2,)))
    alpha = positive("prior_precision", prior_precision, where=where)
    likelihood = validate.check_likelihood(likelihood, where=where)
    sigma = positive("noise_scale", noise_scale, where=where) if likelihood == "gaussian" else 1.0
    rank = positive_int("rank", rank, where=where)
    if rank > theta.size:
        raise ValueError(f"{where}: rank {rank} exceeds the number of parameters {theta.size}")
    num_steps = positive_int("num_steps", num_steps, where=where)
    num_samples = positive_int("num_samples", num_samples, where=where)
    h = 1.0 / num_steps

    @jax.jit
    def run(keys):
        def path(key):
            def step(t, k):
                inc = diffusion_increment(
                    k,
                    model_fn,
                    t,
                    x,
                    prior_precision=alpha,
                    noise_scale=sigma,
                    rank=rank,
                    step_size=h,
                    project=project,
                    likelihood=likelihood,
                )
                return t + inc, None

            return jax.lax.scan(step, theta, jax.random.split(key, num_steps))[0]

        return jax.vmap(path)(keys)

    samples = run(jax.random.split(rng_key, num_samples))
    if not bool(jnp.all(jnp.isfinite(samples))):
        raise ValueError(
            f"{where}: the diffusion produced non-finite parameters (Lanczos broke down?); "
            f"try a smaller rank than {rank}"
        )
    return samples


def data_rank(eigvals, prior_precision: float) -> int:
    """k for the diffusion: the number of GGN eigenvalues above the prior precision α (at least
    1), the directions in which the data, not the prior, set the Laplace variance (MacKay's
    effective number of parameters Σ λ/(λ + α) counts them softly)."""
    lam = np.asarray(eigvals)
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"data_rank: eigvals must be a non-empty vector, got shape {lam.shape}")
    alpha = positive("prior_precision", prior_precision, where="data_rank")
    return max(int(np.sum(lam > alpha)), 1)


def image_rank(eigvals, rtol: float) -> int:
    """The dimension of the GGN's numerical image: eigenvalues above rtol²·λ_max.

    ``rtol`` is the chapter's kernel tolerance on the singular values of J (λ = σ²/noise²),
    so the image is the complement of :func:`.ggn_null_space.kernel_projector`'s kernel.
    """
    rtol = positive("rtol", rtol, where="image_rank")
    lam = jnp.asarray(eigvals)
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError(f"image_rank: eigvals must be a non-empty vector, got {lam.shape}")
    return int(jnp.sum(lam > rtol**2 * jnp.max(lam)))
