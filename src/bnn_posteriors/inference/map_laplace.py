"""One builder of the MAP and of the Laplace approximation at it, for every chapter.

Chapters 6, 9 and 10 start approximations from a MAP of an MLP and fit a GGN Laplace there
(sampled, linearised, projected on the GGN's null space, VIKING's warm start, MetricBNN's walk).
The choices in which they differ are the arguments of two functions, set in each chapter's
settings, instead of lines in four function bodies:

- :func:`train_map_from`: the start (``init_scheme``, ``dtype``, ``bias``), the prior
  precision δ, AdamW's budget and ``weight_decay``, and the noise treatment of a regression:
  a fixed σ (``noise_scale``), or σ refitted to the training residuals' RMS over
  ``noise_rounds`` rounds (coordinate ascent of the joint MAP over θ and σ with a flat prior
  on σ, from σ₀ the targets' sd). Returns a :class:`MapFit`: the parameters and the σ the MAP
  was trained with, which every method built on it reads.
- :func:`laplace_at`: :func:`.laplace.laplace` at a :class:`MapFit` with its σ, the GGN
  ``subset`` (full or last layer) and the evidence ``tune`` (none, the prior precision, or
  the prior precision and σ together).

A chapter declares its paper's choices once, as a
:class:`~bnn_posteriors.site.settings_classes.MapLaplaceChoices` in its settings file (the table
``[common.map_laplace]``), and builds every MAP and Laplace approximation with :func:`fit_map`
and :func:`fit_laplace`, which pass them on; what is left to the call is the problem (data,
network, likelihood, prior, σ) and the budget.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from bnn_posteriors.inference import laplace, map_estimate
from bnn_posteriors.models import nets
from bnn_posteriors.site.settings_classes import MapLaplaceChoices
from bnn_posteriors.util import validate

TUNINGS = (None, "prior", "noise")  # laplace_at's evidence tuning
DTYPES = (None, "float32", "float64")  # None: nets.mlp_init's own


@dataclass(frozen=True)
class MapFit:
    """A MAP: its ``params`` (the layers of :func:`.nets.mlp_init`), the ``noise_scale`` σ it
    was trained with (None for a classifier) and its loss ``trace``."""

    params: Any
    noise_scale: float | None
    trace: Any = None


_STATIC = (
    "likelihood",
    "prior_precision",
    "activation",
    "output_scale",
    "num_steps",
    "learning_rate",
    "noise_scale",
    "noise_rounds",
    "weight_decay",
)
_START = ("widths", "init_scheme", "bias", "dtype")


def _start(rng_key, widths, init_scheme, bias, dtype):
    params = nets.mlp_init(rng_key, widths, scheme=init_scheme, bias=bias)
    if dtype is None:  # mlp_init's own: float64 where JAX runs in 64 bits
        return params
    return jax.tree.map(lambda a: jnp.asarray(a, dtype), params)


def _rounds(
    params,
    x,
    y,
    *,
    likelihood,
    prior_precision,
    activation,
    output_scale,
    num_steps,
    learning_rate,
    noise_scale,
    noise_rounds,
    weight_decay,
):
    """The MAP's parameters, σ and loss trace from the start ``params`` (see
    :func:`train_map_from`); σ is 1 for a classifier."""
    apply_fn = functools.partial(
        nets.mlp_apply, activation_name=activation, output_scale=output_scale
    )
    common = dict(
        likelihood=likelihood,
        prior_precision=prior_precision,
        apply_fn=apply_fn,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
    )
    if likelihood == "categorical" or noise_scale is not None:
        sigma = 1.0 if noise_scale is None else noise_scale
        params, trace = map_estimate.train_map(
            params, x, y, noise_scale=sigma, num_steps=num_steps, **common
        )
        return params, jnp.asarray(sigma, x.dtype), trace
    sigma = jnp.std(y)
    sigma = jnp.where(sigma > 0, sigma, 1.0)
    steps = [num_steps // noise_rounds] * noise_rounds
    steps[-1] += num_steps - sum(steps)
    traces = []
    for n in steps:
        params, trace = map_estimate.train_map(
            params, x, y, noise_scale=sigma, num_steps=n, **common
        )
        traces.append(trace)
        residual = y - apply_fn(params, x)
        sigma = jnp.maximum(jnp.sqrt(jnp.mean(residual**2)), 1e-6)
    return params, sigma, jnp.concatenate(traces)


def _whole(rng_key, x, y, *, widths, init_scheme, bias, dtype, **settings):
    return _rounds(_start(rng_key, widths, init_scheme, bias, dtype), x, y, **settings)


_rounds_program = jax.jit(_rounds, static_argnames=_STATIC)
_whole_program = jax.jit(_whole, static_argnames=_STATIC + _START)


def train_map_from(
    rng_key,
    widths: Sequence[int],
    x,
    y,
    *,
    likelihood: str,
    prior_precision: float,
    num_steps: int,
    learning_rate: float,
    activation: str = "tanh",
    output_scale: float = 1.0,
    init_scheme: str = "glorot",
    bias: bool = True,
    dtype=None,
    noise_scale: float | None = None,
    noise_rounds: int = 1,
    weight_decay: float = 0.0,
    whole_program: bool = False,
) -> MapFit:
    """The MAP of the MLP ``widths`` (``activation``, ``output_scale``) under a N(0, I/δ) prior,
    δ = ``prior_precision``: :func:`.map_estimate.train_map` (full-batch AdamW on L(θ)/n,
    ``weight_decay`` decoupled on top of the prior's) from :func:`.nets.mlp_init`'s
    ``init_scheme`` with ``rng_key``, in ``dtype`` (None: :func:`.nets.mlp_init`'s).

    ``y``: (n, 1) targets of a regression or (n,) integer labels (``likelihood``
    ``"gaussian"`` or ``"categorical"``). A regression's σ: ``noise_scale`` if given, else σ
    refitted to the RMS of the training residuals after each of ``noise_rounds`` rounds that
    split ``num_steps`` (σ₀ the targets' sd). Returns a :class:`MapFit` whose
    ``noise_scale`` is that σ (None for a classifier).

    ``whole_program``: the start and every round are one compiled program (the start is
    otherwise drawn outside it). The two give MAPs equal up to round-off, which training
    amplifies; each chapter keeps the one its committed results were computed with.
    """
    where = "train_map_from"
    validate.check_likelihood(likelihood)
    num_steps = validate.positive_int("num_steps", num_steps, where=where)
    noise_rounds = validate.positive_int("noise_rounds", noise_rounds, where=where)
    if num_steps < noise_rounds:
        raise ValueError(
            f"{where}: the number of steps ({num_steps}) must be at least "
            f"noise_rounds ({noise_rounds})"
        )
    if noise_scale is not None:
        noise_scale = validate.positive("noise_scale", noise_scale, where=where)
    settings = dict(
        likelihood=likelihood,
        prior_precision=validate.positive("prior_precision", prior_precision, where=where),
        activation=activation,
        output_scale=float(output_scale),
        num_steps=num_steps,
        learning_rate=validate.positive("learning_rate", learning_rate, where=where),
        noise_scale=noise_scale,
        noise_rounds=noise_rounds,
        weight_decay=float(weight_decay),
    )
    start = dict(
        widths=tuple(int(w) for w in widths), init_scheme=init_scheme, bias=bool(bias), dtype=dtype
    )
    if whole_program:
        start["dtype"] = None if dtype is None else jnp.dtype(dtype)
        params, sigma, trace = _whole_program(rng_key, x, y, **start, **settings)
    else:
        params, sigma, trace = _rounds_program(_start(rng_key, **start), x, y, **settings)
    if likelihood == "categorical":
        return MapFit(params, None, trace)
    return MapFit(params, float(sigma) if noise_scale is None else noise_scale, trace)


def laplace_at(
    fit: MapFit,
    x,
    y,
    *,
    likelihood: str,
    prior_precision: float,
    apply_fn=None,
    activation: str = "relu",
    subset: str = "full",
    features_fn=None,
    tune: str | None = None,
    noise_scale: float | None = None,
) -> laplace.LaplacePosterior:
    """:func:`.laplace.laplace` at the MAP ``fit`` with its σ (1 for a classifier), prior
    precision δ = ``prior_precision``, the GGN ``subset`` (``features_fn`` for the last
    layer's) and the network ``apply_fn`` (default: the MLP with ``activation``).

    ``tune``: None keeps δ; ``"prior"`` chooses δ by the Laplace evidence
    (:func:`.laplace.optimise_prior_precision`); ``"noise"`` chooses δ and σ together
    (:func:`.laplace.optimise_noise_scale`, a regression's). ``noise_scale``: the GGN's σ
    where it is not the MAP's (the authors' evaluation of [SAP] Table 2 fits the GGN with
    another σ than the MAP's).
    """
    if tune not in TUNINGS:
        raise ValueError(f"laplace_at: tune must be one of {TUNINGS}, got {tune!r}")
    if tune == "noise" and likelihood != "gaussian":
        raise ValueError(
            f"laplace_at: tune='noise' needs the Gaussian likelihood, got {likelihood!r}"
        )
    if noise_scale is not None:
        sigma = noise_scale
    else:
        sigma = 1.0 if fit.noise_scale is None else fit.noise_scale
    post = laplace.laplace(
        fit.params,
        x,
        y,
        likelihood=likelihood,
        noise_scale=sigma,
        prior_precision=prior_precision,
        subset=subset,
        activation=activation,
        apply_fn=apply_fn,
        features_fn=features_fn,
    )
    if tune == "prior":
        return laplace.optimise_prior_precision(post)
    if tune == "noise":
        return laplace.optimise_noise_scale(post, num_targets=int(jnp.size(y)))
    return post


def _check_choices(choices, where: str) -> None:
    """Raise, naming the setting, unless ``choices`` is a MapLaplaceChoices of known values."""
    if not isinstance(choices, MapLaplaceChoices):
        raise TypeError(f"{where}: choices must be a MapLaplaceChoices, got {choices!r}")
    for name, allowed in (
        ("init_scheme", nets.INIT_SCHEMES),
        ("dtype", DTYPES),
        ("subset", laplace.SUBSETS),
        ("tune", TUNINGS),
    ):
        if getattr(choices, name) not in allowed:
            raise ValueError(
                f"{where}: map_laplace.{name} must be one of {allowed}, "
                f"got {getattr(choices, name)!r}"
            )
    for name in ("tune_from", "ggn_noise_scale"):
        if getattr(choices, name) is not None:
            validate.positive(name, getattr(choices, name), where=where)


def fit_map(
    rng_key,
    widths: Sequence[int],
    x,
    y,
    choices: MapLaplaceChoices,
    *,
    likelihood: str,
    prior_precision: float,
    num_steps: int,
    learning_rate: float,
    activation: str,
    output_scale: float = 1.0,
    noise_scale: float | None = None,
) -> MapFit:
    """:func:`train_map_from` with the MAP's part of ``choices``
    (:class:`~bnn_posteriors.site.settings_classes.MapLaplaceChoices`): the MLP
    ``widths`` (``activation``, ``output_scale``) on x, y under the N(0, I/δ) prior,
    δ = ``prior_precision``, ``num_steps`` of AdamW at ``learning_rate``; a regression's σ
    ``noise_scale``, or refitted (None)."""
    _check_choices(choices, "fit_map")
    return train_map_from(
        rng_key,
        widths,
        x,
        y,
        likelihood=likelihood,
        prior_precision=prior_precision,
        num_steps=num_steps,
        learning_rate=learning_rate,
        activation=activation,
        output_scale=output_scale,
        init_scheme=choices.init_scheme,
        bias=choices.bias,
        dtype=None if choices.dtype is None else jnp.dtype(choices.dtype),
        noise_scale=noise_scale,
        noise_rounds=choices.noise_rounds,
        weight_decay=choices.weight_decay,
        whole_program=choices.whole_program,
    )


def fit_laplace(
    fit: MapFit,
    x,
    y,
    choices: MapLaplaceChoices,
    *,
    likelihood: str,
    prior_precision: float,
    activation: str = "relu",
    apply_fn=None,
    features_fn=None,
) -> laplace.LaplacePosterior:
    """:func:`laplace_at` at the MAP ``fit`` with the Laplace part of ``choices``
    (:class:`~bnn_posteriors.site.settings_classes.MapLaplaceChoices`): the GGN ``subset``, its
    σ, and the evidence ``tune``, the GGN built at ``choices.tune_from`` (else at the MAP's
    ``prior_precision``)."""
    _check_choices(choices, "fit_laplace")
    start = prior_precision if choices.tune_from is None else choices.tune_from
    return laplace_at(
        fit,
        x,
        y,
        likelihood=likelihood,
        prior_precision=start,
        apply_fn=apply_fn,
        activation=activation,
        subset=choices.subset,
        features_fn=features_fn,
        tune=choices.tune,
        noise_scale=choices.ggn_noise_scale,
    )
