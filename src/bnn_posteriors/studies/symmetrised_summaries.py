"""Chapter 5's summaries of [SYM] built on :mod:`.symmetrised_experiments`: the repeats of the
ELBO identity and the curves of I and its bound Î_K (C5.2), where NUTS draws sit among the
permuted copies of q, and the verdict on MNIST's gains (C5.4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import numpy as np

from .. import models, tables
from ..inference import mcmc, permutations
from ..inference import mean_field_family as mf
from ..inference import symmetrised as sym
from . import symmetrised_experiments as sx


def identity_repeats(rng_key, q: dict, x, y, *, repeats: int, num_samples: int,
                     fp_floor: float, **model_kw) -> dict:  # fmt: skip
    """:func:`sx.identity_test` repeated: repeat 0 with ``rng_key``, repeat r with
    ``fold_in(rng_key, r)``. Returns each of its values as an array over the repeats."""
    keys = [rng_key] + [jax.random.fold_in(rng_key, r) for r in range(1, repeats)]
    runs = [sx.identity_test(k, q, x, y, num_samples=num_samples, fp_floor=fp_floor, **model_kw)
            for k in keys]  # fmt: skip
    return {name: np.array([r[name] for r in runs]) for name in runs[0]}


def mi_curves(rng_key, q: dict, *, width: int, separations: Sequence[float], ks: tuple,
              infonce_samples: int, num_samples: int) -> dict:  # fmt: skip
    """I along the separation of the units, and the bound Î_K of the fit ``q`` (C5.2).

    A base q of ``width`` units with random means (keys ``fold_in(rng_key, 0..1)``) gives
    :func:`sx.separation_curve` (key 2) and its unsaturated steps; ``q`` gives Î_K for each
    K of ``ks`` with its s.e. (key 3), the gap Î_K − I paired on the same draws (key 4) and
    the exact I (key 3). Returns ``separation`` (len, 2), ``step_z``, ``unsaturated``,
    ``infonce`` (K, 2), ``infonce_z`` ((Î_K − I) / s.e.) and ``mi`` (I, s.e.).
    """
    base = mf.init_mean_field(rng_key, (1, width, 1), loc_scale=1.0, init_scale=0.3)
    base["loc"][0]["b"] = jax.random.normal(jax.random.fold_in(rng_key, 1), (width,))
    separation = sx.separation_curve(jax.random.fold_in(rng_key, 2), base, separations,
                                     num_samples)  # fmt: skip
    curve = jax.jit(sym.infonce_curve, static_argnums=(2, 3), static_argnames="paired")
    key_3, key_4 = jax.random.fold_in(rng_key, 3), jax.random.fold_in(rng_key, 4)
    infonce = np.stack([np.asarray(v) for v in curve(key_3, q, ks, infonce_samples)], 1)
    gap_k = np.stack([np.asarray(v) for v in curve(key_4, q, ks, infonce_samples, paired=True)],
                     1)  # fmt: skip
    step_z, unsaturated = sx.separation_steps(separation, math.lgamma(width + 1))
    return {
        "separation": separation,
        "step_z": step_z,
        "unsaturated": unsaturated,
        "infonce": infonce,
        "infonce_z": gap_k[:, 0] / gap_k[:, 1],
        "mi": [float(v) for v in sym.mutual_information(key_3, q, num_samples)],
    }


def nuts_arrangements(
    rng_key, q: dict, x, y, *, width: int, num_chains: int, num_warmup: int, num_samples: int,
    target_acceptance_rate: float, **model_kw,
) -> dict:  # fmt: skip
    """NUTS on the one-hidden-layer network, and which permuted copy g·q fits each draw best.

    ``model_kw``: activation, prior and noise scales of :func:`models.mlp_regression`. Draws
    of q and of q_G from ``fold_in(rng_key, 1)`` (q_G: g·ω₀ for the same ω₀) as many as
    NUTS's. Returns ``draws`` (chains, draws, ...), ``stats``, ``q_draws``, ``qg_draws``,
    ``moved`` (share of draws best matched by g ≠ e), ``chain_modes`` (each chain's most
    frequent arrangement) and ``stay`` (the mean share of a chain's draws in its own).
    """
    draws, stats = mcmc.nuts(
        rng_key, models.mlp_regression, dict(x=x, y=y, widths=(1, width, 1), **model_kw),
        num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples,
        target_acceptance_rate=target_acceptance_rate,
    )  # fmt: skip
    flat = [{k: draws[f"{k}{i}"].reshape(-1, *draws[f"{k}{i}"].shape[2:]) for k in "Wb"}
            for i in range(2)]  # fmt: skip
    n_draw = num_chains * num_samples
    k_draws = jax.random.fold_in(rng_key, 1)
    group = permutations.permutation_group(width)
    nearest = sx.nearest_arrangement(q, flat, group)
    per_chain = nearest.reshape(num_chains, num_samples)
    modes = [int(np.bincount(c, minlength=len(group)).argmax()) for c in per_chain]
    return {
        "draws": draws,
        "stats": stats,
        "q_draws": mf.sample_mean_field(jax.random.split(k_draws)[0], q, n_draw),
        "qg_draws": sym.sample_symmetrised(k_draws, q, n_draw),
        "moved": float(np.mean(nearest != 0)),
        "chain_modes": modes,
        "stay": float(np.mean([np.mean(c == m) for c, m in zip(per_chain, modes, strict=True)])),
    }


def mnist_verdict(mean_gain: dict, gain: dict, *, widths: Sequence[int], tie: float) -> dict:
    """C5.4 on MNIST: the test log-lik gains against ≥ −``tie`` at every width and > ``tie`` at
    the largest. ``mean_gain``: :func:`sx.mean_gains`; ``gain``: :func:`sx.gains`. Returns the
    ``bounds``, ``passes``, and the sentences ``verdict`` and ``tie_text`` of the prose."""
    ll = mean_gain["test_ll"]
    bounds = np.array([-tie] * (len(widths) - 1) + [tie])
    passes = bool(np.all(ll > bounds))
    seeds = np.concatenate([g["test_ll"] for g in gain.values()])
    verdict = (f"{'holds' if passes else 'does not reproduce as stated'} (test log-likelihood "
               f"gains {tables.number_list(ll, '+.4f')} nats per point)")  # fmt: skip
    if np.all(np.abs(seeds) <= tie):
        tie_text = ("the paired runs end at the same q (every gain per seed is within 1e-6 of 0), "
                    "so a failure is a tie at every seed rather than noise that could fall either "
                    "way")  # fmt: skip
    else:
        tie_text = (f"the paired runs end at different q, with gains per seed from "
                    f"{seeds.min():+.4f} to {seeds.max():+.4f} nats per point")  # fmt: skip
    return {"bounds": bounds, "passes": passes, "verdict": verdict, "tie_text": tie_text}
