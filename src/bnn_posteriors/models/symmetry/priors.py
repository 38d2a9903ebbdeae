"""Priors and the symmetries of neural networks ([SAP] App. B).

Sign flips leave symmetric zero-centred factorised priors invariant (Prop. B.4); a pairwise
positive scaling (θ1, θ2) → (cθ1, θ2/c) does not, except at c = 1 and c = |θ2/θ1|, the scaling
that swaps the two magnitudes (Prop. B.10). With a bias, w2·φ(w1·x + b1), the scaling
(w1, b1, w2) → (c·w1, c·b1, w2/c) has one more root (the counterexample of App. B.2, Fig. 6),
but it is the same swap for the pair (‖(w1, b1)‖, |w2|) (:func:`group_scaling_gap`); so has a
scaling that swaps weights across distant layers (App. B.2, last paragraphs).

Conventions: a *gap* is log p(original) − log p(transformed), zero iff the prior is invariant.
[SAP]'s ϖ(c) of Prop. B.10 is −``pairwise_scaling_gap``. Priors are zero-mean, factorised,
``kind`` ∈ {"gaussian", "laplace"} with standard deviation / Laplace scale ``scale``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats
from scipy import optimize

from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions
from bnn_posteriors.util.validate import positive, positive_array

KINDS = ("gaussian", "laplace")


def _logpdf(x, kind: str, scale: float):
    """Elementwise log density of the zero-mean prior ``kind`` with ``scale``."""
    if kind not in KINDS:
        raise ValueError(f"unknown prior kind {kind!r}; choose one of {', '.join(KINDS)}")
    scale = positive("scale", scale)
    x = jnp.asarray(x, dtype=float)
    if kind == "gaussian":
        return stats.norm.logpdf(x, 0.0, scale)
    return stats.laplace.logpdf(x, 0.0, scale)


def log_prior(theta, kind: str = "gaussian", scale: float = 1.0):
    """Factorised zero-mean log prior log p(θ) = Σ_j log p(θ_j); ``theta`` (..., d) → (...).

    Gaussian: log N(θ_j; 0, scale²). Laplace: −|θ_j|/scale − log(2·scale).
    """
    return jnp.sum(_logpdf(jnp.atleast_1d(jnp.asarray(theta, dtype=float)), kind, scale), axis=-1)


def sign_flip_gap(theta, signs, kind: str = "gaussian", scale: float = 1.0):
    """log p(θ) − log p(Σθ) for Σ = diag(ς), ς ∈ {−1, 1}^d ([SAP] Prop. B.4: it is 0).

    ``theta`` (..., d), ``signs`` broadcastable to it → (...).
    """
    signs = np.asarray(signs)
    if not np.all(np.isin(signs, (-1, 1))):
        raise ValueError(f"signs must all be -1 or +1, got {signs.tolist()!r}")
    theta = jnp.asarray(theta, dtype=float)
    return log_prior(theta, kind, scale) - log_prior(signs * theta, kind, scale)


def pairwise_scaling_gap(theta1, theta2, c, kind: str = "gaussian", scale: float = 1.0):
    """log p(θ1) + log p(θ2) − log p(cθ1) − log p(θ2/c), i.e. −ϖ(c) of [SAP] Prop. B.10.

    Gaussian: [θ1²(c² − 1) + θ2²(1/c² − 1)] / (2 scale²) = (c² − 1)(θ1²c² − θ2²) / (2 scale² c²).
    Laplace: [|θ1|(c − 1) + |θ2|(1/c − 1)] / scale = (c − 1)(|θ1|c − |θ2|) / (scale c).
    Arrays ``theta1``, ``theta2``, ``c`` (c > 0) broadcast together.
    """
    c = positive_array("c", c)
    return (
        _logpdf(theta1, kind, scale)
        + _logpdf(theta2, kind, scale)
        - _logpdf(c * jnp.asarray(theta1), kind, scale)
        - _logpdf(jnp.asarray(theta2) / c, kind, scale)
    )


def _distinct_positive_roots(numerator: float, denominator: float) -> np.ndarray:
    """Sorted distinct positive roots of (c − 1)(|denominator|·c − |numerator|) = 0."""
    numerator, denominator = abs(float(numerator)), abs(float(denominator))
    if numerator == 0.0 and denominator == 0.0:
        raise ValueError("all parameters are zero: the prior is invariant for every c > 0")
    if numerator == 0.0 or denominator == 0.0:
        return np.array([1.0])
    return np.unique([1.0, numerator / denominator])


def pairwise_scaling_roots(theta1: float, theta2: float, kind: str = "gaussian") -> np.ndarray:
    """Positive roots c of the pairwise scaling gap ([SAP] Prop. B.10): {1, |θ2/θ1|}, sorted.

    Both kinds factorise the gap as (c − 1)·(…) (see :func:`pairwise_scaling_gap`); the scale
    only multiplies it. One root (c = 1) when θ1 or θ2 is 0; ValueError when both are 0 (then
    the gap vanishes for every c). Scalars in, array (1,) or (2,) out.
    """
    _logpdf(0.0, kind, 1.0)  # validates kind
    return _distinct_positive_roots(theta2, theta1)


def positive_roots(f, grid) -> np.ndarray:
    """Numerical roots of a scalar function on a grid: brentq on each sign change of f, sorted.

    ``f`` maps an array (n,) of c values to (n,) and a scalar to a scalar; ``grid`` (n,) is
    increasing. Grid points where f is exactly 0 count as roots; tangential (double) roots
    without a sign change are not found. Used to check the closed forms of this module.
    """
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or not np.all(np.diff(grid) > 0):
        raise ValueError(f"grid must be an increasing 1-D array of >= 2 points, got {grid.shape}")
    values = np.asarray(f(grid), dtype=float)
    if values.shape != grid.shape:
        raise ValueError(f"f(grid) must have the grid's shape {grid.shape}, got {values.shape}")
    roots = list(grid[values == 0.0])
    scalar = lambda c: float(f(c))
    for i in np.flatnonzero(values[:-1] * values[1:] < 0):
        roots.append(optimize.brentq(scalar, grid[i], grid[i + 1], xtol=1e-14, rtol=1e-14))
    return np.sort(np.asarray(roots, dtype=float))


def _normal_pdf(x, scale: float):
    return np.exp(-0.5 * (x / scale) ** 2) / (scale * np.sqrt(2.0 * np.pi))


def counterexample_h(c, w1: float = 0.5, w2: float = 0.8, b1: float = 0.9, scale: float = 1.0):
    """h(c) = p(b1)p(w1)p(w2) − p(b1 c)p(w1 c)p(w2/c), N(0, scale²) densities ([SAP] App. B.2).

    The network w2·φ(w1·x + b1) is invariant under (w1, b1, w2) → (c·w1, c·b1, w2/c) for ReLU φ;
    h(c) = 0 where its prior is too (Fig. 6). NumPy float64 so roots resolve to ~1e-16.
    ``c`` (...) with c > 0 → (...).
    """
    scale = positive("scale", scale)
    c = np.asarray(c, dtype=float)
    if not np.all(np.isfinite(c) & (c > 0)):
        raise ValueError(f"c must be positive everywhere, got {c.tolist()!r}")
    base = _normal_pdf(b1, scale) * _normal_pdf(w1, scale) * _normal_pdf(w2, scale)
    return base - _normal_pdf(b1 * c, scale) * _normal_pdf(w1 * c, scale) * _normal_pdf(
        w2 / c, scale
    )


def counterexample_roots(w1: float = 0.5, w2: float = 0.8, b1: float = 0.9) -> np.ndarray:
    """Positive roots of h ([SAP] App. B.2): c = 1 and c = |w2| / √(w1² + b1²), sorted.

    h(c) = 0 ⇔ (b1² + w1²)(c² − 1) + w2²(1/c² − 1) = 0 ⇔ (c² − 1)((b1² + w1²)c² − w2²) = 0,
    independent of the prior scale: Prop. B.10 with θ1 = ‖(w1, b1)‖, θ2 = w2. Scalars in.
    """
    return _distinct_positive_roots(w2, np.hypot(w1, b1))


def group_norm(group, kind: str = "gaussian"):
    """The norm through which a factorised zero-mean prior sees a group of weights.

    Σ_j log p(g_j) is −‖g‖₂²/(2 scale²) + const for the Gaussian and −‖g‖₁/scale + const
    for the Laplace prior, so the prior of the group depends on ‖g‖₂ resp. ‖g‖₁ only.
    ``group`` (..., k) → (...).
    """
    _logpdf(0.0, kind, 1.0)  # validates kind
    group = jnp.asarray(group, dtype=float)
    if group.ndim == 0 or group.shape[-1] == 0:
        raise ValueError(f"group must have at least one weight on its last axis, got {group.shape}")
    if kind == "gaussian":
        return jnp.sqrt(jnp.sum(group**2, axis=-1))
    return jnp.sum(jnp.abs(group), axis=-1)


def group_scaling_gap(group, theta2, c, kind: str = "gaussian", scale: float = 1.0):
    """log p(g) + log p(θ2) − log p(c·g) − log p(θ2/c): a group g scaled together ([SAP] App. B.2).

    g = (w1, b1), θ2 = w2 is the ReLU rescaling with a bias of the counterexample (Fig. 6):
    h(c) = p(g)p(θ2)·(1 − exp(−gap)), so h and the gap share their roots. Because both
    priors see g through :func:`group_norm` and ‖c·g‖ = c‖g‖, the gap equals
    ``pairwise_scaling_gap(group_norm(g), θ2, c)`` exactly: Prop. B.10 for the pair
    (‖g‖, θ2), whose roots are 1 and the swap |θ2|/‖g‖ (:func:`group_scaling_roots`).
    ``group`` (..., k), ``theta2`` and ``c`` (c > 0) broadcastable to (...) → (...).
    """
    c = positive_array("c", c)
    group = jnp.asarray(group, dtype=float)
    group_norm(group, kind)  # validates kind and the group's shape
    theta2 = jnp.asarray(theta2, dtype=float)
    return (
        log_prior(group, kind, scale)
        + _logpdf(theta2, kind, scale)
        - log_prior(c[..., None] * group, kind, scale)
        - _logpdf(theta2 / c, kind, scale)
    )


def group_scaling_roots(group, theta2: float, kind: str = "gaussian") -> np.ndarray:
    """Positive roots c of :func:`group_scaling_gap`: {1, |θ2| / ‖g‖}, sorted; ``group`` (k,).

    The second root swaps the magnitudes: ‖c·g‖ = |θ2| and |θ2/c| = ‖g‖ — the root
    c = θ2/θ1 that Prop. B.10 excludes as a permutation, for θ1 = ‖g‖.
    """
    norm = group_norm(np.asarray(group, dtype=float), kind)
    if np.ndim(norm) != 0:
        raise ValueError(f"group must be one group of weights (k,), got shape {np.shape(group)}")
    return _distinct_positive_roots(theta2, float(norm))


def counterexample_excluded(w1: float = 0.5, w2: float = 0.8, b1: float = 0.9) -> np.ndarray:
    """The values [SAP] App. B.2 excludes as trivial or permutations: {1, w2/w1, w2/b1}, sorted."""
    return np.unique([1.0, w2 / w1, w2 / b1])


def distant_scaling(w, c, layer: int, printed: bool = False):
    """Distant-layer scaling of [SAP] App. B.2 on per-layer scalar weights w = (w_1, …, w_L).

    With l = ``layer`` (1-based as in the paper, l ≥ 3), sets w_{l+1} := c·w_1 and
    w_l := w_2/c, then scales (w_1, w_2, w_l, w_{l+1}) by (c, 1/c, c, 1/c). The product ∏w
    (the narrow network) is unchanged, and the scaled weights are the related ones with layers
    1 ↔ l+1 and 2 ↔ l swapped, so a factorised i.i.d. prior is invariant. ``printed``: the
    text's scaling instead, "w_1 and w_2 scaled with c and w_l and w_{l+1} with c^-1", by
    (c, c, 1/c, 1/c): it keeps the product too, but with this relation not the prior.
    ``w`` (..., L) with L ≥ 4, ``c`` > 0 broadcastable to (...) → (related, scaled), both
    (..., L).
    """
    w = jnp.asarray(w, dtype=float)
    n_layers = w.shape[-1] if w.ndim else 0
    if n_layers < 4:
        raise ValueError(f"w must have at least 4 layers on its last axis, got shape {w.shape}")
    if isinstance(layer, bool) or not isinstance(layer, int | np.integer):
        raise ValueError(f"layer must be an integer, got {layer!r}")
    if not 3 <= layer <= n_layers - 1:
        raise ValueError(f"layer must lie in [3, {n_layers - 1}] (1-based l of [SAP]), got {layer}")
    c = positive_array("c", c)[..., None]
    i, j = int(layer) - 1, int(layer)  # 0-based positions of w_l and w_{l+1}
    related = w.at[..., j].set(c[..., 0] * w[..., 0]).at[..., i].set(w[..., 1] / c[..., 0])
    signs = [1.0, 1.0, -1.0, -1.0] if printed else [1.0, -1.0, 1.0, -1.0]
    powers = jnp.zeros(n_layers).at[jnp.array([0, 1, i, j])].set(jnp.array(signs))
    return related, related * c**powers


def distant_scaling_gap(
    w, c, layer: int, kind: str = "gaussian", scale: float = 1.0, printed: bool = False
):
    """log p(related) − log p(scaled) for :func:`distant_scaling` ([SAP] App. B.2): 0 for the
    invariant scaling, not for the ``printed`` one.

    ``w`` (..., L) → (...).
    """
    related, scaled = distant_scaling(w, c, layer, printed)
    return log_prior(related, kind, scale) - log_prior(scaled, kind, scale)


def output_change(params, transformed, activation: str, x) -> float:
    """max |f_θ(x) − f_θ'(x)| over the inputs ``x`` (n, d): 0 iff θ' is a symmetry on x."""
    return float(
        jnp.max(
            jnp.abs(
                nets.mlp_apply(params, x, activation) - nets.mlp_apply(transformed, x, activation)
            )
        )
    )


def mlp_symmetry_changes(
    rng_key, mlp_widths: Sequence[Sequence[int]], num_mlps: int, num_inputs: int = 256
) -> dict:
    """Output changes of random MLPs under the symmetries of [SAP] Defs. B.1–B.3.

    For every architecture in ``mlp_widths`` (key ``fold_in(rng_key, len(widths))``, split
    into ``num_mlps`` networks) and every hidden layer: a random permutation of its units,
    a rescaling of unit 0 by c = e^U, U ~ U(−1.5, 1.5), and a sign flip of unit 0, each
    under ReLU and tanh, measured by :func:`output_change` on ``num_inputs`` N(0, I)
    inputs. Returns ``{(activation, operation): [change, ...]}`` with operations
    "permutation", "rescaling", "sign flip".
    """
    changes: dict[tuple[str, str], list[float]] = {}
    for widths in mlp_widths:
        for key in jax.random.split(jax.random.fold_in(rng_key, len(widths)), num_mlps):
            k_p, k_x, k_perm, k_c = jax.random.split(key, 4)
            params = nets.mlp_init(k_p, widths)
            x = jax.random.normal(k_x, (num_inputs, widths[0]))
            for layer, width in enumerate(widths[1:-1]):
                perm = jax.random.permutation(jax.random.fold_in(k_perm, layer), width)
                u = jax.random.uniform(jax.random.fold_in(k_c, layer), minval=-1.5, maxval=1.5)
                c = float(jnp.exp(u))
                transformed = {
                    "permutation": actions.permute_hidden(params, layer, perm),
                    "rescaling": actions.rescale_neuron(params, layer, 0, c),
                    "sign flip": actions.flip_neuron(params, layer, 0),
                }
                for activation in ("relu", "tanh"):
                    for operation, new in transformed.items():
                        change = output_change(params, new, activation, x)
                        changes.setdefault((activation, operation), []).append(change)
    return changes


def pairwise_root_checks(pairs, cs, kinds: Sequence[str] = KINDS, *, min_distance: float = 0.05):
    """Prop. B.10 on a grid: numerical roots of the pairwise gap against {1, |θ2/θ1|}.

    For every prior kind and (θ1, θ2) in ``pairs`` (|θ1| ≠ |θ2|, both non-zero), the roots
    found by :func:`positive_roots` on the increasing grid ``cs`` (n,) must equal
    :func:`pairwise_scaling_roots` to 1e-8, and |ϖ(c)| is measured at the grid points
    farther than ``min_distance`` from both roots. Returns ``(roots_ok, min_gap_away)``,
    lists over kinds × pairs of booleans and of the smallest |ϖ| there.
    """
    roots_ok, min_gap_away = [], []
    for kind in kinds:
        for theta1, theta2 in pairs:
            gap_of = partial(_pairwise_gap_of_c, theta1, theta2, kind)
            gap = np.asarray(gap_of(cs))
            expected = pairwise_scaling_roots(theta1, theta2, kind)
            found = positive_roots(gap_of, cs)
            roots_ok.append(len(found) == len(expected) and np.allclose(found, expected, atol=1e-8))
            away = np.min(np.abs(cs[:, None] - expected[None, :]), axis=1) > min_distance
            min_gap_away.append(np.min(np.abs(gap[away])))
    return roots_ok, min_gap_away


def _pairwise_gap_of_c(theta1, theta2, kind, c):
    return pairwise_scaling_gap(theta1, theta2, c, kind, 1.0)


def distant_scaling_draws(
    rng_key, num_draws: int = 200, depth: int = 6, printed: bool = False
) -> list[float]:
    """|:func:`distant_scaling_gap`| of random depth-L chains under N(0, 1) (App. B.2, C3.5).

    Per draw: w ~ N(0, I_L), c = e^U with U ~ U(−1, 1), and a layer l uniform in
    {3, …, L − 1} (1-based, l + 1 ≤ L); ``printed``: the text's scaling. Returns a list of
    ``num_draws`` floats (the same draws for either scaling under one key).
    """
    gaps = []
    for key in jax.random.split(rng_key, num_draws):
        k_w, k_c, k_l = jax.random.split(key, 3)
        w = jax.random.normal(k_w, (depth,))
        c = float(jnp.exp(jax.random.uniform(k_c, minval=-1.0, maxval=1.0)))
        layer = int(jax.random.randint(k_l, (), 3, depth))
        gaps.append(abs(float(distant_scaling_gap(w, c, layer, "gaussian", 1.0, printed))))
    return gaps


def norm_swap_deviation(group, theta2: float, c, kind: str = "gaussian") -> float:
    """max_c |group gap − pairwise gap of (‖g‖, |θ2|)|: 0 when the group acts through its norm.

    Checks the identity of :func:`group_scaling_gap` on a grid ``c`` (n,) for the unit-scale
    prior ``kind`` (the counterexample of App. B.2 is Prop. B.10's swap, C3.4).
    """
    group_gap = group_scaling_gap(group, theta2, c, kind)
    pairwise = pairwise_scaling_gap(group_norm(group, kind), abs(theta2), c, kind)
    return float(np.max(np.abs(group_gap - pairwise)))


def counterexample_study(w1: float, w2: float, b1: float, *, paper_root: float) -> dict:
    """The root c* of h for the counterexample (w1, w2, b1) of App. B.2, Fig. 6 (C3.4).

    Returns the closed-form root ``c_star`` (:func:`counterexample_roots`, not 1), the
    positive roots of h on a grid of [0.05, 5] (``numeric``) and the one nearest c*
    (``c_num``), the distances of ``c_num`` to the excluded values 1, w2/w1, w2/b1
    (``excluded_gap``), h at the closed form, the numerical root and ``paper_root``
    (``h_at``); and Prop. B.10's swap for the pair (‖(w1, b1)‖, |w2|): the deviation of h's
    log-ratio from the pairwise gap of the norm on c in [0.05, 20] (``swap_gap``) and the
    swap root |w2| / ‖(w1, b1)‖ (``swap_root``), per prior of :data:`KINDS`, and ``norm_l2``.
    """
    ce = dict(w1=w1, w2=w2, b1=b1)
    roots = counterexample_roots(**ce)
    c_star = float(roots[roots != 1.0][0])
    numeric = positive_roots(partial(counterexample_h, **ce), np.linspace(0.05, 5.0, 20001))
    c_num = float(numeric[np.argmin(np.abs(numeric - c_star))])  # the root nearest c*
    h_at = {
        name: float(counterexample_h(c, **ce))
        for name, c in (
            ("closed form", c_star),
            ("numerical", c_num),
            (f"paper's {paper_root}", paper_root),
        )
    }
    group = np.array([w1, b1])  # scaled by c together; w2 by 1/c
    cs = np.geomspace(0.05, 20.0, 2001)
    return {
        "c_star": c_star,
        "numeric": numeric,
        "c_num": c_num,
        "excluded_gap": float(np.min(np.abs(counterexample_excluded(**ce) - c_num))),
        "h_at": h_at,
        "swap_gap": {k: norm_swap_deviation(group, w2, cs, k) for k in KINDS},
        "swap_root": {k: float(group_scaling_roots(group, w2, k).min()) for k in KINDS},
        "norm_l2": float(group_norm(group)),
    }
