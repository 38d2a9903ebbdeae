"""Chapters executed with JAX's persistent compilation cache keeping every program, against
JAX's default of keeping only those that took a second or more to compile, side by side.

JAX looks a program up in its persistent cache by a hash of its HLO and compile options,
so a program compiled again (a new jitted closure, a function called anew with the same
shapes) is read from disk instead of compiled, even within one process. By default it
writes only the programs whose compilation took at least
``jax_persistent_cache_min_compile_time_secs`` = 1 s; on a chapter of short programs almost
none are kept. The Makefile sets ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0``. A cached
program is the same compiled executable, so the chapter's claim records do not change
(this script checks that too).

Each chapter runs in its own kernel (as ``bnn-posteriors run``), twice per setting: first with
an empty cache folder (a fresh clone: what CI pays), then with the folder that run left
(a second build). Prints seconds, the cached programs and the ratios to the default.

Run: ``python benchmarks/compilation_cache.py [book/03_symmetries.md ...]``
(default: chapter 3, the chapter whose second execution CI's determinism test repeats).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.site import tables
from bnn_posteriors.site.execute import environ, run_chapter

# JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS of each setting (JAX's default is 1 s)
SETTINGS = {"default (1 s)": "1", "every program (0 s)": "0"}


def timed_run(chapter: Path, cache: Path, min_seconds: str, out: Path) -> float:
    """Seconds of one execution of ``chapter`` (its own kernel) with the cache ``cache``."""
    variables = {
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": min_seconds,
        "BNN_CLAIMS_DIR": str(out),
    }
    t0 = time.perf_counter()
    with environ(variables):
        code = run_chapter(chapter, out=out)
    if code != 0:
        raise RuntimeError(f"{chapter} failed (exit {code})")
    return time.perf_counter() - t0


def claim_values(out: Path) -> list[tuple]:
    """(id, finding, value) of every claim record the run wrote under ``out``."""
    records = [r for path in sorted(out.rglob("*.jsonl")) for r in claims.read_jsonl(path)]
    return [(r["id"], r["finding"], r["value"]) for r in records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, default=[Path("book/03_symmetries.md")])
    args = parser.parse_args()
    rows = []
    for chapter in args.chapters:
        seconds, values = {}, {}
        for name, min_seconds in SETTINGS.items():
            with tempfile.TemporaryDirectory() as tmp:
                cache, out = Path(tmp) / "cache", Path(tmp) / "out"
                cold = timed_run(chapter, cache, min_seconds, out / "cold")
                warm = timed_run(chapter, cache, min_seconds, out / "warm")
                seconds[name] = (cold, warm, sum(1 for _ in cache.glob("*")))
                values[name] = (claim_values(out / "cold"), claim_values(out / "warm"))
                if not all(values[name]):
                    raise RuntimeError(f"{chapter} wrote no claim records: nothing to compare")
        same = len({repr(v) for pair in values.values() for v in pair}) == 1
        base_cold, base_warm, _ = seconds["default (1 s)"]
        for name, (cold, warm, files) in seconds.items():
            ratios = (f"{cold / base_cold:.2f}", f"{warm / base_warm:.2f}")
            times = (f"{cold:.0f}", f"{warm:.0f}", str(files))
            rows.append((chapter.stem, name, *times, *ratios, "yes" if same else "NO"))
    header = ("chapter", "cache keeps", "empty cache (s)", "second run (s)", "cache files")
    header += ("ratio, empty", "ratio, second", "same claim values")
    print(tables.markdown_table(header, rows))


if __name__ == "__main__":
    main()
