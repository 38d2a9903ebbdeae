"""Reference posteriors: many long NUTS chains of a Bayesian MLP and their predictive at
chosen points.

A reference run is :func:`bnn_posteriors.inference.mcmc.nuts` (BlackJAX NUTS after Stan's
window adaptation; resumable in cached chunks of draws, with progress) with its chains
sharded over the devices of a chain mesh (:func:`bnn_posteriors.inference.sharding.chain_mesh`:
one device on a CPU, every GPU or forced host device otherwise), thinned to a stored size;
then the predictive of every kept draw at each set of points (:func:`predictive`). Izmailov
et al. (2021, "What are Bayesian neural network posteriors really like?") score
approximations against such HMC predictives; the NeurIPS 2021 BDL competition stored the
class probabilities of its HMC reference at the test inputs
(izmailovpavel/neurips_bdl_starter_kit, ``metrics.py``, ``data/*/probs.csv``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.inference import mams, mcmc
from bnn_posteriors.models import nets
from bnn_posteriors.models.numpyro_models import MLP, heteroscedastic_outputs
from bnn_posteriors.util import validate


def mlp_params(spec: MLP, samples: Mapping) -> list[dict]:
    """The MLP parameter list of :mod:`bnn_posteriors.models.nets` from the sample sites
    ``W{i}`` (and ``b{i}``) of ``spec``'s model, each with any leading axes (chain, draw)."""
    missing = [
        f"{name}{i}"
        for i in range(len(spec.widths) - 1)
        for name in ("W", "b")[: 1 + spec.bias]
        if f"{name}{i}" not in samples
    ]
    if missing:
        raise ValueError(f"samples lack the sites {missing} of the MLP {spec.widths}")
    return [
        {"W": samples[f"W{i}"], **({"b": samples[f"b{i}"]} if spec.bias else {})}
        for i in range(len(spec.widths) - 1)
    ]


def predictive(spec: MLP, samples: Mapping, x) -> dict[str, np.ndarray]:
    """The predictive of every draw of ``samples`` (sites shaped (chain, draw, ...)) at ``x``.

    Gaussian likelihood: ``"f"`` (chain, draw, n), the network's mean output f(x), and
    ``"noise_scale"``, σ of each draw: (chain, draw) (sampled log σ: exp of the site
    ``log_sigma``; fixed σ: that value), or (chain, draw, n) heteroscedastic (σ(x)).
    Categorical: ``"probs"`` (chain, draw, n, C), softmax f(x).
    """
    params = mlp_params(spec, samples)
    lead = np.shape(params[0]["W"])[:-2]
    if len(lead) != 2:
        raise ValueError(f"samples need leading axes (chain, draw), got {lead}")
    x = validate.check_x(x, where="predictive", n_features=spec.widths[0], ndim=(2,))
    x = jnp.asarray(x, dtype=jnp.asarray(params[0]["W"]).dtype)

    def one(p):
        return nets.mlp_apply(p, x, spec.activation, spec.output_scale)

    outputs = np.stack(  # chain by chain: the draws of one chain in one vmapped program
        [
            np.asarray(jax.jit(jax.vmap(one))(jax.tree.map(lambda a, c=c: a[c], params)))
            for c in range(lead[0])
        ]
    )
    if spec.likelihood == "categorical":
        return {"probs": np.asarray(jax.nn.softmax(outputs, axis=-1))}
    if spec.heteroscedastic:
        mean, scale = heteroscedastic_outputs(outputs)
        return {"f": np.asarray(mean), "noise_scale": np.asarray(scale)}
    if spec.noise_scale is None:
        if "log_sigma" not in samples:
            raise ValueError("samples lack the site 'log_sigma' of a model with a sampled σ")
        scale = np.exp(np.asarray(samples["log_sigma"]))
    else:
        scale = np.full(lead, spec.noise_scale, dtype=outputs.dtype)
    return {"f": outputs[..., 0], "noise_scale": scale}


# the samplers of a reference run: NUTS with a diagonal metric (the reference), NUTS with a
# dense metric, and MAMS, the second sampler family; FAMILY: each one's family
SAMPLERS = ("nuts", "nuts_dense", "mams")
FAMILY = {"nuts": "NUTS", "nuts_dense": "NUTS", "mams": "MAMS"}


def divergent_draws(diverging) -> list[list[int]]:
    """Where a run's divergences occur: per chain, the indices of the draws (after the
    adaptation, before thinning) whose trajectory diverged; ``diverging`` (chains, draws)."""
    diverging = np.asarray(diverging, dtype=bool)
    if diverging.ndim != 2:
        raise ValueError(
            f"divergent_draws: diverging must be (chains, draws), got {diverging.shape}"
        )
    return [np.flatnonzero(chain).tolist() for chain in diverging]


def run(
    rng_key,
    spec: MLP,
    x_train,
    y_train,
    points: Mapping[str, np.ndarray],
    *,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    num_kept: int | None = None,
    chunk_size: int | None = None,
    cache: bool | Path = False,
    progress: bool = False,
    devices=None,
    target_acceptance_rate: float = 0.8,
    max_num_doublings: int = 10,
    sampler: str = "nuts",
    integration_steps: float | None = None,
    initial_step_size: float | None = None,
) -> dict:
    """A reference run of the Bayesian MLP ``spec`` on ``(x_train, y_train)``.

    ``sampler``: ``"nuts"`` (:func:`~bnn_posteriors.inference.mcmc.nuts`), ``"nuts_dense"``
    (the same with a dense mass matrix, for posteriors whose correlations hold the diagonal
    metric's trees at the cap) or ``"mams"`` (the
    second sampler family, :func:`~bnn_posteriors.inference.mams.mams`, tuned to
    ``target_acceptance_rate`` at ``integration_steps`` steps per proposal (None: its
    default) from ``initial_step_size`` (None: BlackJAX's); ``max_num_doublings`` does not
    apply to it; one device).
    ``num_chains`` chains (NumPyro's uniform starts on [−2, 2], one key per chain),
    ``num_warmup`` adaptation steps, ``num_samples`` draws each, thinned to ``num_kept``
    per chain (``num_samples`` must be a multiple of it; default all), sharded over
    ``devices`` (default: all devices). ``chunk_size`` and ``cache``: the resumable
    chunks of :func:`~bnn_posteriors.inference.mcmc.nuts` (``chunk_size`` a multiple of the
    thinning). ``points``: named inputs (n_k, d) where the predictive is stored.

    Returns ``{"predictive": {name: predictive(...)}, "stats": {...}}`` with per-chain
    ``step_size``, ``acceptance_rate`` (mean), ``divergences`` (count) and
    ``divergent_draws`` (where: :func:`divergent_draws`), ``mean_num_steps``
    (integration steps per draw) and ``gradient_evaluations`` (the draws' total); MAMS adds
    its trajectory length ``L``.
    """
    from bnn_posteriors.inference import sharding

    validate.positive_int("num_samples", num_samples, where="reference.run")
    num_kept = num_samples if num_kept is None else num_kept
    validate.positive_int("num_kept", num_kept, where="reference.run")
    if num_samples % num_kept:
        raise ValueError(
            f"reference.run: num_samples={num_samples} must be a multiple of num_kept={num_kept}"
        )
    if not points:
        raise ValueError("reference.run: points must name at least one set of inputs")
    if sampler not in SAMPLERS:
        raise ValueError(f"reference.run: sampler must be one of {SAMPLERS}, got {sampler!r}")
    common: dict[str, Any] = dict(
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        thinning=num_samples // num_kept,
        chunk_size=chunk_size,
        cache=cache,
        progress=progress,
        target_acceptance_rate=target_acceptance_rate,
    )
    model_kwargs = spec.kwargs(x_train, y_train)
    for name, value in (
        ("integration_steps", integration_steps),
        ("initial_step_size", initial_step_size),
    ):
        if value is not None and sampler != "mams":
            raise ValueError(f"reference.run: {name} applies to MAMS, not {sampler!r}")
    if sampler == "mams":
        samples, stats = mams.mams(
            rng_key,
            spec.model,
            model_kwargs,
            integration_steps=(
                mams.INTEGRATION_STEPS if integration_steps is None else integration_steps
            ),
            initial_step_size=initial_step_size,
            **common,
        )
    else:
        samples, stats = mcmc.nuts(
            rng_key,
            spec.model,
            model_kwargs,
            mesh=sharding.chain_mesh(devices),
            max_num_doublings=max_num_doublings,
            dense_mass=sampler == "nuts_dense",
            **common,
        )
    steps = np.asarray(stats["num_steps"])
    return {
        "predictive": {name: predictive(spec, samples, x) for name, x in points.items()},
        "stats": {
            "step_size": np.asarray(stats["step_size"]),
            "acceptance_rate": np.asarray(stats["acceptance_rate"]).mean(axis=1),
            "divergences": np.asarray(stats["diverging"]).sum(axis=1),
            "divergent_draws": divergent_draws(stats["diverging"]),
            "mean_num_steps": steps.mean(axis=1),
            "gradient_evaluations": int(steps.sum()),
            **({"L": np.asarray(stats["L"])} if "L" in stats else {}),
        },
    }
