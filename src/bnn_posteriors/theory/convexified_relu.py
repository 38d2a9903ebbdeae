"""The convexified two-layer ReLU network of [SAP] §2.3 and App. E.

The network is f(x) = w2ᵀ φ(W1 x) without biases (Pilanci & Ergen, 2020). In the
book's parameter layout ``params = [{"W": (d, H)}, {"W": (H, 1)}]`` the paper's
W1 (H, d) is ``params[0]["W"].T`` and w2 (H,) is ``params[1]["W"][:, 0]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize

from bnn_posteriors.data import loaders as data
from bnn_posteriors.models import nets


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


def align_units(u) -> np.ndarray:
    """``u`` (chains, draws, H, d) with every chain's units matched to the first chain's.

    Chain c's units are permuted by :func:`match_units` of its mean u_i against chain 0's,
    which undoes the relabelling between chains in permuted modes (Cor. E.2).
    """
    u = np.asarray(u)
    if u.ndim != 4:
        raise ValueError(f"u must be (chains, draws, H, d), got shape {u.shape}")
    means = u.mean(axis=1)
    perms = [match_units(means[0], means[c]) for c in range(u.shape[0])]
    return np.stack([u[c][:, p] for c, p in enumerate(perms)])


def lemma_gaps(rng_key, x, y, width: int, num_draws: int, sigma: float, tau: float) -> dict:
    """Lemma E.1 on ``num_draws`` random bias-free nets of ``width`` hidden units.

    Weights from :func:`nets.mlp_init`, multiplied by a common scale 10^U, U ~ U(−1, 0.5),
    and unbalanced by a ratio 10^V, V ~ U(−1, 1) (W1 times, w2 divided). Per draw: ``gap``
    f − g∘𝒦 (:func:`loss_f`, :func:`loss_g` at the net's own patterns), ``imbalance``,
    ``gap_balanced`` after :func:`rebalance`, ``change_of_f`` (largest change of the outputs
    by rebalancing) and ``f``; each (num_draws,). ``x`` (n, d), ``y`` (n,).
    """
    k_net, k_scale, k_ratio = jax.random.split(rng_key, 3)
    nets_ = jax.vmap(lambda k: nets.mlp_init(k, (x.shape[1], width, 1), bias=False))(
        jax.random.split(k_net, num_draws)
    )
    scale = 10.0 ** jax.random.uniform(k_scale, (num_draws, 1, 1), minval=-1.0, maxval=0.5)
    ratio = 10.0 ** jax.random.uniform(k_ratio, (num_draws, 1, 1), minval=-1.0, maxval=1.0)
    nets_ = [{"W": nets_[0]["W"] * scale * ratio}, {"W": nets_[1]["W"] * scale / ratio}]

    def one(params):
        u, patterns = group_hadamard(params), activation_patterns(params, x)
        balanced = rebalance(params)
        return {
            "gap": loss_f(params, x, y, sigma, tau) - loss_g(u, patterns, x, y, sigma, tau),
            "imbalance": imbalance(params, tau),
            "gap_balanced": loss_f(balanced, x, y, sigma, tau)
            - loss_g(u, patterns, x, y, sigma, tau),
            "change_of_f": jnp.max(
                jnp.abs(nets.mlp_apply(balanced, x) - nets.mlp_apply(params, x))
            ),
            "f": loss_f(params, x, y, sigma, tau),
        }

    return jax.jit(jax.vmap(one))(nets_)


def lemma_check(
    rng_key,
    datasets: Sequence[str],
    widths: Sequence[int],
    num_draws: int,
    *,
    num_rows: int,
    split_seed: int,
    tau: float,
    sigma: float = 1.0,
) -> dict:
    """:func:`lemma_gaps` on the first ``num_rows`` training rows of every data set × width.

    At least ``num_draws`` draws in all, split evenly over the combinations (one key each,
    from ``rng_key``), computed in double precision. Returns ``{(name, width): dict}`` of
    NumPy arrays (the fields of :func:`lemma_gaps`).
    """
    combos = [(name, width) for name in datasets for width in widths]
    per_combo = -(-num_draws // len(combos))  # ceil: at least num_draws in all
    gaps = {}
    with jax.enable_x64(True):
        for (name, width), key in zip(combos, jax.random.split(rng_key, len(combos)), strict=True):
            split = data.load_split(name, split_seed)
            x = jnp.asarray(split.x_train[:num_rows])
            y = jnp.asarray(split.y_train[:num_rows])
            out = lemma_gaps(key, x, y, width, per_combo, sigma=sigma, tau=tau)
            gaps[name, width] = {k: np.asarray(v) for k, v in out.items()}
    return gaps


def lemma_summary(gaps: dict) -> dict:
    """Pool :func:`lemma_check` over its combinations: the numbers that C2.1 checks.

    Returns the pooled ``gap``, ``imbalance``, ``gap_balanced`` (arrays), ``rel_identity``
    = max |f − g − imbalance| / max(1, |f|), ``rel_balanced`` = max |f − g| / max(1, |f|)
    after rebalancing, and ``max_change``, the largest change of the outputs by rebalancing.
    """
    pooled = {
        k: np.concatenate([v[k] for v in gaps.values()])
        for k in ("gap", "imbalance", "gap_balanced", "f")
    }
    scale = np.maximum(1.0, np.abs(pooled["f"]))
    return {
        "gap": pooled["gap"],
        "imbalance": pooled["imbalance"],
        "gap_balanced": pooled["gap_balanced"],
        "rel_identity": np.max(np.abs(pooled["gap"] - pooled["imbalance"]) / scale),
        "rel_balanced": np.max(np.abs(pooled["gap_balanced"]) / scale),
        "max_change": max(float(v["change_of_f"].max()) for v in gaps.values()),
    }
