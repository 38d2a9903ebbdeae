"""Chapter 10's sample-based methods as adapters to one contract: a deep ensemble, MILE,
one NUTS chain on a gradient budget, and MetricBNN.

Each method is a pure function ``method(rng_key, prob, *, settings) -> MethodFit``
(:class:`~bnn_posteriors.studies.ch10_reference_posteriors.fits.MethodFit`): its predictive at
every set of points of ``prob`` (:meth:`~.problems.Problem.points`) in the reference's format
(:func:`bnn_posteriors.inference.reference.predictive`) with one draw axis S, and its cost in
full-batch gradients of the log joint (a minibatch step on b of n points counts b/n) plus dense
linear algebra in FLOPs. Each function reuses the package's implementation of the method
(:mod:`~bnn_posteriors.inference.ensembles`, :mod:`~bnn_posteriors.inference.mile`,
:mod:`~bnn_posteriors.inference.mcmc`, :mod:`~bnn_posteriors.inference.metricbnn`); every
method works for both likelihoods of the problems (Gaussian with log σ sampled, categorical).

Regression noise: the ensemble trains with σ = 1 (MILE's warm starts, [SAP] App. D.1; the
targets are standardised) and returns each member's residual sd on the whole training set as
its σ; MILE and NUTS sample log σ; MetricBNN takes σ from the MAP of the model's own log joint
(θ and log σ together). The docstrings give each method's budgets as "quick: ..., full: ...";
the full budgets are the papers' defaults and are the keyword defaults.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from bnn_posteriors.evaluation import cost
from bnn_posteriors.inference import ensembles, mcmc, reference
from bnn_posteriors.inference import metricbnn as mbnn
from bnn_posteriors.inference import mile as mile_
from bnn_posteriors.models import nets
from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.studies.ch10_reference_posteriors.fits import MethodFit, draws_predictive
from bnn_posteriors.studies.ch10_reference_posteriors.problems import Problem
from bnn_posteriors.util import validate

# Gradient evaluations per MCLMC step: MILE's integrator is BlackJAX's isokinetic McLachlan
# (mclmc.py), two force evaluations per step (the last one reused by the next step).
MCLMC_GRADIENTS_PER_STEP = 2
# A Hessian-vector product (forward over reverse) counted as two gradients.
HVP_GRADIENTS = 2
# The power iteration of MetricBNN's step size (metricbnn.max_curvature's default).
CURVATURE_ITERATIONS = 200


# ----------------------------------------------------------------------------- helpers


def _check_problem(prob, where: str) -> Problem:
    if not isinstance(prob, Problem):
        raise TypeError(f"{where}: prob must be a problems.Problem, got {type(prob).__name__}")
    return prob


def _check_plain_mlp(prob: Problem, where: str) -> None:
    """The ensembles' and MILE's networks have biases and no output scale, and their
    regression is homoscedastic: a spec beyond that is not what they train or sample."""
    spec = prob.spec
    if not spec.bias or spec.output_scale != 1.0 or spec.heteroscedastic:
        raise ValueError(
            f"{where}: needs an MLP with biases, output_scale 1 and (regression) one output; "
            f"{prob.name} has bias={spec.bias}, output_scale={spec.output_scale}, "
            f"heteroscedastic={spec.heteroscedastic}"
        )


def _validation_split(rng_key, n: int, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Random rows (training, validation) of n, ``fraction`` of them (at least one) held out."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"val_fraction must lie in (0, 1), got {fraction}")
    n_val = max(1, int(round(fraction * n)))
    if n_val >= n:
        raise ValueError(f"val_fraction={fraction} leaves no training rows of {n}")
    order = np.asarray(jax.random.permutation(rng_key, n))
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def _ensemble(rng_key, prob: Problem, *, n_members, val_fraction, batch_size, **train_kw):
    """:func:`ensembles.train_ensemble` on ``prob`` with a validation split of the training
    set. Returns ``(members, log_sigma or None, gradient evaluations, info)``: regression
    members carry log of their residual sd on the whole training set (trained with σ = 1, or
    with the spec's fixed σ)."""
    _check_plain_mlp(prob, "deep_ensemble")
    spec, n = prob.spec, prob.x_train.shape[0]
    k_split, k_train = jax.random.split(rng_key)
    fit, val = _validation_split(k_split, n, val_fraction)
    gaussian = spec.likelihood == "gaussian"
    members, info = ensembles.train_ensemble(
        k_train,
        prob.x_train[fit],
        prob.y_train[fit],
        prob.x_train[val],
        prob.y_train[val],
        widths=spec.widths,
        n_members=n_members,
        batch_size=batch_size,
        activation=spec.activation,
        likelihood=spec.likelihood,
        noise_scale=spec.noise_scale if gaussian else None,
        **train_kw,
    )
    # ensembles._compiled_train: n_fit // batch minibatches of min(batch, n_fit) rows an epoch
    n_fit = len(fit)
    per_epoch = max(n_fit // batch_size, 1) * min(batch_size, n_fit) / n
    gradients = float(np.sum(np.asarray(info["epochs"]))) * per_epoch
    log_sigma = None
    if gaussian:
        if spec.noise_scale is None:
            f = ensembles.predict(members, jnp.asarray(prob.x_train), spec.activation)
            rmse = jnp.sqrt(jnp.mean((f - jnp.asarray(prob.y_train)) ** 2, axis=1))
            log_sigma = jnp.log(rmse)
        else:
            log_sigma = jnp.full((n_members,), np.log(spec.noise_scale), jnp.float32)
    return members, log_sigma, gradients, info


def _member_sites(members, log_sigma) -> dict:
    sites = nets.sites(members)
    if log_sigma is not None:
        sites["log_sigma"] = log_sigma
    return sites


# ----------------------------------------------------------------------------- deep ensemble


def deep_ensemble(
    rng_key,
    prob: Problem,
    *,
    n_members: int = 10,
    learning_rate: float = 0.01,
    weight_decay: float = 0.005,
    max_epochs: int = 200,
    batch_size: int = 64,
    patience: int = 10,
    val_fraction: float = 0.1,
) -> MethodFit:
    """A deep ensemble (Lakshminarayanan et al. 2017) as MILE trains its warm starts ([SAP]
    App. D.1): :func:`~bnn_posteriors.inference.ensembles.train_ensemble`, ``n_members``
    networks of ``prob.spec`` (its widths and activation; Glorot-normal initialisation),
    AdamW(``learning_rate``, ``weight_decay``) on minibatches of ``batch_size``, early
    stopping after ``patience`` epochs without a better validation NLL, at most
    ``max_epochs``. The validation rows are a random ``val_fraction`` of the training set
    (from ``rng_key``); the members train on the rest.

    Likelihood: the categorical NLL for classification; for regression the Gaussian NLL with
    σ = 1 (or the spec's fixed σ), and each member's σ is its residual sd on the whole
    training set. S = ``n_members`` draws. Cost: Σ_members epochs × minibatches × b/n
    gradients (the validation NLL's forward passes are not counted).

    quick: n_members=10, max_epochs=100; full: n_members=10, max_epochs=200 (MILE's
    learning_rate=0.01, weight_decay=0.005, batch_size=64, patience=10).
    """
    prob = _check_problem(prob, "deep_ensemble")
    n_members = validate.positive_int("n_members", n_members, where="deep_ensemble")
    members, log_sigma, gradients, _ = _ensemble(
        rng_key,
        prob,
        n_members=n_members,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        max_epochs=max_epochs,
        batch_size=batch_size,
        patience=patience,
        val_fraction=val_fraction,
    )
    return MethodFit(draws_predictive(prob, _member_sites(members, log_sigma)), gradients)


# ----------------------------------------------------------------------------- MILE


def mile(
    rng_key,
    prob: Problem,
    *,
    num_chains: int = 10,
    tuning_steps: int = 50_000,
    sampling_steps: int = 10_000,
    thinning: int = 10,
    learning_rate: float = 0.01,
    weight_decay: float = 0.005,
    max_epochs: int = 200,
    batch_size: int = 64,
    patience: int = 10,
    val_fraction: float = 0.1,
) -> MethodFit:
    """MILE (Sommer et al. 2025; [SAP] §3.2, App. D.1): a deep ensemble of ``num_chains``
    members (:func:`deep_ensemble`'s training and settings) warm-starts one MCLMC chain each
    (:func:`~bnn_posteriors.inference.mile.run_bde`: ``tuning_steps`` of MILE's three-phase
    tuning, then ``sampling_steps`` full-batch steps, every ``thinning``-th kept).

    The target is the log joint of ``prob.spec``'s own model: :func:`mile.log_density` is
    built from the same :class:`~bnn_posteriors.models.numpyro_models.MLP` (every weight and
    bias N(0, prior_scale²), log σ ~ N(0, 1) for regression, the categorical likelihood for
    classification); a spec it cannot express (no biases, an output scale, a fixed σ) raises
    ``ValueError``. Regression warm starts take log σ from their member's residual sd.

    S = num_chains × sampling_steps // thinning draws (chains pooled). Cost: the ensemble's
    gradients plus num_chains × (tuning_steps + sampling_steps) × 2 (two gradients per step
    of the isokinetic McLachlan integrator).

    quick: num_chains=10, tuning_steps=1000, sampling_steps=500, max_epochs=100 (chapter 7's
    quick MILE); full: num_chains=10, tuning_steps=50 000, sampling_steps=10 000, thinning=10
    ([SAP] App. D.1, D.4).
    """
    prob = _check_problem(prob, "mile")
    spec = prob.spec
    _check_plain_mlp(prob, "mile")
    # the model of mile.log_density
    target = MLP(
        spec.widths,
        spec.likelihood,
        spec.activation,
        prior_scale=spec.prior_scale,
        noise_scale=spec.noise_scale,
    )
    if spec != target:
        raise ValueError(f"mile: MILE samples the MLP {target}, not {prob.name}'s {spec}")
    num_chains = validate.positive_int("num_chains", num_chains, where="mile")
    k_de, k_chains = jax.random.split(rng_key)
    members, log_sigma, de_gradients, _ = _ensemble(
        k_de,
        prob,
        n_members=num_chains,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        max_epochs=max_epochs,
        batch_size=batch_size,
        patience=patience,
        val_fraction=val_fraction,
    )
    fixed = spec.likelihood == "gaussian" and spec.noise_scale is not None
    starts = mile_.warm_start_positions(
        members, None if fixed else log_sigma, likelihood=spec.likelihood, fixed_noise=fixed
    )
    run = mile_.run_bde(
        k_chains,
        prob.x_train,
        prob.y_train,
        starts,
        widths=spec.widths,
        prior_scale=spec.prior_scale,
        activation=spec.activation,
        tuning_steps=tuning_steps,
        sampling_steps=sampling_steps,
        thinning=thinning,
        likelihood=spec.likelihood,
        noise_scale=spec.noise_scale if fixed else None,
    )
    sites = {k: jnp.reshape(v, (-1, *v.shape[2:])) for k, v in run["samples"].items()}
    steps = num_chains * (int(tuning_steps) + int(sampling_steps))
    return MethodFit(draws_predictive(prob, sites), de_gradients + MCLMC_GRADIENTS_PER_STEP * steps)


# ----------------------------------------------------------------------------- one NUTS chain


def nuts_schedule(gradient_budget: float, max_num_doublings: int, min_iterations: int):
    """The tree depth cap d and the iterations K of one NUTS chain that cannot spend more than
    ``gradient_budget`` leapfrog steps: the deepest d ≤ ``max_num_doublings`` at which
    K = ⌊budget / (2^d − 1)⌋ ≥ ``min_iterations`` (a NUTS iteration costs at most 2^d − 1
    leapfrog steps). Returns ``(d, K)``; a budget below ``min_iterations`` raises."""
    d = validate.positive_int("max_num_doublings", max_num_doublings, where="nuts_schedule")
    budget = validate.positive("gradient_budget", gradient_budget, where="nuts_schedule")
    floor = validate.positive_int("min_iterations", min_iterations, 2, where="nuts_schedule")
    if budget < floor:
        raise ValueError(
            f"nuts_schedule: gradient_budget={budget:g} is below min_iterations={floor} "
            "iterations of one leapfrog step each"
        )
    while d > 1 and budget // (2**d - 1) < floor:
        d -= 1
    return d, int(budget // (2**d - 1))


def single_nuts(
    rng_key,
    prob: Problem,
    *,
    gradient_budget: float = 1_200_000,
    max_num_doublings: int = 10,
    min_iterations: int = 300,
    target_acceptance_rate: float = 0.8,
    max_draws: int = 1000,
) -> MethodFit:
    """One NUTS chain (:func:`bnn_posteriors.inference.mcmc.nuts`: BlackJAX NUTS after Stan's
    window adaptation, NumPyro's uniform start) on ``prob.spec``'s model, sized so that it
    cannot spend more than ``gradient_budget`` leapfrog steps (full-batch gradients).

    NUTS cannot stop when a budget is spent: an iteration costs 1 to 2^d − 1 leapfrog steps
    (d the tree depth cap). A pilot run estimates the cost of a draw poorly (on snelson_gap a
    pilot of 10 iterations drew at 2.5 steps a draw where the adapted chain needed 1023, and
    its estimate overspent the budget 360-fold), so the chain is sized for the worst case:
    :func:`nuts_schedule` gives d ≤ ``max_num_doublings`` and K = ⌊budget / (2^d − 1)⌋ ≥
    ``min_iterations`` iterations (a small budget lowers d rather than the adaptation's
    length; Stan's windows need 150 warm-up steps), of which half are warm-up and half draws
    (Stan's 1:1), the draws thinned evenly to at most ``max_draws``. ``gradient_evaluations``
    is what the chain spent, the leapfrog steps of its warm-up and of its draws (stats
    ``warmup_num_steps`` and ``num_steps``): the budget where every tree reaches the cap
    (snelson_gap, energy_gap at full depth), less where the trees are shallower.

    quick: gradient_budget=30 000 (about quick MILE's); full: gradient_budget=1 200 000 (about
    full MILE's: 10 chains × 60 000 MCLMC steps × 2 gradients), max_num_doublings=10 (the
    reference's).
    """
    prob = _check_problem(prob, "single_nuts")
    depth, iterations = nuts_schedule(gradient_budget, max_num_doublings, min_iterations)
    max_draws = validate.positive_int("max_draws", max_draws, where="single_nuts")
    num_warmup = iterations // 2
    num_samples = iterations - num_warmup
    samples, stats = mcmc.nuts(
        rng_key,
        prob.spec.model,
        prob.model_kwargs(),
        num_chains=1,
        num_warmup=num_warmup,
        num_samples=num_samples,
        max_num_doublings=depth,
        target_acceptance_rate=target_acceptance_rate,
        warmup_stats=True,
    )
    spent = float(np.sum(stats["warmup_num_steps"]) + np.sum(stats["num_steps"]))
    keep = np.unique(np.linspace(0, num_samples - 1, min(max_draws, num_samples)).astype(int))
    latent = [k for k in samples if k.startswith(("W", "b")) or k == "log_sigma"]
    sites = {name: samples[name][0, keep] for name in latent}
    return MethodFit(draws_predictive(prob, sites), spent)


# ----------------------------------------------------------------------------- MetricBNN

# [MBNN] App. A: (drift α, walk steps T) of the regression (Snelson) and classification
# (Banana) experiments
MBNN_WALK = {"gaussian": (1e-3, 1000), "categorical": (0.1, 100)}
MBNN_AE_EPOCHS = 1000  # [MBNN] App. A: the autoencoder trains 1000 epochs


def joint_map(
    rng_key,
    prob: Problem,
    *,
    num_steps: int = 2000,
    learning_rate: float = 1e-2,
    init_scale: float = 1.0,
):
    """The MAP of ``prob.spec``'s log joint (θ and, for regression with σ sampled, log σ):
    :func:`bnn_posteriors.inference.mcmc.warm_starts`, full-batch Adam from one start with
    every unconstrained site ~ N(0, ``init_scale``²). The default 1 (the prior's scale) and not
    warm_starts' 0.1: from 0.1 a tanh MLP 1–8–1 on 30 points of sin(2x) stopped in 2 of 3
    seeds at the mode where σ explains all the variance (f ≈ constant, σ = sd of y), from 1 in
    none. Returns ``(params, noise_scale)``: the MLP parameter list and σ at the MAP (the spec's
    fixed σ, or None for classification)."""
    prob = _check_problem(prob, "joint_map")
    spec = prob.spec
    position, _ = mcmc.warm_starts(
        rng_key,
        spec.model,
        prob.model_kwargs(),
        num_chains=1,
        num_steps=num_steps,
        learning_rate=learning_rate,
        init_scale=init_scale,
    )
    params = reference.mlp_params(spec, {k: v[0] for k, v in position.items()})
    if spec.likelihood == "categorical":
        return params, None
    if spec.noise_scale is not None:
        return params, float(spec.noise_scale)
    return params, float(jnp.exp(position["log_sigma"][0]))


def metricbnn(
    rng_key,
    prob: Problem,
    *,
    num_samples: int = 200,
    map_steps: int = 2000,
    map_learning_rate: float = 1e-2,
    num_particles: int = 10,
    num_refine: int = 10,
    num_steps: int | None = None,
    drift: float | None = None,
    refine_learning_rate: float = 1e-3,
    latent_dim: int = 32,
    ae_hidden: tuple[int, ...] = (256, 256),
    ae_updates: int | None = None,
    ae_batch: int = 1024,
    ae_learning_rate: float = 1e-3,
    ae_components: int = 64,
    lam_plus: float = 1.0,
    lam_minus: float = 1.0,
) -> MethodFit:
    """MetricBNN ([MBNN] Alg. 1) as chapter 6 runs it (studies/ch06_metricbnn/experiments.py):
    from the MAP θ*, ``num_particles`` particles walk along the fibre (``num_steps`` drifts of
    size ``drift``, each followed by ``num_refine`` gradient steps of the refinement loss,
    :func:`~bnn_posteriors.inference.metricbnn.refinement_loss`, at the step size
    ``refine_learning_rate`` capped by the curvature, :func:`metricbnn.stable_learning_rate`),
    an autoencoder embeds the walks (:func:`metricbnn.walk_and_embed`) and ``num_samples``
    networks are decoded from the latent posterior (:func:`metricbnn.latent_sample`).

    θ* and σ are the MAP of ``prob.spec``'s own log joint (:func:`joint_map`), so the
    refinement loss is eq. 1 with the prior N(0, prior_scale²) (δ = 1/prior_scale²) and the
    MAP's σ, which is also the returned noise scale (regression). ``num_steps`` and ``drift``
    None: App. A's (α, T) of its likelihood, :data:`MBNN_WALK`; ``ae_updates`` None: 1000
    epochs of ``ae_batch`` over the N·T solutions.

    Cost: the MAP's steps + 2 × 200 gradients of the power iteration (Hessian-vector
    products) + N·T·M refinement gradients; ``extra_flops``: the SVD and the autoencoder's
    training (:func:`bnn_posteriors.evaluation.cost.metricbnn_flops`).

    quick: num_steps=100, drift=0.01 (regression: the paper's distance α·T = 1) or 0.1
    (classification), ae_updates=300, ae_batch=256, num_samples=200; full: the defaults
    (App. A: N=10, M=10, η=1e-3, k=32, hidden (256, 256), batch 1024, 1000 epochs).
    """
    prob = _check_problem(prob, "metricbnn")
    spec = prob.spec
    if spec.heteroscedastic:
        raise ValueError("metricbnn: its refinement loss has one σ; the spec is heteroscedastic")
    likelihood = spec.likelihood
    default_drift, default_steps = MBNN_WALK[likelihood]
    drift = default_drift if drift is None else drift
    num_steps = validate.positive_int(
        "num_steps", default_steps if num_steps is None else num_steps, where="metricbnn"
    )
    num_particles = validate.positive_int("num_particles", num_particles, where="metricbnn")
    ae_batch = validate.positive_int("ae_batch", ae_batch, 2, where="metricbnn")
    if ae_updates is None:
        ae_updates = MBNN_AE_EPOCHS * -(-num_particles * num_steps // ae_batch)
    k_map, k_curv, k_walk, k_sample = jax.random.split(rng_key, 4)
    params, sigma = joint_map(k_map, prob, num_steps=map_steps, learning_rate=map_learning_rate)
    theta_map, unravel = ravel_pytree(params)
    apply_fn = functools.partial(
        nets.mlp_apply, activation_name=spec.activation, output_scale=spec.output_scale
    )
    y = prob.y_train[:, None] if likelihood == "gaussian" else prob.y_train
    loss = mbnn.refinement_loss(
        unravel,
        apply_fn,
        prob.x_train,
        y,
        likelihood=likelihood,
        noise_scale=1.0 if sigma is None else sigma,
        prior_precision=spec.prior_scale**-2,
    )
    eta = mbnn.stable_learning_rate(loss, theta_map, k_curv, refine_learning_rate)
    _, latent, _ = mbnn.walk_and_embed(
        k_walk,
        loss,
        theta_map,
        num_steps=num_steps,
        drift=drift,
        ae_updates=ae_updates,
        learning_rate=eta,
        num_refine=num_refine,
        num_particles=num_particles,
        latent_dim=latent_dim,
        hidden=ae_hidden,
        ae_batch=ae_batch,
        ae_learning_rate=ae_learning_rate,
        lam_plus=lam_plus,
        lam_minus=lam_minus,
        num_components=ae_components,
    )
    thetas = mbnn.latent_sample(latent, k_sample, num_samples)
    sites = nets.sites(jax.vmap(unravel)(thetas))
    if likelihood == "gaussian" and spec.noise_scale is None:
        sites["log_sigma"] = jnp.full((num_samples,), np.log(sigma), jnp.float32)
    gradients = (
        map_steps + HVP_GRADIENTS * CURVATURE_ITERATIONS + num_particles * num_steps * num_refine
    )
    flops = cost.metricbnn_flops(
        loss,
        theta_map,
        apply_fn,
        unravel,
        np.asarray(prob.x_test),
        num_particles=num_particles,
        num_steps=num_steps,
        num_refine=num_refine,
        ae_updates=ae_updates,
        ae_batch=ae_batch,
        latent_dim=latent_dim,
        hidden=ae_hidden,
        num_components=ae_components,
        num_samples=num_samples,
    )
    return MethodFit(
        draws_predictive(prob, sites), float(gradients), flops["svd"] + flops["autoencoder"]
    )
