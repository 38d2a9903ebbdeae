"""MAMS (inference.mams): the exact posterior of a conjugate model, resumable chunks, and clear
errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bnn_posteriors.evaluation import diagnostics
from bnn_posteriors.inference import mams

RNG = np.random.default_rng(0)
X = RNG.normal(size=(50, 3)).astype(np.float32)
W = np.array([1.0, -1.0, 0.5])
Y = (X @ W + 0.5 * RNG.normal(size=50)).astype(np.float32)


def linear(x=None, y=None):
    w = numpyro.sample("w", dist.Normal(jnp.zeros(3), 1.0))
    numpyro.sample("y", dist.Normal(x @ w, 0.5), obs=y)


def _exact():
    precision = X.T @ X / 0.25 + np.eye(3)
    cov = np.linalg.inv(precision)
    return cov @ X.T @ Y / 0.25, np.sqrt(np.diag(cov))


@pytest.mark.slow
def test_mams_draws_the_exact_posterior_of_a_conjugate_model(tmp_path):
    kw = dict(num_chains=4, num_warmup=400, num_samples=1000)
    samples, stats = mams.mams(jax.random.PRNGKey(0), linear, dict(x=X, y=Y), **kw)
    w = np.asarray(samples["w"])
    assert w.shape == (4, 1000, 3)
    mean, sd = _exact()
    ess = diagnostics.ess(w)
    np.testing.assert_array_less(np.abs(w.mean((0, 1)) - mean), 4 * sd / np.sqrt(ess))
    np.testing.assert_allclose(w.std((0, 1)), sd, rtol=0.15)
    assert np.all(diagnostics.rhat(w) < 1.02)
    assert stats["step_size"].shape == (4,) and stats["num_steps"].shape == (4, 1000)
    assert 0.7 < float(np.mean(stats["acceptance_rate"])) <= 1.0
    # in resumable chunks, cached: the same draws (one key per draw), read back on a rerun
    chunked, _ = mams.mams(
        jax.random.PRNGKey(0), linear, dict(x=X, y=Y), chunk_size=250, cache=tmp_path, **kw
    )
    np.testing.assert_array_equal(np.asarray(chunked["w"]), w)
    assert len(list(tmp_path.rglob("*.npz"))) == 5  # the tuning and four chunks
    again, _ = mams.mams(
        jax.random.PRNGKey(0), linear, dict(x=X, y=Y), chunk_size=250, cache=tmp_path, **kw
    )
    np.testing.assert_array_equal(np.asarray(again["w"]), w)


def test_mams_refuses_bad_input():
    data = dict(x=X, y=Y)
    with pytest.raises(ValueError, match="num_chains"):
        mams.mams(jax.random.PRNGKey(0), linear, data, num_chains=0)
    with pytest.raises(ValueError, match="num_warmup"):
        mams.mams(jax.random.PRNGKey(0), linear, data, num_warmup=5)
    with pytest.raises(ValueError, match="target_acceptance_rate"):
        mams.mams(jax.random.PRNGKey(0), linear, data, target_acceptance_rate=1.5)
    with pytest.raises(ValueError, match="multiple of thinning"):
        mams.mams(jax.random.PRNGKey(0), linear, data, num_samples=10, thinning=3)
    with pytest.raises(ValueError, match="integration_steps must exceed 1.1"):
        mams.mams(jax.random.PRNGKey(0), linear, data, integration_steps=1.0)
    with pytest.raises(ValueError, match="initial_step_size must be positive"):
        mams.mams(jax.random.PRNGKey(0), linear, data, initial_step_size=0.0)


@pytest.mark.parametrize(("steps", "start"), [(2.0, None), (16.0, None), (16.0, 0.01)])
def test_mams_trajectories_have_the_number_of_integration_steps_asked_for(steps, start):
    """L = integration_steps × step size, and the proposals take that many steps on average
    (drawn uniformly up to twice it), whatever step size the tuning starts from."""
    _, stats = mams.mams(
        jax.random.PRNGKey(1),
        linear,
        dict(x=X, y=Y),
        num_chains=2,
        num_warmup=100,
        num_samples=200,
        integration_steps=steps,
        initial_step_size=start,
    )
    np.testing.assert_allclose(stats["L"] / stats["step_size"], steps, rtol=1e-4)
    assert abs(np.mean(stats["num_steps"]) - steps) < 0.15 * steps
