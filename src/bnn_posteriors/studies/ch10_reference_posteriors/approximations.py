"""Chapter 10's Gaussian approximations around a mode, each scored against the reference.

One pure function per method, ``method(rng_key, prob, *, settings) -> MethodFit``
(:class:`.fits.MethodFit`): the predictive of S draws at every set of points of the problem
(:meth:`.problems.Problem.points`) in the reference's format
(:func:`bnn_posteriors.inference.reference.predictive`, one draw axis) and the cost in
full-batch gradients of the log joint (plus the flops of dense factorisations). Every method
reuses the package's implementation:

- :func:`map_point`: the MAP of :func:`.map_laplace.train_map_from` (S = 1);
- :func:`mfvi`, :func:`tempered_mfvi`: :func:`.vi.fit_mfvi` on the problem's NumPyro model,
  the KL multiplied by η for the tempered one ([TEMP]);
- :func:`symmetrised_vi`: :func:`.symmetrised.fit_mean_field` with λ = 1 ([SYM]; one hidden
  layer);
- :func:`sampled_laplace`, :func:`linearised_laplace`: :func:`.map_laplace.laplace_at` (the
  full GGN) at the MAP;
- :func:`null_space_laplace`: the projected posterior N(θ̂, α⁻¹ P_ker) of
  :mod:`.ggn_null_space` ([NS]), as chapter 9 builds it;
- :func:`viking`: :func:`.viking.fit_viking` from the MAP ([VK]), as chapter 9;
- :func:`laplace_diffusion`: [RI]'s Laplace diffusion from the MAP
  (:func:`.laplace_diffusion.laplace_diffusion`), as chapter 9's C9.4.

The methods with a Gaussian predictive in function space (linearised, projected and VIKING)
return S draws of the linearised network f(x; θ̂) + J_x(θ_s − θ̂), θ_s from their Gaussian in
parameter space: joint draws over the points and the outputs, so that every method is scored by
the same sample-based metrics.

Regression noise. The problems sample σ (log σ ~ N(0, 1)). The VI methods fit a factor of q to
log σ and return exp of its draws. The MAP-based methods need a fixed σ: the MAP's own, the
root mean square of its training residuals, refitted in ``noise_rounds`` rounds of
:func:`.map_laplace.train_map_from` (σ₀ the sd of the targets, then σ_r the residuals' RMS after
round r: coordinate ascent of the joint MAP over θ and σ with a flat prior on σ); the last σ is
the returned ``noise_scale`` of every draw. A problem with a fixed σ (``spec.noise_scale``)
uses that σ.

Cost. ``gradient_evaluations``: optimiser steps × Monte-Carlo draws per step for the VI
methods; the MAP's steps; N·O for each GGN or training Jacobian (N·O vector-Jacobian
products, each about one gradient); VIKING's steps × (draws + 1) (a JVP per draw and the
gradient of the mean). ``extra_flops``: :func:`.cost.eigh_flops` (P) per GGN
eigendecomposition, :func:`.cost.svd_flops` (N·O, P) per SVD of the training Jacobian, and for
the symmetrised VI the XLA flops of the gradient of its I term per step.

Float32 throughout (the problems' data are float32).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.evaluation import cost
from bnn_posteriors.inference import ggn_null_space as ns
from bnn_posteriors.inference import laplace as la
from bnn_posteriors.inference import laplace_diffusion as ld
from bnn_posteriors.inference import map_laplace, mean_field, symmetrised, tempering, vi
from bnn_posteriors.inference import viking as vk
from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import permutations
from bnn_posteriors.site.settings_classes import MapLaplaceChoices
from bnn_posteriors.studies.ch10_reference_posteriors.fits import (
    DoesNotApply,
    MethodFit,
    draws_predictive,
)
from bnn_posteriors.studies.ch10_reference_posteriors.problems import Problem
from bnn_posteriors.util import validate

F32 = jnp.float32

# The benchmark's one MAP → Laplace pipeline (:mod:`.map_laplace`), for every method built on the
# MAP: a Glorot start, float32 (the problems' data), start and training one compiled program,
# the full GGN at the MAP's σ and the problem's own prior precision, not tuned. The network's
# bias is the problem's (``spec.bias``) and a method's ``noise_rounds`` its keyword argument;
# the evidence tuning of the labelled "tuned prior" rows is the methods' ``tune_prior``. These
# choices are part of the scoring: a change needs a new ``score.VERSION``, since a part is keyed
# by the method's keyword arguments only.
MAP_LAPLACE = MapLaplaceChoices(
    init_scheme="glorot",
    bias=True,
    dtype="float32",
    weight_decay=0.0,
    noise_rounds=2,
    whole_program=True,  # as the committed parts were computed
    subset="full",
    tune=None,
    tune_from=None,
    ggn_noise_scale=None,
)


# --------------------------------------------------------------------------- helpers


def _check(prob, where: str) -> Problem:
    if not isinstance(prob, Problem):
        raise TypeError(f"{where}: prob must be a problems.Problem, got {type(prob).__name__}")
    if prob.spec.heteroscedastic:
        raise ValueError(
            f"{where}: the heteroscedastic model (σ(x) learned) is not supported; the chapter's "
            "problems are mean regressions or classifiers"
        )
    return prob


def _y(prob: Problem):
    """Training targets as the MAP and Laplace take them: (n, 1) float32 or (n,) int32."""
    if prob.likelihood == "gaussian":
        return jnp.asarray(prob.y_train, F32)[:, None]
    return jnp.asarray(prob.y_train, jnp.int32)


def _apply_fn(spec):
    return functools.partial(
        nets.mlp_apply, activation_name=spec.activation, output_scale=spec.output_scale
    )


def _num_outputs(prob: Problem) -> int:
    """N·O: the rows of the training Jacobian (one gradient-equivalent each)."""
    return int(prob.x_train.shape[0]) * int(prob.spec.widths[-1])


def _map_fit(rng_key, prob: Problem, num_steps: int, learning_rate: float, noise_rounds: int):
    """The MAP (:func:`.map_laplace.fit_map` with :data:`MAP_LAPLACE`: AdamW on L(θ)/n, prior
    precision 1/prior_scale²) and its σ (None for a
    classifier; the problem's own σ where it fixes one, else refitted to the residuals in
    ``noise_rounds`` rounds: the module docstring). Returns ``(params, sigma)``."""
    spec = prob.spec
    fit = map_laplace.fit_map(
        rng_key,
        spec.widths,
        jnp.asarray(prob.x_train, F32),
        _y(prob),
        dataclasses.replace(MAP_LAPLACE, bias=spec.bias, noise_rounds=noise_rounds),
        likelihood=prob.likelihood,
        prior_precision=1.0 / spec.prior_scale**2,
        num_steps=validate.positive_int("map_steps", num_steps, where="MAP"),
        learning_rate=validate.positive("map_learning_rate", learning_rate, where="MAP"),
        activation=spec.activation,
        output_scale=spec.output_scale,
        noise_scale=spec.noise_scale,
    )
    return fit.params, fit.noise_scale


def _weight_predictive(prob: Problem, sites: dict, sigma: float | None = None) -> dict:
    """The reference's predictive at every set of points for parameter draws ``sites`` (the
    model's sample sites, each with a leading (S,) axis); a fixed ``sigma`` fills in the site
    ``log_sigma`` of a regression that samples σ."""
    sites = dict(sites)
    num = int(np.shape(sites["W0"])[0])
    if prob.likelihood == "gaussian" and prob.spec.noise_scale is None and "log_sigma" not in sites:
        if sigma is None:
            raise ValueError("a regression with a sampled σ needs log_sigma draws or a fixed σ")
        sites["log_sigma"] = np.full(num, math.log(sigma), np.float32)
    return draws_predictive(prob, sites)


@functools.partial(jax.jit, static_argnames=("model_fn",))
def _linearised_outputs(model_fn, theta, deltas, x):
    """f(x; θ̂) + J_x Δ_s for each row Δ_s of ``deltas`` (S, P): (S, n, O), one JVP per draw."""

    def f(t):
        return model_fn(t, x)

    return f(theta) + jax.vmap(lambda d: jax.jvp(f, (theta,), (d,))[1])(deltas)


def _function_predictive(prob: Problem, model_fn, theta, deltas, sigma) -> dict:
    """The predictive of the linearised network at parameter perturbations ``deltas`` (S, P),
    at every set of points: joint draws of the Gaussian linearised predictive f."""
    out = {}
    for name, x in prob.points().items():
        f = np.asarray(_linearised_outputs(model_fn, theta, deltas, jnp.asarray(x, F32)))
        if prob.likelihood == "gaussian":
            out[name] = {"f": f[..., 0], "noise_scale": np.full(f.shape[0], sigma, np.float32)}
        else:
            out[name] = {"probs": np.asarray(jax.nn.softmax(f, axis=-1))}
    return out


def _laplace(params, sigma, prob: Problem) -> la.LaplacePosterior:
    """The Laplace at the MAP of :data:`MAP_LAPLACE` (the full GGN, prior precision
    1/prior_scale², not tuned)."""
    return map_laplace.fit_laplace(
        map_laplace.MapFit(params, sigma),
        jnp.asarray(prob.x_train, F32),
        _y(prob),
        MAP_LAPLACE,
        likelihood=prob.likelihood,
        prior_precision=1.0 / prob.spec.prior_scale**2,
        apply_fn=_apply_fn(prob.spec),
    )


def _flag(name: str, value, where: str) -> bool:
    """A yes/no setting: True or False, else TypeError naming it."""
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be true or false, got {value!r}")
    return value


def _num_samples(num_samples, where: str) -> int:
    return validate.positive_int("num_samples", num_samples, where=where)


# --------------------------------------------------------------------------- the MAP


def map_point(
    rng_key,
    prob: Problem,
    *,
    num_steps: int = 2000,
    learning_rate: float = 1e-2,
    noise_rounds: int = 2,
) -> MethodFit:
    """The MAP θ̂ of the problem's model (a point estimate, S = 1).

    :func:`.map_laplace.train_map_from` from a Glorot start (AdamW on L(θ)/n, prior precision
    1/prior_scale²); regression σ the RMS of the training residuals (module docstring), returned
    as ``noise_scale``. The same key gives the same MAP as the Laplace methods and VIKING
    (which start from it). Cost: ``num_steps`` gradients.

    quick: num_steps=2000, learning_rate=1e-2; full: num_steps=10000, learning_rate=5e-3
    ([SAP] App. D.7: AdamW, 10 000 epochs, learning rate 0.005).
    """
    prob = _check(prob, "map_point")
    k_map, _ = jax.random.split(rng_key)  # the key of the MAP of every Laplace method
    params, sigma = _map_fit(k_map, prob, num_steps, learning_rate, noise_rounds)
    sites = jax.tree.map(lambda a: np.asarray(a)[None], nets.sites(params))
    return MethodFit(_weight_predictive(prob, sites, sigma), float(num_steps))


# --------------------------------------------------------------------------- mean-field VI


@functools.partial(
    jax.jit,
    static_argnames=(
        "spec",
        "num_steps",
        "learning_rate",
        "num_particles",
        "init_scale",
        "num_samples",
    ),
)
def _mfvi_draws(
    rng_key,
    x,
    y,
    temperature,
    *,
    spec,
    num_steps,
    learning_rate,
    num_particles,
    init_scale,
    num_samples,
):
    """Draws of the fitted q over the model's sites, (num_samples, ...) each, in one program
    (NumPyro's ``SVI.init`` would otherwise run op by op). η is traced, so the untempered
    (η = 1: the KL times 1.0, the ELBO bit for bit) and tempered fits share one compilation."""
    k_init, k_fit, k_draw = jax.random.split(rng_key, 3)
    init = nets.sites(nets.mlp_init(k_init, spec.widths, scheme="glorot", bias=spec.bias))
    if spec.likelihood == "gaussian" and spec.noise_scale is None:
        init["log_sigma"] = jnp.zeros((), F32)  # the prior's mean, σ = 1
    q, _ = vi.fit_mfvi(
        k_fit,
        spec.model,
        spec.kwargs(x, y),
        num_steps=num_steps,
        learning_rate=learning_rate,
        num_particles=num_particles,
        init_loc=init,
        init_scale=init_scale,
        temperature=temperature,
    )
    return mean_field.sample(k_draw, q, num_samples)


def _mfvi(
    rng_key,
    prob: Problem,
    temperature,
    *,
    num_steps,
    learning_rate,
    num_particles,
    init_scale,
    num_samples,
    where,
) -> MethodFit:
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    num_steps = validate.positive_int("num_steps", num_steps, where=where)
    num_particles = validate.positive_int("num_particles", num_particles, where=where)
    draws = _mfvi_draws(
        rng_key,
        jnp.asarray(prob.x_train),
        jnp.asarray(prob.y_train),
        jnp.asarray(temperature, F32),
        spec=prob.spec,
        num_steps=num_steps,
        learning_rate=validate.positive("learning_rate", learning_rate, where=where),
        num_particles=num_particles,
        init_scale=validate.positive("init_scale", init_scale, where=where),
        num_samples=num_samples,
    )
    return MethodFit(_weight_predictive(prob, draws), float(num_steps * num_particles))


def mfvi(
    rng_key,
    prob: Problem,
    *,
    num_steps: int = 2000,
    learning_rate: float = 1e-2,
    num_particles: int = 4,
    init_scale: float = 0.1,
    num_samples: int = 200,
) -> MethodFit:
    """Mean-field VI: :func:`.vi.fit_mfvi` on ``prob.spec.model`` (every weight, bias and, in
    regression, log σ), ``num_samples`` draws of q through the network.

    Means from a Glorot draw (log σ at 0), sds ``init_scale``; Adam with cosine decay,
    ``num_particles`` draws per step (the cost: ``num_steps`` × ``num_particles`` gradients).
    Untempered: the program of :func:`tempered_mfvi` at η = 1 (the KL times 1.0, the same ELBO
    as ``temperature=None`` bit for bit), so the two share one compilation.

    quick: num_steps=2000, num_particles=4, learning_rate=1e-2; full: num_steps=5000,
    num_particles=8, learning_rate=5e-3 ([SAP] App. D.7: Adam, 5 000 epochs, learning rate
    0.005; 8 draws, :func:`.vi.fit_mfvi`'s default).
    """
    return _mfvi(
        rng_key,
        prob,
        1.0,
        num_steps=num_steps,
        learning_rate=learning_rate,
        num_particles=num_particles,
        init_scale=init_scale,
        num_samples=num_samples,
        where="mfvi",
    )


def balanced_temperature(prob: Problem) -> float:
    """η = p / P: the balanced temperature of [TEMP] (η_N = τ p/N, "p the number of data points
    and N the number of parameters", τ = 1), as chapter 4's MNIST study takes it for a network
    in the standard parametrisation; p training points, P the network's weights and biases."""
    w = prob.spec.widths
    num_params = sum(a * b + b * prob.spec.bias for a, b in zip(w[:-1], w[1:], strict=True))
    return tempering.balanced_temperature(int(prob.x_train.shape[0]), num_params)


def tempered_mfvi(
    rng_key,
    prob: Problem,
    *,
    temperature: float | None = None,
    num_steps: int = 2000,
    learning_rate: float = 1e-2,
    num_particles: int = 4,
    init_scale: float = 0.1,
    num_samples: int = 200,
) -> MethodFit:
    """Tempered mean-field VI ([TEMP]): :func:`mfvi` maximising E_q log p(y | θ) − η KL(q‖p).

    ``temperature`` η; None: :func:`balanced_temperature`, p/P (snelson_gap 148/141 ≈ 1.05,
    energy_gap 512/161 ≈ 3.2, banana 265/162 ≈ 1.6, digits 500/442 ≈ 1.1: these data sets have
    more points than parameters, so the balanced η is at or above 1). The KL of log σ is
    tempered too (η scales the whole guide, :func:`.vi.svi_steps`).

    quick and full: as :func:`mfvi`.
    """
    where = "tempered_mfvi"
    prob = _check(prob, where)
    eta = balanced_temperature(prob) if temperature is None else temperature
    eta = validate.positive("temperature", eta, where=where)
    return _mfvi(
        rng_key,
        prob,
        eta,
        num_steps=num_steps,
        learning_rate=learning_rate,
        num_particles=num_particles,
        init_scale=init_scale,
        num_samples=num_samples,
        where=where,
    )


def symmetrised_vi(
    rng_key,
    prob: Problem,
    *,
    num_steps: int = 2000,
    learning_rate: float = 0.02,
    num_particles: int = 4,
    num_perms: int | None = 64,
    init_scale: float = 0.1,
    num_samples: int = 200,
) -> MethodFit:
    """Symmetrised mean-field VI ([SYM] eq. 8, λ = 1): :func:`.symmetrised.fit_mean_field`,
    maximising ELBO(q) + I(g; ω) over the permutations of the hidden units.

    The permutation group and the log-permanent of :mod:`.symmetrised` act on one hidden layer,
    so a two-hidden-layer problem (snelson_gap, banana) raises ``ValueError``. I exact
    (``num_perms`` None, H ≤ 16) or [SYM]'s Î_K with K = ``num_perms``. Regression samples σ
    (``noise_scale=None``, a generalisation of ``fit_mean_field`` for this chapter). q_G and q
    give the same predictive (a permutation leaves f unchanged), so the draws are of q.
    Cost: ``num_steps`` × ``num_particles`` gradients, plus the XLA flops of the gradient of
    the I term (``num_particles`` draws) per step.

    quick: num_steps=2000, num_particles=4, num_perms=64 (the exact I's log-permanent over
    H = 16 units costs ~20 MFLOP a step, over a minute on one core); full: num_steps=5000,
    num_particles=8, num_perms=None (exact). Chapter 5's settings (its quick and full step counts
    and draws, learning rate 0.02, K = 64 where it estimates I).
    """
    where = "symmetrised_vi"
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    spec = prob.spec
    if len(spec.widths) != 3:
        raise DoesNotApply(
            f"{where}: the symmetrised family of inference/symmetrised.py permutes the units of "
            f"one hidden layer; problem {prob.name} has {len(spec.widths) - 2} hidden layers "
            f"(widths {spec.widths})"
        )
    if not spec.bias or spec.output_scale != 1.0:
        raise ValueError(f"{where}: fit_mean_field fits an MLP with biases and output_scale 1")
    if num_perms is None and spec.widths[1] > permutations.MAX_EXACT_WIDTH:
        raise ValueError(
            f"{where}: exact I needs H ≤ {permutations.MAX_EXACT_WIDTH}, got "
            f"{spec.widths[1]}; pass num_perms (K)"
        )
    k_fit, k_draw = jax.random.split(rng_key)
    q, _ = symmetrised.fit_mean_field(
        k_fit[None],
        prob.x_train,
        prob.y_train,
        jnp.ones(1),
        widths=spec.widths,
        num_steps=num_steps,
        learning_rate=learning_rate,
        num_particles=num_particles,
        num_perms=num_perms,
        prior_scale=spec.prior_scale,
        likelihood=prob.likelihood,
        noise_scale=spec.noise_scale,
        activation=spec.activation,
        init_scale=init_scale,
        by_site=True,
    )
    q = jax.tree.map(lambda a: a[0], q)
    draws = mean_field.sample(k_draw, q, num_samples)
    return MethodFit(
        _weight_predictive(prob, draws),
        float(num_steps * num_particles),
        extra_flops=num_steps * _mi_flops(spec.widths, num_particles, num_perms),
    )


@functools.lru_cache(maxsize=64)
def _mi_flops(widths: tuple, num_particles: int, num_perms: int | None) -> float:
    """XLA's flops of the gradient of [SYM]'s I term (:func:`.symmetrised.mi_term`) in q for a
    one-hidden-layer net of ``widths``: the shapes fix it, so it is counted once per shape."""
    q = mean_field.init(jax.random.PRNGKey(0), widths)
    key = jax.random.PRNGKey(0)
    return cost.xla_flops(
        jax.grad(lambda qq: symmetrised.mi_term(key, qq, num_particles, num_perms)), q
    )


# --------------------------------------------------------------------------- Laplace


def sampled_laplace(
    rng_key,
    prob: Problem,
    *,
    map_steps: int = 2000,
    map_learning_rate: float = 1e-2,
    noise_rounds: int = 2,
    num_samples: int = 200,
) -> MethodFit:
    """The sampled (non-linearised) Laplace: θ_s ~ N(θ̂, (GGN + δI)⁻¹) through the network.

    :func:`.laplace.laplace` (full GGN, the problem's activation) around the MAP of
    :func:`map_point`, δ = 1/prior_scale² (the prior's precision, not tuned); σ the MAP's.
    Cost: the MAP's steps + N·O (the GGN's per-point Jacobians); extra: eigh of the P × P GGN.

    quick: map_steps=2000, map_learning_rate=1e-2; full: map_steps=10000, map_learning_rate=5e-3
    (as :func:`map_point`).
    """
    where = "sampled_laplace"
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    k_map, k_draw = jax.random.split(rng_key)
    params, sigma = _map_fit(k_map, prob, map_steps, map_learning_rate, noise_rounds)
    post = _laplace(params, sigma, prob)
    thetas = post.sample(k_draw, num_samples)
    sites = nets.sites(jax.vmap(post.unravel)(thetas))
    return MethodFit(
        _weight_predictive(prob, sites, sigma),
        float(map_steps + _num_outputs(prob)),
        extra_flops=cost.eigh_flops(post.num_params),
    )


def linearised_laplace(
    rng_key,
    prob: Problem,
    *,
    map_steps: int = 2000,
    map_learning_rate: float = 1e-2,
    noise_rounds: int = 2,
    num_samples: int = 200,
) -> MethodFit:
    """The linearised Laplace (Immer et al. 2021): draws of the Gaussian f(x; θ̂) + J_x(θ − θ̂),
    θ ~ N(θ̂, (GGN + δI)⁻¹), joint over the points and outputs (classification: softmax of
    each draw of the logits).

    The same Laplace fit and cost as :func:`sampled_laplace`. quick and full: as it.
    """
    where = "linearised_laplace"
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    k_map, k_draw = jax.random.split(rng_key)
    params, sigma = _map_fit(k_map, prob, map_steps, map_learning_rate, noise_rounds)
    post = _laplace(params, sigma, prob)
    deltas = post.sample(k_draw, num_samples) - post.mean
    return MethodFit(
        _function_predictive(prob, post.model_fn, post.mean, deltas, sigma),
        float(map_steps + _num_outputs(prob)),
        extra_flops=cost.eigh_flops(post.num_params),
    )


def null_space_laplace(
    rng_key,
    prob: Problem,
    *,
    map_steps: int = 2000,
    map_learning_rate: float = 1e-2,
    noise_rounds: int = 2,
    num_samples: int = 200,
    rtol: float | None = None,
    tune_prior: bool = False,
) -> MethodFit:
    """The projected posterior N(θ̂, α⁻¹ P_ker) of [NS] and its linearised predictive draws.

    As chapter 9 (``studies/ch09_ggn_null_space/study.py``, ``fit`` and ``projected_study``):
    the MAP, its GGN Laplace at the problem's own prior precision α = 1/prior_scale² (the
    posterior every other method approximates; ``tune_prior=True``: α chosen by the Laplace
    evidence, :func:`.laplace.optimise_prior_precision`, as [NS]'s experiments do), the dense
    :func:`.ggn_null_space.kernel_projector` of the training Jacobian J (N·O, P) (singular
    values at most ``rtol``·σ_max count as zero; None: float32 round-off, max(N·O, P)·eps),
    θ_s from :func:`.ggn_null_space.projected_samples` and f = f(x; θ̂) + J_x(θ_s − θ̂).
    Where rank J = P (no kernel) every draw is the MAP.
    Cost: the MAP's steps + N·O (GGN) + N·O (J); extra: eigh of the GGN and the SVD of J.

    quick and full: as :func:`sampled_laplace`.
    """
    where = "null_space_laplace"
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    k_map, k_draw = jax.random.split(rng_key)
    params, sigma = _map_fit(k_map, prob, map_steps, map_learning_rate, noise_rounds)
    post = _laplace(params, sigma, prob)
    if _flag("tune_prior", tune_prior, where):
        post = la.optimise_prior_precision(post)
    jac = ns.training_jacobian(post.model_fn, post.mean, jnp.asarray(prob.x_train, F32))
    projector = ns.kernel_projector(jac, rtol=rtol)
    thetas = ns.projected_samples(k_draw, post.mean, projector, post.prior_precision, num_samples)
    return MethodFit(
        _function_predictive(prob, post.model_fn, post.mean, thetas - post.mean, sigma),
        float(map_steps + 2 * _num_outputs(prob)),
        extra_flops=cost.eigh_flops(post.num_params) + cost.svd_flops(*jac.shape),
    )


def viking(
    rng_key,
    prob: Problem,
    *,
    map_steps: int = 2000,
    map_learning_rate: float = 1e-2,
    noise_rounds: int = 2,
    num_steps: int = 600,
    learning_rate: float = 1e-2,
    num_mc_samples: int = 8,
    num_samples: int = 200,
    rtol: float | None = None,
    tune_prior: bool = False,
) -> MethodFit:
    """VIKING ([VK]): :func:`.viking.fit_viking` from the MAP (chapter 9's warm start,
    ``studies/ch09_ggn_null_space/viking.py``), draws of its linearised predictive.

    q = N(θ̂, σ_ker² P_ker + σ_im² (I − P_ker)), θ̂ and σ_im trained on the linearised ELBO
    (regression σ fixed to the MAP's), α = σ_ker⁻² held at the problem's prior precision
    1/prior_scale² (the posterior every other method approximates); ``tune_prior=True``
    learns α as well, as [VK] does. The draws are f(x; θ̂) + J_x Δ_s with Δ_s the kernel and
    image parts of :func:`.viking.sample_parts` (the Gaussian whose marginals
    :func:`.viking.linearised_predictive` gives). ``rtol`` as :func:`null_space_laplace`.
    Cost: the MAP's steps + ``num_steps`` × (``num_mc_samples`` + 1) + 2·N·O (the Jacobians at
    the start and the end); extra: two SVDs of J.

    quick: num_steps=600, num_mc_samples=8; full: num_steps=3000, num_mc_samples=20 (the
    authors' ``examples/sinusoid.py``: Adam 1e-2, 3 000 steps, 20 draws); the MAP as
    :func:`map_point`.
    """
    where = "viking"
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    k_map, k_rest = jax.random.split(rng_key)  # the MAP of map_point(rng_key)
    k_fit, k_draw = jax.random.split(k_rest)
    post, model_fn, sigma = _viking_fit(
        k_map,
        k_fit,
        prob,
        map_steps=map_steps,
        map_learning_rate=map_learning_rate,
        noise_rounds=noise_rounds,
        num_steps=num_steps,
        learning_rate=learning_rate,
        num_mc_samples=num_mc_samples,
        rtol=rtol,
        tune_prior=_flag("tune_prior", tune_prior, where),
    )
    kernel, image = vk.sample_parts(
        k_draw, post.projector, post.scale_kernel, post.scale_image, num_samples
    )
    no = _num_outputs(prob)
    return MethodFit(
        _function_predictive(prob, model_fn, post.theta, kernel + image, sigma),
        float(map_steps + num_steps * (num_mc_samples + 1) + 2 * no),
        extra_flops=2 * cost.svd_flops(no, int(post.theta.size)),
    )


def laplace_diffusion(
    rng_key,
    prob: Problem,
    *,
    map_steps: int = 2000,
    map_learning_rate: float = 1e-2,
    noise_rounds: int = 2,
    num_steps: int = 10,
    num_samples: int = 200,
    max_rank: int | None = None,
) -> MethodFit:
    """[RI] §5's Laplace diffusion: :func:`.laplace_diffusion.laplace_diffusion` from the MAP
    of :func:`map_point`, its draws through the network itself (not linearised).

    Each of ``num_steps`` Euler steps (size 1/T) adds a Gaussian step with the Laplace
    covariance restricted to the top-k eigenspace of the GGN at the current parameters (rank-k
    Lanczos), α = 1/prior_scale² (the problem's prior, not tuned), k the number of GGN
    eigenvalues at the MAP above α (:func:`.laplace_diffusion.data_rank`, as chapter 9). A
    problem whose k exceeds ``max_rank`` (None: no limit) is left out, as chapter 9's C9.4
    leaves such sets out (:class:`.fits.DoesNotApply`, with the reason): each step's Lanczos
    costs k GGN-vector products and k²·P for the reorthogonalisation.
    Cost: the MAP's steps + N·O (the GGN at the MAP) + S·T·(k + 1) GGN-vector products of
    2 gradients each (a JVP and a VJP over the training set; k Lanczos iterations and the
    start); extra: the eigh of the GGN and Lanczos' full reorthogonalisation, 2·S·T·k²·P.

    quick: num_steps=10; full: num_steps=100 (chapter 9's C9.4; the authors' sine example takes
    1 000); both max_rank=100 (chapter 9's ``diffusion_max_rank``); the MAP as :func:`map_point`.
    """
    where = "laplace_diffusion"
    prob = _check(prob, where)
    num_samples = _num_samples(num_samples, where)
    num_steps = validate.positive_int("num_steps", num_steps, where=where)
    k_map, k_draw = jax.random.split(rng_key)
    params, sigma = _map_fit(k_map, prob, map_steps, map_learning_rate, noise_rounds)
    post = _laplace(params, sigma, prob)
    rank = ld.data_rank(post.eigvals, post.prior_precision)
    if max_rank is not None and rank > validate.positive_int("max_rank", max_rank, where=where):
        raise DoesNotApply(
            f"the diffusion's rank k = {rank} (GGN eigenvalues above α at the MAP) exceeds "
            f"max_rank = {max_rank}: T·S·k Lanczos steps with full reorthogonalisation are "
            "beyond this budget (chapter 9 leaves such sets out of C9.4 alike)"
        )
    thetas = ld.laplace_diffusion(
        k_draw,
        post.model_fn,
        post.mean,
        jnp.asarray(prob.x_train, F32),
        prior_precision=post.prior_precision,
        noise_scale=sigma,
        likelihood=prob.likelihood,
        rank=rank,
        num_steps=num_steps,
        num_samples=num_samples,
    )
    sites = nets.sites(jax.vmap(post.unravel)(thetas))
    products = num_samples * num_steps * (rank + 1)
    return MethodFit(
        _weight_predictive(prob, sites, sigma),
        float(map_steps + _num_outputs(prob) + 2 * products),
        extra_flops=cost.eigh_flops(post.num_params)
        + 2.0 * num_samples * num_steps * rank**2 * post.num_params,
    )


def _viking_fit(
    k_map,
    k_fit,
    prob: Problem,
    *,
    map_steps,
    map_learning_rate,
    noise_rounds,
    num_steps,
    learning_rate,
    num_mc_samples,
    rtol,
    tune_prior=False,
):
    """The MAP (key ``k_map``) and VIKING fitted from it (``k_fit``):
    ``(posterior, model_fn, sigma)``; ``tune_prior`` False holds α at 1/prior_scale²."""
    params, sigma = _map_fit(k_map, prob, map_steps, map_learning_rate, noise_rounds)
    theta, unravel = nets.flatten(params)
    apply_fn = _apply_fn(prob.spec)

    def model_fn(t, x):
        return apply_fn(unravel(t), x)

    post = vk.fit_viking(
        k_fit,
        model_fn,
        theta,
        jnp.asarray(prob.x_train, F32),
        _y(prob),
        likelihood=prob.likelihood,
        noise_scale=1.0 if sigma is None else sigma,
        num_steps=num_steps,
        learning_rate=learning_rate,
        num_mc_samples=num_mc_samples,
        rtol=rtol,
        learn_prior_precision=tune_prior,
        init_log_precision=-2.0 * math.log(prob.spec.prior_scale),
    )
    return post, model_fn, sigma
