"""The ``bnn-posteriors`` command: run a chapter headless, print the claim scorecard.

``bnn-posteriors run book/01_narrow_networks.md --profile full --seed 1`` executes the
MyST chapter (:func:`bnn_posteriors.site.execute.run_chapter`, the book's one runner) and
writes ``_build/executed/<profile>/<stem>.ipynb``; ``bnn-posteriors claims`` prints the
status of every claim per profile.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.claims import scorecard
from bnn_posteriors.cli.studies import (
    run_benchmark,
    run_many_chains,
    run_prior_scales,
    run_reference,
    run_scores,
)
from bnn_posteriors.site import profiles
from bnn_posteriors.site.execute import run_chapter
from bnn_posteriors.site.settings_classes import ReferencePosteriorsSettings

WIDTH = 100  # terminal columns of the scorecard table


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``bnn-posteriors``: run, benchmark, prior-scales, many-chains, reference,
    sweep, claims."""
    parser = argparse.ArgumentParser(
        prog="bnn-posteriors",
        description="Run the book's chapters and report the status of its claims.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="execute a MyST chapter headless, as the book build does")
    run.add_argument("chapter", type=Path, help="the chapter's .md file (Jupytext MyST)")
    run.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    run.add_argument("--seed", type=int, help="override the chapter's seed (sets BNN_SEED)")
    run.add_argument("--timeout", type=int, help="seconds allowed per cell (default: none)")
    run.add_argument(
        "--out",
        type=Path,
        help="folder of executed notebooks (default: <repo root>/_build/executed)",
    )

    bench = commands.add_parser(
        "benchmark", help="run the UCI benchmark table of chapter 8 unit by unit (resumable)"
    )
    bench.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    bench.add_argument("--datasets", nargs="+", help="data sets (default: the profile's)")
    bench.add_argument("--splits", nargs="+", type=int, help="split seeds (default: the profile's)")
    bench.add_argument("--units", nargs="+", help="laplace, mfvi, mile (default: all)")
    bench.add_argument(
        "--skip-existing",
        action="store_true",
        help="read units whose result file exists with the same settings (resume)",
    )
    bench.add_argument(
        "--out",
        type=Path,
        help="folder of the per-unit JSON results (default: <repo root>/results/ch8_benchmark)",
    )

    prior = commands.add_parser(
        "prior-scales",
        help="run chapter 7's prior-scale cells (C7.6) one by one, each written to results/ "
        "as it finishes and read back by later runs (resumable across machines)",
    )
    prior.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    prior.add_argument("--datasets", nargs="+", help="data sets (default: the profile's)")
    prior.add_argument("--depths", nargs="+", type=int, help="depths (default: the profile's)")
    prior.add_argument(
        "--out",
        type=Path,
        help="folder of the per-cell JSON results (default: results/<prior_results> of the "
        "profile)",
    )

    many = commands.add_parser(
        "many-chains",
        help="run chapter 7's many-chain study (C7.3, C7.4) seed by seed, each run written to "
        "results/ as it finishes and read back by later runs (resumable across machines)",
    )
    many.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    many.add_argument("--seeds", nargs="+", type=int, help="seeds (default: the profile's)")
    many.add_argument(
        "--out", type=Path, help="folder of the per-seed results (default: results/<many_results>)"
    )

    ref = commands.add_parser(
        "reference",
        help="build the reference posterior of a problem of chapter 10: many NUTS chains "
        "(sharded over the devices), their function-space mixing and the predictive, written "
        "to results/reference/<problem>.npz/.json (resumable: each chunk of draws is cached)",
    )
    ref.add_argument("problem", help="a problem of chapter 10 (its settings' problems)")
    ref.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    ref.add_argument("--chains", type=int, help="number of chains (default: the profile's)")
    ref.add_argument("--warmup", type=int, help="adaptation steps (default: the profile's)")
    ref.add_argument("--draws", type=int, help="draws per chain (default: the profile's)")
    ref.add_argument("--kept", type=int, help="draws stored per chain (default: the profile's)")
    ref.add_argument("--chunk", type=int, help="draws per cached unit (default: the profile's)")
    ref.add_argument("--seed", type=int, help="override the chapter's seed")
    ref.add_argument(
        "--sampler",
        choices=("nuts", "nuts_dense", "mams"),
        default="nuts",
        help="nuts (the reference, default), nuts_dense (NUTS with a dense mass matrix) or mams "
        "(the second sampler family that validates it), the last two written to "
        "<problem>__<sampler>",
    )
    ref.add_argument(
        "--out", type=Path, help="folder of the reference files (default: results/<results>)"
    )
    ref.add_argument(
        "--cache", type=Path, help="folder of the cached chunks (default: the unit cache)"
    )

    scores = commands.add_parser(
        "scores",
        help="score every method of chapter 10 against the committed reference posteriors, "
        "one part per problem, method and seed, written to results/<score_results>/ as each "
        "finishes (resumable)",
    )
    scores.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    scores.add_argument("--problems", nargs="+", help="problems (default: the profile's)")
    scores.add_argument("--methods", nargs="+", help="methods, e.g. MFVI 'sampled LA'")
    scores.add_argument("--seeds", nargs="+", type=int, help="seeds (default: the profile's)")
    scores.add_argument("--out", type=Path, help="folder of the parts (default: results/...)")

    outside = commands.add_parser(
        "score",
        help="score predictive draws made by any method, outside this package, against a "
        "committed reference posterior of chapter 10, and print where they stand among the "
        "book's methods",
    )
    outside.add_argument("--problem", required=True, help="snelson_gap, banana or digits")
    outside.add_argument(
        "--draws",
        required=True,
        type=Path,
        help="an .npz file of draws at the problem's test inputs: 'f' (S, n) and "
        "'noise_scale' (S,) or (S, n) for a regression, 'probs' (S, n, C) for a classifier",
    )

    sweep = commands.add_parser(
        "sweep",
        help="run chapters under several seeds; write each check's status and margin "
        "to results/sweep/<profile>.json",
    )
    sweep.add_argument("--seeds", type=int, default=5, help="seeds per chapter (default: 5)")
    sweep.add_argument("--chapters", nargs="+", help="chapter stems (default: every chapter)")
    sweep.add_argument("--profile", help="quick or full (default: $BNN_PROFILE, else quick)")
    sweep.add_argument("--out", type=Path, help="the sweep file (default: results/sweep/)")
    sweep.add_argument(
        "--resume", action="store_true", help="keep the runs already in the file (resume)"
    )
    sweep.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="run nothing: merge these sweep files (chapters swept separately) into --out",
    )

    report = commands.add_parser("claims", help="print the claim scorecard")
    report.add_argument("--profile", help="show one profile only (quick or full)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (0 ok, 1 failed, 2 usage)."""
    args = build_parser().parse_args(argv)
    try:
        given = getattr(args, "profile", None)  # `score` has none: it reads committed results
        profile: str | None = profiles.profile_name(given)  # validates $BNN_PROFILE too
        profile = profile if given is not None else None  # None: from the environment
    except ValueError as error:
        print(f"bnn-posteriors: error: {error}", file=sys.stderr)
        return 2
    if args.command == "run":
        return run_chapter(args.chapter, profile, args.seed, args.timeout, args.out)
    if args.command == "benchmark":
        return run_benchmark(
            profile, args.datasets, args.splits, args.units, args.out, args.skip_existing
        )
    if args.command == "prior-scales":
        return run_prior_scales(profile, args.datasets, args.depths, args.out)
    if args.command == "many-chains":
        return run_many_chains(profile, args.seeds, args.out)
    if args.command == "reference":
        return run_reference(
            args.problem,
            profile,
            chains=args.chains,
            warmup=args.warmup,
            draws=args.draws,
            kept=args.kept,
            chunk=args.chunk,
            seed=args.seed,
            out=args.out,
            cache=args.cache,
            sampler=args.sampler,
        )
    if args.command == "scores":
        return run_scores(profile, args.problems, args.methods, args.seeds, args.out)
    if args.command == "score":
        return score_outside(args.problem, args.draws)
    if args.command == "sweep":
        return run_sweep(args.chapters, args.seeds, profile, args.out, args.resume, args.merge)
    return print_claims(profile)


# --------------------------------------------------------------------------- run


# --------------------------------------------------------------------------- score


def score_outside(problem: str, draws: Path) -> int:
    """Score an outside method's draws against ``problem``'s reference and print them beside
    the committed leaderboard (the full profile's methods and seeds); 2 on bad input."""
    from bnn_posteriors.store import parts
    from bnn_posteriors.studies.ch10_reference_posteriors import problems, score

    try:
        problems.known(problem)  # an unknown problem is named before the draws are read
        row = score.score_draws(problem, score.read_draws(draws))
        full = profiles.settings_of(ReferencePosteriorsSettings, "full")
        committed = parts.committed_dir(full.score_results)
        if committed is None:
            raise ValueError("the full profile names no folder of committed scores")
        rows, _ = score.committed_rows([problem], full.methods, full.score_seeds, committed)
        floor = score.reference_floor(
            problem, num_draws=full.floor_draws, num_splits=full.floor_splits
        )
    except ValueError as error:
        print(f"bnn-posteriors: error: {error}", file=sys.stderr)
        return 2
    metric = score.DISTANCE["categorical" if "total_variation" in row else "gaussian"]
    board = score.leaderboard(rows, (metric,))
    print(f"{problem}: your draws against the reference posterior")
    for name, value in row.items():
        print(f"  {name:<16} {value:.4g}")
    floors = ", ".join(
        f"{m} {floor[m]:.4g} ± {floor[m + '_sd']:.2g}" for m in (metric, "energy") if m in floor
    )
    print(
        f"  the reference's own floor ({full.floor_draws} draws of a random half of its chains "
        f"against the other half, over {full.floor_splits} splits): {floors}"
    )
    print(f"\nby {metric} (mean over the committed seeds; lower is closer):")
    for rank, (name, value) in enumerate(score.standing(row, board, problem, metric), 1):
        mark = "  <-" if name == "your draws" else ""
        print(f"  {rank:>2}. {name:<18} {value:.4g}{mark}")
    return 0


# --------------------------------------------------------------------------- sweep


def run_sweep(
    chapters: Sequence[str] | None,
    n_seeds: int,
    profile: str | None,
    out: Path | None,
    resume: bool = False,
    merge: Sequence[Path] | None = None,
) -> int:
    """Run (or ``merge``) the seed sweep and print its table; 2 on bad input."""
    from bnn_posteriors.claims import sweep

    try:
        if merge:
            target = out if out is not None else sweep.sweep_path(profile or "quick")
            result = sweep.merge_sweeps(merge, target)
        else:
            result = sweep.run_sweep(chapters, n_seeds, profile, out, resume=resume)
    except ValueError as error:
        print(f"bnn-posteriors: error: {error}", file=sys.stderr)
        return 2
    rows = sweep.summarise(result)
    print(sweep.sweep_markdown(result))
    swept = [row for row in rows if not row["committed"]]
    fragile = [sweep.check_name(row) for row in swept if not row["robust"]]
    print(
        f"{len(swept) - len(fragile)} of {len(swept)} checks robust"
        + (f"; not robust: {', '.join(fragile)}" if fragile else "")
        + (f"; {len(rows) - len(swept)} decided on committed results (seed-independent)")
    )
    return 0


# --------------------------------------------------------------------------- claims


def print_claims(profile: str | None = None) -> int:
    """Print the scorecard (one profile, or both) and the counts; 2 on unreadable records."""
    try:
        rows = scorecard.scorecard()
    except ValueError as error:
        print(f"bnn-posteriors: error: {error}", file=sys.stderr)
        return 2
    shown = profiles.PROFILES if profile is None else (profile,)
    print(scorecard_text(rows, shown))
    counts = scorecard.summary(rows)
    print()
    for name in shown:  # one line per profile, to stay within WIDTH columns
        print(scorecard.summary_text({name: counts[name]}))
    return 0


# status words that fit 11 columns
_TERSE = {claims.NOT_REPRODUCED: "not reprod.", claims.INCONCLUSIVE: "inconclus."}


def scorecard_text(rows: Sequence[dict], shown: Sequence[str] = profiles.PROFILES) -> str:
    """The scorecard as plain-text columns, at most ``WIDTH`` characters a line."""
    measured = "quick" if "quick" in shown else shown[0]
    columns = [("claim", 5), *((p, 11) for p in shown), (f"measured ({measured})", 16)]
    columns.append(("expected", 14))
    used = sum(width + 2 for _, width in columns)
    columns.append(("what", max(WIDTH - used, 20)))
    lines = [_line([name for name, _ in columns], columns)]
    lines.append(_line(["-" * width for _, width in columns], columns))
    for row in rows:
        statuses = [_TERSE.get(row[p]["status"], row[p]["status"]) for p in shown]
        expected = row[measured]["expected"] or row[shown[-1]]["expected"]
        cells = [row["id"], *statuses, row[measured]["measured"], expected, row["title"]]
        lines.append(_line(cells, columns))
    return "\n".join(lines)


def _line(cells: Sequence[str], columns: Sequence[tuple[str, int]]) -> str:
    """One line of the table: each cell shortened to its column's width and padded."""
    widths = [width for _, width in columns]
    parts = [scorecard.short(str(c), w).ljust(w) for c, w in zip(cells, widths, strict=True)]
    return "  ".join(parts).rstrip()


if __name__ == "__main__":
    raise SystemExit(main())
