"""Many chains ([SAP] §4.3, Figs. 1, 5 and 7; claims C7.3 and C7.4).

Thousands of MILE chains of the authors' two-output (heteroscedastic) network, each warm
started from its own deep-ensemble member: how the test LPPD grows with the number of chains
(Fig. 5), and how close each layer's pooled kernel marginal comes to the prior N(0, 1)
(Figs. 1, 7), by KS distances with a bootstrap over chains. At the full budget a run takes
about half an hour of a 2-core CPU, so the runs of several seeds are committed one by one
(:func:`seed_study`) and read back (:func:`committed_seeds`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.inference import ensembles, mile
from bnn_posteriors.site.settings_classes import SamplingInPracticeSettings
from bnn_posteriors.store import parts, provenance
from bnn_posteriors.studies.ch07_sampling_in_practice.permuted_starts import ensemble_settings
from bnn_posteriors.util.validate import positive_int


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
        key_de,
        split.x_train,
        split.y_train,
        split.x_val,
        split.y_val,
        widths=widths,
        n_members=n_chains,
        heteroscedastic=True,
        **ensemble,
    )
    start = time.perf_counter()
    many = mile.run_bde(
        key_chains,
        split.x_train,
        split.y_train,
        mile.warm_start_positions(members, heteroscedastic=True),
        widths=widths,
        heteroscedastic=True,
        **bde_kwargs,
    )
    seconds = time.perf_counter() - start
    mean, sigma = (np.asarray(a) for a in mile.predict(many["samples"], split.x_test))
    ess = diagnostics.within_chain_ess(np.asarray(many["logdensity"])[..., None])
    return {
        "many": many,
        "mean": mean,
        "sigma": sigma,
        "ess": ess,
        "widths": widths,
        "seconds": seconds,
    }


def chain_saturation(rng, y, mean, sigma, *, n_orderings: int) -> dict:
    """Test LPPD against the number of chains, averaged over random orderings (Fig. 5).

    :func:`metrics.cumulative_lppd` of ``n_orderings`` orderings; returns ``cum``
    (orderings, chains), its mean ``cum_mean``, the LPPD at 1, 10 and all chains and the
    gains from 1 to 10 and from 10 to all chains (C7.3: they decrease).
    """
    cum = metrics.cumulative_lppd(rng, y, mean, sigma, n_orderings=n_orderings)
    cum_mean = cum.mean(axis=0)
    lppd_1, lppd_10, lppd_max = (float(cum_mean[i]) for i in (0, 9, -1))
    return {
        "cum": cum,
        "cum_mean": cum_mean,
        "lppd_1": lppd_1,
        "lppd_10": lppd_10,
        "lppd_max": lppd_max,
        "gain_1_10": lppd_10 - lppd_1,
        "gain_10_max": lppd_max - lppd_10,
    }


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
    return {
        "ks": ks,
        "ks_bias": ks_bias,
        "inner": inner,
        "outer": outer,
        "gap": outer - inner,
        "low": low,
        "high": high,
    }


# ------------------------------------------------------------------ committed runs per seed

# Version of a seed's run (its keys, what it stores): bump it when a run's result can change;
# MILE's own version is part of the settings.
SEED_VERSION = "many-chains-seed-1"


def seed_settings(cfg: SamplingInPracticeSettings, seed: int, n_chains: int) -> dict:
    """Everything that decides chapter 7's many-chain run (C7.3, C7.4) under ``seed``, as plain
    JSON values: the data, network, budgets and ensemble settings of ``cfg`` (the chapter's
    ``profiles.settings``), ``n_chains`` chains, and the computation's version."""
    return provenance.to_json(
        {
            "seed": int(seed),
            "dataset": cfg.dataset,
            "split_seed": cfg.split_seed,
            "hidden": list(cfg.hidden_many),
            "n_chains": positive_int("n_chains", n_chains),
            "prior_scale": cfg.prior_scale,
            "tuning_steps": cfg.tuning_steps_many,
            "sampling_steps": cfg.sampling_steps_many,
            "thinning": cfg.thinning,
            "n_orderings": cfg.n_orderings,
            "n_boot": cfg.n_boot,
            "ensemble": dict(sorted(ensemble_settings(cfg).items())),
            "version": f"{SEED_VERSION}/{mile.CACHE_VERSION}",
        }
    )


def seed_run(settings: dict, *, cache: bool | Path = False) -> dict:
    """Chapter 7's many-chain run under ``settings["seed"]`` with the chapter's keys and streams.

    The ensemble and the chains take the fourth and fifth of six keys split from
    ``PRNGKey(seed)``, and the orderings of C7.3 and the bootstrap of C7.4 draw in turn from
    ``default_rng(seed)``, as in the chapter, so the run of the chapter's seed is the
    chapter's. Returns ``settings``, ``lppd`` (at 1, 10 and all chains), ``gains``, the KS
    summary of :func:`kernel_marginals` (``ks``, ``ks_bias``, ``gap``, ``low``, ``high``),
    ``ess`` and ``wall_s``.
    """
    import jax

    start = time.perf_counter()
    s = settings
    split = data.load_split(s["dataset"], s["split_seed"])
    keys = jax.random.split(jax.random.PRNGKey(s["seed"]), 6)
    rng = np.random.default_rng(s["seed"])
    run = many_chain_run(
        (keys[3], keys[4]),
        split,
        hidden=s["hidden"],
        n_chains=s["n_chains"],
        ensemble=s["ensemble"],
        prior_scale=s["prior_scale"],
        tuning_steps=s["tuning_steps"],
        sampling_steps=s["sampling_steps"],
        thinning=s["thinning"],
        cache=cache,
    )
    sat = chain_saturation(
        rng, split.y_test, run["mean"], run["sigma"], n_orderings=s["n_orderings"]
    )
    ks = kernel_marginals(rng, run["many"]["samples"], num_resamples=s["n_boot"])
    return {
        "settings": s,
        "lppd": [sat["lppd_1"], sat["lppd_10"], sat["lppd_max"]],
        "gains": [sat["gain_1_10"], sat["gain_10_max"]],
        **{k: ks[k] for k in ("ks", "ks_bias", "gap", "low", "high")},
        "ess": float(run["ess"]),
        "wall_s": time.perf_counter() - start,
    }


def seed_name(settings: dict) -> str:
    """Name of one seed's part: ``seed<seed>_chains<n_chains>``."""
    return f"seed{settings['seed']}_chains{settings['n_chains']}"


def seed_path(directory: Path | str, settings: dict) -> Path:
    """File of one seed's run: ``<directory>/seed<seed>_chains<n_chains>.json``."""
    return parts.part_path(directory, seed_name(settings))


def seed_study(
    cfg: SamplingInPracticeSettings,
    seeds: Sequence[int],
    n_chains: int,
    *,
    results_dir=None,
    cache: bool | Path = False,
    profile: str | None = None,
    report=None,
) -> list[dict]:
    """:func:`seed_run` for every seed; with ``results_dir`` each run is written there as soon
    as it is done and read back by a later call with the same settings (``"read": True``).
    ``report`` is called with each run (a progress line)."""
    out = []
    for seed in seeds:
        s = seed_settings(cfg, seed, n_chains)
        run = parts.resumed_part(
            None if results_dir is None else seed_path(results_dir, s),
            s,
            lambda s=s: seed_run(s, cache=cache),
            profile=profile,
        )
        if report is not None:
            report(run)
        out.append(run)
    return out


def committed_seeds(cfg: SamplingInPracticeSettings, n_chains: int) -> list[dict] | None:
    """The committed runs of the seeds ``cfg.many_seeds`` (the chapter's full settings) with
    ``n_chains`` chains under ``results/<many_results>``; None unless all are there."""
    settings = [seed_settings(cfg, seed, n_chains) for seed in cfg.many_seeds]
    return parts.committed_parts(
        parts.committed_dir(cfg.many_results), {seed_name(s): s for s in settings}
    )
