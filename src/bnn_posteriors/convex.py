"""The convexified two-layer ReLU network of [SAP] §2.3 and App. E.

The network is f(x) = w2ᵀ φ(W1 x) without biases (Pilanci & Ergen, 2020). In the
book's parameter layout ``params = [{"W": (d, H)}, {"W": (H, 1)}]`` the paper's
W1 (H, d) is ``params[0]["W"].T`` and w2 (H,) is ``params[1]["W"][:, 0]``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from scipy import optimize


def _two_layer(params) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Validate a bias-free two-layer net; return the paper's ``(W1 (H, d), w2 (H,))``."""
    if (
        len(params) != 2
        or any(set(layer) != {"W"} for layer in params)
        or params[1]["W"].shape[-1] != 1
        or params[0]["W"].shape[-1] != params[1]["W"].shape[-2]
    ):
        shapes = [{k: tuple(v.shape) for k, v in layer.items()} for layer in params]
        raise ValueError(
            "expected a bias-free two-layer net [{'W': (..., d, H)}, {'W': (..., H, 1)}], "
            f"got {shapes}"
        )
    return jnp.swapaxes(params[0]["W"], -1, -2), params[1]["W"][..., 0]


def group_hadamard(params) -> jnp.ndarray:
    """The group Hadamard map u = 𝒦(W1, w2), u_i = w2_i · W1[i, :] ([SAP] App. D.2, E).

    Works on a leading batch of parameter sets; returns (..., H, d).
    """
    W1, w2 = _two_layer(params)
    return w2[..., :, None] * W1


def activation_patterns(params, x) -> jnp.ndarray:
    """The activation patterns D_i = diag(1(X W1_iᵀ ≥ 0)) of every hidden unit: (H, n) in {0, 1}."""
    W1, _ = _two_layer(params)
    return (jnp.asarray(x) @ W1.T >= 0).T.astype(jnp.asarray(x).dtype)


def _sse(fit, y, sigma):
    return jnp.sum((fit - y) ** 2) / (2.0 * sigma**2)


def _check_data(x, y, sigma, tau):
    x, y = jnp.asarray(x), jnp.asarray(y)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"x must be (n, d) and y (n,), got {x.shape} and {y.shape}")
    for name, v in (("sigma", sigma), ("tau", tau)):
        if not v > 0:
            raise ValueError(f"{name} must be positive, got {v}")
    return x, y


def loss_f(params, x, y, sigma: float, tau: float) -> jnp.ndarray:
    """f(W1, w2) of Lemma E.1: the negative log posterior up to constants.

    f = ‖Σ_i D_i X W1_iᵀ w2_i − y‖² / (2σ²) + Σ_i (‖W1_i‖² + w2_i²) / (2τ²).
    """
    x, y = _check_data(x, y, sigma, tau)
    W1, w2 = _two_layer(params)
    fit = activation_patterns(params, x).T * (x @ W1.T) @ w2
    return _sse(fit, y, sigma) + (jnp.sum(W1**2) + jnp.sum(w2**2)) / (2.0 * tau**2)


def loss_g(u, patterns, x, y, sigma: float, tau: float) -> jnp.ndarray:
    """g(u) of Lemma E.1: the group lasso ‖Σ_i D_i X u_i − y‖² / (2σ²) + Σ_i ‖u_i‖ / τ².

    ``u``: (H, d); ``patterns``: (H, n), the D_i (fixed, e.g. from W1).
    """
    x, y = _check_data(x, y, sigma, tau)
    fit = jnp.sum(patterns.T * (x @ u.T), axis=1)
    return _sse(fit, y, sigma) + jnp.sum(jnp.linalg.norm(u, axis=1)) / tau**2


def imbalance(params, tau: float) -> jnp.ndarray:
    """Σ_i (‖W1_i‖ − |w2_i|)² / (2τ²): f − g exactly, by the AM-GM step of Lemma E.1."""
    W1, w2 = _two_layer(params)
    return jnp.sum((jnp.linalg.norm(W1, axis=-1) - jnp.abs(w2)) ** 2, axis=-1) / (2.0 * tau**2)


def rebalance(params) -> list[dict]:
    """Rescale every unit, W1_i ← c_i W1_i and w2_i ← w2_i / c_i with c_i² = |w2_i| / ‖W1_i‖.

    Leaves the ReLU network unchanged (positive homogeneity) and makes ‖W1_i‖ = |w2_i|,
    the equality case of Lemma E.1. Units with W1_i = 0 or w2_i = 0 are left as they are.
    """
    W1, w2 = _two_layer(params)
    norm = jnp.linalg.norm(W1, axis=-1)
    ok = (norm > 0) & (w2 != 0)
    c = jnp.where(ok, jnp.sqrt(jnp.abs(w2) / jnp.where(ok, norm, 1.0)), 1.0)
    return [
        {"W": params[0]["W"] * c[..., None, :]},
        {"W": params[1]["W"] / c[..., :, None]},
    ]


def match_units(reference, features) -> np.ndarray:
    """The permutation of hidden units that best matches ``features`` to ``reference``.

    ``reference``, ``features``: (H, k), one row per unit (e.g. a chain's posterior mean
    of u_i). Returns ``perm`` (H,) minimising Σ_i ‖features[perm[i]] − reference[i]‖²
    (Hungarian algorithm), so ``features[perm]`` lines up with ``reference``; this undoes
    the permutation symmetry between chains that sit in permuted modes (Cor. E.2).
    """
    reference, features = np.asarray(reference), np.asarray(features)
    if reference.ndim != 2 or reference.shape != features.shape:
        raise ValueError(
            f"reference and features must both be (H, k), got {reference.shape} and "
            f"{features.shape}"
        )
    cost = ((reference[:, None, :] - features[None, :, :]) ** 2).sum(-1)
    _, perm = optimize.linear_sum_assignment(cost)
    return perm
