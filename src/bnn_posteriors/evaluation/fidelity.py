"""How close an approximate predictive is to a reference posterior's predictive.

Izmailov et al. (2021, "What are Bayesian neural network posteriors really like?", §7) and
the NeurIPS 2021 BDL competition (izmailovpavel/neurips_bdl_starter_kit, ``metrics.py``)
score an approximation by the distance of its predictive to an HMC reference predictive:

- classification: the *agreement*, the fraction of test inputs where the two mean predictives
  pick the same top class, and the *total variation* ½ Σ_c |p(c|x) − p_ref(c|x)| averaged
  over the test inputs;
- regression: a distance between the two predictive laws of y at each test input, averaged
  over the inputs. The starter kit's ``w2_distance`` calls ``scipy.stats.wasserstein_distance``
  on 1 000 samples per input, which is the Wasserstein-1 distance despite its name; here the
  Wasserstein-2, the Wasserstein-1 (the competition's) and the Kolmogorov–Smirnov distance
  are computed from the two mixtures' exact CDFs on a grid (no sampling noise): the
  predictive of y at x is the mixture (1/S) Σ_s N(f_s(x), σ_s²) of the draws;
- both: the *energy distance* between the joint laws of the draws over all test inputs
  (:func:`energy_distance`), which the per-input distances above cannot see: a method can
  match every input's marginal and still get the correlations between inputs wrong.

A predictive is a dict in the format of :func:`bnn_posteriors.inference.reference.predictive`
with any number of leading draw axes (chain, draw) or one (draw): ``{"f", "noise_scale"}``
(regression) or ``{"probs"}`` (classification); :func:`pooled` merges the leading axes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import jax
import numpy as np

from bnn_posteriors.evaluation import metrics
from bnn_posteriors.util import validate


def pooled(predictive: Mapping, lead: int | None = None) -> dict[str, np.ndarray]:
    """The predictive with its leading draw axes merged into one, S = their product.

    ``lead``: the number of leading axes (default: 2 for a reference's (chain, draw), found
    from ``f``'s or ``probs``' rank). Regression: ``f`` (S, n) and ``noise_scale`` (S, n)
    (a per-draw σ broadcast over the inputs); classification: ``probs`` (S, n, C).
    """
    if "probs" in predictive:
        probs = np.asarray(predictive["probs"], dtype=np.float64)
        lead = probs.ndim - 2 if lead is None else lead
        if lead < 1 or probs.ndim != lead + 2:
            raise ValueError(f"probs must be (draws..., n, C), got {probs.shape}")
        return {"probs": probs.reshape(-1, *probs.shape[-2:])}
    if not {"f", "noise_scale"} <= set(predictive):
        raise ValueError(
            f"a predictive holds 'probs' or 'f' and 'noise_scale', got {sorted(predictive)}"
        )
    f = np.asarray(predictive["f"], dtype=np.float64)
    lead = f.ndim - 1 if lead is None else lead
    if lead < 1 or f.ndim != lead + 1:
        raise ValueError(f"f must be (draws..., n), got {f.shape}")
    scale = np.asarray(predictive["noise_scale"], dtype=np.float64)
    if scale.shape == f.shape[:lead]:
        scale = scale[..., None]
    elif scale.shape != f.shape:
        raise ValueError(f"noise_scale must be {f.shape[:lead]} or {f.shape}, got {scale.shape}")
    if np.any(~(scale > 0)):
        raise ValueError("noise_scale must be positive")
    n = f.shape[-1]
    return {"f": f.reshape(-1, n), "noise_scale": np.broadcast_to(scale, f.shape).reshape(-1, n)}


def _probs_pair(probs, reference) -> tuple[np.ndarray, np.ndarray]:
    probs, reference = np.asarray(probs, np.float64), np.asarray(reference, np.float64)
    if probs.ndim != 2 or probs.shape != reference.shape:
        raise ValueError(
            f"mean predictives must be (n, C) of one shape, got {probs.shape} and {reference.shape}"
        )
    return probs, reference


def agreement(probs, reference) -> float:
    """Fraction of inputs where the top classes of ``probs`` and ``reference`` (n, C) agree."""
    probs, reference = _probs_pair(probs, reference)
    return float(np.mean(probs.argmax(-1) == reference.argmax(-1)))


def total_variation(probs, reference) -> float:
    """Mean over inputs of ½ Σ_c |probs(c|x) − reference(c|x)|, both (n, C)."""
    probs, reference = _probs_pair(probs, reference)
    return float(np.mean(0.5 * np.abs(probs - reference).sum(-1)))


@jax.jit
def _normal_cdfs(grid, f, noise_scale):
    return jax.scipy.special.ndtr((grid[None, :] - f[:, None]) / noise_scale[:, None])


@jax.jit
def _mixture_cdf(grid, f, noise_scale):
    return _normal_cdfs(grid, f, noise_scale).mean(axis=0)


def component_cdfs(grid, f, noise_scale) -> np.ndarray:
    """The CDFs Φ((grid − f_s)/σ_s) of the S components of one input at ``grid`` (G,):
    (S, G); ``f``, ``noise_scale`` (S,). Evaluated in float32 by XLA (absolute error about
    1e-7, far below the distances it serves); ``benchmarks/mixture_cdf.py`` measures its time
    against SciPy's float64 ``ndtr`` at a reference's 1 600 draws × 2 048 grid points."""
    args = (np.asarray(a, np.float32) for a in (grid, f, noise_scale))
    return np.asarray(_normal_cdfs(*args), np.float64)


def mixture_cdf(grid, f, noise_scale) -> np.ndarray:
    """CDF of the Gaussian mixture (1/S) Σ_s N(f_s, σ_s²) of one input at ``grid`` (G,);
    ``f``, ``noise_scale`` (S,) (:func:`component_cdfs` averaged, in one XLA program)."""
    args = (np.asarray(a, np.float32) for a in (grid, f, noise_scale))
    return np.asarray(_mixture_cdf(*args), np.float64)


def _quantiles(grid, cdf, levels) -> np.ndarray:
    """The quantile function of a CDF tabulated on ``grid`` at ``levels`` (linear inverse)."""
    cdf = np.maximum.accumulate(cdf)  # non-decreasing despite round-off
    keep = np.concatenate([[True], np.diff(cdf) > 0])
    return np.interp(levels, cdf[keep], grid[keep])


def _cdf_distances(grid, cdf_a, cdf_b, levels) -> tuple[float, float, float]:
    """KS, W2 and W1 between two CDFs tabulated on ``grid`` (W2 by the midpoint rule over
    ``levels`` of the quantile functions, W1 = ∫ |F_a − F_b| dx by the trapezoidal rule)."""
    gap = _quantiles(grid, cdf_a, levels) - _quantiles(grid, cdf_b, levels)
    diff = np.abs(cdf_a - cdf_b)
    w1 = float(np.sum(0.5 * (diff[1:] + diff[:-1]) * np.diff(grid)))
    return float(diff.max()), float(np.sqrt(np.mean(gap**2))), w1


def regression_distances(
    predictive: Mapping, reference: Mapping, *, grid_size: int = 2048, num_levels: int = 1000
) -> dict[str, np.ndarray]:
    """Per input, the W2, W1 and KS distances between the predictive laws of y of
    ``predictive`` and ``reference`` (both pooled by :func:`pooled`: (S, n) and (R, n)).

    Each law's CDF is exact on a grid of ``grid_size`` points spanning both mixtures ±8 sd;
    KS = max over the grid |F − F_ref|; W2² = ∫₀¹ (F⁻¹(u) − F_ref⁻¹(u))² du by the midpoint
    rule over ``num_levels`` levels; W1 = ∫ |F − F_ref| dx over the grid (what
    ``scipy.stats.wasserstein_distance`` estimates from samples). Returns ``{"w2": (n,),
    "ks": (n,), "w1": (n,)}``.
    """
    grid_size = validate.positive_int("grid_size", grid_size, 16, where="regression_distances")
    num_levels = validate.positive_int("num_levels", num_levels, 2, where="regression_distances")
    a, b = pooled(predictive), pooled(reference)
    n = a["f"].shape[1]
    if b["f"].shape[1] != n:
        raise ValueError(f"the predictives cover {n} and {b['f'].shape[1]} inputs")
    levels = (np.arange(num_levels) + 0.5) / num_levels
    w2, ks, w1 = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        lo = min((p["f"][:, i] - 8 * p["noise_scale"][:, i]).min() for p in (a, b))
        hi = max((p["f"][:, i] + 8 * p["noise_scale"][:, i]).max() for p in (a, b))
        grid = np.linspace(lo, hi, grid_size)
        cdf_a = mixture_cdf(grid, a["f"][:, i], a["noise_scale"][:, i])
        cdf_b = mixture_cdf(grid, b["f"][:, i], b["noise_scale"][:, i])
        ks[i], w2[i], w1[i] = _cdf_distances(grid, cdf_a, cdf_b, levels)
    return {"w2": w2, "ks": ks, "w1": w1}


def predictive_scores(predictive: Mapping, y) -> dict[str, float]:
    """Test scores of a predictive against labels ``y`` (n,): regression ``lppd`` (the mean
    log density of the mixture, [SAP] eq. 18) and ``rmse`` (of the predictive mean);
    classification ``lppd`` (mean log of the mean probability of the label), ``accuracy``
    and ``ece`` (of the mean predictive)."""
    p = pooled(predictive)
    if "probs" in p:
        mean = p["probs"].mean(axis=0)
        labels = np.asarray(y)
        return {
            "lppd": -metrics.categorical_nll(mean, labels),
            "accuracy": metrics.accuracy(mean, labels),
            "ece": metrics.ece(mean, labels),
        }
    lppd = metrics.pointwise_lppd64(y, p["f"], p["noise_scale"]).mean()
    return {"lppd": float(lppd), "rmse": float(metrics.rmse(y, p["f"].mean(axis=0)))}


def joint_draws(predictive: Mapping) -> np.ndarray:
    """Each draw of a pooled predictive (:func:`pooled`) as one vector over all its inputs,
    divided by √n so that its norm is the root mean square over the n inputs: regression the
    function values ``f`` (S, n), classification the probabilities ``probs`` (S, n·C)."""
    values = predictive["probs"] if "probs" in predictive else predictive["f"]
    return values.reshape(len(values), -1) / np.sqrt(values.shape[1])


def pairwise_distances(x, y) -> np.ndarray:
    """Euclidean distances between the rows of ``x`` (S, D) and of ``y`` (R, D): (S, R)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    squared = (x**2).sum(axis=1)[:, None] + (y**2).sum(axis=1)[None, :] - 2.0 * x @ y.T
    return np.sqrt(np.maximum(squared, 0.0))


def _mean_between_distinct(distances) -> float:
    """The mean of a square matrix of distances off its diagonal (pairs of distinct draws);
    0 for one draw, a point mass's exact value."""
    size = len(distances)
    if size < 2:
        return 0.0
    return float((distances.sum() - np.trace(distances)) / (size * (size - 1)))


def _energy(between, within_a, within_b) -> float:
    """The energy distance from the matrices of distances between the two samples and within
    each (:func:`energy_distance`)."""
    within = _mean_between_distinct(within_a) + _mean_between_distinct(within_b)
    return 2.0 * float(between.mean()) - within


def energy_distance(predictive: Mapping, reference: Mapping) -> float:
    """The energy distance 2 E‖X − Y‖ − E‖X − X′‖ − E‖Y − Y′‖ between the joint laws of the
    draws X of ``predictive`` and Y of ``reference`` over all their inputs
    (:func:`joint_draws`: function values in regression, class probabilities in
    classification; the norm the root mean square over the inputs), estimated by the
    U-statistics of the draws (the within terms over pairs of distinct draws, so a law's
    estimate is unbiased; a single draw is a point mass, whose within term is 0).

    It is zero only for equal laws (Székely and Rizzo 2013), and it compares whole function
    draws, so it sees the correlations between inputs that the per-input distances ignore.
    """
    x, y = joint_draws(pooled(predictive)), joint_draws(pooled(reference))
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"the predictives cover {x.shape[1]} and {y.shape[1]} values a draw")
    return _energy(pairwise_distances(x, y), pairwise_distances(x, x), pairwise_distances(y, y))


def fidelity(predictive: Mapping, reference: Mapping) -> dict[str, float]:
    """Distance of ``predictive`` to ``reference``: classification ``agreement`` and
    ``total_variation`` of the mean predictives; regression ``w2``, ``ks`` and ``w1``
    (:func:`regression_distances`) averaged over the inputs; both the ``energy`` distance of
    the joint draws over the inputs (:func:`energy_distance`)."""
    a, b = pooled(predictive), pooled(reference)
    if ("probs" in a) != ("probs" in b):
        raise ValueError("fidelity: one predictive is a classifier's, the other a regression's")
    if "probs" in a:
        mean_a, mean_b = a["probs"].mean(axis=0), b["probs"].mean(axis=0)
        out = {
            "agreement": agreement(mean_a, mean_b),
            "total_variation": total_variation(mean_a, mean_b),
        }
    else:
        d = regression_distances(a, b)
        out = {metric: float(values.mean()) for metric, values in d.items()}
    return {**out, "energy": energy_distance(a, b)}


def _split_subsets(
    num_chains: int, draws_per_chain: int, num_draws: int, num_splits: int, seed: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For each of ``num_splits`` random splits of the chains into two halves: the pooled
    indices of ``num_draws`` draws taken without replacement from the first half, and the
    chains of the second half."""
    rng = np.random.default_rng(seed)
    half = num_chains // 2
    for _ in range(num_splits):
        order = rng.permutation(num_chains)
        pool = (order[:half, None] * draws_per_chain + np.arange(draws_per_chain)).ravel()
        yield rng.choice(pool, size=num_draws, replace=False), order[half:]


def matched_floor(
    reference: Mapping,
    *,
    num_draws: int,
    num_splits: int = 100,
    seed: int = 0,
    grid_size: int = 2048,
    num_levels: int = 1000,
    other: Mapping | None = None,
) -> dict[str, np.ndarray]:
    """The reference's own Monte Carlo floor at a method's number of draws.

    ``reference``: a predictive with the axes (chain, draw, ...). Over ``num_splits`` random
    splits of its chains into two halves (a stream of ``seed``), :func:`fidelity` of
    ``num_draws`` draws taken at random from one half to the pooled other half: what a
    method whose ``num_draws`` draws were exact would score against half the chains. (One
    split into halves with every draw kept measures the floor of half the chains' draws,
    which a method with fewer exact draws does not reach.)

    ``other``: a second predictive of the same points with axes (draw, ...) or (chain, draw,
    ...), such as another sampler family's reference. The ``num_draws`` draws are then taken
    at random from all of ``other`` (a stream of ``seed`` of its own) and scored against the
    same pooled halves: the distance between the two at a method's number of draws, paired
    split by split with the floor of the same ``seed``.

    Returns ``{metric: (num_splits,)}``, the metrics of :func:`fidelity`. The energy distance
    reads one matrix of the distances between all draws. Regression reads
    each draw's CDF on one grid per input (the whole reference ±8 sd, ``grid_size`` points)
    once, so the splits cost sums of rows: the same distances as :func:`fidelity` up to the
    grid's resolution.
    """
    where = "matched_floor"
    first = np.asarray(next(iter(reference.values())))
    if first.ndim < 3:
        raise ValueError(f"{where}: the reference must be (chain, draw, ...), got {first.shape}")
    num_chains, per_chain = first.shape[:2]
    if num_chains < 2:
        raise ValueError(f"{where} needs at least 2 chains, got {num_chains}")
    num_splits = validate.positive_int("num_splits", num_splits, where=where)
    num_draws = validate.positive_int("num_draws", num_draws, where=where)
    if num_draws > (num_chains // 2) * per_chain:
        raise ValueError(
            f"{where}: num_draws={num_draws} is more than half the chains hold "
            f"({num_chains // 2} × {per_chain})"
        )
    splits = list(_split_subsets(num_chains, per_chain, num_draws, num_splits, seed))
    p = pooled(reference)
    if other is not None:  # the draws from other, appended after the reference's own
        q = pooled(other)
        if set(q) != set(p) or any(q[k].shape[1:] != p[k].shape[1:] for k in p):
            raise ValueError(
                f"{where}: other must predict at the reference's points, got "
                f"{ {k: v.shape for k, v in q.items()} } against "
                f"{ {k: v.shape for k, v in p.items()} }"
            )
        size = len(next(iter(q.values())))
        if num_draws > size:
            raise ValueError(f"{where}: num_draws={num_draws} is more than other holds ({size})")
        offset, rng = len(next(iter(p.values()))), np.random.default_rng([seed, 1])
        splits = [(offset + rng.choice(size, num_draws, replace=False), o) for _, o in splits]
        p = {k: np.concatenate([p[k], q[k]]) for k in p}
    distances = pairwise_distances(joint_draws(p), joint_draws(p))
    energy = []
    for draws, halves in splits:
        rows = (halves[:, None] * per_chain + np.arange(per_chain)).ravel()
        between = distances[np.ix_(draws, rows)]
        within_a, within_b = distances[np.ix_(draws, draws)], distances[np.ix_(rows, rows)]
        energy.append(_energy(between, within_a, within_b))
    if "probs" in p:
        probs = p["probs"]
        mine_rows = num_chains * per_chain
        by_chain = probs[:mine_rows].reshape(num_chains, per_chain, *probs.shape[1:]).mean(axis=1)
        out: dict[str, list] = {"agreement": [], "total_variation": []}
        for draws, halves in splits:
            mine, theirs = probs[draws].mean(axis=0), by_chain[halves].mean(axis=0)
            out["agreement"].append(agreement(mine, theirs))
            out["total_variation"].append(total_variation(mine, theirs))
        return {**{k: np.asarray(v) for k, v in out.items()}, "energy": np.asarray(energy)}
    grid_size = validate.positive_int("grid_size", grid_size, 16, where=where)
    levels = np.arange(validate.positive_int("num_levels", num_levels, 2, where=where)) + 0.5
    levels /= num_levels
    f, scale = p["f"], p["noise_scale"]
    w2 = np.empty((num_splits, f.shape[1]))
    ks, w1 = np.empty_like(w2), np.empty_like(w2)
    for i in range(f.shape[1]):
        grid = np.linspace(
            (f[:, i] - 8 * scale[:, i]).min(), (f[:, i] + 8 * scale[:, i]).max(), grid_size
        )
        cdfs = component_cdfs(grid, f[:, i], scale[:, i])  # (S, G)
        by_chain = cdfs[: num_chains * per_chain].reshape(num_chains, per_chain, -1).mean(axis=1)
        for j, (draws, halves) in enumerate(splits):
            cdf_a, cdf_b = cdfs[draws].mean(axis=0), by_chain[halves].mean(axis=0)
            ks[j, i], w2[j, i], w1[j, i] = _cdf_distances(grid, cdf_a, cdf_b, levels)
    return {
        "w2": w2.mean(axis=1),
        "ks": ks.mean(axis=1),
        "w1": w1.mean(axis=1),
        "energy": np.asarray(energy),
    }
