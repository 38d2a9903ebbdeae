"""VIKING ([VK], Fadel et al., NeurIPS 2025): variational inference on the kernel and the
image of the training Jacobian.

The family is a Gaussian around the network's parameters θ̂ with one scale on each of two
orthogonal subspaces of parameter space, ker J and its complement im Jᵀ ([VK] §3):

    q(θ) = N(θ̂, Σ),   Σ = σ_ker² P_ker + σ_im² (I − P_ker),

with P_ker the orthogonal projector onto ker J (:func:`.ggn_null_space.kernel_projector`).
Σ is dense (fully correlated) but has two eigenvalues only, so with the prior
p(θ) = N(0, α⁻¹ I) and R = dim ker J = tr P_ker the KL is closed form
(:func:`kl_divergence`). As in the authors' code (``fadel/viking``, ``src/viking/vi.py``:
``make_posterior``, ``elbo_kldiv``) σ_ker = α^{-1/2} is tied to the prior precision α, and
θ̂, log α and log σ_im are trained together by Adam on the negative ELBO with the
*linearised* network f(x; θ̂) + J_x(θ − θ̂) (``src/viking/sampling.py``,
``make_output_sampler(is_linearized=True)``; ``examples/sinusoid.py``: Adam 1e-2, 3000
steps, 20 Monte-Carlo draws, log α = 0 and log σ_im = −2 at the start, β = 1;
``examples/mnist.py``: RAdam 1e-3, β = 0.1).

At the training inputs J P_ker = 0, so the linearised outputs of a draw are
f(X; θ̂) + σ_im J ε, ε ~ N(0, I): the kernel part does not enter the expected
log-likelihood, and the ELBO needs Jacobian-vector products only. The authors project every
draw (LSMR, gradients through the solver) and estimate R by Hutchinson's trace; here R is
the numerical rank deficit of J by a dense SVD at the start of training, and the dense
projector at the end gives the predictive (small networks only).

Shapes: θ (P,), x (n, d), outputs (n, O), draws (S, P).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.inference import laplace, optim
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int

OPTIMISERS = {"adam": optax.adam, "radam": optax.radam}  # the authors' examples' choices


@dataclasses.dataclass(frozen=True)
class VikingPosterior:
    """A fitted VIKING q = N(θ̂, σ_ker² P_ker + σ_im² (I − P_ker)).

    ``theta`` θ̂ (P,); ``prior_precision`` α (σ_ker = α^{-1/2}); ``scale_image`` σ_im;
    ``kernel_dim`` R of the ELBO's KL; ``projector`` P_ker (P, P) at θ̂; ``losses`` the
    negative ELBO per step.
    """

    theta: jnp.ndarray
    prior_precision: float
    scale_image: float
    kernel_dim: int
    projector: jnp.ndarray
    losses: np.ndarray

    @property
    def scale_kernel(self) -> float:
        return 1.0 / math.sqrt(self.prior_precision)


def kl_divergence(theta, prior_precision, scale_image, kernel_dim, *, scale_kernel=None):
    """KL(q ‖ p) for q = N(θ̂, σ_k² P_ker + σ_im² (I − P_ker)), p = N(0, α⁻¹ I), closed form.

    αΣ has eigenvalue a = ασ_k² R times and b = ασ_im² (P − R) times, so
    KL = ½[R(a − 1 − log a) + (P − R)(b − 1 − log b) + α‖θ̂‖²] ([VK] §3; the authors'
    ``elbo_kldiv`` in ``src/viking/vi.py`` with σ_k = α^{-1/2}, the default here).
    Traceable in θ̂, α and the scales; ``kernel_dim`` R in [0, P].
    """
    theta = jnp.asarray(theta)
    if theta.ndim != 1:
        raise ValueError(f"kl_divergence: theta must be a flat vector (P,), got {theta.shape}")
    p = theta.size
    if isinstance(kernel_dim, int | np.integer) and not 0 <= kernel_dim <= p:
        raise ValueError(f"kl_divergence: kernel_dim {kernel_dim} must lie in [0, P = {p}]")
    for name, v in (("prior_precision", prior_precision), ("scale_image", scale_image)):
        if isinstance(v, int | float) and not v > 0:
            raise ValueError(f"kl_divergence: {name} must be positive, got {v}")
    alpha = jnp.asarray(prior_precision)
    a = 1.0 if scale_kernel is None else alpha * jnp.asarray(scale_kernel) ** 2
    b = alpha * jnp.asarray(scale_image) ** 2
    r = jnp.asarray(kernel_dim, dtype=theta.dtype)
    return 0.5 * (
        r * (a - 1.0 - jnp.log(a)) + (p - r) * (b - 1.0 - jnp.log(b)) + alpha * jnp.sum(theta**2)
    )


def covariance(projector, scale_kernel: float, scale_image: float):
    """The dense Σ = σ_k² P_ker + σ_im² (I − P_ker) of the family; (P, P)."""
    projector = _projector(projector, "covariance")
    sk = positive("scale_kernel", scale_kernel, where="covariance")
    si = positive("scale_image", scale_image, where="covariance")
    eye = jnp.eye(projector.shape[0], dtype=projector.dtype)
    return sk**2 * projector + si**2 * (eye - projector)


def _projector(projector, where: str):
    projector = jnp.asarray(projector)
    if projector.ndim != 2 or projector.shape[0] != projector.shape[1]:
        raise ValueError(f"{where}: projector must be square (P, P), got {projector.shape}")
    return projector


def sample_parts(rng_key, projector, scale_kernel: float, scale_image: float, num_samples: int):
    """Kernel and image parts of draws θ − θ̂ = σ_k P_ker ε + σ_im (I − P_ker) ε, ε ~ N(0, I).

    One ε per draw for both parts, as the authors' ``sample`` (``src/viking/vi.py``): the
    parts are independent because the subspaces are orthogonal. Returns
    ``(kernel (S, P), image (S, P))``.
    """
    projector = _projector(projector, "sample_parts")
    sk = positive("scale_kernel", scale_kernel, where="sample_parts")
    si = positive("scale_image", scale_image, where="sample_parts")
    num_samples = positive_int("num_samples", num_samples, where="sample_parts")
    eps = jax.random.normal(rng_key, (num_samples, projector.shape[0]), dtype=projector.dtype)
    kernel = eps @ projector  # P_ker is symmetric
    return sk * kernel, si * (eps - kernel)


def negative_elbo(
    params: dict,
    rng_key,
    model_fn: Callable,
    x,
    y,
    *,
    kernel_dim,
    likelihood: str,
    noise_scale: float,
    num_mc_samples: int,
    kl_weight: float = 1.0,
):
    """−ELBO = E_q[−log p(y | f(X; θ̂) + J(θ − θ̂))] + β KL(q ‖ p), Monte Carlo in the first.

    β = ``kl_weight`` (1: the ELBO; the authors' ``examples/mnist.py`` uses β = 0.1).

    ``params`` ``{"theta" (P,), "log_precision" log α, "log_scale_image" log σ_im}``; the
    linearised training outputs of a draw are f(X; θ̂) + σ_im J ε (J P_ker = 0), one
    ``jax.jvp`` per draw. A scalar, differentiable in ``params``.
    """
    theta = params["theta"]
    alpha, s_im = jnp.exp(params["log_precision"]), jnp.exp(params["log_scale_image"])
    eps = jax.random.normal(rng_key, (num_mc_samples, theta.size), dtype=theta.dtype)

    def f(t):
        return model_fn(t, x)

    out = f(theta)
    jv = jax.vmap(lambda e: jax.jvp(f, (theta,), (e,))[1])(eps)  # (S, n, O)
    outputs = out + s_im * jv
    if likelihood == "gaussian":
        outputs = outputs.reshape(num_mc_samples, *jnp.shape(y))
    nll = jax.vmap(lambda o: models.neg_log_likelihood(o, y, likelihood, noise_scale))(outputs)
    return jnp.mean(nll) + kl_weight * kl_divergence(theta, alpha, s_im, kernel_dim)


def fit_viking(
    rng_key,
    model_fn: Callable,
    theta_init,
    x,
    y,
    *,
    likelihood: str = "gaussian",
    noise_scale: float = 1.0,
    num_steps: int = 3000,
    learning_rate: float = 1e-2,
    num_mc_samples: int = 20,
    init_log_precision: float = 0.0,
    init_log_scale_image: float = -2.0,
    kl_weight: float = 1.0,
    rtol: float | None = None,
    optimiser: str = "adam",
    learn_prior_precision: bool = True,
) -> VikingPosterior:
    """Fit VIKING by ``optimiser`` on :func:`negative_elbo` (``optim.minimise``) from
    ``theta_init``: ``"adam"`` (the authors' ``examples/sinusoid.py``) or ``"radam"``
    (``optax.radam``, their ``examples/mnist.py``), at ``learning_rate``.

    ``learn_prior_precision``: train log α with θ̂ and log σ_im, as the authors do (True), or
    hold α = exp(``init_log_precision``) fixed (False: the prior of a declared posterior, so
    that only θ̂ and σ_im approximate it).

    R = P − rank J at ``theta_init`` (numerical rank: singular values above rtol·σ_max, as
    :func:`.ggn_null_space.kernel_projector`); the defaults are those of the authors'
    ``examples/sinusoid.py`` (β = ``kl_weight`` 1). ``y`` (n,) or (n, O) targets (Gaussian, fixed
    ``noise_scale``) or (n,) integer labels (categorical). Returns a :class:`VikingPosterior`
    with the dense P_ker at the trained θ̂.
    """
    validate.check_likelihood(likelihood, where="fit_viking")
    noise_scale = positive("noise_scale", noise_scale, where="fit_viking")
    num_steps = positive_int("num_steps", num_steps, where="fit_viking")
    learning_rate = positive("learning_rate", learning_rate, where="fit_viking")
    num_mc_samples = positive_int("num_mc_samples", num_mc_samples, where="fit_viking")
    kl_weight = positive("kl_weight", kl_weight, where="fit_viking")
    if optimiser not in OPTIMISERS:
        raise ValueError(
            f"fit_viking: optimiser must be one of {tuple(OPTIMISERS)}, got {optimiser!r}"
        )
    theta = jnp.asarray(theta_init)
    if theta.ndim != 1:
        raise ValueError(f"fit_viking: theta_init must be a flat vector (P,), got {theta.shape}")
    validate.finite("theta_init", theta, where="fit_viking")
    x = jnp.asarray(validate.check_x(x, where="fit_viking", ndim=(2,)))
    y = jnp.asarray(y)
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"fit_viking: y has {y.shape[0]} rows, x has {x.shape[0]}")
    if likelihood == "gaussian":
        y = y.reshape(model_fn(theta, x).shape).astype(theta.dtype)
    jac = ns.training_jacobian(model_fn, theta, x)
    s = np.linalg.svd(np.asarray(jac), compute_uv=False)
    kernel_dim = theta.size - ns.numerical_rank(s, jac.shape, rtol)
    params = {
        "theta": theta,
        "log_precision": jnp.asarray(init_log_precision, theta.dtype),
        "log_scale_image": jnp.asarray(init_log_scale_image, theta.dtype),
    }

    if not isinstance(learn_prior_precision, bool):
        raise TypeError(
            "fit_viking: learn_prior_precision must be True or False, "
            f"got {learn_prior_precision!r}"
        )

    def loss(p, key):
        if not learn_prior_precision:  # a zero gradient: Adam and RAdam leave log α as it is
            p = {**p, "log_precision": jax.lax.stop_gradient(p["log_precision"])}
        return negative_elbo(
            p,
            key,
            model_fn,
            x,
            y,
            kernel_dim=kernel_dim,
            likelihood=likelihood,
            noise_scale=noise_scale,
            num_mc_samples=num_mc_samples,
            kl_weight=kl_weight,
        )

    keys = jax.random.split(rng_key, num_steps)
    run = jax.jit(lambda p, k: optim.minimise(loss, p, OPTIMISERS[optimiser](learning_rate), xs=k))
    params, _, trace = run(params, keys)
    theta = params["theta"]
    projector = ns.kernel_projector(ns.training_jacobian(model_fn, theta, x), rtol=rtol)
    return VikingPosterior(
        theta=theta,
        prior_precision=float(jnp.exp(params["log_precision"])),
        scale_image=float(jnp.exp(params["log_scale_image"])),
        kernel_dim=int(kernel_dim),
        projector=projector,
        losses=np.asarray(trace),
    )


def linearised_predictive(post: VikingPosterior, model_fn: Callable, x, *, noise_scale=0.0):
    """Linearised predictive of q: mean f(x; θ̂), var diag(J_x Σ J_xᵀ) + σ²; each (n, O).

    Σ = σ_ker² P_ker + σ_im² (I − P_ker) (:func:`covariance`); ``noise_scale`` σ = 0 gives
    the epistemic part alone.
    """
    noise_scale = validate.non_negative("noise_scale", noise_scale, where="linearised_predictive")
    x = jnp.asarray(validate.check_x(x, where="linearised_predictive", ndim=(2,)))
    mean = model_fn(post.theta, x)
    jac = laplace.output_jacobian(model_fn, post.theta, x).reshape(-1, post.theta.size)
    sigma = covariance(post.projector, post.scale_kernel, post.scale_image)
    var = jnp.sum((jac @ sigma) * jac, axis=1).reshape(mean.shape)  # diag J Σ Jᵀ, one GEMM
    return mean, jnp.clip(var, 0.0) + noise_scale**2
