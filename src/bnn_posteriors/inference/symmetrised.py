"""Symmetrised mean-field VI over the hidden-unit permutations of an MLP ([SYM]).

For a mean-field Gaussian q over the parameters ω of a one-hidden-layer MLP and
the group G of permutations of its H hidden units (:mod:`.permutations`), the
symmetrised family is

    q_G(ω) = (1/|G|) Σ_{g∈G} q(g·ω).

Prior and likelihood are G-invariant, so ELBO(q_G) = ELBO(q) + I(g; ω) with
I(g; ω) = KL(q ‖ q_G) = E_q[log q(ω) − log q_G(ω)] ∈ [0, log|G|] ([SYM] §4).
This module evaluates log q_G exactly (log-permanent over G), estimates I exactly over G
or by the InfoNCE-style lower bound Î_K from K sampled permutations, and fits q by
maximising ELBO(q) + λ·I ([SYM] eq. 8; λ = 0: plain MFVI, λ = 1: symmetrised) with the
package's one mean-field VI (:func:`bnn_posteriors.inference.vi.svi_steps`): the model
:func:`bnn_posteriors.models.numpyro_models.mlp_regression` or ``mlp_classification``, the guide
:func:`~bnn_posteriors.inference.vi.mean_field_guide`, the objective
:class:`SymmetrisedELBO` (``TraceMeanField_ELBO`` minus λ·I).

q is a :class:`.mean_field.MeanField` over the MLP's layer list (``[{"W", "b"}, {"W", "b"}]``).
Hidden unit j of a one-hidden-layer net is the row ``u_j = (W₀[:, j], b₀[j], W₁[j, :])``;
g permutes these rows and leaves b₁.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp
from numpyro.infer import TraceMeanField_ELBO
from numpyro.infer.util import log_density

from bnn_posteriors.inference import mean_field, vi
from bnn_posteriors.inference.mean_field import HALF_LOG_2PI, MeanField
from bnn_posteriors.models import nets
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.models.symmetry.permutations import (
    MAX_EXACT_WIDTH,
    log_permanent,
    permute_params,
    random_permutations,
)
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive_int

# --------------------------------------------------------------------------- q under G


def _units(params) -> jax.Array:
    """Rows u_j = (W₀[:, j], b₀[j], W₁[j, :]) of a one-hidden-layer net: (H, d_in + 1 + d_out)."""
    first, second = params[0], params[1]
    parts = [first["W"].T]
    if "b" in first:
        parts.append(first["b"][:, None])
    parts.append(second["W"])
    return jnp.concatenate(parts, axis=1)


def unit_log_densities(q: MeanField, params) -> jax.Array:
    """L[j, k] = log q_j(u_k(ω)): unit k of ω under the factor of q at position j, (H, H).

    log q(g·ω) = Σ_j L[j, perm[j]] + (terms g does not touch), so the whole group is
    scored from this one matrix ([SYM] §4: the sum over G of q(g·ω)).
    """
    mu, log_s = _units(q.loc), _units(q.log_scale)
    u = _units(params)
    z = (u[None, :, :] - mu[:, None, :]) * jnp.exp(-log_s)[:, None, :]
    return jnp.sum(-0.5 * z**2 - log_s[:, None, :] - HALF_LOG_2PI, axis=-1)


def log_ratios(q: MeanField, params, perms) -> jax.Array:
    """log q(g·ω) − log q(ω) for each permutation g in ``perms`` (G, H): shape (G,)."""
    _check_one_hidden(q)
    L = unit_log_densities(q, params)
    perms = jnp.asarray(perms)
    rows = jnp.arange(L.shape[0])
    return jnp.sum(L[rows[None, :], perms], axis=1) - jnp.trace(L)


def log_q_symmetrised(q: MeanField, params, perms=None) -> jax.Array:
    """log q_G(ω) = log (1/|G|) Σ_g q(g·ω), exact (log-mean-exp over the whole group).

    By :func:`log_permanent` of the unit matrix (:func:`unit_log_densities`), or by
    explicit enumeration over ``perms`` (G, H) if given (e.g. :func:`permutation_group`).
    """
    _check_one_hidden(q)
    return mean_field.log_density(q, params) - _mi_terms(q, params, perms)


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


def mutual_information(rng_key, q: MeanField, num_samples: int = 1000, perms=None):
    """I(g; ω) = E_q[log q(ω) − log q_G(ω)] = KL(q ‖ q_G) with exact averaging over G.

    Monte Carlo over ω ~ q only; the average over G is exact (:func:`log_permanent`, or
    enumeration over ``perms``). 0 ≤ I ≤ log|G| ([SYM] §4).
    Returns ``(estimate, standard_error)``.
    """
    _check_one_hidden(q)
    draws = mean_field.sample(rng_key, q, num_samples)
    values = jax.vmap(lambda w: _mi_terms(q, w, perms))(draws)
    return mean_se(values)


def infonce_bound(rng_key, q: MeanField, num_perms: int, num_samples: int = 1000):
    """Î_K = E[log q(ω) − log((1/K)(q(ω) + Σ_{k=2}^K q(h_k·ω)))], h_k ~ Uniform(G).

    The InfoNCE bound with critic log q(g⁻¹·ω) (the true conditional): E Î_K ≤ I,
    Î_K ≤ log K and Î_K → I as K → ∞ ([SYM] §4.1). ``num_perms`` = K ≥ 1.
    Returns ``(estimate, standard_error)`` over ``num_samples`` draws ω ~ q.
    """
    _check_one_hidden(q)
    num_perms = positive_int("num_perms", num_perms)
    width = q.loc[0]["W"].shape[1]
    k_w, k_p = jax.random.split(rng_key)
    draws = mean_field.sample(k_w, q, num_samples)
    keys = jax.random.split(k_p, num_samples)

    def one(w, key):
        perms = random_permutations(key, width, max(num_perms - 1, 1))[: num_perms - 1]
        return _infonce_terms(q, w, perms)

    return mean_se(jax.vmap(one)(draws, keys))


def infonce_curve(rng_key, q: MeanField, ks, num_samples: int = 1000, *, paired: bool = False):
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
    width = q.loc[0]["W"].shape[1]
    k_w, k_p = jax.random.split(rng_key)
    draws = mean_field.sample(k_w, q, num_samples)
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


def sample_symmetrised(rng_key, q: MeanField, num_samples: int):
    """ω ~ q_G: ω = g·ω₀ with ω₀ ~ q and g ~ Uniform(G), each leaf (num_samples, ...).

    ω₀ are the draws of :func:`.mean_field.sample` with the first half of ``rng_key``'s split,
    so ``mean_field.sample(jax.random.split(rng_key)[0], q, n)`` gives the same ω₀.
    """
    _check_one_hidden(q)
    k_w, k_g = jax.random.split(rng_key)
    draws = mean_field.sample(k_w, q, num_samples)
    perms = random_permutations(k_g, q.loc[0]["W"].shape[1], num_samples)
    return jax.vmap(lambda w, p: jax.tree.map(lambda v: v[0], permute_params(w, p[None])))(
        draws, perms
    )


def elbo_samples(
    rng_key,
    q: MeanField,
    x,
    y,
    num_samples: int,
    *,
    symmetrised: bool = False,
    prior_scale: float = 1.0,
    **likelihood_kwargs,
) -> jax.Array:
    """Per-draw values of log p(y, ω) − log r(ω) with ω ~ r, r = q or r = q_G.

    For q_G: ω = g·ω₀ (:func:`sample_symmetrised`) and log q_G exact over G; both use the
    same ω₀ for the same key. log p(y, ω) is the model's (:func:`log_joint`).
    Their mean is an unbiased estimate of ELBO(r); shape (num_samples,).
    """
    validate.check_xy(x, y, where="elbo_samples", ndim=(2,))

    def joint(w):
        return log_joint(w, x, y, prior_scale=prior_scale, **likelihood_kwargs)

    if not symmetrised:
        draws = mean_field.sample(jax.random.split(rng_key)[0], q, num_samples)
        return jax.vmap(lambda w: joint(w) - mean_field.log_density(q, w))(draws)
    draws = sample_symmetrised(rng_key, q, num_samples)
    return jax.vmap(lambda w: joint(w) - log_q_symmetrised(q, w))(draws)


# --------------------------------------------------------------------------- the objective


def mi_term(rng_key, q: MeanField, num_draws: int, num_perms: int | None = None) -> jax.Array:
    """The I of [SYM] eq. 8 as trained: the mean over ``num_draws`` reparameterised ω ~ q of
    log q(ω) − log q_G(ω), exact over G (``num_perms`` None) or the InfoNCE term of Î_K with
    K = ``num_perms`` (K − 1 fresh permutations per draw). Differentiable in q.
    """
    k_w, k_p = jax.random.split(rng_key)
    draws = mean_field.sample(k_w, q, num_draws)
    if num_perms is None:
        return jnp.mean(jax.vmap(lambda w: _mi_terms(q, w))(draws))
    width = q.loc[0]["W"].shape[1]

    def one(w, key):
        return _infonce_terms(q, w, random_permutations(key, width, num_perms - 1))

    return jnp.mean(jax.vmap(one)(draws, jax.random.split(k_p, num_draws)))


class SymmetrisedELBO(TraceMeanField_ELBO):
    """−(ELBO(q) + λ·I): ``TraceMeanField_ELBO`` with the symmetrisation term of [SYM] eq. 8.

    ELBO(q) as NumPyro's mean-field ELBO (closed-form KL, ``num_particles`` draws for the
    expected log-likelihood); I by :func:`mi_term` from the guide's parameters (``param_map``:
    ``W0_auto_loc``, ``W0_auto_scale``, ...) on ``num_particles`` draws of its own, exact over
    G or Î_K with K = ``num_perms``. ``mi_weight`` λ may be traced (vmapped over runs).
    """

    def __init__(self, mi_weight=0.0, *, num_particles: int = 1, num_perms: int | None = None):
        super().__init__(num_particles=num_particles)
        self.mi_weight = mi_weight
        self.num_perms = num_perms

    def loss_with_mutable_state(self, rng_key, param_map, model, guide, *args, **kwargs):
        k_elbo, k_mi = jax.random.split(rng_key)
        out = super().loss_with_mutable_state(k_elbo, param_map, model, guide, *args, **kwargs)
        q = mean_field.from_auto_normal(param_map, mlp=True)
        mi = mi_term(k_mi, q, self.num_particles, self.num_perms)
        return {**out, "loss": out["loss"] - self.mi_weight * mi}


@functools.partial(
    jax.jit,
    static_argnames=(
        "num_steps",
        "learning_rate",
        "num_particles",
        "num_perms",
        "init_scale",
        "spec",
        "by_site",
    ),
)
def _fit(
    rng_key,
    x,
    y,
    mi_weight,
    *,
    num_steps,
    learning_rate,
    num_particles,
    num_perms,
    init_scale,
    spec,
    by_site=False,
):
    """One run of the model ``spec`` (:class:`.models.MLP`): q (a :class:`.mean_field.MeanField`
    by layer, or by the model's sites if ``by_site``) and the losses (num_steps,)."""
    k_init, k_steps = jax.random.split(rng_key)
    start = mean_field.init(k_init, spec.widths, init_scale=init_scale)
    guide = vi.mean_field_guide(
        spec.model, init_loc=nets.sites(start.loc), init_scale=init_scale, scale_transform="exp"
    )
    params, losses = vi.svi_steps(
        k_steps,
        spec.model,
        guide,
        spec.kwargs(x, y),
        num_steps=num_steps,
        learning_rate=learning_rate,
        schedule="cosine",
        num_particles=num_particles,
        init_params=mean_field.to_auto_normal(start),
        elbo=SymmetrisedELBO(mi_weight, num_particles=num_particles, num_perms=num_perms),
    )
    return mean_field.from_auto_normal(params, mlp=not by_site), losses


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
    noise_scale: float | None = 1.0,
    activation: str = "relu",
    init_scale: float = 0.1,
    by_site: bool = False,
):
    """Fit plain (λ = 0) and symmetrised (λ = 1) MFVI, vectorised over runs with ``jax.vmap``.

    ``rng_keys`` (R, 2) and ``mi_weights`` (R,) give one run each (start and Monte-Carlo
    draws from the key). Each run is :func:`bnn_posteriors.inference.vi.svi_steps` on
    :class:`SymmetrisedELBO`: Adam with cosine decay over ``num_steps`` full-batch steps,
    from weight means ~ N(0, 1/d_in), bias means 0 and sds ``init_scale``
    (:func:`.mean_field.init`); ``widths`` = (d_in, H, d_out), one hidden layer.
    Returns ``(q, losses)``: q a :class:`.mean_field.MeanField` by layer with a leading (R,)
    axis on every leaf, losses (R, num_steps) = −(ELBO + λ·I) along the way.

    ``noise_scale`` None samples the Gaussian likelihood's σ (log σ ~ N(0, 1), the site
    ``log_sigma`` of :class:`.models.MLP`; q then has a factor over it, which I ignores: g
    leaves σ unchanged). ``by_site`` returns q over the model's sample sites (``W0``, ``b0``,
    ..., ``log_sigma``) instead of the layer list, so that the factor of σ is kept.
    """
    where = "fit_mean_field"
    widths = nets.check_widths(widths)
    if len(widths) != 3:
        raise ValueError(f"symmetrised MFVI needs one hidden layer, got widths {widths}")
    validate.check_likelihood(likelihood, where=where)
    for name, v in (("num_steps", num_steps), ("num_particles", num_particles)):
        positive_int(name, v, where=where)
    if num_perms is None:
        if widths[1] > MAX_EXACT_WIDTH:
            raise ValueError(
                f"exact I needs H ≤ {MAX_EXACT_WIDTH}, got {widths[1]}; pass num_perms (K)"
            )
    elif positive_int("num_perms", num_perms, where=where) < 2:
        raise ValueError(f"num_perms (K) must be at least 2, got {num_perms}")
    for name, scale in (
        ("learning_rate", learning_rate),
        ("prior_scale", prior_scale),
        ("noise_scale", noise_scale),
        ("init_scale", init_scale),
    ):
        if not (name == "noise_scale" and scale is None):
            validate.positive(name, scale, where=where)
    x, y = map(jnp.asarray, validate.check_xy(x, y, where=where, ndim=(2,)))
    if likelihood == "categorical":
        y = y.astype(jnp.int32)
    rng_keys = jnp.asarray(rng_keys)
    mi_weights = jnp.asarray(mi_weights, dtype=x.dtype)
    if mi_weights.ndim != 1 or rng_keys.shape[0] != mi_weights.shape[0]:
        raise ValueError(
            f"rng_keys {rng_keys.shape} and mi_weights {mi_weights.shape} need one row per run"
        )
    spec = MLP(
        widths,
        likelihood,
        activation,
        prior_scale=float(prior_scale),
        noise_scale=None if noise_scale is None else float(noise_scale),
    )
    settings = dict(
        num_steps=num_steps,
        learning_rate=float(learning_rate),
        num_particles=num_particles,
        num_perms=num_perms,
        init_scale=float(init_scale),
        spec=spec,
        by_site=bool(by_site),
    )
    return jax.vmap(lambda k, lam: _fit(k, x, y, lam, **settings))(rng_keys, mi_weights)


# --------------------------------------------------------------------------- the model


def log_joint(
    params,
    x,
    y,
    *,
    likelihood: str = "gaussian",
    prior_scale: float = 1.0,
    noise_scale: float = 1.0,
    activation: str = "relu",
) -> jax.Array:
    """log p(y, ω | x) of the model (:class:`.models.MLP`) at one ω (an MLP parameter list),
    from the NumPyro model itself (:func:`numpyro.infer.util.log_density`)."""
    widths = (params[0]["W"].shape[0], *(layer["W"].shape[1] for layer in params))
    spec = MLP(
        widths,
        likelihood,
        activation,
        bias="b" in params[0],
        prior_scale=prior_scale,
        noise_scale=noise_scale,
    )
    return log_density(spec.model, (), spec.kwargs(x, y), nets.sites(params))[0]


# --------------------------------------------------------------------------- helpers


def mean_se(values):
    """Mean and standard error (sd with ddof 1 over √n) of the draws ``values`` (n,)."""
    values = jnp.asarray(values)
    return jnp.mean(values), jnp.std(values, ddof=1) / math.sqrt(values.shape[0])


def _check_one_hidden(q) -> None:
    mean_field.check(q, where="symmetrised")
    if not (isinstance(q.loc, list | tuple) and len(q.loc) == 2):
        raise ValueError("the symmetrised family is implemented for one hidden layer (2 layers)")
