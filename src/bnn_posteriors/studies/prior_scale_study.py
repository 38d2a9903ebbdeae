"""The prior-scale study of [SAP] App. D.6 (Fig. 12, claim C7.6) as one unit.

For each (data set, depth) cell a deep ensemble of warm starts is trained once; every scale
s of the grid runs one MILE chain from each warm start, all scales of a cell in one
vectorised :func:`bnn_posteriors.inference.mile.run_bde` call (one prior scale per chain),
so chain k at scale s and at scale 1 share their start (paired differences).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors import data, metrics
from bnn_posteriors.inference import ensembles, mile
from bnn_posteriors.validate import positive_int


def prior_scale_study(
    rng_key,
    datasets: Sequence[str],
    depths: Sequence[int],
    grid: Sequence[float],
    *,
    n_chains: int,
    split_seed: int,
    n_max: int | None,
    tuning_steps: int,
    sampling_steps: int,
    thinning: int,
    cache_dir=None,
    width: int = 16,
    **ensemble_kwargs,
):
    """Test LPPD and RMSE of MILE with prior N(0, s²) for every s of ``grid`` per cell.

    Cell (data set i, depth d) uses ``fold_in(rng_key, 10 i + d)`` for its ensemble of
    ``n_chains`` members (``ensemble_kwargs`` go to :func:`ensembles.train_ensemble`) and
    ``fold_in`` of that key with 1 for the chains; networks are d hidden layers of
    ``width`` units. Returns ``(rows, chain_lppd)``: rows (data set, depth, s, ensemble
    LPPD, RMSE of the ensemble mean), cell by cell and scale by scale, and per cell a
    (n_chains, len(grid)) list of single-chain LPPDs.
    """
    positive_int("n_chains", n_chains)
    grid = tuple(grid)
    rows, chain_lppd = [], []
    for d_i, name in enumerate(datasets):
        sp = data.load_split(name, split_seed, n_max=n_max)
        for depth in depths:
            widths = (sp.x_train.shape[1], *(width,) * depth, 1)
            key = jax.random.fold_in(rng_key, 10 * d_i + depth)
            warm, _ = ensembles.train_ensemble(
                key, sp.x_train, sp.y_train, sp.x_val, sp.y_val, widths=widths,
                n_members=n_chains, **ensemble_kwargs,
            )  # fmt: skip
            starts = mile.warm_start_positions(warm)
            out = mile.run_bde(  # chain i * n_chains + k: scale grid[i], warm start k
                jax.random.fold_in(key, 1), sp.x_train, sp.y_train,
                jax.tree.map(lambda a: jnp.concatenate([a] * len(grid)), starts),
                widths=widths, prior_scale=np.repeat(grid, n_chains),
                tuning_steps=tuning_steps, sampling_steps=sampling_steps,
                thinning=thinning, cache_dir=cache_dir,
            )  # fmt: skip
            m, s_ = (np.asarray(a) for a in mile.predict(out["samples"], sp.x_test))
            m = m.reshape(len(grid), n_chains, *m.shape[1:])
            s_ = s_.reshape(len(grid), n_chains, -1)
            for i, scale in enumerate(grid):
                rows.append((name, depth, scale,
                             float(metrics.lppd(sp.y_test, m[i], s_[i][..., None])),
                             float(metrics.rmse(sp.y_test, m[i].mean(axis=(0, 1))))))  # fmt: skip
            chain_lppd.append([[float(metrics.lppd(sp.y_test, m[i, k], s_[i, k][:, None]))
                                for i in range(len(grid))] for k in range(n_chains)])  # fmt: skip
    return rows, chain_lppd
