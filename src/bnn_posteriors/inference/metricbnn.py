"""MetricBNN ([MBNN] §4, Alg. 1): drift-and-refine sampling and a latent posterior.

Phase 1 (eqs. 3–5): N particles start at the MAP θ*; particle i gets a random unit drift
d_i; for T steps θ ← θ + α d_i, then M gradient-descent steps of size η on the regularised
loss L (eq. 1). All particles run at once (``jax.vmap``), the time loop is a ``lax.scan``.

Phase 2 (eqs. 6–10): an autoencoder φ, φ⁻¹ (MLPs) trained on the N×T solutions with
L = λ₊L₊ + λ₋L₋ + L_d; samples θ = φ⁻¹(φ(θ*) + ε(φ(θ_{i,T}) − φ(θ*))), ε ~ U(0, 1).
Implementation choices the paper leaves open: the autoencoder sees the offsets θ − θ*
projected on the top-r principal directions V of the solutions (r ≤ N·T, a linear first
layer fixed by SVD) and divided by one scalar s (their rms), so its inputs are of order
one and its size does not grow with P: φ(θ) = φ_AE(Vᵀ(θ − θ*)/s), φ⁻¹(z) = θ* + s V φ_AE⁻¹(z).

Also the naive Gaussian of the solutions (their mean and empirical covariance, as a
low-rank SVD factor) that [MBNN] Fig. 3 compares with.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax

from bnn_posteriors.inference import optim
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import non_negative, positive, positive_int


def _check_flat(theta, name="theta_map"):
    theta = jnp.asarray(theta)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"{name} must be a non-empty flat parameter vector, got {theta.shape}")
    return validate.finite(name, theta)


def unit_directions(rng_key, num: int, dim: int):
    """d_i = v/‖v‖, v ~ N(0, I): directions uniform on the sphere (Alg. 1 l. 4); (num, dim)."""
    v = jax.random.normal(rng_key, (num, dim))
    return v / jnp.linalg.norm(v, axis=1, keepdims=True)


@functools.partial(jax.jit, static_argnames=("loss_fn", "num_steps", "num_refine"))
def _walk(loss_fn, theta_map, directions, drift, learning_rate, num_steps, num_refine):
    grad = jax.grad(loss_fn)

    def particle(d):
        def step(theta, _):
            theta = theta + drift * d  # eq. 3
            theta = jax.lax.fori_loop(  # eq. 4, M times
                0, num_refine, lambda _, t: t - learning_rate * grad(t), theta
            )
            return theta, theta  # eq. 5

        _, path = jax.lax.scan(step, theta_map, None, num_steps)
        return path

    return jax.vmap(particle)(directions)


def sample_trajectories(
    loss_fn,
    theta_map,
    rng_key,
    *,
    num_particles: int = 10,
    num_steps: int = 1000,
    num_refine: int = 10,
    drift: float = 1e-3,
    learning_rate: float = 1e-3,
):
    """MetricBNN sampling (Alg. 1 phase 1, eqs. 3–5) from the flat MAP ``theta_map`` (P,).

    ``loss_fn(theta)`` is the regularised loss L of eq. 1 on flat parameters (a function
    defined once: it is a static argument of the compiled program). Returns the trajectories
    θ_{i,t}, t = 1..T, shape (N, T, P), and the drift directions (N, P).
    """
    theta_map = _check_flat(theta_map)
    positive_int("num_particles", num_particles)
    positive_int("num_steps", num_steps)
    positive_int("num_refine", num_refine, 0)
    drift = positive("drift", drift)
    learning_rate = non_negative("learning_rate", learning_rate)
    directions = unit_directions(rng_key, num_particles, theta_map.size)
    paths = _walk(loss_fn, theta_map, directions, drift, learning_rate, num_steps, num_refine)
    return paths, directions


def max_curvature(loss_fn, theta, rng_key, num_iters: int = 200):
    """λ_max of the Hessian of ``loss_fn`` at ``theta`` (P,) by power iteration on
    Hessian-vector products; gradient descent of step η is stable along it iff ηλ_max < 2.
    """
    theta = _check_flat(theta, "theta")
    positive_int("num_iters", num_iters)
    hvp = jax.jit(lambda v: jax.jvp(jax.grad(loss_fn), (theta,), (v,))[1])

    def step(v, _):
        w = hvp(v)
        return w / jnp.linalg.norm(w), jnp.vdot(v, w)

    v = jax.random.normal(rng_key, theta.shape)
    _, rayleigh = jax.lax.scan(step, v / jnp.linalg.norm(v), None, num_iters)
    return float(rayleigh[-1])


def stable_learning_rate(
    loss_fn, theta, rng_key, learning_rate: float, *, lam_max: float | None = None
) -> float:
    """min(η, 1/λ_max): the refinement step, capped at half the stability limit 2/λ_max.

    ``lam_max``: :func:`max_curvature` of ``loss_fn`` at ``theta`` with ``rng_key`` if the
    caller has it already (the power iteration is not run again); None: measured here.
    """
    learning_rate = positive("learning_rate", learning_rate)
    if lam_max is None:
        lam_max = max_curvature(loss_fn, theta, rng_key)
    return min(learning_rate, 1.0 / max(lam_max, 1e-12))


# ----------------------------------------------------------------------------- autoencoder


def autoencoder_init(rng_key, num_params: int, latent_dim: int = 32, hidden=(256, 256)):
    """Encoder φ: P → hidden → k and decoder φ⁻¹: k → reversed hidden → P (ReLU MLPs).

    Weights N(0, 1/fan_in) (He-like), biases 0; returns ``{"enc": [...], "dec": [...]}``.
    """
    positive_int("num_params", num_params)
    positive_int("latent_dim", latent_dim)
    hidden = tuple(hidden)
    k_enc, k_dec = jax.random.split(rng_key)

    return {
        "enc": nets.mlp_init(k_enc, (num_params, *hidden, latent_dim), scheme="he"),
        "dec": nets.mlp_init(k_dec, (latent_dim, *hidden[::-1], num_params), scheme="he"),
    }


def encode(ae, u):
    """φ(u): (n, P) → (n, k)."""
    return nets.mlp_apply(ae["enc"], u, "relu")


def decode(ae, z):
    """φ⁻¹(z): (n, k) → (n, P)."""
    return nets.mlp_apply(ae["dec"], z, "relu")


def autoencoder_losses(ae, u, u_next, u_neg, num_steps: int):
    """The three terms of eq. 6 on a batch of successive pairs (u, u') and negatives u''.

    L₊ = mean (‖φ(u) − φ(u')‖ − 1/T)² (eq. 7); L₋ = mean −log ‖φ(u) − φ(u'')‖ (eq. 8);
    L_d = mean ‖φ⁻¹(φ(u)) − u‖² (eq. 9). Returns ``(L₊, L₋, L_d)``.
    """
    z, z_next, z_neg = encode(ae, u), encode(ae, u_next), encode(ae, u_neg)
    l_plus = jnp.mean((jnp.linalg.norm(z - z_next, axis=1) - 1.0 / num_steps) ** 2)
    dist_neg = jnp.sqrt(jnp.sum((z - z_neg) ** 2, axis=1) + 1e-12)
    l_minus = jnp.mean(-jnp.log(dist_neg))
    l_d = jnp.mean(jnp.sum((decode(ae, z) - u) ** 2, axis=1))
    return l_plus, l_minus, l_d


def principal_basis(trajectories, theta_map, num_components: int):
    """Top-r principal directions V (P, r) of the offsets θ − θ* and the scale s (their rms)."""
    offsets = jnp.asarray(trajectories).reshape(-1, theta_map.size) - theta_map
    _, _, vt = jnp.linalg.svd(offsets, full_matrices=False)
    basis = vt[:num_components].T
    coords = offsets @ basis
    return basis, jnp.sqrt(jnp.mean(jnp.sum(coords**2, axis=1)) / num_components)


@functools.partial(jax.jit, static_argnames=("num_updates", "batch_size", "num_steps_T"))
def _train_ae(ae, key, paths, lam_plus, lam_minus, lr, num_updates, batch_size, num_steps_T):
    n, t1, _ = paths.shape  # paths include θ* at t = 0
    opt = optax.adam(lr)

    def loss(ae, u, u_next, u_neg):
        l_plus, l_minus, l_d = autoencoder_losses(ae, u, u_next, u_neg, num_steps_T)
        return lam_plus * l_plus + lam_minus * l_minus + l_d, (l_plus, l_minus, l_d)

    def batch_loss(ae, key):
        k_i, k_t, k_p = jax.random.split(key, 3)
        i = jax.random.randint(k_i, (batch_size,), 0, n)
        t = jax.random.randint(k_t, (batch_size,), 0, t1 - 1)
        u, u_next = paths[i, t], paths[i, t + 1]
        u_neg = u[jax.random.permutation(k_p, batch_size)]  # reshuffled batch (Alg. 1 l. 19)
        return loss(ae, u, u_next, u_neg)

    keys = jax.random.split(key, num_updates)
    ae, _, (value, terms) = optim.minimise(batch_loss, ae, opt, xs=keys, has_aux=True)
    trace = jnp.stack([value, *terms], axis=1)
    return ae, trace


def train_autoencoder(
    rng_key,
    trajectories,
    theta_map,
    *,
    latent_dim: int = 32,
    hidden=(256, 256),
    num_updates: int = 1000,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    lam_plus: float = 1.0,
    lam_minus: float = 1.0,
    num_components: int = 64,
):
    """Fit φ, φ⁻¹ with Adam on eq. 6 (Alg. 1 phase 2) from the trajectories (N, T, P).

    Successive pairs include (θ*, θ_{i,1}). Returns ``(latent_model, trace)``: the model is
    ``{"ae", "theta_map", "basis", "scale", "z_map", "z_end"}`` (``basis``: V, (P, r)) and
    ``trace`` (num_updates, 4) holds
    L, L₊, L₋, L_d per update.
    """
    theta_map = _check_flat(theta_map)
    trajectories = jnp.asarray(trajectories)
    if trajectories.ndim != 3 or trajectories.shape[2] != theta_map.size:
        raise ValueError(
            f"trajectories must have shape (N, T, {theta_map.size}), got {trajectories.shape}"
        )
    positive_int("num_updates", num_updates)
    positive_int("batch_size", batch_size, 2)
    n, num_t, _ = trajectories.shape
    r = min(positive_int("num_components", num_components), n * num_t, theta_map.size)
    basis, scale = principal_basis(trajectories, theta_map, r)
    start = jnp.broadcast_to(theta_map, (n, 1, theta_map.size))
    paths = ((jnp.concatenate([start, trajectories], axis=1) - theta_map) @ basis) / scale
    k_init, k_train = jax.random.split(rng_key)
    ae = autoencoder_init(k_init, r, latent_dim, hidden)
    ae, trace = _train_ae(
        ae,
        k_train,
        paths,
        float(lam_plus),
        float(lam_minus),
        positive("learning_rate", learning_rate),
        num_updates,
        batch_size,
        num_t,
    )
    model = {
        "ae": ae,
        "theta_map": theta_map,
        "basis": basis,
        "scale": scale,
        "z_map": encode(ae, jnp.zeros((1, r)))[0],
        "z_end": encode(ae, paths[:, -1]),
    }
    return model, trace


def walk_and_embed(
    rng_key,
    loss_fn,
    theta_map,
    *,
    num_steps: int,
    drift: float,
    ae_updates: int,
    learning_rate: float = 1e-3,
    num_refine: int = 10,
    num_particles: int = 10,
    latent_dim: int = 32,
    hidden=(256, 256),
    ae_batch: int = 256,
    ae_learning_rate: float = 1e-3,
    lam_plus: float = 1.0,
    lam_minus: float = 1.0,
    num_components: int = 64,
):
    """Alg. 1 of [MBNN] end to end: phase 1 (:func:`sample_trajectories`, eqs. 3–5) and
    phase 2 (:func:`train_autoencoder`, eq. 6) from the flat MAP ``theta_map`` (P,).

    ``rng_key`` is split once, the first half for the walk and the second for the
    autoencoder. Returns ``(trajectories (N, T, P), latent_model, trace (ae_updates, 4))``.
    """
    k_walk, k_ae = jax.random.split(rng_key)
    paths, _ = sample_trajectories(
        loss_fn,
        theta_map,
        k_walk,
        num_particles=num_particles,
        num_steps=num_steps,
        num_refine=num_refine,
        drift=drift,
        learning_rate=learning_rate,
    )
    model, trace = train_autoencoder(
        k_ae,
        paths,
        theta_map,
        latent_dim=latent_dim,
        hidden=hidden,
        num_updates=ae_updates,
        batch_size=ae_batch,
        learning_rate=ae_learning_rate,
        lam_plus=lam_plus,
        lam_minus=lam_minus,
        num_components=num_components,
    )
    return paths, model, trace


def to_latent(model, thetas):
    """φ(θ) = φ_AE(Vᵀ(θ − θ*)/s): (..., P) → (..., k)."""
    thetas = jnp.asarray(thetas)
    coords = ((thetas - model["theta_map"]) @ model["basis"]) / model["scale"]
    z = encode(model["ae"], coords.reshape(-1, coords.shape[-1]))
    return z.reshape(*thetas.shape[:-1], z.shape[-1])


def from_latent(model, z):
    """φ⁻¹(z) = θ* + s V φ_AE⁻¹(z): (n, k) → (n, P)."""
    return model["theta_map"] + model["scale"] * decode(model["ae"], z) @ model["basis"].T


def latent_sample(model, rng_key, num_samples: int):
    """MetricBNN posterior samples (eq. 10): i ~ U{1..N}, ε ~ U(0, 1), decode; (S, P)."""
    positive_int("num_samples", num_samples)
    k_i, k_e = jax.random.split(rng_key)
    i = jax.random.randint(k_i, (num_samples,), 0, model["z_end"].shape[0])
    eps = jax.random.uniform(k_e, (num_samples, 1))
    z = model["z_map"] + eps * (model["z_end"][i] - model["z_map"])
    return from_latent(model, z)


def straightness(points):
    """End-to-end distance / path length of each path (N, T, k); 1 for a straight line."""
    points = jnp.asarray(points)
    steps = jnp.linalg.norm(jnp.diff(points, axis=1), axis=-1).sum(1)
    return jnp.linalg.norm(points[:, -1] - points[:, 0], axis=-1) / steps


# ----------------------------------------------------------------------------- naive Gaussian


def gaussian_of_samples(samples):
    """Mean and low-rank factor F of the empirical covariance F Fᵀ of samples (n, P) by SVD."""
    samples = jnp.asarray(samples)
    if samples.ndim != 2 or samples.shape[0] < 2:
        raise ValueError(f"samples must have shape (n >= 2, P), got {samples.shape}")
    mean = samples.mean(0)
    _, s, vt = jnp.linalg.svd(samples - mean, full_matrices=False)
    return mean, vt.T * (s / jnp.sqrt(samples.shape[0] - 1))


def gaussian_sample(mean, factor, rng_key, num_samples: int):
    """θ = mean + F z, z ~ N(0, I): (S, P)."""
    positive_int("num_samples", num_samples)
    z = jax.random.normal(rng_key, (num_samples, factor.shape[1]))
    return mean + z @ factor.T


def explained_variance(samples, k: int):
    """Fraction of the total variance of samples (n, P) in their top-k principal components."""
    samples = jnp.asarray(samples)
    s = jnp.linalg.svd(samples - samples.mean(0), compute_uv=False)
    return jnp.sum(s[:k] ** 2) / jnp.sum(s**2)


# ----------------------------------------------------------------------------- losses


def refinement_loss(
    unravel,
    apply_fn,
    x,
    y,
    *,
    likelihood: str,
    noise_scale=1.0,
    prior_precision=1.0,
    regularised: bool = True,
):
    """θ ↦ eq. 1 per data point, without constants: the loss Alg. 1 refines on.

    Regression: (1/n)Σ(y − f)² + (δσ²/n)‖θ‖² (= 2σ²L/n: the authors' MSE training loss);
    classification: (1/n)Σ −log softmax(f)_y + (δ/2n)‖θ‖² (= L/n). ``regularised=False``
    drops the prior term (the training loss of C6.1). ``y``: (n, C) targets or (n,) labels.
    """
    validate.check_likelihood(likelihood, where="refinement_loss")
    x, y = jnp.asarray(x), jnp.asarray(y)
    n = x.shape[0]
    weight = prior_precision * (noise_scale**2 if likelihood == "gaussian" else 0.5) / n
    weight = weight if regularised else 0.0

    def loss(theta):
        f = apply_fn(unravel(theta), x)
        if likelihood == "gaussian":
            data = jnp.mean((y - f) ** 2)
        else:
            data = models.neg_log_likelihood(f, y, "categorical") / n
        return data + weight * jnp.sum(theta**2)

    return loss


def push_forward(thetas, unravel, apply_fn, x, batch: int = 50):
    """Network outputs f(x; θ_s) for each row of ``thetas`` (S, P): (S, n, C)."""
    thetas = jnp.asarray(thetas)
    if thetas.ndim != 2:
        raise ValueError(f"thetas must have shape (S, P), got {thetas.shape}")
    return jax.lax.map(lambda t: apply_fn(unravel(t), x), thetas, batch_size=batch)
