"""Symmetrised mean-field VI over the hidden-unit permutations of an MLP ([SYM]).

For a mean-field Gaussian q over the parameters ω of a one-hidden-layer MLP and
the group G of permutations of its H hidden units, the symmetrised family is

    q_G(ω) = (1/|G|) Σ_{g∈G} q(g·ω).

Prior and likelihood are G-invariant, so ELBO(q_G) = ELBO(q) + I(g; ω) with
I(g; ω) = KL(q ‖ q_G) = E_q[log q(ω) − log q_G(ω)] ∈ [0, log|G|] ([SYM] §4).
This module enumerates G, applies its elements to parameter pytrees, evaluates
log q_G exactly (log-mean-exp over G), estimates I exactly over G or by the
InfoNCE-style lower bound Î_K from K sampled permutations, and trains q by
maximising ELBO(q) + λ·I (λ = 0: plain MFVI; λ = 1: symmetrised) with optax.

A variational family is ``{"loc": params, "log_scale": params}`` where ``params``
is an MLP pytree of :mod:`bnn_posteriors.nets` (``[{"W", "b"}, {"W", "b"}]``).
Hidden unit j of a one-hidden-layer net is the row
``u_j = (W₀[:, j], b₀[j], W₁[j, :])``; g permutes these rows and leaves b₁.
"""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.special import logsumexp

from .. import nets, validate
from ..validate import positive_int
from .mean_field import (
    _HALF_LOG_2PI,
    LIKELIHOODS,
    _check_q,
    init_mean_field,
    kl_to_prior,
    log_joint,
    log_likelihood,
    log_q,
    predictive_outputs,
    sample_mean_field,
)

MAX_GROUP = 40_320  # 8!: the largest group enumerated explicitly
MAX_EXACT_WIDTH = 16  # the largest layer whose I is computed exactly (log-permanent)


# --------------------------------------------------------------------------- the group


def group_size(widths) -> int:
    """|G| = ∏_l H_l! for an MLP with widths ``(d_in, H_1, ..., H_K, d_out)`` ([SYM] §3)."""
    widths = nets.check_widths(widths)
    return math.prod(math.factorial(h) for h in widths[1:-1])


def permutation_group(width: int, max_size: int = MAX_GROUP) -> np.ndarray:
    """All ``width!`` permutations of ``0..width-1``, identity first: (width!, width) int32."""
    width = positive_int("width", width)
    if math.factorial(width) > max_size:
        raise ValueError(
            f"{width}! = {math.factorial(width)} permutations exceed max_size={max_size}; "
            "use sampled permutations (infonce_bound) for wide layers"
        )
    return np.array(list(itertools.permutations(range(width))), dtype=np.int32)


def random_permutations(rng_key, width: int, num: int):
    """``num`` permutations of ``0..width-1`` drawn uniformly from G: (num, width)."""
    width, num = positive_int("width", width), positive_int("num", num)
    return jax.vmap(lambda k: jax.random.permutation(k, width))(jax.random.split(rng_key, num))


def permute_params(params: list[dict], perms, layer: int = 0) -> list[dict]:
    """g·ω for a batch of permutations g of hidden layer ``layer``: leaves gain a (G,) axis.

    Same convention as :func:`bnn_posteriors.nets.permute_hidden` (new unit j is old unit
    ``perm[j]``), vectorised with one gather per array; ``perms``: (G, H) integers.
    """
    n_hidden = len(params) - 1
    if not (isinstance(layer, int) and 0 <= layer < n_hidden):
        raise ValueError(f"layer must index a hidden layer in [0, {n_hidden - 1}], got {layer!r}")
    width = params[layer]["W"].shape[1]
    perms = jnp.asarray(perms)
    if perms.ndim != 2 or perms.shape[1] != width or not jnp.issubdtype(perms.dtype, jnp.integer):
        raise ValueError(f"perms must be integers of shape (G, {width}), got {perms.shape}")
    out = []
    for i, p in enumerate(params):
        new = {k: jnp.broadcast_to(v, (perms.shape[0], *jnp.shape(v))) for k, v in p.items()}
        if i == layer:
            new["W"] = jnp.moveaxis(jnp.asarray(p["W"])[:, perms], 1, 0)
            if "b" in p:
                new["b"] = jnp.asarray(p["b"])[perms]
        if i == layer + 1:
            new["W"] = jnp.asarray(p["W"])[perms, :]
        out.append(new)
    return out


def permutation_orbit(params: list[dict]) -> list[dict]:
    """All |G| = ∏_l H_l! copies g·ω, permuting every hidden layer: leaves gain a (|G|,) axis.

    Built layer by layer with :func:`permute_params` (hence the convention of
    :func:`bnn_posteriors.nets.permute_hidden`); the identity comes first. |G| ≤ ``MAX_GROUP``.
    """
    n_hidden = len(params) - 1
    if n_hidden < 1:
        raise ValueError("params has no hidden layer (it needs at least two layers)")
    widths = [params[layer]["W"].shape[1] for layer in range(n_hidden)]
    if math.prod(math.factorial(h) for h in widths) > MAX_GROUP:
        raise ValueError(f"|G| for hidden widths {widths} exceeds max {MAX_GROUP}")
    out = params
    for layer, width in enumerate(widths):
        group = jnp.asarray(permutation_group(width))

        def apply(p, layer=layer, group=group):
            return permute_params(p, group, layer)

        for _ in range(layer):
            apply = jax.vmap(apply)
        out = apply(out)
    return jax.tree.map(lambda v: v.reshape(-1, *v.shape[n_hidden:]), out)


# --------------------------------------------------------------------------- q under G


def _units(params) -> jax.Array:
    """Rows u_j = (W₀[:, j], b₀[j], W₁[j, :]) of a one-hidden-layer net: (H, d_in + 1 + d_out)."""
    first, second = params[0], params[1]
    parts = [first["W"].T]
    if "b" in first:
        parts.append(first["b"][:, None])
    parts.append(second["W"])
    return jnp.concatenate(parts, axis=1)


def unit_log_densities(q: dict, params) -> jax.Array:
    """L[j, k] = log q_j(u_k(ω)): unit k of ω under the factor of q at position j, (H, H).

    log q(g·ω) = Σ_j L[j, perm[j]] + (terms g does not touch), so the whole group is
    scored from this one matrix ([SYM] §4: the sum over G of q(g·ω)).
    """
    mu, log_s = _units(q["loc"]), _units(q["log_scale"])
    u = _units(params)
    z = (u[None, :, :] - mu[:, None, :]) * jnp.exp(-log_s)[:, None, :]
    return jnp.sum(-0.5 * z**2 - log_s[:, None, :] - _HALF_LOG_2PI, axis=-1)


def log_ratios(q: dict, params, perms) -> jax.Array:
    """log q(g·ω) − log q(ω) for each permutation g in ``perms`` (G, H): shape (G,)."""
    _check_one_hidden(q)
    L = unit_log_densities(q, params)
    perms = jnp.asarray(perms)
    rows = jnp.arange(L.shape[0])
    return jnp.sum(L[rows[None, :], perms], axis=1) - jnp.trace(L)


@functools.cache
def _subset_tables(width: int):
    """Index tables of the subset recursion of :func:`log_permanent`, one per subset size r.

    The column subsets S of size r are listed in a fixed order; for each, ``prev`` (C(H,r), r)
    holds the positions of the subsets S∖{k} in the list of size r − 1 and ``cols`` the k ∈ S.
    """
    masks = np.arange(2**width)
    sizes = np.array([bin(m).count("1") for m in masks])
    position = np.zeros(2**width, dtype=np.int32)
    tables = []
    for r in range(width + 1):
        subsets = masks[sizes == r]
        position[subsets] = np.arange(subsets.size)
        if r:
            cols = np.array([[k for k in range(width) if m >> k & 1] for m in subsets])
            tables.append((position[subsets[:, None] ^ (1 << cols)], cols.astype(np.int32)))
    return tables


def log_permanent(L) -> jax.Array:
    """log perm(exp L) = log Σ_π ∏_j exp(L[j, π(j)]) over all H! permutations, (H, H) → ().

    Exact, by the recursion over column subsets f(S) = log Σ_{k∈S} exp(f(S∖{k}) + L[|S|−1, k])
    in O(H·2^H) instead of O(H·H!) operations; H ≤ ``MAX_EXACT_WIDTH``.
    """
    L = jnp.asarray(L)
    width = L.shape[0]
    if L.ndim != 2 or L.shape[1] != width:
        raise ValueError(f"L must be a square matrix, got shape {L.shape}")
    if width > MAX_EXACT_WIDTH:
        raise ValueError(f"exact log-permanent for H ≤ {MAX_EXACT_WIDTH}, got H = {width}")
    f = jnp.zeros(1, dtype=L.dtype)
    for r, (prev, cols) in enumerate(_subset_tables(width)):
        f = logsumexp(f[prev] + L[r][cols], axis=1)
    return f[0]


def log_q_symmetrised(q: dict, params, perms=None) -> jax.Array:
    """log q_G(ω) = log (1/|G|) Σ_g q(g·ω), exact (log-mean-exp over the whole group).

    By :func:`log_permanent` of the unit matrix (:func:`unit_log_densities`), or by
    explicit enumeration over ``perms`` (G, H) if given (e.g. :func:`permutation_group`).
    """
    _check_one_hidden(q)
    return log_q(q, params) - _mi_terms(q, params, perms)


def _mi_terms(q, params, perms=None):
    """Per-sample log q(ω) − log q_G(ω) = −log mean_g q(g·ω)/q(ω), exact over G or ``perms``."""
    if perms is not None:
        r = log_ratios(q, params, perms)
        return math.log(r.shape[0]) - logsumexp(r)
    L = unit_log_densities(q, params)
    return math.lgamma(L.shape[0] + 1) + jnp.trace(L) - log_permanent(L)


def _infonce_terms(q, params, perms):
    """Per-sample InfoNCE term: −log((1/K)(1 + Σ_{k≥2} q(h_k·ω)/q(ω))), ``perms`` (K−1, H)."""
    r = jnp.concatenate([jnp.zeros(1), log_ratios(q, params, perms)])
    return math.log(r.shape[0]) - logsumexp(r)


def mutual_information(rng_key, q: dict, num_samples: int = 1000, perms=None):
    """I(g; ω) = E_q[log q(ω) − log q_G(ω)] = KL(q ‖ q_G) with exact averaging over G.

    Monte Carlo over ω ~ q only; the average over G is exact (:func:`log_permanent`, or
    enumeration over ``perms``). 0 ≤ I ≤ log|G| ([SYM] §4).
    Returns ``(estimate, standard_error)``.
    """
    _check_one_hidden(q)
    draws = sample_mean_field(rng_key, q, num_samples)
    values = jax.vmap(lambda w: _mi_terms(q, w, perms))(draws)
    return _mean_se(values)


def infonce_bound(rng_key, q: dict, num_perms: int, num_samples: int = 1000):
    """Î_K = E[log q(ω) − log((1/K)(q(ω) + Σ_{k=2}^K q(h_k·ω)))], h_k ~ Uniform(G).

    The InfoNCE bound with critic log q(g⁻¹·ω) (the true conditional): E Î_K ≤ I,
    Î_K ≤ log K and Î_K → I as K → ∞ ([SYM] §4.1). ``num_perms`` = K ≥ 1.
    Returns ``(estimate, standard_error)`` over ``num_samples`` draws ω ~ q.
    """
    _check_one_hidden(q)
    num_perms = positive_int("num_perms", num_perms)
    width = q["loc"][0]["W"].shape[1]
    k_w, k_p = jax.random.split(rng_key)
    draws = sample_mean_field(k_w, q, num_samples)
    keys = jax.random.split(k_p, num_samples)

    def one(w, key):
        perms = random_permutations(key, width, max(num_perms - 1, 1))[: num_perms - 1]
        return _infonce_terms(q, w, perms)

    return _mean_se(jax.vmap(one)(draws, keys))


def infonce_curve(rng_key, q: dict, ks, num_samples: int = 1000, *, paired: bool = False):
    """Î_K of :func:`infonce_bound` for several K at once, with nested negatives.

    One set of max(ks) − 1 permutations per draw ω ~ q; Î_K uses its first K − 1, so the
    estimates for different K share their Monte-Carlo noise. ``ks``: increasing ints ≥ 1.
    With ``paired``, the estimates are of the gap Î_K − I instead: per draw, the InfoNCE
    term minus the exact term of :func:`mutual_information` (E ≤ 0, → 0 as K → ∞), so the
    bound is tested without the Monte-Carlo noise of ω that both terms share.
    Returns ``(estimates, standard_errors)``, each of shape (len(ks),).
    """
    _check_one_hidden(q)
    ks = [positive_int("K", k) for k in ks]
    if not ks or ks != sorted(set(ks)):
        raise ValueError(
            f"ks must be a non-empty increasing sequence of positive integers, got {ks}"
        )
    width = q["loc"][0]["W"].shape[1]
    k_w, k_p = jax.random.split(rng_key)
    draws = sample_mean_field(k_w, q, num_samples)
    keys = jax.random.split(k_p, num_samples)
    n_neg = max(ks[-1] - 1, 1)

    def one(w, key):
        r = jnp.concatenate(
            [jnp.zeros(1), log_ratios(q, w, random_permutations(key, width, n_neg))]
        )
        return jnp.stack([math.log(k) - logsumexp(r[:k]) for k in ks])

    values = jax.vmap(one)(draws, keys)
    if paired:  # Î_K(ω) − I(ω) on the same draw: the spread of ω ~ q cancels
        values = values - jax.vmap(lambda w: _mi_terms(q, w))(draws)[:, None]
    return jnp.mean(values, axis=0), jnp.std(values, axis=0, ddof=1) / math.sqrt(num_samples)


# --------------------------------------------------------------------------- the ELBO


def elbo_samples(
    rng_key,
    q: dict,
    x,
    y,
    num_samples: int,
    *,
    symmetrised: bool = False,
    prior_scale: float = 1.0,
    **likelihood_kwargs,
) -> jax.Array:
    """Per-draw values of log p(y, ω) − log r(ω) with ω ~ r, r = q or r = q_G.

    For q_G: ω = g·ω₀ with ω₀ ~ q, g ~ Uniform(G) and log q_G exact over G.
    Their mean is an unbiased estimate of ELBO(r); shape (num_samples,).
    """
    validate.check_xy(x, y, where="elbo_samples", ndim=(2,))
    k_w, k_g = jax.random.split(rng_key)
    draws = sample_mean_field(k_w, q, num_samples)

    def joint(w):
        return log_joint(w, x, y, prior_scale=prior_scale, **likelihood_kwargs)

    if not symmetrised:
        return jax.vmap(lambda w: joint(w) - log_q(q, w))(draws)
    _check_one_hidden(q)
    perms = random_permutations(k_g, q["loc"][0]["W"].shape[1], num_samples)

    def one(w, perm):
        w = jax.tree.map(lambda v: v[0], permute_params(w, perm[None]))
        return joint(w) - log_q_symmetrised(q, w)

    return jax.vmap(one)(draws, perms)


def negative_objective(
    q: dict,
    rng_key,
    x,
    y,
    *,
    mi_weight=0.0,
    num_particles: int = 1,
    num_perms: int | None = None,
    prior_scale: float = 1.0,
    likelihood: str = "gaussian",
    noise: float = 1.0,
    activation: str = "relu",
) -> jax.Array:
    """−(ELBO(q) + λ·Î): the loss of plain (λ = 0) or symmetrised (λ = 1) MFVI ([SYM] eq. 8).

    ELBO(q) = E_q[log p(y | x, ω)] − KL(q ‖ p) (KL closed form, expectation by
    ``num_particles`` reparameterised draws). Î is exact over G if ``num_perms`` is
    None, else the InfoNCE bound Î_K with K = ``num_perms`` fresh permutations per draw.
    """
    k_w, k_p = jax.random.split(rng_key)
    draws = sample_mean_field(k_w, q, num_particles)
    kw = dict(likelihood=likelihood, noise=noise, activation=activation)
    ell = jnp.mean(jax.vmap(lambda w: log_likelihood(w, x, y, **kw))(draws))
    elbo = ell - kl_to_prior(q, prior_scale)
    width = q["loc"][0]["W"].shape[1]
    if num_perms is None:
        mi = jnp.mean(jax.vmap(lambda w: _mi_terms(q, w))(draws))
    else:
        keys = jax.random.split(k_p, num_particles)
        mi = jnp.mean(
            jax.vmap(
                lambda w, k: _infonce_terms(q, w, random_permutations(k, width, num_perms - 1))
            )(draws, keys)
        )
    return -(elbo + mi_weight * mi)


@functools.partial(
    jax.jit,
    static_argnames=(
        "widths",
        "num_steps",
        "learning_rate",
        "num_particles",
        "num_perms",
        "prior_scale",
        "likelihood",
        "noise",
        "activation",
        "init_scale",
    ),
)
def _fit(
    rng_key,
    x,
    y,
    mi_weight,
    *,
    widths,
    num_steps,
    learning_rate,
    num_particles,
    num_perms,
    prior_scale,
    likelihood,
    noise,
    activation,
    init_scale,
):
    k_init, k_steps = jax.random.split(rng_key)
    q = init_mean_field(k_init, widths, init_scale=init_scale)
    opt = optax.adam(optax.cosine_decay_schedule(learning_rate, num_steps, alpha=1e-2))
    loss_fn = functools.partial(
        negative_objective,
        x=x,
        y=y,
        mi_weight=mi_weight,
        num_particles=num_particles,
        num_perms=num_perms,
        prior_scale=prior_scale,
        likelihood=likelihood,
        noise=noise,
        activation=activation,
    )

    def step(carry, key):
        q, state = carry
        loss, grad = jax.value_and_grad(loss_fn)(q, key)
        updates, state = opt.update(grad, state, q)
        return (optax.apply_updates(q, updates), state), loss

    (q, _), losses = jax.lax.scan(step, (q, opt.init(q)), jax.random.split(k_steps, num_steps))
    return q, losses


def fit_mean_field(
    rng_keys,
    x,
    y,
    mi_weights,
    *,
    widths,
    num_steps: int = 3000,
    learning_rate: float = 0.01,
    num_particles: int = 1,
    num_perms: int | None = None,
    prior_scale: float = 1.0,
    likelihood: str = "gaussian",
    noise: float = 1.0,
    activation: str = "relu",
    init_scale: float = 0.1,
):
    """Fit plain (λ = 0) and symmetrised (λ = 1) MFVI, vectorised over runs with ``jax.vmap``.

    ``rng_keys`` (R, 2) and ``mi_weights`` (R,) give one run each (init and MC draws from
    the key). Adam with cosine decay over ``num_steps`` full-batch steps of
    :func:`negative_objective`; ``widths`` = (d_in, H, d_out), one hidden layer.
    Returns ``(q, losses)``: q's leaves gain a leading (R,) axis, losses (R, num_steps).
    """
    widths = nets.check_widths(widths)
    if len(widths) != 3:
        raise ValueError(f"symmetrised MFVI needs one hidden layer, got widths {widths}")
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"unknown likelihood {likelihood!r}; choose one of {LIKELIHOODS}")
    for name, v in (("num_steps", num_steps), ("num_particles", num_particles)):
        positive_int(name, v)
    if num_perms is None:
        if widths[1] > MAX_EXACT_WIDTH:
            raise ValueError(
                f"exact I needs H ≤ {MAX_EXACT_WIDTH}, got {widths[1]}; pass num_perms (K)"
            )
    elif positive_int("num_perms", num_perms) < 2:
        raise ValueError(f"num_perms (K) must be at least 2, got {num_perms}")
    for name, v in (("learning_rate", learning_rate), ("prior_scale", prior_scale),
                    ("noise", noise), ("init_scale", init_scale)):  # fmt: skip
        validate.positive(name, v, where="fit_mean_field")
    x, y = map(jnp.asarray, validate.check_xy(x, y, where="fit_mean_field", ndim=(2,)))
    if likelihood == "categorical":
        y = y.astype(jnp.int32)
    rng_keys = jnp.asarray(rng_keys)
    mi_weights = jnp.asarray(mi_weights, dtype=x.dtype)
    if mi_weights.ndim != 1 or rng_keys.shape[0] != mi_weights.shape[0]:
        raise ValueError(
            f"rng_keys {rng_keys.shape} and mi_weights {mi_weights.shape} need one row per run"
        )
    settings = dict(
        widths=widths,
        num_steps=num_steps,
        learning_rate=float(learning_rate),
        num_particles=num_particles,
        num_perms=num_perms,
        prior_scale=float(prior_scale),
        likelihood=likelihood,
        noise=float(noise),
        activation=activation,
        init_scale=float(init_scale),
    )
    return jax.vmap(lambda k, lam: _fit(k, x, y, lam, **settings))(rng_keys, mi_weights)


def evaluate(
    rng_key,
    q: dict,
    x,
    y,
    x_test,
    *,
    num_samples: int = 256,
    num_perms: int | None = None,
    prior_scale: float = 1.0,
    likelihood: str = "gaussian",
    noise: float = 1.0,
    activation: str = "relu",
) -> dict:
    """ELBO(q), I (exact, or Î_K with K = ``num_perms``) and the predictive on ``x_test``.

    ``elbo`` = E_q[log p(y | x, ω)] (``num_samples`` draws) − KL(q ‖ p) (closed form);
    ELBO(q_G) = ``elbo`` + ``mi`` (a lower bound when Î_K is used). ``predictive``:
    the Monte-Carlo predictive mean of the outputs (Gaussian: means (n_test,)) or of the
    class probabilities (categorical: (n_test, C)), and ``outputs`` the draws themselves
    (Gaussian only; for :func:`bnn_posteriors.metrics.lppd`). q and q_G predict alike.
    """
    x, y = map(jnp.asarray, validate.check_xy(x, y, where="evaluate", ndim=(2,)))
    k_w, k_mi, k_f = jax.random.split(rng_key, 3)
    kw = dict(likelihood=likelihood, noise=noise, activation=activation)
    draws = sample_mean_field(k_w, q, num_samples)
    ell = jnp.mean(jax.vmap(lambda w: log_likelihood(w, x, y, **kw))(draws))
    if num_perms is None:
        mi = mutual_information(k_mi, q, num_samples)[0]
    else:
        mi = infonce_bound(k_mi, q, num_perms, num_samples)[0]
    f = predictive_outputs(k_f, q, jnp.asarray(x_test), num_samples, activation=activation)
    out = {"elbo": ell - kl_to_prior(q, prior_scale), "mi": mi}
    if likelihood == "categorical":
        out["predictive"] = jnp.mean(jax.nn.softmax(f, axis=-1), axis=0)
    else:
        out["predictive"], out["outputs"] = jnp.mean(f[..., 0], axis=0), f[..., 0]
    return out


# --------------------------------------------------------------------------- helpers


def _mean_se(values):
    values = jnp.asarray(values)
    return jnp.mean(values), jnp.std(values, ddof=1) / math.sqrt(values.shape[0])


def _check_one_hidden(q) -> None:
    _check_q(q)
    if not (isinstance(q["loc"], list | tuple) and len(q["loc"]) == 2):
        raise ValueError("the symmetrised family is implemented for one hidden layer (2 layers)")
