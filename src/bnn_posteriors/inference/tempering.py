"""Tempered mean-field VI of wide one-hidden-layer networks ([TEMP]; Huix et al. 2022).

The network of the slides is f_w(x) = (1/N) Σ_j a_j σ(⟨b_j, x⟩) ("Our model"), with a
factorised Gaussian prior P0 and a mean-field Gaussian q_θ, z ↦ μ + σ ⊙ z. The tempered
ELBO ("In practice, it is common to consider a tempered ELBO") is

    ELBO_η^N(θ) = −η KL(q_θ‖P0) + Σ_i E_q[log L(y_i | x_i, w)],

and the slides' balanced temperature is η_N = τ p / N. Here the model is
:func:`bnn_posteriors.models.numpyro_models.mlp_regression` /
:func:`~bnn_posteriors.models.numpyro_models.mlp_classification`
without biases and with ``output_scale = 1/N`` (a bias of the hidden layer is a column of
ones appended to x, :func:`augment`); η multiplies the KL by ``numpyro.handlers.scale`` on the
guide, whose sites carry the analytic Gaussian KL of ``TraceMeanField_ELBO``.

q is a :class:`bnn_posteriors.inference.mean_field.MeanField` over the layer list
``[{"W": W0}, {"W": W1}]`` (``q.loc``, ``q.scale``) with ``W0`` (d_in, N) the hidden weights b_j
(columns) and ``W1`` (N, d_out) the output weights a_j. :func:`model`, :func:`init_params`,
:func:`fit_tempered`, :func:`mc_elbo_terms` and :func:`predict_probs` also take ``depth``
hidden layers of N units (q over ``W0`` ... ``W{depth}``), for the slides' claim that the
balanced temperature carries over to deeper architectures; the closed forms are for one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from jax.scipy.special import ndtr
from numpyro.infer import TraceMeanField_ELBO

from bnn_posteriors.inference import mean_field, vi
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_array, positive_int

# --------------------------------------------------------------------------- inputs


def balanced_temperature(p: int, n: int, tau: float = 1.0) -> float:
    """The slides' balanced temperature η_N = τ p / N (p observations, N neurons or weights)."""
    p, n = positive_int("p", p), positive_int("N", n)
    positive("tau", tau, where="balanced_temperature")
    return tau * p / n


def augment(x):
    """Append a column of ones to ``x`` (n, d) → (n, d + 1): a hidden bias inside ⟨b_j, x⟩."""
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n, d), got {x.shape}")
    return jnp.concatenate([x, jnp.ones((x.shape[0], 1), x.dtype)], axis=1)


# --------------------------------------------------------------------------- model and guide


def model(
    x,
    y=None,
    *,
    width: int,
    depth: int = 1,
    likelihood: str = "gaussian",
    n_out: int = 1,
    prior_scale: float = 1.0,
    noise_scale: float = 1.0,
    activation: str = "relu",
    output_scale: float | None = None,
    subsample_size: int | None = None,
):
    """The one-hidden-layer network of [TEMP] as a NumPyro model (no biases).

    f_w(x) = s Σ_j a_j σ(⟨b_j, x⟩) with s = ``output_scale`` (default 1/N: the mean-field
    scaling of the slides); every weight ~ N(0, prior_scale²). ``depth`` > 1: that many hidden
    layers of ``width`` units, s multiplying the last layer. ``likelihood="gaussian"``:
    y_i ~ N(f(x_i), noise²), ``x`` (n, d), ``y`` (n,) (:func:`models.mlp_regression`);
    ``"categorical"``: y_i ~ Categorical(softmax f(x_i)), ``n_out`` classes
    (:func:`models.mlp_classification`, with optional minibatches ``subsample_size``).
    """
    width = positive_int("width", width)
    depth = positive_int("depth", depth)
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n, d), got {x.shape}")
    spec = models.MLP(
        (int(x.shape[1]), *([width] * depth), positive_int("n_out", n_out)),
        likelihood,
        activation,
        bias=False,
        prior_scale=prior_scale,
        noise_scale=noise_scale,
        output_scale=1.0 / width if output_scale is None else output_scale,
    )
    kwargs = spec.kwargs(x, y)
    if subsample_size is not None:
        if likelihood != "categorical":
            raise ValueError("subsample_size is only supported for the categorical likelihood")
        kwargs["subsample_size"] = subsample_size
    spec.model(**kwargs)


def init_params(
    rng_key,
    d_in: int,
    width: int,
    n_out: int = 1,
    *,
    depth: int = 1,
    prior_scale: float = 1.0,
    init_scale: float = 1.0,
) -> MeanField:
    """Initial q: hidden means b_j ~ P0 (a prior draw), output means a_j = 0, all sds
    ``init_scale · prior_scale``. Returns q as in the module docstring. With ``depth`` > 1
    the means of hidden layer l ≥ 1 are prior draws with ``fold_in(rng_key, l)``.
    """
    d_in, width, n_out, depth = (
        positive_int(k, v)
        for k, v in (("d_in", d_in), ("width", width), ("n_out", n_out), ("depth", depth))
    )
    positive("prior_scale", prior_scale, where="init_params")
    positive("init_scale", init_scale, where="init_params")
    sd = init_scale * prior_scale
    shapes = [(d_in, width)] + [(width, width)] * (depth - 1)
    keys = [rng_key] + [jax.random.fold_in(rng_key, layer) for layer in range(1, depth)]
    hidden = [
        {"W": prior_scale * jax.random.normal(k, shape)}
        for k, shape in zip(keys, shapes, strict=True)
    ]
    return MeanField(
        [*hidden, {"W": jnp.zeros((width, n_out))}],
        [{"W": jnp.full(shape, sd)} for shape in [*shapes, (width, n_out)]],
    )


def _check_q(q, where: str, *, one_hidden: bool = True) -> None:
    """q of the module docstring: a MeanField over ``[{"W": W0}, {"W": W1}]``, N matching;
    ``one_hidden=False`` also admits more hidden layers ``[{"W": W0}, ..., {"W": W<depth>}]``."""
    mean_field.check(q, where=where)
    if not (
        isinstance(q.loc, list)
        and len(q.loc) >= 2
        and all(set(layer) == {"W"} for layer in q.loc)
        and (len(q.loc) == 2 or not one_hidden)
    ):
        layers = "[{'W': W0}, {'W': W1}]" + ("" if one_hidden else ", or more hidden layers")
        raise ValueError(f"{where}: q must be over the layers {layers}")
    for i in range(len(q.loc) - 1):
        if jnp.shape(q.loc[i]["W"])[-1] != jnp.shape(q.loc[i + 1]["W"])[-2]:
            raise ValueError(f"{where}: W{i} (., N) and W{i + 1} (N, .) disagree on the width N")


def _guide(start: MeanField):
    """q_θ: ``AutoNormal`` over ``W0``, ``W1`` with exp-parametrised sds, starting at ``start``."""
    return vi.mean_field_guide(model, init_loc=nets.sites(start.loc), scale_transform="exp")


# --------------------------------------------------------------------------- fitting


def fit_tempered(
    rng_key,
    model_kwargs: dict,
    init: MeanField,
    etas,
    *,
    num_steps: int,
    learning_rate: float = 0.01,
    num_particles: int = 1,
    batched: tuple[str, ...] = (),
):
    """Maximise ELBO_η^N by SVI for each temperature of ``etas`` (vmapped, one compilation).

    Adam with a cosine-decayed learning rate; ``TraceMeanField_ELBO`` (analytic KL,
    ``num_particles`` draws for the expected log-likelihood); every fit starts at ``init``.
    ``model_kwargs`` are the keyword arguments of :func:`model` (``x``, ``y``, ``width``, ...).
    Returns ``(q, losses)``: q with a leading (n_eta,) axis on every leaf, losses
    (n_eta, num_steps) = the negative tempered ELBO along the way.

    ``batched`` names model arguments (e.g. ``("x", "y")``) that hold B data sets of equal
    shape stacked on a leading axis; ``init``'s arrays then carry the same leading axis,
    ``etas`` is (B, n_eta) and the outputs gain a leading (B,) axis.
    """
    num_steps = positive_int("num_steps", num_steps)
    num_particles = positive_int("num_particles", num_particles)
    positive("learning_rate", learning_rate, where="fit_tempered")
    unknown = set(batched) - set(model_kwargs)
    if unknown:
        raise ValueError(f"batched names {sorted(unknown)} are not model arguments")
    etas = jnp.asarray(etas, dtype=jnp.result_type(float))
    etas = etas.reshape(etas.shape or (1,)) if not batched else etas
    if etas.ndim != (2 if batched else 1):
        want = "(n_sets, n_eta)" if batched else "a scalar or (n_eta,)"
        raise ValueError(f"etas must be {want}, got shape {etas.shape}")
    positive_array("eta", np.asarray(etas), where="fit_tempered")
    _check_q(
        jax.tree.map(lambda a: a[0], init) if batched else init, "fit_tempered", one_hidden=False
    )
    fixed = {k: v for k, v in model_kwargs.items() if k not in batched}

    def one(key, eta, start, data):
        params, losses = vi.svi_steps(
            key,
            model,
            _guide(start),
            {**fixed, **data},
            num_steps=num_steps,
            learning_rate=learning_rate,
            num_particles=num_particles,
            temperature=eta,
            init_params=mean_field.to_auto_normal(start),
        )
        return mean_field.from_auto_normal(params, mlp=True), losses

    over_eta = jax.vmap(one, in_axes=(0, 0, None, None))
    if not batched:
        keys = jax.random.split(rng_key, etas.shape[0])
        return jax.jit(over_eta)(keys, etas, init, {})
    data = {k: jnp.asarray(model_kwargs[k]) for k in batched}
    n_sets = etas.shape[0]
    if any(v.shape[0] != n_sets for v in data.values()):
        raise ValueError(f"batched arguments must have a leading axis of {n_sets} data sets")
    keys = jax.random.split(rng_key, etas.size).reshape(*etas.shape, -1)
    return jax.jit(jax.vmap(over_eta))(keys, etas, init, data)


def mc_elbo_terms(rng_key, q: MeanField, model_kwargs: dict, eta=1.0, *, num_particles=1):
    """The two terms of ELBO_η^N as NumPyro's ``TraceMeanField_ELBO`` computes them.

    Per-site losses (``sum_sites=False``) of the η-scaled guide: the latent sites give
    η·KL(q‖P0) exactly, the observed site −Σ_i log L(y_i|x_i, w) (Monte Carlo,
    ``num_particles`` draws). Returns ``dict(kl, expected_log_lik, elbo)`` with
    elbo = −η·kl + expected_log_lik, the objective that :func:`fit_tempered` maximises.
    """
    positive_array("eta", eta, where="mc_elbo_terms")
    _check_q(q, "mc_elbo_terms", one_hidden=False)
    guide = _guide(q)
    # build the guide's prototype now, so that the ELBO's draws depend on rng_key alone
    numpyro.handlers.seed(guide, rng_seed=0)(**model_kwargs)
    guide = numpyro.handlers.scale(guide, scale=eta)
    loss = TraceMeanField_ELBO(
        num_particles=positive_int("num_particles", num_particles), sum_sites=False
    )
    per_site = loss.loss(rng_key, mean_field.to_auto_normal(q), model, guide, **model_kwargs)
    kl = sum(per_site[f"W{i}"] for i in range(len(q.loc))) / eta
    ell = -per_site["y"]
    return {"kl": kl, "expected_log_lik": ell, "elbo": -eta * kl + ell}


# --------------------------------------------------------------------------- closed forms


def relu_gaussian_moments(m, s):
    """E[relu(u)] and E[relu(u)²] for u ~ N(m, s²), s > 0 (elementwise).

    E relu(u) = m Φ(m/s) + s φ(m/s);  E relu(u)² = (m² + s²) Φ(m/s) + m s φ(m/s).
    """
    m, s = jnp.asarray(m), jnp.asarray(s)
    r = m / s
    cdf, pdf = ndtr(r), jnp.exp(-0.5 * r**2) / jnp.sqrt(2 * jnp.pi)
    return m * cdf + s * pdf, (m**2 + s**2) * cdf + m * s * pdf


def predictive_moments(q: MeanField, x, output_scale: float | None = None):
    """Mean and variance of f_w(x) under q_θ for the ReLU network, in closed form.

    With u_j = ⟨b_j, x⟩ ~ N(⟨μ_b, x⟩, Σ_k σ_bk² x_k²) independent of a_j:
    E f = s Σ_j μ_a E relu(u_j), Var f = s² Σ_j [(μ_a² + σ_a²) E relu(u_j)² − μ_a² (E relu u_j)²].
    ``x``: (n, d_in) → mean, var: (n, d_out); s = ``output_scale`` (default 1/N).
    """
    _check_q(q, "predictive_moments")
    d_in, width = jnp.shape(q.loc[0]["W"])
    x = jnp.asarray(validate.check_x(x, where="predictive_moments", n_features=d_in))
    s = 1.0 / width if output_scale is None else output_scale
    m = x @ q.loc[0]["W"]  # (n, N)
    sd = jnp.sqrt((x**2) @ q.scale[0]["W"] ** 2)  # (n, N)
    e1, e2 = relu_gaussian_moments(m, sd)
    mu_a, sd_a = q.loc[1]["W"], q.scale[1]["W"]  # (N, d_out)
    mean = s * e1 @ mu_a
    var = s**2 * (e2 @ (mu_a**2 + sd_a**2) - e1**2 @ mu_a**2)
    return mean, var


def _gaussian_terms(q, x, y, noise_scale, output_scale):
    d_in = jnp.shape(q.loc[0]["W"])[0]
    xy = validate.check_xy(x, y, where="gaussian_elbo_terms", n_features=d_in)
    x, y = map(jnp.asarray, xy)
    positive("noise_scale", noise_scale, where="gaussian_elbo_terms")
    mean, var = predictive_moments(q, x, output_scale)
    const = -0.5 * y.shape[0] * jnp.log(2 * jnp.pi * noise_scale**2)
    squared = jnp.sum((y - mean[:, 0]) ** 2) / (2 * noise_scale**2)
    return const - squared, jnp.sum(var[:, 0]) / (2 * noise_scale**2)


def gaussian_elbo_terms(
    q: MeanField, x, y, *, eta=1.0, prior_scale=1.0, noise_scale=1.0, output_scale=None
) -> dict:
    """Exact ELBO_η^N and the limit functional F̃_η^N(ν_N^θ) of the slides, square loss, ReLU.

    E_q log L = −Σ_i [(y_i − E f(x_i))² + Var f(x_i)] / (2σ²) − (p/2) log(2πσ²);
    the first sum is the data-fit term without the normalising constant, ``expected_loss``
    = Σ_i E_q ℓ(f_w(x_i), y_i) = Σ_i G_Θ^N(θ; (x_i, y_i)) of the slides, ℓ = (y − f)²/(2σ²).
    F̃ moves the expectation inside the loss ("integration inside", G̃), dropping Var f.
    Their gap is Σ_i Var_q f(x_i) / (2σ²) = O(p/N) (slides' Theorem, |ELBO − F̃| ≤ Cp/N).
    Returns ``dict(kl, expected_log_lik, expected_loss, elbo, limit_log_lik, limit, gap)``.
    """
    positive_array("eta", eta, where="gaussian_elbo_terms")
    _check_q(q, "gaussian_elbo_terms")
    kl = mean_field.kl_to_prior(q, prior_scale)
    limit_ll, var_term = _gaussian_terms(q, x, y, noise_scale, output_scale)
    ell = limit_ll - var_term
    const = -0.5 * jnp.shape(y)[0] * jnp.log(2 * jnp.pi * noise_scale**2)
    return {
        "kl": kl,
        "expected_log_lik": ell,
        "expected_loss": const - ell,
        "elbo": -eta * kl + ell,
        "limit_log_lik": limit_ll,
        "limit": -eta * kl + limit_ll,
        "gap": var_term,
    }


# --------------------------------------------------------------------------- prediction


def predict_probs(
    rng_key,
    q: MeanField,
    x,
    *,
    num_samples: int = 32,
    output_scale: float | None = None,
    activation: str = "relu",
):
    """Predictive class probabilities (1/S) Σ_s softmax(f_{w_s}(x)), w_s ~ q_θ: (n, d_out),
    for q over one hidden layer or more (``output_scale`` default: 1/N of the last)."""
    _check_q(q, "predict_probs", one_hidden=False)
    width = jnp.shape(q.loc[-1]["W"])[0]
    s = 1.0 / width if output_scale is None else output_scale
    f = mean_field.outputs(rng_key, q, x, num_samples, activation=activation, output_scale=s)
    return jnp.mean(jax.nn.softmax(f, axis=-1), axis=0)
