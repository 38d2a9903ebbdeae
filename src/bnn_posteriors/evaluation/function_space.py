"""Whether chains mixed in function space: diagnostics of their predictions at test points.

Weight-space R-hat of a neural network is meaningless (permuted and sign-flipped modes are
the same function), so a reference posterior is judged on what it predicts ([SAP] §4;
Izmailov et al. 2021 §4 judge HMC by the R-hat of its predictions). At each test point:
ArviZ's rank-normalised split R-hat and bulk ESS (Vehtari et al. 2021;
:func:`bnn_posteriors.evaluation.diagnostics.rhat` and ``ess``) of the prediction over
(chain, draw), and the agreement between the chains' own predictives:

- regression: the sd over chains of each chain's mean f(x), relative to the pooled
  predictive sd √(Var f + E σ²) (``between_sd_ratio``; about 1/√(ESS per chain) when the
  chains sample one law, of order one when they sit in different modes);
- classification: the total variation ½ Σ_c |p_k(c|x) − p(c|x)| between each chain's
  predictive and the pooled one (``max_tv``), and the agreement of their top classes.

The rule takes the largest R-hat over every monitored quantity, so it has to allow for how
many there are: over 2 000 quantities, exact independent draws of 16 chains × 100 draws have
a median largest R-hat of about 1.012 (a check of this module's tests), above Vehtari et al.'s
1.01 meant for one quantity. :func:`rhat_bound` is the largest R-hat that exact draws stay
below with probability :data:`RHAT_LEVEL` over that many quantities; the rule is the larger of
it and 1.01.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import stats

from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.util import validate

RHAT_MAX = 1.01  # Vehtari et al. (2021): R-hat below 1.01
ESS_MIN = 400  # Vehtari et al. (2021): bulk ESS above 100 per chain of four chains
RHAT_LEVEL = 0.99  # exact independent draws pass the R-hat rule with this probability


def rhat_bound(
    num_chains: int, num_draws: int, num_quantities: int, *, level: float = RHAT_LEVEL
) -> float:
    """The largest R-hat that exact independent draws of ``num_quantities`` quantities, each
    over ``num_chains`` chains of ``num_draws`` draws, stay below with probability ``level``.

    Split R-hat of M = 2·``num_chains`` half-chains of n = ``num_draws``/2 exact draws is
    R̂² ≈ 1 + (B/W − 1)/n, where (M − 1)·B/W ~ χ²(M − 1) (the between-chain variance of chain
    means over the within-chain variance; Gelman & Rubin 1992). ArviZ's rank-normalised R-hat
    is the larger of the bulk and the folded R-hat, so the bound takes the ``level`` quantile
    of the largest of 2·``num_quantities`` independent such values:
    χ²(M − 1) at ``level``^(1 / (2·num_quantities)). Quantities that are correlated make the
    largest R-hat smaller, so the bound errs on the side of passing exact draws.
    """
    where = "rhat_bound"
    num_chains = validate.positive_int("num_chains", num_chains, 2, where=where)
    num_draws = validate.positive_int("num_draws", num_draws, 4, where=where)
    num_quantities = validate.positive_int("num_quantities", num_quantities, where=where)
    if not 0 < level < 1:
        raise ValueError(f"{where}: level must lie in (0, 1), got {level}")
    dof = 2 * num_chains - 1
    chi2 = stats.chi2.ppf(level ** (1 / (2 * num_quantities)), dof)
    return float(np.sqrt(1 + (chi2 / dof - 1) / (num_draws // 2)))


def verdict(
    summary: Mapping,
    *,
    num_chains: int,
    num_draws: int,
    num_quantities: int,
    rhat_max: float = RHAT_MAX,
    ess_min: float = ESS_MIN,
) -> dict:
    """Whether the chains of ``summary`` (the summaries of :func:`regression_mixing` or
    :func:`classification_mixing`) mixed: the largest R-hat of the ``num_quantities``
    predictions at most the larger of ``rhat_max`` and :func:`rhat_bound`, the noise scale's
    (one quantity) at most ``rhat_max``, and every bulk ESS at least ``ess_min``.

    Returns ``{"rhat_bound", "num_quantities", "mixed", "reasons"}`` (``reasons``: what
    failed). A stored summary is judged again by today's rule this way."""
    bound = max(rhat_max, rhat_bound(num_chains, num_draws, num_quantities))
    reasons = []
    for key, limit in (("max_rhat", bound), ("noise_scale_rhat", rhat_max)):
        if key in summary and not summary[key] <= limit:
            reasons.append(f"{key} {summary[key]:.4f} > {limit:.4f}")
    for key in ("min_ess", "noise_scale_ess"):
        if key in summary and not summary[key] >= ess_min:
            reasons.append(f"{key} {summary[key]:.0f} < {ess_min}")
    return {
        "rhat_bound": bound,
        "num_quantities": int(num_quantities),
        "mixed": not reasons,
        "reasons": reasons,
    }


def _rhat_ess(draws) -> tuple[np.ndarray, np.ndarray]:
    """R-hat and bulk ESS of every component; components constant over all draws (saturated
    probabilities) have no R-hat and are left out (NaN)."""
    draws = np.asarray(draws, dtype=np.float64)
    flat = draws.reshape(*draws.shape[:2], -1)
    constant = np.ptp(flat, axis=(0, 1)) == 0
    rhat = np.full(flat.shape[2], np.nan)
    ess = np.full(flat.shape[2], np.nan)
    if (~constant).any():
        rhat[~constant] = diagnostics.rhat(flat[..., ~constant])
        ess[~constant] = diagnostics.ess(flat[..., ~constant])
    return rhat, ess


def _check(draws, name: str, ndim: int) -> np.ndarray:
    draws = np.asarray(draws)
    if draws.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes (chain, draw, ...), got {draws.shape}")
    if draws.shape[0] < 2:
        raise ValueError(f"{name}: function-space mixing needs at least 2 chains, got 1")
    return draws


def regression_mixing(f, noise_scale) -> dict:
    """Mixing of a regression predictive: ``f`` (chain, draw, n) the mean outputs,
    ``noise_scale`` (chain, draw) or (chain, draw, n).

    Returns per point ``rhat``, ``ess`` and ``between_sd_ratio`` (n,), and their summaries
    ``max_rhat``, ``min_ess``, ``median_ess``, ``max_between_sd_ratio``, with the R-hat and
    ESS of the noise scale (its largest R-hat, smallest ESS).
    """
    f = _check(f, "f", 3)
    noise_scale = np.asarray(noise_scale, dtype=np.float64)
    if noise_scale.shape not in (f.shape[:2], f.shape):
        raise ValueError(f"noise_scale must be {f.shape[:2]} or {f.shape}, got {noise_scale.shape}")
    rhat, ess = _rhat_ess(f)
    f64 = f.astype(np.float64)
    sigma2 = noise_scale**2 if noise_scale.ndim == 3 else noise_scale[..., None] ** 2
    pooled_sd = np.sqrt(f64.var(axis=(0, 1)) + np.broadcast_to(sigma2, f.shape).mean(axis=(0, 1)))
    ratio = f64.mean(axis=1).std(axis=0, ddof=1) / pooled_sd
    rhat_s, ess_s = _rhat_ess(noise_scale)
    return {
        "rhat": rhat,
        "ess": ess,
        "between_sd_ratio": ratio,
        "max_rhat": float(np.nanmax(rhat)),
        "min_ess": float(np.nanmin(ess)),
        "median_ess": float(np.nanmedian(ess)),
        "max_between_sd_ratio": float(ratio.max()),
        "noise_scale_rhat": float(np.nanmax(rhat_s)),
        "noise_scale_ess": float(np.nanmin(ess_s)),
    }


def _worst(values, pick) -> np.ndarray:
    """``pick`` (nanmax or nanmin) over the last axis; NaN where every entry is NaN."""
    out = np.full(values.shape[:-1], np.nan)
    some = ~np.isnan(values).all(axis=-1)
    out[some] = pick(values[some], axis=-1)
    return out


def classification_mixing(probs) -> dict:
    """Mixing of a classification predictive: ``probs`` (chain, draw, n, C).

    Returns per point ``rhat`` and ``ess`` (the worst class: largest R-hat, smallest ESS;
    NaN at a point whose probabilities are equal in every draw),
    ``max_tv`` (n,) the largest total variation between a chain's predictive and the pooled
    one; their summaries ``max_rhat``, ``min_ess``, ``median_ess``, ``max_tv``, ``mean_tv``,
    ``min_agreement`` (over chains, the fraction of points where the chain's top class is
    the pooled one) and ``constant_components`` (class probabilities equal in every draw,
    without an R-hat).
    """
    probs = _check(probs, "probs", 4)
    rhat, ess = (a.reshape(probs.shape[2:]) for a in _rhat_ess(probs))
    per_chain = probs.astype(np.float64).mean(axis=1)  # (chain, n, C)
    pooled = per_chain.mean(axis=0)
    tv = 0.5 * np.abs(per_chain - pooled).sum(axis=-1)  # (chain, n)
    agreement = (per_chain.argmax(-1) == pooled.argmax(-1)).mean(axis=1)
    return {
        "rhat": _worst(rhat, np.nanmax),
        "ess": _worst(ess, np.nanmin),
        "max_tv": tv.max(axis=0),
        "max_rhat": float(np.nanmax(rhat)),
        "min_ess": float(np.nanmin(ess)),
        "median_ess": float(np.nanmedian(ess)),
        "max_tv_overall": float(tv.max()),
        "mean_tv": float(tv.mean()),
        "min_agreement": float(agreement.min()),
        "constant_components": int(np.isnan(rhat).sum()),
    }


def mixing(predictive: Mapping, *, rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN) -> dict:
    """Function-space mixing of a predictive of :func:`bnn_posteriors.inference.reference.
    predictive` (``{"f", "noise_scale"}`` or ``{"probs"}``).

    Returns the summaries of :func:`regression_mixing` or :func:`classification_mixing`
    (per-point arrays left out) with the :func:`verdict` on them: ``mixed``, ``reasons``,
    ``rhat_bound`` and ``num_quantities`` (the predictions with an R-hat).
    """
    if "probs" in predictive:
        draws = np.asarray(predictive["probs"])
        full = classification_mixing(draws)
        num_quantities = int(np.prod(draws.shape[2:])) - full["constant_components"]
    elif {"f", "noise_scale"} <= set(predictive):
        draws = np.asarray(predictive["f"])
        full = regression_mixing(draws, predictive["noise_scale"])
        num_quantities = int(np.isfinite(full["rhat"]).sum())
    else:
        raise ValueError(
            f"a predictive holds 'probs' or 'f' and 'noise_scale', got {sorted(predictive)}"
        )
    summary = {k: v for k, v in full.items() if not isinstance(v, np.ndarray)}
    judged = verdict(
        summary,
        num_chains=draws.shape[0],
        num_draws=draws.shape[1],
        num_quantities=max(num_quantities, 1),
        rhat_max=rhat_max,
        ess_min=ess_min,
    )
    return {**summary, **judged}
