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

Each chapter runs in its own ``bnn-posteriors run`` process, twice per setting: first with
an empty cache folder (a fresh clone: what CI pays), then with the folder that run left
(a second build). Prints seconds, the cached programs and the ratios to the default.

Run: ``python benchmarks/compilation_cache.py [book/03_symmetries.md ...]``
(default: chapter 3, the chapter whose second execution CI's determinism test repeats).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bnn_posteriors.site import tables

SETTINGS = {"default (1 s)": None, "every program (0 s)": "0"}


def run_chapter(chapter: Path, cache: Path, min_seconds: str | None, out: Path) -> float:
    """Seconds of one ``bnn-posteriors run`` of ``chapter`` with the cache folder ``cache``."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache), "BNN_CLAIMS_DIR": str(out)}
    env.pop("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", None)
    if min_seconds is not None:
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = min_seconds
    cmd = [sys.executable, "-m", "bnn_posteriors", "run", str(chapter), "--out", str(out)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{chapter} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def claim_values(out: Path) -> list[tuple]:
    """(id, finding, value) of every claim record the runs wrote under ``out``."""
    rows = []
    for path in sorted(out.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            rows.append((record["id"], record["finding"], record["value"]))
    return rows


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
                cold = run_chapter(chapter, cache, min_seconds, out / "cold")
                warm = run_chapter(chapter, cache, min_seconds, out / "warm")
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
