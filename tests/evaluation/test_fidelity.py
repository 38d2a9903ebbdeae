"""Tests of bnn_posteriors.evaluation.fidelity: distances to a reference predictive against
closed forms."""

import numpy as np
import pytest
from scipy import integrate, spatial, stats

from bnn_posteriors.evaluation import fidelity


def gaussian(mean, sd, n=3, draws=1):
    """A regression predictive of ``draws`` identical draws N(mean, sd²) at n inputs."""
    return {"f": np.full((draws, n), mean), "noise_scale": np.full(draws, sd)}


def test_pooled_merges_the_leading_axes_and_broadcasts_sigma():
    ref = {"f": np.zeros((4, 5, 3)), "noise_scale": np.ones((4, 5))}
    p = fidelity.pooled(ref)
    assert p["f"].shape == (20, 3) and p["noise_scale"].shape == (20, 3)
    assert fidelity.pooled({"probs": np.full((2, 3, 4, 5), 0.2)})["probs"].shape == (6, 4, 5)
    with pytest.raises(ValueError, match="noise_scale must be"):
        fidelity.pooled({"f": np.zeros((4, 3)), "noise_scale": np.ones(3)})
    with pytest.raises(ValueError, match="positive"):
        fidelity.pooled({"f": np.zeros((4, 3)), "noise_scale": np.zeros(4)})
    with pytest.raises(ValueError, match="holds 'probs'"):
        fidelity.pooled({"mean": np.zeros(3)})


def test_agreement_and_total_variation():
    ref = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    assert fidelity.agreement(ref, ref) == 1.0 and fidelity.total_variation(ref, ref) == 0.0
    flipped = ref[:, ::-1]
    assert fidelity.agreement(flipped[:2], ref[:2]) == 0.0
    assert fidelity.total_variation(flipped, ref) == pytest.approx((0.8 + 0.6 + 0.0) / 3)
    with pytest.raises(ValueError, match="one shape"):
        fidelity.agreement(ref, ref[:2])


def test_w2_and_ks_of_gaussians_match_their_closed_forms():
    # equal sds: W2 = |μ − μ'|, KS = 2Φ(|μ − μ'| / 2σ) − 1; equal means: W2 = |σ − σ'|
    d = fidelity.regression_distances(gaussian(0.0, 1.0), gaussian(1.0, 1.0))
    np.testing.assert_allclose(d["w2"], 1.0, rtol=1e-3)
    np.testing.assert_allclose(d["ks"], 2 * stats.norm.cdf(0.5) - 1, atol=2e-3)
    d = fidelity.regression_distances(gaussian(0.0, 1.0), gaussian(0.0, 2.0))
    np.testing.assert_allclose(d["w2"], 1.0, rtol=2e-2)  # the midpoint rule misses the far tails
    same = fidelity.regression_distances(gaussian(0.3, 0.5, draws=4), gaussian(0.3, 0.5))
    np.testing.assert_allclose(same["w2"], 0.0, atol=1e-9)
    np.testing.assert_allclose(same["ks"], 0.0, atol=1e-12)


def test_w1_is_the_competitions_wasserstein_distance_of_the_laws_of_y():
    """W1 of the exact mixtures equals ``scipy.stats.wasserstein_distance`` (the NeurIPS 2021
    competition's regression metric) of many samples of y, and |μ − μ'| for a shift."""
    d = fidelity.regression_distances(gaussian(0.0, 1.0), gaussian(1.0, 1.0))
    np.testing.assert_allclose(d["w1"], 1.0, rtol=1e-3)
    rng = np.random.default_rng(4)
    a = {"f": rng.normal(size=(30, 2)), "noise_scale": np.full(30, 0.4)}
    b = {"f": 0.5 + 2 * rng.normal(size=(40, 2)), "noise_scale": np.full(40, 0.2)}
    d = fidelity.regression_distances(a, b)
    for i in range(2):
        ya = np.repeat(a["f"][:, i], 5000) + 0.4 * rng.normal(size=150_000)
        yb = np.repeat(b["f"][:, i], 5000) + 0.2 * rng.normal(size=200_000)
        assert d["w1"][i] == pytest.approx(stats.wasserstein_distance(ya, yb), rel=0.02)
    assert d["w1"][0] <= d["w2"][0]  # W1 ≤ W2 (Jensen)


def test_a_bimodal_reference_is_far_from_either_of_its_modes():
    modes = {"f": np.array([[-2.0], [2.0]]), "noise_scale": np.array([0.3, 0.3])}
    one = {"f": np.array([[2.0]]), "noise_scale": np.array([0.3])}
    d = fidelity.regression_distances(one, modes)
    assert d["ks"][0] == pytest.approx(0.5, abs=1e-3)  # half the mass sits at the other mode
    # W2² = ∫ (F⁻¹ − G⁻¹)² du; the modes are 13 sd apart, so the mixture's quantile at u < ½ is
    # N(−2, 0.3²)'s at 2u and at u > ½ N(2, 0.3²)'s at 2u − 1
    q = stats.norm(2.0, 0.3).ppf
    low = integrate.quad(lambda u: (q(u) - stats.norm(-2.0, 0.3).ppf(2 * u)) ** 2, 0, 0.5)[0]
    high = integrate.quad(lambda u: (q(u) - q(2 * u - 1)) ** 2, 0.5, 1)[0]
    assert d["w2"][0] == pytest.approx(np.sqrt(low + high), rel=1e-2)


def test_fidelity_and_scores():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=(4, 10, 6))  # (chain, draw, n, C)
    ref = {"probs": probs}
    same = fidelity.fidelity(ref, ref)
    assert same["agreement"] == 1.0 and same["total_variation"] == 0.0
    # the same draws on both sides are no independent samples: the unbiased estimate of the
    # energy distance is then −2/S times the mean distance between distinct draws
    assert -0.2 < same["energy"] < 0
    floor = fidelity.fidelity({"probs": probs[:2]}, {"probs": probs[2:]})
    assert 0 < floor["total_variation"] < 0.2
    assert abs(floor["energy"]) < 0.05  # two samples of one law: near 0
    with pytest.raises(ValueError, match="classifier"):
        fidelity.fidelity(ref, gaussian(0.0, 1.0, n=6))
    labels = probs.mean(axis=(0, 1)).argmax(-1)
    s = fidelity.predictive_scores(ref, labels)
    assert s["accuracy"] == 1.0 and s["lppd"] < 0 and 0 <= s["ece"] <= 1
    reg = gaussian(0.5, 2.0, n=4)
    s = fidelity.predictive_scores(reg, np.full(4, 0.5))
    assert s["rmse"] == 0.0
    assert s["lppd"] == pytest.approx(stats.norm.logpdf(0.0, scale=2.0))


def _chains(seed=0, chains=8, draws=50, n=4):
    rng = np.random.default_rng(seed)
    return {
        "f": rng.normal(size=(chains, draws, n)) * 0.7 + np.linspace(-1, 1, n),
        "noise_scale": np.exp(rng.normal(-1.0, 0.2, size=(chains, draws))),
    }


@pytest.mark.parametrize("kind", ["regression", "classification"])
def test_matched_floor_is_fidelity_of_random_draws_to_the_other_half(kind):
    rng = np.random.default_rng(1)
    ref = _chains() if kind == "regression" else {"probs": rng.dirichlet(np.ones(3), (8, 50, 6))}
    floor = fidelity.matched_floor(ref, num_draws=40, num_splits=5, seed=3)
    pooled = fidelity.pooled(ref)
    for j, (draws, other) in enumerate(fidelity._split_subsets(8, 50, 40, 5, 3)):
        assert len(set(draws // 50) & set(other)) == 0 and len(other) == 4  # disjoint halves
        mine = {k: v[draws] for k, v in pooled.items()}
        theirs = {k: np.asarray(v)[other] for k, v in ref.items()}
        exact = fidelity.fidelity(mine, theirs)
        for metric, values in floor.items():  # one grid per input: the same up to its resolution
            assert values[j] == pytest.approx(exact[metric], rel=2e-3, abs=1e-9), metric


def test_matched_floor_falls_with_the_draws_and_is_zero_for_identical_chains():
    ref = _chains(chains=16, draws=100)
    few = fidelity.matched_floor(ref, num_draws=20, num_splits=20)
    many = fidelity.matched_floor(ref, num_draws=400, num_splits=20)
    assert few["w2"].mean() > 1.5 * many["w2"].mean()  # Monte Carlo error ~ 1/sqrt(draws)
    same = {k: np.broadcast_to(v[:1, :1], v.shape) for k, v in ref.items()}  # one draw repeated
    assert np.all(fidelity.matched_floor(same, num_draws=100, num_splits=3)["ks"] < 1e-12)
    with pytest.raises(ValueError, match="more than half the chains hold"):
        fidelity.matched_floor(ref, num_draws=801)
    with pytest.raises(ValueError, match="at least 2 chains"):
        fidelity.matched_floor({k: v[:1] for k, v in ref.items()}, num_draws=10)


@pytest.mark.parametrize("kind", ["regression", "classification"])
def test_matched_floor_of_another_reference_scores_its_draws_on_the_same_halves(kind):
    """``other``: num_draws of the second reference against the floor's own halves; a second
    reference of the same law sits on the floor, one of a shifted law above it."""
    rng = np.random.default_rng(2)
    if kind == "regression":
        ref, same = _chains(chains=8, draws=50), _chains(chains=4, draws=80)
        shifted = {**same, "f": same["f"] + 1.0}
    else:
        ref, same = ({"probs": rng.dirichlet(np.ones(3), (c, d, 6))} for c, d in ((8, 50), (4, 80)))
        shifted = {"probs": rng.dirichlet([8.0, 1.0, 1.0], (4, 80, 6))}
    floor = fidelity.matched_floor(ref, num_draws=40, num_splits=6, seed=3)
    cross = fidelity.matched_floor(ref, num_draws=40, num_splits=6, seed=3, other=same)
    pooled_ref, pooled_same = fidelity.pooled(ref), fidelity.pooled(same)
    picks = np.random.default_rng([3, 1])
    for j, (_, halves) in enumerate(fidelity._split_subsets(8, 50, 40, 6, 3)):
        drawn = picks.choice(320, 40, replace=False)
        mine = {k: v[drawn] for k, v in pooled_same.items()}
        exact = fidelity.fidelity(mine, {k: np.asarray(v)[halves] for k, v in ref.items()})
        for metric, values in cross.items():  # KS read on a grid spanning both references
            tol = 3e-3 if metric == "ks" else 1e-9  # a KS read on the grid: ±½ spacing × density
            assert values[j] == pytest.approx(exact[metric], rel=2e-3, abs=tol), metric
    metric = "w2" if kind == "regression" else "total_variation"
    assert cross[metric].mean() < 1.5 * floor[metric].mean()
    far = fidelity.matched_floor(ref, num_draws=40, num_splits=6, seed=3, other=shifted)
    assert far[metric].mean() > 3 * floor[metric].mean()
    assert len(pooled_ref[next(iter(pooled_ref))]) == 400
    with pytest.raises(ValueError, match="other must predict at the reference's points"):
        fidelity.matched_floor(
            ref,
            num_draws=40,
            other={k: v[..., :3, :] for k, v in same.items()}
            if kind == "classification"
            else {**same, "f": same["f"][..., :2]},
        )
    with pytest.raises(ValueError, match="more than other holds"):
        fidelity.matched_floor(ref, num_draws=40, other={k: v[:1, :20] for k, v in same.items()})


def test_energy_distance_of_point_masses_and_of_gaussians_matches_the_closed_forms():
    """Two point masses c, c′ at every input: 2|c − c′| (the norm is the RMS over inputs); a
    draw against itself: 0. N(0, 1) against N(μ, 1) at one input: 2 E|X − Y| − 2 E|X − X′|
    with X − Y ~ N(−μ, 2), X − X′ ~ N(0, 2)."""
    one, other = gaussian(0.5, 1.0, n=7), gaussian(-1.0, 1.0, n=7)
    assert fidelity.energy_distance(one, other) == pytest.approx(3.0)
    assert fidelity.energy_distance(one, one) == pytest.approx(0.0, abs=1e-7)

    def mean_abs(m, s):  # E|N(m, s²)|
        return s * np.sqrt(2 / np.pi) * np.exp(-(m**2) / (2 * s**2)) + m * (
            1 - 2 * stats.norm.cdf(-m / s)
        )

    rng = np.random.default_rng(5)
    for mu in (0.0, 0.5, 2.0):
        a = {"f": rng.normal(size=(3000, 1)), "noise_scale": np.ones(3000)}
        b = {"f": mu + rng.normal(size=(3000, 1)), "noise_scale": np.ones(3000)}
        exact = 2 * mean_abs(mu, np.sqrt(2)) - 2 * mean_abs(0.0, np.sqrt(2))
        assert fidelity.energy_distance(a, b) == pytest.approx(exact, abs=0.03)
    with pytest.raises(ValueError, match="values a draw"):
        fidelity.energy_distance(gaussian(0.0, 1.0, n=3), gaussian(0.0, 1.0, n=4))


def test_energy_distance_sees_the_joint_law_that_the_per_input_distances_miss():
    """Draws that move two inputs together against draws that move them independently: the
    same N(0, 1) at each input, so W2, W1 and KS sit at their Monte Carlo floor while the
    energy distance is many times its own."""
    rng = np.random.default_rng(6)
    z = rng.normal(size=(2, 2000, 1))
    together = {"f": np.repeat(z[0], 2, axis=1), "noise_scale": np.full(2000, 0.1)}
    apart = {"f": rng.normal(size=(2000, 2)), "noise_scale": np.full(2000, 0.1)}
    alike = {"f": np.repeat(z[1], 2, axis=1), "noise_scale": np.full(2000, 0.1)}
    far, near = fidelity.fidelity(apart, together), fidelity.fidelity(alike, together)
    assert far["w2"] < 3 * max(near["w2"], 0.02) and far["ks"] < 0.05
    assert far["energy"] > 0.05 and far["energy"] > 10 * abs(near["energy"]), (far, near)


def test_joint_draws_and_pairwise_distances():
    """A draw's vector over all inputs, scaled so that its norm is the RMS over the inputs;
    the distances between rows are scipy's Euclidean ones."""
    rng = np.random.default_rng(8)
    probs = rng.dirichlet(np.ones(3), size=(5, 4))  # (S, n, C)
    x = fidelity.joint_draws({"probs": probs})
    assert x.shape == (5, 12) and np.allclose(x * 2.0, probs.reshape(5, 12))
    f = rng.normal(size=(6, 9))
    assert np.allclose(fidelity.joint_draws({"f": f, "noise_scale": np.ones((6, 9))}), f / 3.0)
    a, b = rng.normal(size=(7, 4)), 100.0 + rng.normal(size=(3, 4))
    np.testing.assert_allclose(
        fidelity.pairwise_distances(a, b), spatial.distance.cdist(a, b), rtol=1e-10
    )
    assert np.all(np.diag(fidelity.pairwise_distances(a, a)) < 1e-6)
