"""The ``bnn-posteriors`` commands that run a long study part by part: chapter 8's benchmark
units, chapter 7's prior-scale cells and its many-chain runs per seed. Each part is written to
``results/`` as soon as it is done and read back by a later run with the same settings.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bnn_posteriors.site import profiles
from bnn_posteriors.site.settings_classes import (
    BenchmarksSettings,
    ReferencePosteriorsSettings,
    SamplingInPracticeSettings,
)
from bnn_posteriors.store import parts


def run_study(parts, name: str) -> int:
    """Run a study command's ``parts()`` (its list of finished parts, each reported as it
    finishes): exit code 2 with the message of a ``ValueError`` (a bad profile, data set or
    folder), else print the wall time and return 0."""
    start = time.perf_counter()
    try:
        done = parts()
    except ValueError as error:
        print(f"bnn-posteriors: error: {error}", file=sys.stderr)
        return 2
    print(f"wall time: {time.perf_counter() - start:.1f} s for {len(done)} {name}")
    return 0


# --------------------------------------------------------------------------- benchmark


def run_benchmark(
    profile: str | None = None,
    datasets: Sequence[str] | None = None,
    splits: Sequence[int] | None = None,
    units: Sequence[str] | None = None,
    out: Path | None = None,
    skip_existing: bool = False,
) -> int:
    """Run the chapter-8 table unit by unit with a progress bar; write one JSON per unit."""
    from bnn_posteriors.studies.ch08_benchmarks import run as benchmark

    def units_done():
        cfg = profiles.settings_of(BenchmarksSettings, profile)
        folder = out or parts.committed_dir(benchmark.RESULTS)
        print(f"benchmark (profile {cfg.profile}, seed {cfg.seed}) -> {folder}")
        rows = benchmark.run_table(
            cfg,
            datasets=datasets,
            splits=splits,
            units=units,
            results_dir=folder,
            skip_existing=skip_existing,
        )
        for row in rows:
            state = "cached" if row["cached"] else "computed"
            print(
                f"{row['dataset']:12s} split {row['split']} {row['unit']:8s} "
                f"{row['wall_s']:8.1f} s ({state})"
            )
        return rows

    return run_study(units_done, "units")


# --------------------------------------------------------------------------- prior scales


def run_prior_scales(
    profile: str | None = None,
    datasets: Sequence[str] | None = None,
    depths: Sequence[int] | None = None,
    out: Path | None = None,
) -> int:
    """Run chapter 7's prior-scale cells, each written to ``out`` as it finishes."""
    from bnn_posteriors.studies.ch07_sampling_in_practice import prior_scales as study

    def report(cell):
        s = cell["settings"]
        state = "read" if cell["read"] else "computed"
        print(
            f"{s['dataset']:12s} depth {s['depth']}  {cell['wall_s']:8.1f} s ({state})", flush=True
        )

    def cells():
        cfg = profiles.settings_of(SamplingInPracticeSettings, profile)
        arguments = study.chapter_arguments(cfg)
        arguments["datasets"] = datasets or arguments["datasets"]
        arguments["depths"] = depths or arguments["depths"]
        folder = out or study.chapter_results_dir(cfg)
        if folder is None:
            raise ValueError(f"profile {cfg.profile} names no results folder: pass --out")
        print(f"prior-scale cells (profile {cfg.profile}, seed {cfg.seed}) -> {folder}", flush=True)
        return study.prior_scale_study(
            **arguments,
            cache=cfg.cache,
            results_dir=folder,
            profile=cfg.profile,
            progress=True,
            report=report,
        )

    return run_study(cells, "cells")


# --------------------------------------------------------------------------- many chains


def run_many_chains(
    profile: str | None = None, seeds: Sequence[int] | None = None, out: Path | None = None
) -> int:
    """Run chapter 7's many-chain study seed by seed, each run written to ``out`` when done."""
    import jax

    from bnn_posteriors.studies.ch07_sampling_in_practice import many_chains

    def report(run):
        s = run["settings"]
        state = "read" if run["read"] else "computed"
        print(
            f"seed {s['seed']}: {s['n_chains']} chains, KS gap {run['gap']:.4f} "
            f"[{run['low']:.4f}, {run['high']:.4f}], {run['wall_s']:8.1f} s ({state})",
            flush=True,
        )

    def runs():
        cfg = profiles.settings_of(SamplingInPracticeSettings, profile)
        on_accelerator = jax.default_backend() != "cpu"
        n_chains = cfg.n_chains_many_accelerator if on_accelerator else cfg.n_chains_many
        if out is None and cfg.many_results is None:
            raise ValueError(f"profile {cfg.profile} names no results folder: pass --out")
        folder = out or parts.committed_dir(cfg.many_results)
        print(f"many-chain runs (profile {cfg.profile}, {n_chains} chains) -> {folder}", flush=True)
        return many_chains.seed_study(
            cfg,
            tuple(seeds or cfg.many_seeds),
            n_chains,
            results_dir=folder,
            cache=cfg.cache,
            profile=cfg.profile,
            report=report,
        )

    return run_study(runs, "seeds")


# --------------------------------------------------------------------------- reference


def run_reference(
    problem: str,
    profile: str | None = None,
    *,
    chains: int | None = None,
    warmup: int | None = None,
    draws: int | None = None,
    kept: int | None = None,
    chunk: int | None = None,
    seed: int | None = None,
    out: Path | None = None,
    cache: Path | None = None,
    sampler: str = "nuts",
) -> int:
    """Build the reference posterior of ``problem`` (chapter 10) with a progress bar, by NUTS,
    by NUTS with a dense metric (``sampler="nuts_dense"``) or by the second sampler family
    (``sampler="mams"``); the options replace the profile's settings. Prints the mixing
    summary and the wall time."""
    import jax

    from bnn_posteriors.studies.ch10_reference_posteriors import build

    def built():
        cfg = profiles.settings_of(ReferencePosteriorsSettings, profile)
        on_accelerator = jax.default_backend() != "cpu"
        n_chains = chains or (cfg.num_chains_accelerator if on_accelerator else cfg.num_chains)
        if out is None and cfg.results is None:
            raise ValueError(f"profile {cfg.profile} names no results folder: pass --out")
        folder = out or parts.committed_dir(cfg.results)
        print(
            f"reference {problem} by {sampler} (profile {cfg.profile}, {n_chains} chains on "
            f"{jax.device_count()} device(s)) -> {folder}",
            flush=True,
        )
        record = build.build(
            problem,
            seed=cfg.seed if seed is None else seed,
            num_chains=n_chains,
            num_warmup=warmup or cfg.num_warmup,
            num_samples=draws or cfg.num_samples,
            num_kept=kept or cfg.num_kept,
            chunk_size=chunk or cfg.chunk_size,
            target_acceptance_rate=(
                cfg.mams_target_acceptance_rate if sampler == "mams" else cfg.target_acceptance_rate
            ),
            max_num_doublings=cfg.max_num_doublings,
            sampler=sampler,
            integration_steps=cfg.mams_integration_steps if sampler == "mams" else None,
            initial_step_size=cfg.mams_initial_step_size if sampler == "mams" else None,
            out=folder,
            cache=cache or cfg.cache,
            profile=cfg.profile,
            progress=True,
        )
        for points, m in record["mixing"].items():
            verdict = "mixed" if m["mixed"] else "NOT mixed: " + "; ".join(m["reasons"])
            print(
                f"{points}: max R-hat {m['max_rhat']:.3f}, min ESS {m['min_ess']:.0f} ({verdict})",
                flush=True,
            )
        print(f"wrote {record['path']}", flush=True)
        return [record]

    return run_study(built, "reference")


# --------------------------------------------------------------------------- scores


def run_scores(
    profile: str | None = None,
    problems: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    out: Path | None = None,
) -> int:
    """Score the methods of chapter 10 against the committed references, part by part
    (:func:`bnn_posteriors.studies.ch10_reference_posteriors.score.scoreboard`); the options
    narrow the profile's problems, methods and seeds."""
    from bnn_posteriors.studies.ch10_reference_posteriors import score

    def scored():
        cfg = profiles.settings_of(ReferencePosteriorsSettings, profile)
        unknown = sorted(set(methods or ()) - set(cfg.methods))
        if unknown:
            raise ValueError(f"unknown methods {unknown}; the methods are {'; '.join(cfg.methods)}")
        chosen = {m: s for m, s in cfg.methods.items() if not methods or m in methods}
        folder = out or parts.committed_dir(cfg.score_results)
        print(f"scores (profile {cfg.profile}) -> {folder}", flush=True)
        return score.scoreboard(
            problems or cfg.score_problems,
            chosen,
            seeds or cfg.score_seeds,
            directory=folder,
            profile=cfg.profile,
            progress=lambda line: print(line, flush=True),
        )

    return run_study(scored, "scored fits")
