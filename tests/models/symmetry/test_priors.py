"""Tests of priors and symmetries ([SAP] App. B): claims C3.2–C3.5. All in float64 (``x64``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions
from bnn_posteriors.models.symmetry import priors as symmetry

pytestmark = pytest.mark.usefixtures("x64")

KINDS = ["gaussian", "laplace"]
SCIPY = {"gaussian": stats.norm, "laplace": stats.laplace}


GRID = np.geomspace(0.05, 20.0, 1000)  # does not contain c = 1 exactly


def test_positive_roots_of_a_polynomial():
    roots = symmetry.positive_roots(lambda c: (c - 0.3) * (c - 2.0) * (c + 1.0), GRID)
    np.testing.assert_allclose(roots, [0.3, 2.0], rtol=1e-12)
    # A root on a grid point counts once; a root-free function has none.
    np.testing.assert_allclose(symmetry.positive_roots(lambda c: c - 1.0, [0.5, 1.0, 2.0]), [1.0])
    assert symmetry.positive_roots(lambda c: c**2 + 1.0, GRID).size == 0


@pytest.mark.parametrize("grid", [[1.0], [2.0, 1.0], np.ones((2, 2))])
def test_positive_roots_rejects_bad_grid(grid):
    with pytest.raises(ValueError, match="grid must be an increasing 1-D array"):
        symmetry.positive_roots(lambda c: c, grid)


def test_positive_roots_rejects_non_vectorised_f():
    with pytest.raises(ValueError, match="f\\(grid\\) must have the grid's shape"):
        symmetry.positive_roots(lambda c: 1.0, GRID)


# --- log_prior ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5])
def test_log_prior_matches_scipy(kind, scale):
    theta = np.random.default_rng(0).normal(scale=2.0, size=(4, 7))
    got = symmetry.log_prior(theta, kind, scale)
    assert got.shape == (4,)
    expected = SCIPY[kind].logpdf(theta, loc=0.0, scale=scale).sum(axis=-1)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12)


def test_log_prior_known_values():
    # log N(0; 0, 1) = −½ log 2π; Laplace(0; 0, 1) = ½.
    assert float(symmetry.log_prior(0.0)) == pytest.approx(-0.5 * np.log(2 * np.pi))
    assert float(symmetry.log_prior([0.0, 1.0], "laplace")) == pytest.approx(2 * np.log(0.5) - 1)


def test_log_prior_rejects_unknown_kind():
    with pytest.raises(ValueError, match=r"unknown prior kind 'cauchy'.*gaussian, laplace"):
        symmetry.log_prior([1.0], "cauchy")


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan")])
def test_log_prior_rejects_bad_scale(scale):
    with pytest.raises(ValueError, match="scale must be a positive"):
        symmetry.log_prior([1.0], "gaussian", scale)


# --- Prop. B.4: sign flips ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_sign_flip_gap_is_zero(kind, scale):
    rng = np.random.default_rng(1)
    theta = rng.normal(scale=3.0, size=(50, 9))
    signs = rng.choice([-1, 1], size=(50, 9))
    gap = symmetry.sign_flip_gap(theta, signs, kind, scale)
    assert gap.shape == (50,)
    assert float(np.max(np.abs(gap))) < 1e-12
    # A non-symmetric change of the same entries does change the prior.
    assert np.all(
        np.abs(
            symmetry.log_prior(theta, kind, scale)
            - symmetry.log_prior(theta + 0.1 * signs, kind, scale)
        )
        > 1e-6
    )


@pytest.mark.parametrize("signs", [[1, 0, -1], [1, 2, 1], [0.5, 1, 1]])
def test_sign_flip_gap_rejects_bad_signs(signs):
    with pytest.raises(ValueError, match="signs must all be -1 or"):
        symmetry.sign_flip_gap([1.0, 2.0, 3.0], signs)


# --- Prop. B.10: pairwise scaling --------------------------------------------------------------

THETAS = [-2.3, -0.5, -0.1, 0.1, 0.5, 1.0, 2.3]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_pairwise_gap_closed_form_and_sign_pattern(kind, scale):
    t1, t2, c = np.meshgrid(THETAS, THETAS, np.geomspace(0.05, 20.0, 301), indexing="ij")
    gap = np.asarray(symmetry.pairwise_scaling_gap(t1, t2, c, kind, scale))
    assert gap.shape == t1.shape
    if kind == "gaussian":
        closed = (c**2 - 1) * (t1**2 * c**2 - t2**2) / (2 * scale**2 * c**2)
    else:
        closed = (c - 1) * (np.abs(t1) * c - np.abs(t2)) / (scale * c)
    np.testing.assert_allclose(gap, closed, atol=1e-12)
    # Away from c ∈ {1, |θ2/θ1|} the gap is non-zero, with the sign of (c − 1)(c − |θ2/θ1|):
    # [SAP]'s ϖ = −gap is > 0 strictly between the two roots and < 0 outside them.
    r = np.abs(t2 / t1)
    away = np.minimum(np.abs(np.log(c)), np.abs(np.log(c / r))) > 0.01
    assert away.sum() > 0.9 * away.size
    assert np.all(np.abs(gap[away]) > 1e-9)
    np.testing.assert_array_equal(np.sign(gap[away]), np.sign((c - 1) * (c - r))[away])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("t1", "t2"), [(0.3, 1.2), (1.2, 0.3), (-0.7, 1.9), (2.0, -0.25)])
def test_pairwise_numerical_roots_are_one_and_ratio(kind, t1, t2):
    roots = symmetry.positive_roots(lambda c: symmetry.pairwise_scaling_gap(t1, t2, c, kind), GRID)
    expected = symmetry.pairwise_scaling_roots(t1, t2, kind)
    np.testing.assert_allclose(expected, sorted([1.0, abs(t2 / t1)]), rtol=1e-15)
    assert roots.shape == expected.shape
    np.testing.assert_allclose(roots, expected, rtol=1e-10)
    np.testing.assert_allclose(symmetry.pairwise_scaling_gap(t1, t2, expected, kind), 0, atol=1e-14)


@pytest.mark.parametrize(("t1", "t2"), [(0.0, 1.5), (1.5, 0.0), (0.8, -0.8)])
def test_pairwise_roots_degenerate_cases_have_only_c_equal_one(t1, t2):
    np.testing.assert_array_equal(symmetry.pairwise_scaling_roots(t1, t2), [1.0])
    roots = symmetry.positive_roots(lambda c: symmetry.pairwise_scaling_gap(t1, t2, c), GRID)
    if t1 * t2 != 0:  # |θ2| = |θ1|: c = 1 is a double root, no sign change, gap ≥ 0
        assert roots.size == 0
        assert np.all(np.asarray(symmetry.pairwise_scaling_gap(t1, t2, GRID)) > 0)
    else:
        np.testing.assert_allclose(roots, [1.0], rtol=1e-10)


def test_pairwise_errors():
    with pytest.raises(ValueError, match="all parameters are zero"):
        symmetry.pairwise_scaling_roots(0.0, 0.0)
    with pytest.raises(ValueError, match="unknown prior kind"):
        symmetry.pairwise_scaling_roots(1.0, 2.0, "student")
    with pytest.raises(ValueError, match="unknown prior kind"):
        symmetry.pairwise_scaling_gap(1.0, 2.0, 0.5, "student")
    with pytest.raises(ValueError, match="c must be positive"):
        symmetry.pairwise_scaling_gap(1.0, 2.0, np.array([0.5, 0.0]))
    with pytest.raises(ValueError, match="scale must be a positive"):
        symmetry.pairwise_scaling_gap(1.0, 2.0, 0.5, "laplace", -1.0)


# --- App. B.2: the counterexample with a bias (Fig. 6) -------------------------------------------

PAPER_ROOT = 0.77754  # the value marked in [SAP] Fig. 6


def test_counterexample_closed_form_root():
    roots = symmetry.counterexample_roots()
    np.testing.assert_allclose(roots, [0.8 / np.sqrt(1.06), 1.0], rtol=1e-15)
    assert roots[0] == pytest.approx(0.777029, abs=1e-6)
    assert abs(symmetry.counterexample_h(roots[0])) < 1e-12
    assert symmetry.counterexample_h(1.0) == 0.0
    # The value marked in the paper's figure is not a root: |h| is ~1e6 times larger.
    assert abs(symmetry.counterexample_h(PAPER_ROOT)) > 1e-6


def test_counterexample_numerical_roots_match_closed_form():
    grid = np.geomspace(0.05, 5.0, 2000)
    roots = symmetry.positive_roots(symmetry.counterexample_h, grid)
    np.testing.assert_allclose(roots, symmetry.counterexample_roots(), rtol=1e-10)
    # The non-trivial root is none of the excluded values {1, w2/w1, w2/b1} = {1, 1.6, 0.889}.
    excluded = symmetry.counterexample_excluded()
    np.testing.assert_allclose(excluded, [0.8 / 0.9, 1.0, 1.6])
    assert np.min(np.abs(excluded - roots[0])) > 0.1


def test_counterexample_h_matches_scipy_and_roots_do_not_depend_on_scale():
    c = np.geomspace(0.1, 4.0, 17)
    pdf = stats.norm(0.0, 1.3).pdf
    expected = pdf(0.9) * pdf(0.5) * pdf(0.8) - pdf(0.9 * c) * pdf(0.5 * c) * pdf(0.8 / c)
    np.testing.assert_allclose(symmetry.counterexample_h(c, scale=1.3), expected, rtol=1e-12)
    for scale in (0.4, 2.0):
        root = symmetry.counterexample_roots()[0]
        assert abs(symmetry.counterexample_h(root, scale=scale)) < 1e-12


@pytest.mark.parametrize(("w1", "w2", "b1"), [(0.5, 0.8, 0.9), (-1.2, 0.3, 0.4), (0.2, -2.0, 1.0)])
def test_counterexample_is_a_relu_symmetry_with_invariant_prior(w1, w2, b1):
    """At the root, rescaling the hidden unit of w2·relu(w1·x + b1) keeps f and the prior."""
    c = symmetry.counterexample_roots(w1, w2, b1)[0]
    # = the pairwise root with θ1 = ‖(w1, b1)‖, θ2 = w2 (Prop. B.10 in the radial variable).
    np.testing.assert_allclose(c, symmetry.pairwise_scaling_roots(np.hypot(w1, b1), w2).min())
    params = [
        {"W": np.array([[w1]]), "b": np.array([b1])},
        {"W": np.array([[w2]]), "b": np.zeros(1)},
    ]
    new = actions.rescale_neuron(params, 0, 0, c)
    x = np.linspace(-3.0, 3.0, 61)[:, None]
    np.testing.assert_allclose(nets.mlp_apply(new, x), nets.mlp_apply(params, x), atol=1e-12)
    before = [w1, b1, w2]
    after = [float(new[0]["W"][0, 0]), float(new[0]["b"][0]), float(new[1]["W"][0, 0])]
    assert float(symmetry.log_prior(before) - symmetry.log_prior(after)) == pytest.approx(
        0.0, abs=1e-12
    )
    assert abs(symmetry.counterexample_h(c, w1, w2, b1)) < 1e-12


def test_group_norm_known_values():
    np.testing.assert_allclose(symmetry.group_norm([3.0, -4.0]), 5.0, rtol=1e-15)
    np.testing.assert_allclose(symmetry.group_norm([3.0, -4.0], "laplace"), 7.0, rtol=1e-15)
    np.testing.assert_allclose(symmetry.group_norm(np.ones((2, 3, 4))), np.full((2, 3), 2.0))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_group_scaling_gap_is_the_pairwise_gap_of_the_norm(kind, scale):
    """Prop. B.10 for the pair (‖g‖, θ2): the prior sees the scaled group through its norm."""
    rng = np.random.default_rng(3)
    c = np.geomspace(0.1, 10.0, 101)
    for k in (1, 2, 5):
        group, theta2 = rng.normal(size=k), float(rng.normal())
        gap = symmetry.group_scaling_gap(group, theta2, c, kind, scale)
        norm = float(symmetry.group_norm(group, kind))
        pair = symmetry.pairwise_scaling_gap(norm, abs(theta2), c, kind, scale)
        np.testing.assert_allclose(gap, pair, atol=1e-12)
        # The direct sum of log densities, scipy as reference.
        logpdf = SCIPY[kind](0.0, scale).logpdf
        direct = [
            logpdf(group).sum() + logpdf(theta2) - logpdf(ci * group).sum() - logpdf(theta2 / ci)
            for ci in c
        ]
        np.testing.assert_allclose(gap, direct, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_group_scaling_roots_are_one_and_the_norm_swap(kind):
    group, theta2 = np.array([0.5, 0.9]), 0.8
    roots = symmetry.group_scaling_roots(group, theta2, kind)
    norm = {"gaussian": np.sqrt(1.06), "laplace": 1.4}[kind]
    np.testing.assert_allclose(roots, np.sort([1.0, 0.8 / norm]), rtol=1e-14)
    found = symmetry.positive_roots(
        lambda c: symmetry.group_scaling_gap(group, theta2, c, kind), np.geomspace(0.05, 5, 999)
    )
    np.testing.assert_allclose(found, roots, rtol=1e-10)
    # At the swap root the scaled group has norm |θ2| and the scaled θ2 has magnitude ‖g‖.
    swap = roots[roots != 1.0][0]
    assert float(symmetry.group_norm(swap * group, kind)) == pytest.approx(theta2, rel=1e-14)
    assert theta2 / swap == pytest.approx(norm, rel=1e-14)


def test_group_scaling_gap_shares_the_roots_of_h():
    """h(c) = p(g)p(w2)(1 − exp(−gap)) for the Gaussian counterexample (Fig. 6)."""
    c = np.geomspace(0.2, 3.0, 41)
    gap = np.asarray(symmetry.group_scaling_gap([0.5, 0.9], 0.8, c))
    base = float(np.prod(stats.norm.pdf([0.5, 0.9, 0.8])))
    np.testing.assert_allclose(
        symmetry.counterexample_h(c), base * -np.expm1(-gap), rtol=1e-10, atol=1e-15
    )
    np.testing.assert_allclose(
        symmetry.group_scaling_roots([0.5, 0.9], 0.8), symmetry.counterexample_roots(), rtol=1e-15
    )


def test_group_scaling_errors():
    with pytest.raises(ValueError, match="unknown prior kind"):
        symmetry.group_norm([1.0, 2.0], "cauchy")
    with pytest.raises(ValueError, match="at least one weight"):
        symmetry.group_norm(np.zeros((3, 0)))
    with pytest.raises(ValueError, match="c must be positive"):
        symmetry.group_scaling_gap([0.5, 0.9], 0.8, [1.0, 0.0])
    with pytest.raises(ValueError, match="one group"):
        symmetry.group_scaling_roots(np.ones((2, 2)), 0.8)
    with pytest.raises(ValueError, match="all parameters are zero"):
        symmetry.group_scaling_roots([0.0, 0.0], 0.0)


def test_counterexample_errors():
    with pytest.raises(ValueError, match="c must be positive"):
        symmetry.counterexample_h([0.5, -1.0])
    with pytest.raises(ValueError, match="scale must be a positive"):
        symmetry.counterexample_h(0.5, scale=0.0)
    with pytest.raises(ValueError, match="all parameters are zero"):
        symmetry.counterexample_roots(0.0, 0.0, 0.0)
    np.testing.assert_array_equal(symmetry.counterexample_roots(0.5, 0.0, 0.9), [1.0])


# --- App. B.2: distant layers ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layer", [3, 4, 5])
def test_distant_scaling_gap_is_zero(kind, layer):
    rng = np.random.default_rng(layer)
    w = rng.normal(size=(20, 6))
    c = rng.uniform(0.1, 5.0, size=20)
    gap = symmetry.distant_scaling_gap(w, c, layer, kind, 0.7)
    assert gap.shape == (20,)
    assert float(np.max(np.abs(gap))) < 1e-12
    related, scaled = symmetry.distant_scaling(w, c, layer)
    # The relation of the paper: w_{l+1} = c·w_1, w_l = w_2/c; untouched layers stay.
    np.testing.assert_allclose(related[:, layer], c * w[:, 0])
    np.testing.assert_allclose(related[:, layer - 1], w[:, 1] / c)
    others = [k for k in range(6) if k not in (0, 1, layer - 1, layer)]
    np.testing.assert_array_equal(scaled[:, others], w[:, others])
    # The scaling swaps layers 1 ↔ l+1 and 2 ↔ l, and keeps the narrow network's function.
    swap = np.arange(6)
    swap[[0, layer]], swap[[1, layer - 1]] = [layer, 0], [layer - 1, 1]
    np.testing.assert_allclose(scaled, related[:, swap], rtol=1e-14)
    x = np.linspace(-2.0, 2.0, 9)
    np.testing.assert_allclose(nets.narrow_apply(scaled, x), nets.narrow_apply(related, x))
    # Read literally ("w_1 and w_2 scaled with c"), the same relation gives no invariance.
    literal = np.asarray(related).copy()
    literal[:, [0, 1]] *= c[:, None]
    literal[:, [layer - 1, layer]] /= c[:, None]
    literal_gap = symmetry.log_prior(related, kind, 0.7) - symmetry.log_prior(literal, kind, 0.7)
    assert np.all(np.abs(literal_gap) > 1e-6)


def test_distant_scaling_scalar_c_broadcasts():
    w = np.random.default_rng(0).normal(size=(3, 2, 5))
    assert symmetry.distant_scaling_gap(w, 2.0, 4).shape == (3, 2)


@pytest.mark.parametrize(
    ("shape", "layer", "c", "match"),
    [
        ((3,), 3, 2.0, "at least 4 layers"),
        ((), 3, 2.0, "at least 4 layers"),
        ((6,), 2, 2.0, r"layer must lie in \[3, 5\]"),
        ((6,), 6, 2.0, r"layer must lie in \[3, 5\]"),
        ((6,), 3.0, 2.0, "layer must be an integer"),
        ((6,), 3, 0.0, "c must be positive"),
        ((6,), 3, -2.0, "c must be positive"),
    ],
)
def test_distant_scaling_errors(shape, layer, c, match):
    with pytest.raises(ValueError, match=match):
        symmetry.distant_scaling_gap(np.ones(shape), c, layer)


@pytest.mark.slow
def test_output_change_and_mlp_symmetry_changes():
    import jax

    params = nets.mlp_init(jax.random.key(0), (2, 4, 1))
    x = np.random.default_rng(0).normal(size=(8, 2))
    assert symmetry.output_change(params, params, "relu", x) == 0.0
    changes = symmetry.mlp_symmetry_changes(jax.random.key(1), [(2, 4, 3, 1)], 2, num_inputs=16)
    assert list(changes) == [
        (a, op) for a in ("relu", "tanh") for op in ("permutation", "rescaling", "sign flip")
    ]
    assert all(len(v) == 4 for v in changes.values())  # 2 networks x 2 hidden layers
    for key in [
        ("relu", "permutation"),
        ("tanh", "permutation"),
        ("relu", "rescaling"),
        ("tanh", "sign flip"),
    ]:
        assert max(changes[key]) < 1e-10
    assert min(changes["relu", "sign flip"]) > 1e-3


def test_pairwise_root_checks_find_the_two_roots():
    ok, away = symmetry.pairwise_root_checks([(0.5, 2.0), (-1.5, 1.0)], GRID, KINDS)
    assert ok == [True] * 4 and min(away) > 0


@pytest.mark.slow
def test_distant_scaling_draws_are_invariant():
    import jax

    gaps = symmetry.distant_scaling_draws(jax.random.key(0), 20, depth=6)
    assert len(gaps) == 20 and max(gaps) < 1e-12
    printed = symmetry.distant_scaling_draws(jax.random.key(0), 20, depth=6, printed=True)
    assert len(printed) == 20 and max(printed) > 1e-2  # the text's scaling is no invariance


def test_the_printed_distant_scaling_keeps_the_product_not_the_prior():
    w = np.array([0.7, -1.3, 0.4, 0.9, 1.1, -0.6])
    related, scaled = symmetry.distant_scaling(w, 2.0, 4, printed=True)
    assert np.prod(scaled) == pytest.approx(np.prod(related))
    np.testing.assert_allclose(np.asarray(scaled / related)[[0, 1, 3, 4]], [2.0, 2.0, 0.5, 0.5])
    assert abs(float(symmetry.distant_scaling_gap(w, 2.0, 4, printed=True))) > 1e-2
    assert abs(float(symmetry.distant_scaling_gap(w, 2.0, 4))) < 1e-12


@pytest.mark.parametrize("kind", KINDS)
def test_norm_swap_deviation_is_zero(kind):
    assert symmetry.norm_swap_deviation(np.array([0.5, 0.9]), 0.8, GRID, kind) < 1e-12


@pytest.mark.slow
def test_counterexample_study_finds_the_norm_swap_root():
    out = symmetry.counterexample_study(0.5, 0.8, 0.9, paper_root=0.77754)
    assert out["c_star"] == pytest.approx(0.8 / np.sqrt(1.06))
    assert out["c_num"] == pytest.approx(out["c_star"], abs=1e-6)
    assert abs(out["h_at"]["closed form"]) < 1e-12 and abs(out["h_at"]["paper's 0.77754"]) > 0
    assert out["excluded_gap"] > 0.05  # 1, 1.6, 0.889 are all farther than 0.05 from 0.777
    assert max(out["swap_gap"].values()) < 1e-12
    assert out["swap_root"]["gaussian"] == pytest.approx(out["c_star"])
    assert out["swap_root"]["laplace"] == pytest.approx(0.8 / 1.4)
    assert out["norm_l2"] == pytest.approx(np.sqrt(1.06))
