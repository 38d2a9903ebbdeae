"""Wall time of chapter 10's methods next to their cost in FLOPs, side by side in one run.

Chapter 10 reports each method's cost in floating-point operations (its gradient evaluations
times XLA's count for one full-batch gradient of the log joint, plus its dense algebra), a
number that does not depend on the machine. This script measures what a reader waits for on
theirs: each method of :data:`bnn_posteriors.studies.ch10_reference_posteriors.score.METHODS`
is fitted on one problem with the chapter's budgets of the chosen profile, once to compile
and once more timed (best of ``--repeats``), and the table gives its wall time, its FLOPs,
the achieved GFLOP/s and its wall time and FLOPs as ratios to the MAP's. A method whose
wall-time ratio is far above its FLOPs ratio spends its time outside the gradients (Python
loops, host transfers, compilation not cached between calls).

Run: ``python benchmarks/ch10_wall_time.py [--problem banana] [--profile quick]
[--methods MAP "linearised LA"] [--repeats 1] [--clock cpu]`` (prints one table).
"""

from __future__ import annotations

import argparse
import time

import jax

from bnn_posteriors.evaluation import cost
from bnn_posteriors.site import profiles, tables
from bnn_posteriors.studies.ch10_reference_posteriors import problems, score

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def timed_fit(method: str, prob, settings, repeats: int, clock) -> tuple[float, float]:
    """(best seconds of ``repeats`` fits after a first, compiling one, the fit's FLOPs)."""
    key = score.method_key(0, prob.name)

    def fit():
        out = score.METHODS[method](key, prob, **settings)
        jax.block_until_ready(next(iter(out.predictive["test"].values())))
        return out

    first = fit()
    times = []
    for _ in range(repeats):
        t0 = clock()
        fit()
        times.append(clock() - t0)
    grad = cost.gradient_flops(prob.spec, prob.x_train, prob.y_train)
    return min(times), first.gradient_evaluations * grad + first.extra_flops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="snelson_gap")
    parser.add_argument("--profile", default="quick", help="whose budgets (quick or full)")
    parser.add_argument("--methods", nargs="+", help="default: every method of the chapter")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = parser.parse_args()
    cfg = profiles.settings("10_reference_posteriors", args.profile)
    prob = problems.problem(args.problem)
    methods = args.methods or list(cfg.methods)
    if "MAP" not in methods:
        methods = ["MAP", *methods]  # the ratios' unit
    results = {}
    for method in methods:
        try:
            results[method] = timed_fit(
                method, prob, cfg.methods[method], args.repeats, CLOCKS[args.clock]
            )
        except score.DoesNotApply as error:
            print(f"{method}: does not apply ({error})")
            continue
        print(f"{method}: {results[method][0]:.2f} s", flush=True)
    base_s, base_flops = results["MAP"]
    rows = [
        [
            m,
            f"{s:.2f}",
            f"{f:.3g}",
            f"{f / s / 1e9:.2f}",
            f"{s / base_s:.2f}",
            f"{f / base_flops:.2f}",
        ]
        for m, (s, f) in results.items()
    ]
    header = ["method", f"{args.clock} s", "FLOPs", "GFLOP/s", "time / MAP", "FLOPs / MAP"]
    print(f"\n{args.problem}, {args.profile} budgets, {jax.default_backend()}")
    print(tables.markdown_table(header, rows))


if __name__ == "__main__":
    main()
