"""Many chains ([SAP] §4.3, Figs. 1, 5 and 7; claims C7.3 and C7.4).

Thousands of MILE chains of the authors' two-output (heteroscedastic) network, each warm
started from its own deep-ensemble member: how the test LPPD grows with the number of chains
(Fig. 5), and how close each layer's pooled kernel marginal comes to the prior N(0, 1)
(Figs. 1, 7), by KS distances with a bootstrap over chains.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from bnn_posteriors import diagnostics, metrics
from bnn_posteriors.inference import ensembles, mile


def many_chain_run(
    rng_keys, split, *, hidden: Sequence[int], n_chains: int, ensemble: dict, **bde_kwargs
) -> dict:
    """``n_chains`` MILE chains of the two-output network, one per deep-ensemble member.

    ``rng_keys``: the keys of the ensemble and of the chains; ``hidden`` the hidden widths;
    ``ensemble`` the settings of :func:`ensembles.train_ensemble`; ``bde_kwargs`` go to
    :func:`mile.run_bde`. Returns the run ``many``, the test-set ``mean`` and ``sigma``
    (chains, samples, n), ``ess`` (the median within-chain ESS of the log density),
    ``widths`` and ``seconds``.
    """
    key_de, key_chains = rng_keys
    widths = (split.x_train.shape[1], *hidden, 2)  # mean and log scale
    members, _ = ensembles.train_ensemble(
        key_de, split.x_train, split.y_train, split.x_val, split.y_val,
        widths=widths, n_members=n_chains, heteroscedastic=True, **ensemble,
    )  # fmt: skip
    start = time.perf_counter()
    many = mile.run_bde(
        key_chains, split.x_train, split.y_train,
        mile.warm_start_positions(members, heteroscedastic=True),
        widths=widths, heteroscedastic=True, **bde_kwargs,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    mean, sigma = (np.asarray(a) for a in mile.predict(many["samples"], split.x_test))
    ess = diagnostics.within_chain_ess(np.asarray(many["logdensity"])[..., None])
    return {"many": many, "mean": mean, "sigma": sigma, "ess": ess, "widths": widths,
            "seconds": seconds}  # fmt: skip


def chain_saturation(rng, y, mean, sigma, *, n_orderings: int) -> dict:
    """Test LPPD against the number of chains, averaged over random orderings (Fig. 5).

    :func:`metrics.cumulative_lppd` of ``n_orderings`` orderings; returns ``cum``
    (orderings, chains), its mean ``cum_mean``, the LPPD at 1, 10 and all chains and the
    gains from 1 to 10 and from 10 to all chains (C7.3: they decrease).
    """
    cum = metrics.cumulative_lppd(rng, y, mean, sigma, n_orderings=n_orderings)
    cum_mean = cum.mean(axis=0)
    lppd_1, lppd_10, lppd_max = (float(cum_mean[i]) for i in (0, 9, -1))
    return {"cum": cum, "cum_mean": cum_mean, "lppd_1": lppd_1, "lppd_10": lppd_10,
            "lppd_max": lppd_max, "gain_1_10": lppd_10 - lppd_1,
            "gain_10_max": lppd_max - lppd_10}  # fmt: skip


def kernel_marginals(rng, samples: dict, *, num_resamples: int) -> dict:
    """KS distances of the pooled layer marginals to N(0, 1) and the gap Δ_KS (Figs. 1, 7).

    ``samples``: MILE samples with sites ``W{i}``, ``b{i}`` (chains, samples, ...). Each
    kernel's distance is taken on the grid of :func:`diagnostics.chain_ecdf` (within
    1/G below the exact distance; checked on the last, smallest kernel), each bias's
    exactly. Returns ``ks`` and ``ks_bias`` per layer, ``inner`` (mean over the
    intermediate kernels), ``outer`` (the smaller of the first and the last), the gap
    ``gap`` = outer − inner and its 95 % bootstrap interval over chains ``low``, ``high``
    (:func:`diagnostics.ks_gap_bootstrap`, ``rng`` a NumPy Generator).
    """
    n_layers = sum(1 for k in samples if k.startswith("W"))
    n_chains = samples["W0"].shape[0]
    ecdfs = [diagnostics.chain_ecdf(samples[f"W{i}"]) for i in range(n_layers)]
    ks = [diagnostics.ks_weighted(e, np.ones(n_chains)) for e in ecdfs]
    ks_bias = [metrics.ks_to_normal(np.asarray(samples[f"b{i}"])) for i in range(n_layers)]
    grid_error = metrics.ks_to_normal(np.asarray(samples[f"W{n_layers - 1}"])) - ks[-1]
    if not -1e-9 <= grid_error <= 1 / diagnostics.KS_GRID:
        raise RuntimeError(f"the grid's KS distance is off by {grid_error}, beyond 1/G")
    low, high = diagnostics.ks_gap_bootstrap(rng, ecdfs, n_chains, num_resamples=num_resamples)
    inner = float(np.mean(ks[1:-1]))
    outer = float(min(ks[0], ks[-1]))
    return {"ks": ks, "ks_bias": ks_bias, "inner": inner, "outer": outer,
            "gap": outer - inner, "low": low, "high": high}  # fmt: skip
