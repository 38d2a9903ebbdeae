"""Within-chain functional diversity ([SAP] §4.2, App. D.5, Figs. 4 and 11; claim C7.2).

Do the samples of one MILE chain predict different functions? Per chain, the Z test of App.
D.5 on every pair of sample predictives; across chains, the within-chain share ρ_W of the
functional variance (mean within-chain over mean between-chain W₂²) with a bootstrap
interval over chains; and two controls that the statistics tell diversity from its absence.
"""

from __future__ import annotations

import numpy as np

from bnn_posteriors.evaluation import diagnostics, metrics

SIGNIFICANT = 1.96  # |Z| above it: the pair's predictives differ at the 5 % level


def within_chain_z(mean, sigma) -> dict:
    """Z tests of App. D.5 on the sample pairs of each chain: ``mean`` (K, S, n), ``sigma`` (K, S).

    Returns ``z_first`` and ``w2_first`` (S, S) of chain 0 (Fig. 4), ``frac_by_chain`` (K,):
    the share of its pairs s ≠ t with |Z| > 1.96, ``frac_significant`` their mean and
    ``frac_significant_paper`` the same share with eq. (22) as printed.
    """
    mean, sigma = np.asarray(mean), np.asarray(sigma)
    off = ~np.eye(mean.shape[1], dtype=bool)
    z = np.stack([metrics.w2_z_test(m, s) for m, s in zip(mean, sigma, strict=True)])
    z_paper = np.stack(
        [metrics.w2_z_test(m, s, paper_formula=True) for m, s in zip(mean, sigma, strict=True)]
    )
    frac_by_chain = np.mean(np.abs(z[:, off]) > SIGNIFICANT, axis=1)
    return {
        "z_first": z[0],
        "w2_first": metrics.w2_squared_gaussian(mean[0], sigma[0]),
        "frac_by_chain": frac_by_chain,
        "frac_significant": float(frac_by_chain.mean()),
        "frac_significant_paper": float(np.mean(np.abs(z_paper[:, off]) > SIGNIFICANT)),
    }


def w2_ratio(rng_key, mean, sigma, *, num_resamples: int) -> dict:
    """ρ_W, the within-chain share of the functional variance, with its chain bootstrap.

    ``mean`` (K, S, n), ``sigma`` (K, S). Returns ``w2_all`` (KS, KS), ``within`` (K,),
    ``ratio`` ρ_W, ``mean_within``, ``mean_between`` and the 95 % interval ``low``,
    ``high`` (:func:`diagnostics.w2_ratio_bootstrap`, ``num_resamples`` resamples).
    """
    w2_all, within, between, low, high = diagnostics.w2_ratio_bootstrap(
        rng_key, mean, sigma, num_resamples=num_resamples
    )
    ratio, mean_within, mean_between = metrics.within_between_ratio(within, between)
    return {
        "w2_all": w2_all,
        "within": within,
        "ratio": ratio,
        "mean_within": mean_within,
        "mean_between": mean_between,
        "low": low,
        "high": high,
    }


def diversity_controls(rng, rng_key, mean, sigma, *, noise: float, num_resamples: int) -> dict:
    """:func:`within_chain_z` and :func:`w2_ratio` on two controls of known answer.

    *Near copies*: every sample of chain k is its first sample plus N(0, ``noise``²) noise
    on each prediction (no diversity within chains: few significant pairs, ρ_W near 0).
    *Mixed chains*: all samples shuffled across chains (no chain structure: ρ_W near 1).
    ``rng`` (NumPy Generator) draws the noise and the shuffle; ``rng_key`` the bootstraps.
    Returns ``copies_frac`` and the intervals ``copies_low``, ``copies_high``,
    ``mixed_low``, ``mixed_high``.
    """
    mean, sigma = np.asarray(mean), np.asarray(sigma)
    off = ~np.eye(mean.shape[1], dtype=bool)
    copies = mean[:, :1] + noise * rng.normal(size=mean.shape)
    copies_sigma = np.repeat(sigma[:, :1], mean.shape[1], axis=1)
    z = np.stack([metrics.w2_z_test(m, s) for m, s in zip(copies, copies_sigma, strict=True)])
    *_, copies_low, copies_high = diagnostics.w2_ratio_bootstrap(
        rng_key, copies, copies_sigma, num_resamples=num_resamples
    )
    shuffle = rng.permutation(mean.shape[0] * mean.shape[1])
    mixed = mean.reshape(-1, mean.shape[2])[shuffle].reshape(mean.shape)
    *_, mixed_low, mixed_high = diagnostics.w2_ratio_bootstrap(
        rng_key, mixed, sigma.reshape(-1)[shuffle], num_resamples=num_resamples
    )
    return {
        "copies_frac": float(np.mean(np.abs(z[:, off]) > SIGNIFICANT)),
        "copies_low": copies_low,
        "copies_high": copies_high,
        "mixed_low": mixed_low,
        "mixed_high": mixed_high,
    }
