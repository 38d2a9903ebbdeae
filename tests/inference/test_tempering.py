"""Tests of the tempered mean-field VI of [TEMP] (``inference.tempering``) on tiny networks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from scipy import integrate, stats

from bnn_posteriors.inference import mean_field, tempering
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models

KEY = jax.random.PRNGKey(0)


def tiny_problem(width=3, n=5, seed=0):
    """A random q over a width-``width`` network with one input (+ constant), and 5 points."""
    rng = np.random.default_rng(seed)
    x = tempering.augment(jnp.asarray(rng.uniform(-1, 1, (n, 1)), jnp.float32))
    y = jnp.asarray(rng.normal(size=n), jnp.float32)
    q = two_layer(
        jnp.asarray(rng.normal(size=(2, width)), jnp.float32),
        jnp.asarray(rng.uniform(0.3, 1.2, (2, width)), jnp.float32),
        jnp.asarray(rng.normal(size=(width, 1)), jnp.float32),
        jnp.asarray(rng.uniform(0.3, 1.2, (width, 1)), jnp.float32),
    )
    return x, y, q


def two_layer(w0_loc, w0_scale, w1_loc, w1_scale) -> MeanField:
    """q of [TEMP]'s network: a MeanField over the layers [{"W": W0}, {"W": W1}]."""
    return MeanField([{"W": w0_loc}, {"W": w1_loc}], [{"W": w0_scale}, {"W": w1_scale}])


def parts(q):
    """(W0 mean, W0 sd, W1 mean, W1 sd) of a two-layer q."""
    return q.loc[0]["W"], q.scale[0]["W"], q.loc[1]["W"], q.scale[1]["W"]


def hand_kl(q, prior_scale):
    """Σ KL(N(μ, σ²) ‖ N(0, s²)) over every weight, written out with numpy."""
    total = 0.0
    for layer in range(len(q.loc)):
        mu = np.asarray(q.loc[layer]["W"], float)
        sd = np.asarray(q.scale[layer]["W"], float)
        s = prior_scale
        total += np.sum(np.log(s / sd) + (sd**2 + mu**2) / (2 * s**2) - 0.5)
    return total


def hand_expected_log_lik(q, x, y, noise_scale, num_draws=400_000, seed=1):
    """Σ_i E_q log N(y_i | f_w(x_i), noise²) by plain numpy Monte Carlo over w ~ q."""
    rng = np.random.default_rng(seed)
    mu0, sd0, mu1, sd1 = (np.asarray(a, float) for a in parts(q))
    width = mu0.shape[1]
    w0 = mu0 + sd0 * rng.standard_normal((num_draws, *mu0.shape))
    w1 = mu1 + sd1 * rng.standard_normal((num_draws, *mu1.shape))
    hidden = np.maximum(np.einsum("nd,sdh->snh", np.asarray(x, float), w0), 0.0)
    f = np.einsum("snh,sho->sno", hidden, w1)[..., 0] / width
    logp = stats.norm.logpdf(np.asarray(y, float), f, noise_scale).sum(axis=1)
    return logp.mean(), logp.std() / np.sqrt(num_draws)


# --------------------------------------------------------------------------- temperature


def test_balanced_temperature_is_tau_p_over_n():
    assert tempering.balanced_temperature(140, 1024, 0.1) == pytest.approx(0.1 * 140 / 1024)
    assert tempering.balanced_temperature(10, 10) == 1.0


@pytest.mark.parametrize(
    "args", [(0, 10, 1.0), (10, 0, 1.0), (10, 10, -1.0), (10, 10, 0.0), (1.5, 10, 1.0)]
)
def test_balanced_temperature_rejects_bad_input(args):
    with pytest.raises(ValueError):
        tempering.balanced_temperature(*args)


def test_augment_appends_ones_and_checks_shape():
    x = jnp.arange(6.0).reshape(3, 2)
    out = tempering.augment(x)
    assert out.shape == (3, 3)
    np.testing.assert_array_equal(out[:, 2], 1.0)
    with pytest.raises(ValueError, match="shape"):
        tempering.augment(jnp.arange(3.0))


# --------------------------------------------------------------------------- the objective


@pytest.mark.slow
def test_kl_is_zero_at_the_prior_and_matches_hand_formula():
    _, _, q = tiny_problem()
    assert float(mean_field.kl_to_prior(q, 0.7)) == pytest.approx(hand_kl(q, 0.7), rel=1e-5)
    prior = tempering.init_params(KEY, 2, 3, prior_scale=0.7, init_scale=1.0)
    _, sd0, w1, sd1 = parts(prior)
    prior = two_layer(jnp.zeros_like(sd0), sd0, w1, sd1)
    assert float(mean_field.kl_to_prior(prior, 0.7)) == pytest.approx(0.0, abs=1e-6)
    per_neuron = mean_field.kl_per_unit(q, 0.7)
    assert per_neuron.shape == (3,)
    assert float(per_neuron.sum()) == pytest.approx(hand_kl(q, 0.7), rel=1e-5)


@pytest.mark.slow
def test_tempered_objective_is_minus_eta_kl_plus_expected_log_likelihood():
    """NumPyro's loss with the η-scaled guide = −(−η·KL + E_q log L), checked by hand."""
    x, y, q = tiny_problem()
    kwargs = dict(x=x, y=y, width=3, noise_scale=0.8, prior_scale=0.7)
    eta = 0.25
    terms = tempering.mc_elbo_terms(KEY, q, kwargs, eta, num_particles=50_000)
    kl = hand_kl(q, 0.7)
    ell, ell_se = hand_expected_log_lik(q, x, y, 0.8)
    assert float(terms["kl"]) == pytest.approx(kl, rel=1e-5)  # analytic, exact
    assert abs(float(terms["expected_log_lik"]) - ell) < 6 * ell_se + 0.05
    assert abs(float(terms["elbo"]) - (-eta * kl + ell)) < 6 * ell_se + 0.05
    # the closed form agrees with the hand Monte Carlo too
    exact = tempering.gaussian_elbo_terms(q, x, y, eta=eta, prior_scale=0.7, noise_scale=0.8)
    assert abs(float(exact["expected_log_lik"]) - ell) < 6 * ell_se + 1e-3
    assert float(exact["elbo"]) == pytest.approx(-eta * float(exact["kl"]) + ell, abs=0.05)


def test_expected_loss_is_the_data_term_without_its_constant():
    """expected_loss = Σ_i E_q (y_i − f)²/(2σ²) (hand Monte Carlo); it carries no (p/2) log 2πσ²."""
    x, y, q = tiny_problem()
    rng = np.random.default_rng(2)
    draws = 200_000
    mu0, sd0, mu1, sd1 = (np.asarray(a) for a in parts(q))
    w0 = mu0 + sd0 * rng.standard_normal((draws, 2, 3))
    w1 = mu1 + sd1 * rng.standard_normal((draws, 3, 1))
    hidden = np.maximum(np.einsum("nd,sdh->snh", np.asarray(x, float), w0), 0.0)
    f = np.einsum("snh,sho->sno", hidden, w1)[..., 0] / 3
    loss = ((np.asarray(y, float) - f) ** 2).sum(axis=1) / (2 * 0.8**2)
    terms = tempering.gaussian_elbo_terms(q, x, y, noise_scale=0.8)
    assert abs(float(terms["expected_loss"]) - loss.mean()) < 6 * loss.std() / np.sqrt(draws)
    const = -0.5 * len(y) * np.log(2 * np.pi * 0.8**2)
    assert float(terms["expected_log_lik"]) == pytest.approx(
        const - float(terms["expected_loss"]), rel=1e-5
    )
    # a perfect deterministic fit has zero loss, whatever p and σ
    exact = MeanField(q.loc, jax.tree.map(lambda s: jnp.full_like(s, 1e-8), q.scale))
    mean, _ = tempering.predictive_moments(exact, x)
    zero = tempering.gaussian_elbo_terms(exact, x, mean[:, 0], noise_scale=0.3)
    assert float(zero["expected_loss"]) == pytest.approx(0.0, abs=1e-5)


@pytest.mark.slow
def test_temperature_only_reweights_the_kl():
    """Same key, two temperatures: the ELBOs differ by exactly (η₁ − η₂)·KL."""
    x, y, q = tiny_problem()
    kwargs = dict(x=x, y=y, width=3, noise_scale=0.8, prior_scale=0.7)
    a = tempering.mc_elbo_terms(KEY, q, kwargs, 1.0, num_particles=4)
    b = tempering.mc_elbo_terms(KEY, q, kwargs, 0.1, num_particles=4)
    assert float(a["expected_log_lik"]) == pytest.approx(float(b["expected_log_lik"]), rel=1e-6)
    diff = float(b["elbo"]) - float(a["elbo"])
    assert diff == pytest.approx(0.9 * hand_kl(q, 0.7), rel=1e-4)


@pytest.mark.parametrize("eta", [-1.0, 0.0, float("nan"), float("inf")])
def test_negative_or_zero_temperature_is_rejected(eta):
    x, y, q = tiny_problem()
    kwargs = dict(x=x, y=y, width=3)
    with pytest.raises(ValueError, match="eta"):
        tempering.mc_elbo_terms(KEY, q, kwargs, eta)
    with pytest.raises(ValueError, match="eta"):
        tempering.gaussian_elbo_terms(q, x, y, eta=eta)
    init = tempering.init_params(KEY, 2, 3)
    with pytest.raises(ValueError, match="eta"):
        tempering.fit_tempered(KEY, kwargs, init, [1.0, eta], num_steps=2)


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("m, s", [(0.0, 1.0), (1.3, 0.4), (-0.7, 2.0)])
def test_relu_gaussian_moments_match_quadrature(m, s):
    e1, e2 = tempering.relu_gaussian_moments(m, s)
    pdf = stats.norm(m, s).pdf
    q1 = integrate.quad(lambda u: u * pdf(u), 0, np.inf)[0]
    q2 = integrate.quad(lambda u: u**2 * pdf(u), 0, np.inf)[0]
    assert float(e1) == pytest.approx(q1, rel=1e-5)
    assert float(e2) == pytest.approx(q2, rel=1e-5)


@pytest.mark.slow
def test_predictive_moments_match_monte_carlo():
    x, _, q = tiny_problem(width=4)
    mean, var = tempering.predictive_moments(q, x)
    f = mean_field.outputs(KEY, q, x, 200_000, output_scale=0.25)
    np.testing.assert_allclose(mean, f.mean(0), atol=0.01)
    np.testing.assert_allclose(var, f.var(0), rtol=0.03, atol=1e-3)


@pytest.mark.slow
def test_gap_is_the_variance_term_and_shrinks_like_one_over_n():
    """Replicating every neuron k times keeps ν_N^θ and divides the gap by k exactly."""
    x, y, q = tiny_problem()
    terms = tempering.gaussian_elbo_terms(q, x, y, noise_scale=0.8)
    assert float(terms["gap"]) > 0
    assert float(terms["limit"] - terms["elbo"]) == pytest.approx(float(terms["gap"]), rel=1e-4)
    for k in (2, 8):
        mu0, sd0, mu1, sd1 = parts(q)
        rep = two_layer(
            *(jnp.tile(mu0, (1, k)), jnp.tile(sd0, (1, k))),
            *(jnp.tile(mu1, (k, 1)), jnp.tile(sd1, (k, 1))),
        )
        t = tempering.gaussian_elbo_terms(rep, x, y, noise_scale=0.8)
        assert float(t["gap"]) == pytest.approx(float(terms["gap"]) / k, rel=1e-4)
        assert float(t["limit_log_lik"]) == pytest.approx(float(terms["limit_log_lik"]), rel=1e-5)
        assert float(t["kl"]) == pytest.approx(k * float(terms["kl"]), rel=1e-5)


def test_closed_forms_reject_bad_shapes():
    x, y, q = tiny_problem()
    with pytest.raises(ValueError, match=r"predictive_moments: x has 1 columns \(features\)"):
        tempering.predictive_moments(q, x[:, :1])
    with pytest.raises(ValueError, match="gaussian_elbo_terms: x has .* rows but y has 3"):
        tempering.gaussian_elbo_terms(q, x, y[:3])
    with pytest.raises(TypeError, match="MeanField"):
        tempering.predictive_moments({"W0_loc": q.loc[0]["W"]}, x)
    with pytest.raises(ValueError, match="layers"):
        tempering.predictive_moments(MeanField(q.loc[:1], q.scale[:1]), x)
    mu0, sd0, _, _ = parts(q)
    bad = two_layer(mu0, sd0, jnp.zeros((5, 1)), jnp.ones((5, 1)))
    with pytest.raises(ValueError, match="width"):
        tempering.gaussian_elbo_terms(bad, x, y)


# --------------------------------------------------------------------------- model and fitting


def test_model_uses_mean_field_scaling_and_checks_input():
    x, y, _ = tiny_problem()
    w = {"W0": jnp.ones((2, 4)), "W1": jnp.ones((4, 1))}
    conditioned = numpyro.handlers.condition(numpyro.handlers.seed(tempering.model, KEY), w)
    tr = numpyro.handlers.trace(conditioned).get_trace(x, y, width=4)
    expected = nets.mlp_apply([{"W": w["W0"]}, {"W": w["W1"]}], x, output_scale=0.25)[:, 0]
    np.testing.assert_allclose(tr["mean"]["value"], expected, rtol=1e-6)
    with pytest.raises(ValueError, match="likelihood"):
        tempering.model(x, y, width=4, likelihood="poisson")
    with pytest.raises(ValueError, match="width"):
        tempering.model(x, y, width=0)
    with pytest.raises(ValueError, match="one output"):
        tempering.model(x, y, width=4, n_out=2)


@pytest.mark.slow
def test_fit_tempered_increases_the_elbo_and_shapes():
    x, y, _ = tiny_problem(n=20)
    init = tempering.init_params(KEY, 2, 8)
    params, losses = tempering.fit_tempered(
        KEY,
        dict(x=x, y=y, width=8),
        init,
        [1.0, 0.1],
        num_steps=300,
        learning_rate=0.05,
        num_particles=4,
    )
    assert params.loc[0]["W"].shape == (2, 2, 8) and losses.shape == (2, 300)
    assert np.all(np.asarray(losses[:, -30:].mean(1)) < np.asarray(losses[:, :30].mean(1)))
    # the colder fit moves further from the prior
    kl = [float(mean_field.kl_to_prior(jax.tree.map(lambda v, i=i: v[i], params))) for i in (0, 1)]
    assert kl[1] > kl[0]


@pytest.mark.slow
def test_fit_tempered_batched_over_data_sets_keeps_padded_inputs_at_the_prior():
    x, y, _ = tiny_problem(n=10)
    x_pad = jnp.pad(x, ((0, 0), (0, 1)))  # a zero column: its weights see no data
    xs, ys = jnp.stack([x_pad, x_pad]), jnp.stack([y, -y])
    init = tempering.init_params(KEY, 3, 4)
    init = MeanField([{"W": init.loc[0]["W"].at[2].set(0.0)}, init.loc[1]], init.scale)
    inits = jax.tree.map(lambda a: jnp.stack([a, a]), init)
    params, losses = tempering.fit_tempered(
        KEY,
        dict(x=xs, y=ys, width=4),
        inits,
        [[1.0, 0.5], [1.0, 0.5]],
        num_steps=50,
        batched=("x", "y"),
    )
    assert params.loc[0]["W"].shape == (2, 2, 3, 4) and losses.shape == (2, 2, 50)
    np.testing.assert_array_equal(params.loc[0]["W"][:, :, 2], 0.0)
    np.testing.assert_allclose(params.scale[0]["W"][:, :, 2], 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="etas"):
        tempering.fit_tempered(
            KEY, dict(x=xs, y=ys, width=4), inits, [1.0], num_steps=2, batched=("x", "y")
        )
    with pytest.raises(ValueError, match="not model arguments"):
        tempering.fit_tempered(
            KEY, dict(x=x, y=y, width=4), init, [1.0], num_steps=2, batched=("z",)
        )


@pytest.mark.slow
def test_categorical_model_and_predictive_probabilities():
    rng = np.random.default_rng(3)
    x = tempering.augment(jnp.asarray(rng.normal(size=(12, 3)), jnp.float32))
    y = jnp.asarray(rng.integers(0, 3, 12))
    init = tempering.init_params(KEY, 4, 5, 3, prior_scale=0.5, init_scale=0.2)
    kwargs = dict(
        x=x,
        y=y,
        width=5,
        likelihood="categorical",
        n_out=3,
        prior_scale=0.5,
        output_scale=1.0,
        subsample_size=6,
    )
    terms = tempering.mc_elbo_terms(KEY, init, kwargs, 0.5, num_particles=2)
    assert float(terms["kl"]) == pytest.approx(hand_kl(init, 0.5), rel=1e-5)
    assert float(terms["expected_log_lik"]) < 0
    params, _ = tempering.fit_tempered(KEY, kwargs, init, [0.5], num_steps=20)
    probs = tempering.predict_probs(
        KEY, jax.tree.map(lambda v: v[0], params), x, num_samples=8, output_scale=1.0
    )
    assert probs.shape == (12, 3)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="subsample_size"):
        tempering.model(x, jnp.zeros(12), width=5, subsample_size=4)


@pytest.mark.slow
def test_mlp_classification_rejects_bad_labels_shape():
    x = jnp.ones((4, 2))
    with pytest.raises(ValueError, match="y must have shape"):
        numpyro.handlers.seed(models.mlp_classification, KEY)(
            x, jnp.zeros(3, int), widths=(2, 3, 2)
        )
    with pytest.raises(ValueError, match="two outputs"):
        models.mlp_classification(x, widths=(2, 3, 1))


def test_init_params_with_more_hidden_layers():
    q = tempering.init_params(KEY, 4, 5, 3, depth=3, prior_scale=0.5, init_scale=0.2)
    assert [layer["W"].shape for layer in q.loc] == [(4, 5), (5, 5), (5, 5), (5, 3)]
    assert float(np.abs(q.loc[-1]["W"]).max()) == 0.0
    assert float(q.scale[2]["W"][0, 0]) == pytest.approx(0.1)
    # the first layer is the one-hidden-layer draw; deeper layers draw from their own keys
    one = tempering.init_params(KEY, 4, 5, 3, prior_scale=0.5, init_scale=0.2)
    np.testing.assert_array_equal(q.loc[0]["W"], one.loc[0]["W"])
    assert not np.allclose(q.loc[1]["W"], q.loc[2]["W"])
    with pytest.raises(ValueError, match="depth"):
        tempering.init_params(KEY, 4, 5, 3, depth=0)
    # the closed forms are for one hidden layer: a deeper q is refused with a clear error
    with pytest.raises(ValueError, match=r"\[\{'W': W0\}, \{'W': W1\}\]"):
        tempering.predictive_moments(q, jnp.ones((2, 4)))


@pytest.mark.slow
def test_deeper_categorical_model_fits_and_predicts():
    rng = np.random.default_rng(4)
    x = tempering.augment(jnp.asarray(rng.normal(size=(12, 3)), jnp.float32))
    y = jnp.asarray(rng.integers(0, 3, 12))
    init = tempering.init_params(KEY, 4, 5, 3, depth=2, prior_scale=0.5, init_scale=0.2)
    kwargs = dict(
        x=x,
        y=y,
        width=5,
        depth=2,
        likelihood="categorical",
        n_out=3,
        prior_scale=0.5,
        output_scale=1.0,
    )
    terms = tempering.mc_elbo_terms(KEY, init, kwargs, 0.5, num_particles=2)
    assert float(terms["kl"]) == pytest.approx(hand_kl(init, 0.5), rel=1e-5)  # all three layers
    params, losses = tempering.fit_tempered(KEY, kwargs, init, [0.5, 1.0], num_steps=20)
    assert losses.shape == (2, 20) and params.loc[1]["W"].shape == (2, 5, 5)
    probs = tempering.predict_probs(
        KEY, jax.tree.map(lambda v: v[0], params), x, num_samples=8, output_scale=1.0
    )
    assert probs.shape == (12, 3)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    broken = tempering.init_params(KEY, 4, 6, 3, depth=2)
    broken.loc[1]["W"], broken.scale[1]["W"] = jnp.zeros((6, 5)), jnp.ones((6, 5))
    with pytest.raises(ValueError, match="W1 .* W2 .* disagree"):
        tempering.predict_probs(KEY, broken, x, num_samples=2)
