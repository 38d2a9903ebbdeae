"""Build one reference posterior: run the chains of a problem, diagnose them in function
space and store the predictive (``bnn-posteriors reference PROBLEM``).

The stored arrays, for each set of points ``P`` of the problem (``test``, and ``grid`` where
it has one): ``P_x`` the inputs; regression ``P_f`` (chain, kept, n) and ``P_noise_scale``
(chain, kept); classification ``P_probs`` (chain, kept, n, C); and ``test_y`` the labels.
The record holds the settings, the sampler's statistics per chain, the mixing diagnostics of
each set of points (:func:`bnn_posteriors.evaluation.function_space.mixing`) and the wall
time of this invocation (of the part it computed, where it resumed a cached run).
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path
from typing import Any

import jax
import numpy as np

from bnn_posteriors.evaluation import function_space
from bnn_posteriors.inference import reference
from bnn_posteriors.store import reference as store
from bnn_posteriors.studies.ch10_reference_posteriors import problems
from bnn_posteriors.util import validate

SETTINGS = (
    "num_chains",
    "num_warmup",
    "num_samples",
    "num_kept",
    "chunk_size",
    "target_acceptance_rate",
    "max_num_doublings",
)


def problem_key(seed: int, name: str):
    """The run's key: ``PRNGKey(seed)`` folded with the CRC-32 of the problem's name, so every
    problem has its own chains whatever the order they are built in."""
    seed = validate.positive_int("seed", seed, 0, where="problem_key")
    return jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(name.encode()) % 2**31)


def stored_name(name: str, sampler: str = "nuts") -> str:
    """The file stem of a problem's reference by ``sampler``: the problem's name for NUTS (the
    reference every method is scored against), ``<name>__<sampler>`` for another family."""
    if sampler not in reference.SAMPLERS:
        raise ValueError(f"sampler must be one of {reference.SAMPLERS}, got {sampler!r}")
    return name if sampler == "nuts" else f"{name}__{sampler}"


def arrays_of(prob: problems.Problem, result: dict) -> dict[str, np.ndarray]:
    """The arrays stored for ``result`` of :func:`bnn_posteriors.inference.reference.run`:
    the points, the predictive at them (float32) and the test labels."""
    arrays = {"test_y": np.asarray(prob.y_test)}
    for name, x in prob.points().items():
        arrays[f"{name}_x"] = np.asarray(x)
        for key, value in result["predictive"][name].items():
            arrays[f"{name}_{key}"] = np.asarray(value, dtype=np.float32)
    return arrays


def build(
    name: str,
    *,
    seed: int,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    num_kept: int,
    chunk_size: int | None = None,
    target_acceptance_rate: float = 0.8,
    max_num_doublings: int = 10,
    out: Path | str | None = None,
    cache: bool | Path = True,
    profile: str | None = None,
    progress: bool = False,
    devices=None,
    sampler: str = "nuts",
    integration_steps: float | None = None,
    initial_step_size: float | None = None,
) -> dict:
    """Run, diagnose and store the reference of problem ``name`` (:func:`problems.problem`).

    ``sampler``: ``"nuts"``, the reference, ``"nuts_dense"`` (NUTS with a dense metric) or
    ``"mams"``, the second sampler family that validates it, at ``integration_steps`` per
    proposal from ``initial_step_size``
    (:func:`bnn_posteriors.inference.reference.run`; stored as :func:`stored_name`, its chains
    from another key of the same seed).
    ``out``: the folder of ``<name>.npz`` and ``<name>.json`` (None: ``results/reference``).
    Returns the record written (settings, stats, ``mixing`` per set of points, ``wall_s``)
    with ``path``, the JSON file.
    """
    prob = problems.problem(name)
    settings: dict[str, Any] = dict(
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_kept=num_kept,
        chunk_size=chunk_size,
        target_acceptance_rate=float(target_acceptance_rate),
        max_num_doublings=max_num_doublings,
    )
    if sampler != "nuts":  # the NUTS references' settings (and records) stay as they were
        settings["sampler"] = sampler
    if integration_steps is not None:  # MAMS's steps per proposal
        settings["integration_steps"] = float(integration_steps)
    if initial_step_size is not None:  # and the step size its tuning starts from
        settings["initial_step_size"] = float(initial_step_size)
    start = time.perf_counter()
    result = reference.run(
        problem_key(seed, stored_name(name, sampler)),
        prob.spec,
        prob.x_train,
        prob.y_train,
        prob.points(),
        cache=cache,
        progress=progress,
        devices=devices,
        **settings,
    )
    wall = time.perf_counter() - start
    mixing = {
        points: function_space.mixing(predictive)
        for points, predictive in result["predictive"].items()
    }
    record = {
        "problem": name,
        "description": prob.description,
        "seed": seed,
        "settings": settings,
        "model": {
            "widths": prob.spec.widths,
            "likelihood": prob.likelihood,
            "activation": prob.spec.activation,
            "prior_scale": prob.spec.prior_scale,
            "noise_scale": prob.spec.noise_scale,
        },
        "n_train": len(prob.y_train),
        "devices": [str(d) for d in (devices or jax.devices())],
        "stats": result["stats"],
        "mixing": mixing,
        "wall_s": wall,
    }
    path = store.write_reference(
        stored_name(name, sampler), arrays_of(prob, result), record, profile=profile, directory=out
    )
    return {**record, "path": path}
