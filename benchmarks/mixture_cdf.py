"""The regression distances' cost: SciPy's float64 ``ndtr`` against the package's XLA float32
:func:`bnn_posteriors.evaluation.fidelity.mixture_cdf`, side by side in one run.

:func:`.fidelity.regression_distances` tabulates, at each test input, the CDF of a
reference's Gaussian mixture of R draws on a grid of G points (R × G normal CDFs); scoring a
method on snelson_gap does it 104 times (52 inputs, the method's mixture and the
reference's). This script times both implementations on a reference's shape (1 600 draws ×
2 048 points), after one call each to compile, and prints their ratio and the largest
absolute difference of the CDFs.

Run: ``python benchmarks/mixture_cdf.py [--draws 1600] [--grid 2048] [--inputs 52]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

from bnn_posteriors.evaluation import fidelity


def scipy_cdf(grid, f, scale):
    return special.ndtr((grid[None, :] - f[:, None]) / scale[:, None]).mean(axis=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1600)
    parser.add_argument("--grid", type=int, default=2048)
    parser.add_argument("--inputs", type=int, default=52)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    f = rng.normal(size=(args.inputs, args.draws))
    scale = np.exp(rng.normal(-1.0, 0.2, size=(args.inputs, args.draws)))
    grids = [
        np.linspace((m - 8 * s).min(), (m + 8 * s).max(), args.grid)
        for m, s in zip(f, scale, strict=True)
    ]
    rows, out = {}, {}
    for name, cdf in (("scipy float64", scipy_cdf), ("XLA float32", fidelity.mixture_cdf)):
        cdf(grids[0], f[0], scale[0])  # compile
        t0 = time.perf_counter()
        out[name] = [cdf(g, m, s) for g, m, s in zip(grids, f, scale, strict=True)]
        rows[name] = time.perf_counter() - t0
    base = rows["scipy float64"]
    for name, seconds in rows.items():
        print(f"{name:14s} {seconds:7.3f} s  ratio to SciPy {seconds / base:6.3f}")
    gap = max(np.abs(a - b).max() for a, b in zip(*out.values(), strict=True))
    print(f"largest |CDF difference| {gap:.2e}")


if __name__ == "__main__":
    main()
