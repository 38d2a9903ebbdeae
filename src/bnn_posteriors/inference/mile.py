"""MILE: deep-ensemble warm starts + tuned MCLMC, one chain per member ([SAP] §3.2, App. D.1).

MILE (Sommer et al., ICLR 2025) samples a Bayesian MLP for mean regression in two stages:
(1) a deep ensemble (:func:`bnn_posteriors.inference.ensembles.train_ensemble`) gives one
warm start per chain (:func:`warm_start_positions`); (2) each chain runs microcanonical
Langevin Monte Carlo (MCLMC), full batch, after MILE's three-phase tuning of the step
size ε and the momentum decoherence length L (:mod:`bnn_posteriors.inference.mclmc`).
The chains run in one program, vectorised and sharded over all devices
(:mod:`bnn_posteriors.inference.sharding`). The target is the log joint of
:func:`bnn_posteriors.models.numpyro_models.mlp_regression` with log σ sampled
(:func:`log_density`), or,
with ``heteroscedastic=True``, of its two-output model y ~ N(f_0(x), σ(x)²), σ(x) =
clip(exp f_1(x), 1e-6, 1e6): the authors' ``regr`` task of [SAP] Figs. 1, 5, 7, whose
positions have no ``log_sigma`` site; or, with ``likelihood="categorical"``, of the classifier
:func:`bnn_posteriors.models.numpyro_models.mlp_classification` (no ``log_sigma`` site either).

Long runs resume: with ``cache`` each chain's tuning and each chain's sampling is a
unit of :func:`bnn_posteriors.store.cache.cached` under version :data:`CACHE_VERSION`, so an
interrupted run recomputes only the chains that did not finish.

For callers of earlier versions, the MCLMC names (:func:`mclmc_chain`,
:func:`energy_var_schedule` and MILE's tuning constants) and the sharding helpers
(:func:`chain_mesh`, :func:`shard_chains`, :func:`replicate`) are re-exported here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy

from bnn_posteriors.inference import mclmc, mcmc, sharding
from bnn_posteriors.inference.ensembles import check_xy
from bnn_posteriors.inference.mclmc import (  # noqa: F401  (re-exported, see the docstring)
    ENERGY_VAR_END,
    ENERGY_VAR_START,
    INITIAL_STEP_SIZE,
    L_FACTOR,
    MAX_ESS_COORDINATES,
    MIN_INITIAL_L,
    NUM_EFFECTIVE_SAMPLES,
    TRUST_IN_ESTIMATE,
    TUNING_FRACTIONS,
    energy_var_schedule,
    mclmc_chain,
)
from bnn_posteriors.inference.sharding import (  # noqa: F401  (re-exported, see the docstring)
    chain_mesh,
    replicate,
    shard_chains,
)
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.store import cache as unit_cache
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int

# Version of the cached units "mile-tune" and "mile-sample" (bnn_posteriors.store.cache): bump it
# whenever an edit can change their results (mclmc.py's tuning or sampling, sharding.py's
# keys and chunks, the log density of models.mlp_regression, what a unit stores).
CACHE_VERSION = "mile-2"


def log_density(
    position: dict,
    x,
    y,
    *,
    widths,
    prior_scale=1.0,
    activation: str = "relu",
    heteroscedastic: bool = False,
    likelihood: str = "gaussian",
    noise_scale: float | None = None,
):
    """log p(y, θ) of mean regression with log σ sampled ([SAP] §5, App. D.1).

    Every weight and bias ~ N(0, prior_scale²), log σ ~ N(0, 1), y_i ~ N(f_θ(x_i), σ²):
    the log joint of :func:`bnn_posteriors.models.numpyro_models.mlp_regression`
    (``noise_scale=None``); with a ``noise_scale`` σ is that fixed value and the positions
    have no ``log_sigma`` site (a declared noise, as a target posterior may fix it).
    ``position``: dict of sites ``W{i}`` (d_in, d_out), ``b{i}`` (d_out,), ``log_sigma`` ().
    ``heteroscedastic``: the two-output model, y_i ~ N(f_0(x_i), σ(x_i)²) with σ(x) =
    clip(exp f_1(x), 1e-6, 1e6); no ``log_sigma`` site. ``likelihood="categorical"``: the
    classifier y_i ~ Categorical(softmax f_θ(x_i)), ``y`` integer labels; no ``log_sigma`` site.
    """
    spec = models.MLP(
        widths,
        likelihood=likelihood,
        activation=activation,
        prior_scale=prior_scale,
        heteroscedastic=heteroscedastic,
        noise_scale=noise_scale,
    )
    return -potential_energy(spec.model, (), spec.kwargs(x, y), position)


def _has_log_sigma(heteroscedastic: bool, likelihood: str, noise_scale=None) -> bool:
    """Whether the model's positions have the site ``log_sigma`` (mean regression with σ
    sampled only)."""
    return likelihood == "gaussian" and not heteroscedastic and noise_scale is None


def warm_start_positions(
    params: list[dict],
    log_sigma=None,
    heteroscedastic: bool = False,
    likelihood: str = "gaussian",
    fixed_noise: bool = False,
) -> dict:
    """Ensemble parameters (leading member axis) → MCMC positions (leading chain axis).

    Sites ``W{i}``, ``b{i}`` and ``log_sigma`` (members,), as :func:`log_density` and
    :func:`bnn_posteriors.inference.mcmc.nuts` expect. ``log_sigma``: a number or one per
    member (None: 0, i.e. σ = 1, the noise the members were trained with). ``fixed_noise``:
    the model fixes σ (:func:`log_density`'s ``noise_scale``), so there is no ``log_sigma``
    site and ``log_sigma`` must be None.
    ``heteroscedastic``: members with two outputs
    (:func:`~bnn_posteriors.inference.ensembles.train_ensemble` with
    ``heteroscedastic=True``); the positions then have no ``log_sigma`` site, and
    ``log_sigma`` must be None; so for ``likelihood="categorical"`` (classifiers).
    """
    if not isinstance(params, (list, tuple)) or not params:
        raise TypeError("params must be a non-empty list of layer dicts with a member axis")
    if heteroscedastic and log_sigma is not None:
        raise ValueError("heteroscedastic positions have no log_sigma site: log_sigma must be None")
    if likelihood == "categorical" and log_sigma is not None:
        raise ValueError("classifier positions have no log_sigma site: log_sigma must be None")
    if fixed_noise and log_sigma is not None:
        raise ValueError("a fixed noise scale has no log_sigma site: log_sigma must be None")
    n = params[0]["W"].shape[0]
    position = {}
    for i, layer in enumerate(params):
        if layer["W"].ndim != 3 or layer["W"].shape[0] != n:
            raise ValueError("every W needs shape (members, d_in, d_out)")
        position[f"W{i}"] = jnp.asarray(layer["W"])
        if "b" in layer:
            position[f"b{i}"] = jnp.asarray(layer["b"])
    if heteroscedastic:
        models.regression_widths(
            [params[0]["W"].shape[1], *(p["W"].shape[2] for p in params)], True
        )
    elif likelihood == "categorical":
        models.classification_widths([params[0]["W"].shape[1], *(p["W"].shape[2] for p in params)])
    elif not fixed_noise:
        log_sigma = 0.0 if log_sigma is None else log_sigma
        position["log_sigma"] = jnp.broadcast_to(jnp.asarray(log_sigma, jnp.float32), (n,))
    return position


def params_of(position: dict) -> list[dict]:
    """Positions (any leading axes) → the parameter list of :mod:`bnn_posteriors.models.nets`."""
    n_layers = sum(1 for k in position if k.startswith("W"))
    if n_layers == 0:
        raise ValueError("position has no W{i} sites")
    return [
        {"W": position[f"W{i}"], **({"b": position[f"b{i}"]} if f"b{i}" in position else {})}
        for i in range(n_layers)
    ]


def predict(samples: dict, x, activation: str = "relu"):
    """Predictive means and scales of every sample.

    ``samples``: positions with leading axes (...) (e.g. chains, samples); ``x`` (n, d).
    Mean regression (a ``log_sigma`` site): ``(mean (..., n), sigma (...))``, one noise σ
    per sample. Heteroscedastic (no ``log_sigma`` site, two outputs): ``(mean (..., n),
    scale (..., n))``, σ(x_i) = clip(exp f_1(x_i), 1e-6, 1e6) per sample and point.
    """
    params = params_of(samples)
    if "log_sigma" in samples:
        lead = samples["log_sigma"].shape
        flat = jax.tree.map(lambda a: a.reshape(-1, *a.shape[len(lead) :]), params)
        mean = jax.lax.map(lambda p: nets.mlp_apply(p, x, activation)[:, 0], flat, batch_size=256)
        return mean.reshape(*lead, -1), jnp.exp(samples["log_sigma"])
    if params[-1]["W"].shape[-1] != 2:
        raise ValueError(
            "samples without a log_sigma site must be of the heteroscedastic model "
            f"(two outputs), got {params[-1]['W'].shape[-1]} output(s)"
        )
    lead = samples["W0"].shape[:-2]
    flat = jax.tree.map(lambda a: a.reshape(-1, *a.shape[len(lead) :]), params)
    out = jax.lax.map(lambda p: nets.mlp_apply(p, x, activation), flat, batch_size=256)
    mean, scale = models.heteroscedastic_outputs(out.reshape(*lead, *out.shape[1:]))
    return mean, scale


@functools.lru_cache(maxsize=64)
def _unravel(
    widths: tuple, heteroscedastic: bool = False, likelihood: str = "gaussian", noise_scale=None
):
    """Flat vector → sites of the MLP with ``widths`` (the order of ``ravel_pytree``)."""
    return ravel_pytree(_site_shapes(widths, heteroscedastic, likelihood, noise_scale))[1]


def _flat_logdensity(
    x,
    y,
    prior_scale,
    widths,
    activation,
    heteroscedastic=False,
    likelihood="gaussian",
    noise_scale=None,
):
    unravel = _unravel(widths, heteroscedastic, likelihood, noise_scale)

    def logdensity(z):
        return log_density(
            unravel(z),
            x,
            y,
            widths=widths,
            prior_scale=prior_scale,
            activation=activation,
            heteroscedastic=heteroscedastic,
            likelihood=likelihood,
            noise_scale=noise_scale,
        )

    return logdensity


def _per_chain(name, parts, compute, directory):
    """Per-chain units in ``directory`` (None: no cache): compute (in one batch) only the
    chains not cached yet."""
    if directory is None:
        return compute(list(range(len(parts))))
    version = CACHE_VERSION
    missing = [
        i
        for i, p in enumerate(parts)
        if not unit_cache.is_cached(name, p, directory, version=version)
    ]
    fresh = dict(zip(missing, compute(missing), strict=True)) if missing else {}

    def from_store(i):
        if i in fresh:
            return unit_cache.cached(name, parts[i], lambda: fresh[i], directory, version=version)
        recompute = lambda: _recompute_error(name)  # noqa: E731
        return unit_cache.cached(name, parts[i], recompute, directory, version=version)

    return [from_store(i) for i in range(len(parts))]


def _recompute_error(name):
    raise RuntimeError(f"unit {name!r} vanished from the cache during the run")


def run_bde(
    rng_key,
    x_train,
    y_train,
    warm_starts: dict,
    *,
    widths: Sequence[int],
    prior_scale=1.0,
    activation: str = "relu",
    tuning_steps: int = 50_000,
    sampling_steps: int = 10_000,
    thinning: int = 10,
    devices=None,
    chunks: int = 20,
    progress: bool = False,
    cache: bool | Path = False,
    heteroscedastic: bool = False,
    likelihood: str = "gaussian",
    noise_scale: float | None = None,
):
    """Bayesian deep ensemble by MILE: one tuned MCLMC chain per warm start ([SAP] App. D.1).

    ``warm_starts``: positions with a leading chain axis (see :func:`warm_start_positions`).
    ``widths`` = (d_in, hidden..., 1). ``prior_scale``: one scale s of the N(0, s²) prior
    shared by all chains, or an array of one scale per chain (chains,), so that a study of
    prior scales runs as one vectorised program. Tuning: ``tuning_steps`` split 80/10/10 % into
    the three phases of :mod:`bnn_posteriors.inference.mclmc`; then ``sampling_steps`` MCLMC
    steps of which every ``thinning``-th is kept. Full batch. Chains are sharded over ``devices``
    (default: all); ``chunks`` splits the tuning loop for the progress bar (``progress``,
    to stderr). ``cache``: False (no cache), True (the default cache directory) or a
    directory (:func:`bnn_posteriors.store.cache.cache_location`): each chain's tuning and
    sampling is then a resumable unit (version :data:`CACHE_VERSION`). ``heteroscedastic``:
    the two-output model of :func:`log_density` (``widths`` = (d_in, hidden..., 2)); warm
    starts and samples then have no ``log_sigma`` site; so with ``likelihood="categorical"``
    (the classifier of :func:`log_density`, ``widths`` = (d_in, hidden..., classes), ``y_train``
    integer labels). ``noise_scale``: a fixed σ of the mean regression (the positions then have
    no ``log_sigma`` site; None: log σ sampled, [SAP]'s model).

    Returns a dict: ``samples`` (sites ``W{i}``, ``b{i}``, ``log_sigma`` with shape
    (chains, sampling_steps // thinning, ...)), ``logdensity`` (chains, samples),
    ``L``, ``step_size``, ``tuning_divergences`` (chains,), ``energy_var`` (chains,
    samples): Var[ΔE]/d over each thinning window.
    """
    widths = nets.check_widths(widths)
    directory = unit_cache.cache_location(cache)
    validate.check_likelihood(likelihood, where="run_bde")
    categorical = likelihood == "categorical"
    if categorical:
        models.MLP(widths, likelihood=likelihood, heteroscedastic=heteroscedastic)  # checked
    if heteroscedastic:
        models.regression_widths(widths, True)
    x, y = check_xy(x_train, y_train, "run_bde", widths[0], likelihood if categorical else None)
    if noise_scale is not None:
        if categorical or heteroscedastic:
            raise ValueError("run_bde: a fixed noise_scale is for the mean regression only")
        noise_scale = float(positive("noise_scale", noise_scale, where="run_bde"))
    scales = np.asarray(prior_scale, dtype=np.float64)
    if scales.ndim > 1:
        raise ValueError(f"prior_scale must be a number or one per chain, got shape {scales.shape}")
    for s in scales.ravel():
        positive("prior_scale", s, where="run_bde")
    nets.activation(activation)
    thinning = positive_int("thinning", thinning)
    sampling_steps = positive_int("sampling_steps", sampling_steps, thinning)
    n_kept = sampling_steps // thinning
    # a site that gives the chain count
    chain_site = "log_sigma" if _has_log_sigma(heteroscedastic, likelihood, noise_scale) else "W0"
    if not isinstance(warm_starts, dict) or chain_site not in warm_starts:
        raise TypeError("warm_starts must be a dict of sites with a leading chain axis")
    n_chains = warm_starts[chain_site].shape[0]
    if scales.ndim == 1 and scales.shape[0] != n_chains:
        raise ValueError(f"prior_scale has {scales.shape[0]} entries for {n_chains} chains")
    template = jax.tree.map(lambda a: a[0], warm_starts)
    sites = _site_shapes(widths, heteroscedastic, likelihood, noise_scale)
    shapes = {k: v.shape for k, v in sites.items()}
    if {k: jnp.shape(v) for k, v in template.items()} != shapes:
        raise ValueError(f"warm_starts do not match widths {widths}: expected sites {shapes}")
    unravel = _unravel(widths, heteroscedastic, likelihood, noise_scale)
    z0 = jax.vmap(lambda p: ravel_pytree(p)[0])(warm_starts)
    if not bool(jnp.all(jnp.isfinite(z0))):
        raise ValueError("warm_starts must be finite")
    spec: tuple = (widths, activation, True) if heteroscedastic else (widths, activation)
    if categorical:
        spec = (widths, activation, False, likelihood)
    if noise_scale is not None:
        spec = (widths, activation, False, likelihood, noise_scale)
    mesh = sharding.chain_mesh(devices)
    xr, yr = sharding.replicate((x, y), mesh)
    per_chain = scales.ndim == 1
    scale_all = jnp.asarray(scales, jnp.float32)
    keys = jax.random.split(rng_key, n_chains)
    config = {
        "x": np.asarray(x),
        "y": np.asarray(y),
        "widths": list(widths),
        "activation": activation,
        "tuning_steps": int(tuning_steps),
    }
    if heteroscedastic:  # only then: the keys of cached mean-regression units stay valid
        config["heteroscedastic"] = True
    if categorical:  # likewise
        config["likelihood"] = likelihood
    if noise_scale is not None:  # likewise
        config["noise_scale"] = noise_scale
    if directory is None and not progress:
        keys_s, _ = sharding.shard_chains(keys, mesh)
        z_s, _ = sharding.shard_chains(z0, mesh)
        scale, _ = sharding.scale_for(scale_all, np.arange(n_chains), mesh)
        run = sharding.whole_program(
            _flat_logdensity, spec, int(tuning_steps), n_kept, thinning, per_chain
        )
        (z, logdensity, energy_var), L, eps, div = run(keys_s, z_s, xr, yr, scale)
        return {
            "samples": jax.vmap(jax.vmap(unravel))(z[:n_chains]),
            "logdensity": np.asarray(logdensity[:n_chains]),
            "energy_var": np.asarray(energy_var[:n_chains]),
            "L": np.asarray(L[:n_chains], dtype=np.float64),
            "step_size": np.asarray(eps[:n_chains], dtype=np.float64),
            "tuning_divergences": np.asarray(div[:n_chains]),
        }
    tune_parts = [
        {
            **config,
            "prior_scale": float(scales[i] if per_chain else scales),
            "key": unit_cache.key_data(keys[i]),
            "start": np.asarray(z0[i]),
        }
        for i in range(n_chains)
    ]

    def compute_tuning(idx):
        return sharding.tune_chains(
            _flat_logdensity,
            spec,
            keys[jnp.asarray(idx)],
            z0[jnp.asarray(idx)],
            xr,
            yr,
            sharding.scale_for(scale_all, idx, mesh),
            tuning_steps,
            mesh,
            chunks,
            progress,
        )

    tuned = _per_chain("mile-tune", tune_parts, compute_tuning, directory)
    sample_keys = jax.vmap(mclmc.chain_keys)(keys)[3]  # as mclmc.run_chain
    sample_parts = [
        {**p, "sampling_steps": sampling_steps, "thinning": thinning} for p in tune_parts
    ]

    def compute_sampling(idx):
        return sharding.sample_chains(
            _flat_logdensity,
            spec,
            sample_keys[jnp.asarray(idx)],
            [tuned[i] for i in idx],
            xr,
            yr,
            sharding.scale_for(scale_all, idx, mesh),
            n_kept,
            thinning,
            mesh,
            progress,
        )

    drawn = _per_chain("mile-sample", sample_parts, compute_sampling, directory)
    z = jnp.stack([jnp.asarray(d["z"]) for d in drawn])
    samples = jax.vmap(jax.vmap(unravel))(z)
    return {
        "samples": samples,
        "logdensity": np.stack([d["logdensity"] for d in drawn]),
        "energy_var": np.stack([d["energy_var"] for d in drawn]),
        "L": np.array([float(t["L"]) for t in tuned]),
        "step_size": np.array([float(t["step_size"]) for t in tuned]),
        "tuning_divergences": np.array([int(t["tuning_divergences"]) for t in tuned]),
    }


def _site_shapes(
    widths, heteroscedastic: bool = False, likelihood: str = "gaussian", noise_scale=None
) -> dict:
    shapes = {}
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        shapes[f"W{i}"] = jnp.zeros((a, b))
        shapes[f"b{i}"] = jnp.zeros((b,))
    if _has_log_sigma(heteroscedastic, likelihood, noise_scale):
        shapes["log_sigma"] = jnp.zeros(())
    return shapes


def run_nuts_bde(
    rng_key,
    x_train,
    y_train,
    warm_starts: dict,
    *,
    widths: Sequence[int],
    prior_scale: float = 1.0,
    activation: str = "relu",
    num_warmup: int = 1000,
    num_samples: int = 1000,
    target_acceptance_rate: float = 0.8,
    max_num_doublings: int = 10,
    heteroscedastic: bool = False,
):
    """BDE with NUTS instead of MCLMC: same warm starts, BlackJAX window adaptation + NUTS.

    Uses :func:`bnn_posteriors.inference.mcmc.nuts` on the same model as :func:`run_bde`
    (``heteroscedastic``: its two-output model, no ``log_sigma`` site).
    Returns ``(samples, stats)`` with samples shaped (chains, num_samples, ...) (sites and
    the deterministic ``mean``, heteroscedastic also ``scale``, on the training inputs).
    """
    widths = nets.check_widths(widths)
    x, y = check_xy(x_train, y_train, "nuts_bde", widths[0])
    n_chains = warm_starts["W0" if heteroscedastic else "log_sigma"].shape[0]
    spec = models.MLP(
        widths,
        activation=activation,
        prior_scale=float(prior_scale),
        heteroscedastic=heteroscedastic,
    )
    return mcmc.nuts(
        rng_key,
        spec.model,
        spec.kwargs(x, y),
        num_chains=n_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        init_positions=warm_starts,
        target_acceptance_rate=target_acceptance_rate,
        max_num_doublings=max_num_doublings,
    )
