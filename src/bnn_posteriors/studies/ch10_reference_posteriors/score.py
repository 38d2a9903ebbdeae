"""Score every approximation of the book against the reference posteriors (chapter 10).

For each problem (:mod:`.problems`), method (:data:`METHODS`) and seed, the method is fitted
(:mod:`.approximations`, :mod:`.samplers`: a :class:`.fits.MethodFit`) and its predictive at
the test inputs is compared with the committed reference (:func:`reference_predictive`):
fidelity (:func:`bnn_posteriors.evaluation.fidelity.fidelity`: agreement and total
variation for classification, W2 and KS for regression), the test scores against the labels
(LPPD, RMSE or accuracy and ECE) and the cost in FLOPs (gradient evaluations times
:func:`bnn_posteriors.evaluation.cost.gradient_flops`, plus the method's dense algebra).
Each (problem, method, seed) is one part of :mod:`bnn_posteriors.store.parts`, so a long run
resumes where it stopped and the chapter reads the committed parts.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import jax
import numpy as np

from bnn_posteriors.evaluation import cost, diagnostics, fidelity
from bnn_posteriors.store import parts
from bnn_posteriors.store import reference as reference_store
from bnn_posteriors.studies.ch10_reference_posteriors import approximations, problems, samplers
from bnn_posteriors.studies.ch10_reference_posteriors.fits import DoesNotApply, MethodFit
from bnn_posteriors.util import validate

FLOOR_QUANTILE = 0.95  # a second reference validates when it lies below this quantile of the floor
# of the scoring; a part of another version is computed again (2: one key per seed; 3: the
# energy distance of the joint draws, beside the rest of version 2)
VERSION = 3
# the versions of a method's part that the chapter reads: a part of version 2 lacks only the
# energy distance, which its tables then leave blank
READABLE = (3, 2)

METHODS: dict[str, Callable[..., MethodFit]] = {
    "MAP": approximations.map_point,
    "MFVI": approximations.mfvi,
    "tempered MFVI": approximations.tempered_mfvi,
    "symmetrised VI": approximations.symmetrised_vi,
    "sampled LA": approximations.sampled_laplace,
    "linearised LA": approximations.linearised_laplace,
    "null-space LA": approximations.null_space_laplace,
    "null-space LA, tuned prior": approximations.null_space_laplace,
    "VIKING": approximations.viking,
    "VIKING, learned prior": approximations.viking,
    "Laplace diffusion": approximations.laplace_diffusion,
    "MetricBNN": samplers.metricbnn,
    "deep ensemble": samplers.deep_ensemble,
    "MILE, 1 chain": functools.partial(samplers.mile, num_chains=1),
    "MILE, 10 chains": functools.partial(samplers.mile, num_chains=10),
    "NUTS, 1 chain": samplers.single_nuts,
}


def committed_reference(
    problem: str, reference_dir: Path | str | None = None, *, sampler: str = "nuts"
) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and record of ``problem``'s reference by ``sampler`` (the NUTS reference, or
    another of :data:`~bnn_posteriors.inference.reference.SAMPLERS`,
    :func:`bnn_posteriors.store.reference.read_reference`); ``ValueError`` naming an unknown
    problem, or a reference that was never built, instead of a missing file."""
    from bnn_posteriors.studies.ch10_reference_posteriors.build import stored_name

    name = stored_name(problems.known(problem), sampler)
    try:
        return reference_store.read_reference(name, reference_dir)
    except FileNotFoundError:
        folder = reference_store.reference_dir() if reference_dir is None else reference_dir
        option = "" if sampler == "nuts" else f" --sampler {sampler}"
        raise ValueError(
            f"problem {problem!r} has no reference by {sampler} in {folder}; build it with "
            f"`bnn-posteriors reference {problem} --profile full{option}`"
        ) from None


def reference_predictive(arrays: Mapping[str, np.ndarray], points: str = "test") -> dict:
    """The reference predictive at the set of ``points`` from the arrays of
    :func:`bnn_posteriors.store.reference.read_reference`: ``{"f", "noise_scale"}`` or
    ``{"probs"}``, each with the axes (chain, draw, ...)."""
    keys = {k[len(points) + 1 :]: v for k, v in arrays.items() if k.startswith(f"{points}_")}
    keys.pop("x", None)  # the inputs
    keys.pop("y", None)  # the labels
    if not keys:
        raise ValueError(f"the reference holds no predictive at the points {points!r}")
    return keys


def method_key(seed: int, problem: str):
    """The key of every fit on ``problem`` with ``seed``: ``PRNGKey(seed)`` folded with the
    CRC-32 of the problem's name. Every method gets the same key, so the methods built on a
    MAP (Laplace, null-space Laplace, VIKING) start from the same MAP for one seed, and a
    difference between them is paired on it."""
    seed = validate.positive_int("seed", seed, 0, where="method_key")
    return jax.random.fold_in(jax.random.PRNGKey(seed), zlib.crc32(problem.encode()) % 2**31)


def grid_summary(predictive: Mapping) -> dict[str, list]:
    """What the figures show at the grid: regression the mean and sd of the predictive of y
    (the mixture's), classification the mean probability of class 1."""
    p = fidelity.pooled(predictive)
    if "probs" in p:
        return {"probs1": p["probs"][..., 1].mean(axis=0).tolist()}
    mean = p["f"].mean(axis=0)
    var = p["f"].var(axis=0) + (p["noise_scale"] ** 2).mean(axis=0)
    return {"mean": mean.tolist(), "sd": np.sqrt(var).tolist()}


def score_fit(prob: problems.Problem, reference: Mapping, fit: MethodFit) -> dict:
    """Fidelity of ``fit`` to ``reference`` (the test predictive), its test scores and cost."""
    test = fit.predictive["test"]
    flops = fit.gradient_evaluations * cost.gradient_flops(prob.spec, prob.x_train, prob.y_train)
    row: dict = {
        **fidelity.fidelity(test, reference),
        **fidelity.predictive_scores(test, prob.y_test),
        "gradient_evaluations": float(fit.gradient_evaluations),
        "flops": float(flops + fit.extra_flops),
    }
    if "grid" in fit.predictive:
        row["grid"] = grid_summary(fit.predictive["grid"])
    return row


def part_name(problem: str, method: str, seed: int) -> str:
    """The file stem of one part: ``<problem>__<method slug>__s<seed>``."""
    slug = "".join(c if c.isascii() and c.isalnum() else "_" for c in method.lower()).strip("_")
    return f"{problem}__{slug}__s{seed}"


def part_settings(
    problem: str,
    method: str,
    seed: int,
    settings: Mapping,
    reference_sha256: str,
    version: int = VERSION,
) -> dict:
    """What decides one part: the problem, method, seed, the method's keyword arguments, the
    reference's sha256 and the scoring's ``version`` (:data:`VERSION`)."""
    return {
        "problem": problem,
        "method": method,
        "seed": seed,
        "method_settings": dict(settings),
        "reference_sha256": reference_sha256,
        "version": version,
    }


def score(
    problem: str,
    method: str,
    seed: int,
    settings: Mapping,
    *,
    directory: Path | str | None = None,
    profile: str | None = None,
    reference_dir: Path | str | None = None,
) -> dict:
    """The scored fit of ``method`` (a key of :data:`METHODS`) on ``problem`` with ``seed``
    and the method's ``settings`` (keyword arguments), read from ``directory`` if a part
    there holds the same settings and reference, else computed and written there.

    A method that does not apply to the problem (its :class:`.fits.DoesNotApply`) gives a row with
    ``applies: False`` and the reason.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; the methods are {'; '.join(METHODS)}")
    arrays, record = committed_reference(problem, reference_dir)
    settings_of_part = part_settings(problem, method, seed, settings, record["sha256"])

    def compute() -> dict:
        prob = problems.problem(problem)
        try:
            fit = METHODS[method](method_key(seed, problem), prob, **settings)
        except DoesNotApply as error:
            return {"applies": False, "reason": str(error)}
        return {"applies": True, **score_fit(prob, reference_predictive(arrays), fit)}

    path = (
        None if directory is None else parts.part_path(directory, part_name(problem, method, seed))
    )
    return {
        **parts.resumed_part(path, settings_of_part, compute, profile=profile),
        "settings": settings_of_part,
    }


def scoreboard(
    problem_names: Sequence[str],
    methods: Mapping[str, Mapping],
    seeds: Sequence[int],
    *,
    directory: Path | str | None,
    profile: str | None,
    reference_dir: Path | str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """:func:`score` of every problem × method × seed (``methods``: name → its settings),
    problems outer, seeds inner; each finished part is written at once, so an interrupted
    run resumes. ``progress`` gets one line per part."""
    rows = []
    total = len(problem_names) * len(methods) * len(seeds)
    for problem in problem_names:
        for method, settings in methods.items():
            for seed in seeds:
                row = score(
                    problem,
                    method,
                    seed,
                    settings,
                    directory=directory,
                    profile=profile,
                    reference_dir=reference_dir,
                )
                rows.append(row)
                if progress is not None:
                    done = "read" if row.get("read") else "computed"
                    progress(f"[{len(rows)}/{total}] {problem} · {method} · seed {seed}: {done}")
    return rows


def committed_rows(
    problem_names: Sequence[str],
    methods: Mapping[str, Mapping],
    seeds: Sequence[int],
    directory: Path | str,
    reference_dir: Path | str | None = None,
) -> tuple[list[dict], list[str]]:
    """The parts of ``directory`` that hold the settings :func:`score` would compute with
    (``methods``: name → settings) at a :data:`READABLE` version, read without computing
    anything, and the names of the parts that are missing or hold other settings (still to
    run)."""
    rows, missing = [], []
    for problem in problem_names:
        sha = committed_reference(problem, reference_dir)[1]["sha256"]
        for method, settings in methods.items():
            for seed in seeds:
                name = part_name(problem, method, seed)
                part = None
                for version in READABLE:
                    wanted = part_settings(problem, method, seed, settings, sha, version)
                    part = parts.read_part(parts.part_path(directory, name), wanted)
                    if part is not None:
                        break
                if part is None:
                    missing.append(name)
                else:
                    rows.append(part)
    return rows, missing


def reference_floor(
    problem: str,
    *,
    num_draws: int,
    num_splits: int,
    reference_dir: Path | str | None = None,
) -> dict:
    """The reference's own Monte Carlo floor at the methods' number of draws, and its test
    scores: per metric of :func:`bnn_posteriors.evaluation.fidelity.fidelity`, the mean over
    ``num_splits`` random splits of its chains into halves of the distance of ``num_draws``
    draws of one half to the other half (:func:`~bnn_posteriors.evaluation.fidelity.
    matched_floor`), and its sd over the splits as ``<metric>_sd``. What a method whose
    ``num_draws`` draws were exact would score against half the chains."""
    arrays, _ = committed_reference(problem, reference_dir)
    ref = reference_predictive(arrays)
    splits = fidelity.matched_floor(ref, num_draws=num_draws, num_splits=num_splits)
    return {
        **{metric: float(values.mean()) for metric, values in splits.items()},
        **{f"{metric}_sd": float(values.std(ddof=1)) for metric, values in splits.items()},
        **fidelity.predictive_scores(ref, problems.problem(problem).y_test),
    }


def second_references(problem: str, reference_dir: Path | str | None = None) -> list[str]:
    """The samplers other than NUTS whose reference of ``problem`` is committed, in the order
    of :data:`~bnn_posteriors.inference.reference.SAMPLERS`."""
    from bnn_posteriors.inference.reference import SAMPLERS
    from bnn_posteriors.studies.ch10_reference_posteriors.build import stored_name

    folder = Path(reference_store.reference_dir() if reference_dir is None else reference_dir)
    return [
        sampler
        for sampler in SAMPLERS[1:]
        if (folder / f"{stored_name(problems.known(problem), sampler)}.json").is_file()
    ]


def family_distance(
    problem: str,
    sampler: str,
    *,
    num_draws: int,
    num_splits: int,
    reference_dir: Path | str | None = None,
    directory: Path | str | None = None,
    profile: str | None = None,
) -> dict:
    """How far the reference of ``problem`` by a second ``sampler`` lies from the NUTS
    reference, at the methods' number of draws, beside the NUTS reference's own floor.

    Over the ``num_splits`` random splits of the NUTS chains of :func:`reference_floor`,
    ``num_draws`` draws of the ``sampler``'s reference against the pooled half, and (the floor)
    as many draws of the other half (:func:`~bnn_posteriors.evaluation.fidelity.
    matched_floor` with and without ``other``). Returns per metric of
    :func:`~bnn_posteriors.evaluation.fidelity.fidelity` its mean and sd over the splits,
    the floor's mean as ``floor_<metric>`` and the floor's 95th percentile over the splits as
    ``floor_<metric>_q95``: the range that a sampler drawing the same law reaches 95 % of
    the time. A part of ``directory`` (``<problem>__<sampler>.json``) holding the same
    settings and both references' sha256 is read instead of computed; a computed one is
    written there (None: nothing is written)."""
    arrays, record = committed_reference(problem, reference_dir)
    other, other_record = committed_reference(problem, reference_dir, sampler=sampler)
    settings = {
        "problem": problem,
        "sampler": sampler,
        "num_draws": num_draws,
        "num_splits": num_splits,
        "reference_sha256": record["sha256"],
        "other_sha256": other_record["sha256"],
        "version": VERSION,
    }

    def compute() -> dict[str, float]:
        ref = reference_predictive(arrays)
        floor = fidelity.matched_floor(ref, num_draws=num_draws, num_splits=num_splits)
        cross = fidelity.matched_floor(
            ref, num_draws=num_draws, num_splits=num_splits, other=reference_predictive(other)
        )
        out: dict[str, float] = {}
        for metric, values in cross.items():
            out[metric] = float(values.mean())
            out[f"{metric}_sd"] = float(values.std(ddof=1))
            out[f"floor_{metric}"] = float(floor[metric].mean())
            out[f"floor_{metric}_q95"] = float(np.quantile(floor[metric], FLOOR_QUANTILE))
        return out

    path = None if directory is None else parts.part_path(directory, f"{problem}__{sampler}")
    part = parts.resumed_part(path, settings, compute, profile=profile)
    return {k: v for k, v in part.items() if isinstance(v, float)}  # the distances alone


DISTANCE = {"gaussian": "w2", "categorical": "total_variation"}  # ranks methods, by likelihood


def read_draws(path: Path | str) -> dict[str, np.ndarray]:
    """An outside method's predictive draws at a problem's test inputs, from a NumPy ``.npz``
    file: regression ``f`` (S, n) and ``noise_scale`` (S,) or (S, n) (the draws' function
    values and their observation noise sd), classification ``probs`` (S, n, C). ValueError
    naming what is missing or extra."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no draws file at {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not a NumPy .npz file: {error}") from None
    keys = set(arrays)
    if keys not in ({"probs"}, {"f", "noise_scale"}):
        raise ValueError(
            f"{path} holds {sorted(keys)}; a draws file holds 'probs' (S, n, C) for a "
            "classifier, or 'f' (S, n) and 'noise_scale' (S,) or (S, n) for a regression"
        )
    return arrays


def score_draws(
    problem: str, predictive: Mapping, reference_dir: Path | str | None = None
) -> dict[str, float]:
    """Score an outside method's predictive draws at the test inputs of ``problem``
    (:func:`read_draws`'s layout, draws on the first axis) as every method of the chapter is
    scored: fidelity to the committed reference and the test scores against the labels.
    ValueError where the draws do not fit the problem (kind, number of test inputs, classes)."""
    prob = problems.problem(problem)
    arrays, _ = committed_reference(problem, reference_dir)
    ref = fidelity.pooled(reference_predictive(arrays))
    mine = fidelity.pooled(predictive, lead=1)
    if set(mine) != set(ref):
        raise ValueError(
            f"{problem} has a {prob.spec.likelihood} likelihood: its draws hold {sorted(ref)}, "
            f"not {sorted(mine)}"
        )
    key = "probs" if "probs" in ref else "f"
    if mine[key].shape[1:] != ref[key].shape[1:]:
        raise ValueError(
            f"the draws of {problem} must be shaped (S, {', '.join(map(str, ref[key].shape[1:]))})"
            f" for its test inputs, got {tuple(np.shape(predictive[key]))}"
        )
    if not all(np.all(np.isfinite(v)) for v in mine.values()):
        raise ValueError(f"the draws of {problem} hold NaN or infinite values")
    return {**fidelity.fidelity(mine, ref), **fidelity.predictive_scores(mine, prob.y_test)}


def standing(row: Mapping[str, float], board: Mapping, problem: str, metric: str) -> list:
    """Where ``row`` (:func:`score_draws`) stands among the leaderboard's methods on
    ``problem`` (:func:`leaderboard`): ``[(name, mean of metric), …]`` from the closest to the
    reference to the farthest, the outside draws named "your draws"."""
    entries = [
        (method, entry[metric][0])
        for (p, method), entry in board.items()
        if p == problem and metric in entry
    ]
    return sorted([*entries, ("your draws", float(row[metric]))], key=lambda e: e[1])


def leaderboard(rows: Sequence[Mapping], metrics: Sequence[str]) -> dict:
    """Per (problem, method) over seeds: the mean and 95 % Student-t interval of each metric
    (``diagnostics.mean_interval``; one seed: the value, no interval; the same value on every
    seed: an interval of width 0). A metric that some seed's part lacks (a part of an older
    :data:`READABLE` version) is left out of that method's entry."""
    table: dict = {}
    for row in rows:
        if not row.get("applies", True):
            continue
        key = (row["settings"]["problem"], row["settings"]["method"])
        table.setdefault(key, []).append(row)
    out = {}
    for key, group in table.items():
        entry: dict = {}
        for m in metrics:
            if any(m not in r for r in group):
                continue
            values = np.array([r[m] for r in group], dtype=np.float64)
            if len(values) > 1 and np.ptp(values) > 0:
                entry[m] = diagnostics.mean_interval(values)
            elif len(values) > 1:  # the same on every seed (a cost): an interval of width 0
                entry[m] = (float(values[0]),) * 3
            else:
                entry[m] = (float(values[0]), float("nan"), float("nan"))
        entry["seeds"] = len(group)
        out[key] = entry
    return out
