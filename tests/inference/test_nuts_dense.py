"""NUTS with a dense mass matrix (``mcmc.nuts(dense_mass=True)``, the reference sampler
``nuts_dense``): on a strongly correlated posterior its trees are much shorter than the
diagonal metric's, and it still samples the right distribution."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bnn_posteriors.inference import mcmc, reference

RHO = 0.995
COV = np.array([[1.0, RHO], [RHO, 1.0]])


def correlated(scale=1.0):
    """A 2-D Gaussian with correlation ``RHO``: a diagonal metric cannot undo it."""
    numpyro.sample("z", dist.MultivariateNormal(jnp.zeros(2), scale * jnp.asarray(COV)))


@pytest.mark.slow
def test_a_dense_metric_shortens_the_trees_of_a_correlated_posterior():
    budget = {"num_chains": 2, "num_warmup": 500, "num_samples": 1000}
    key = jax.random.key(0)
    diagonal, d_stats = mcmc.nuts(key, correlated, {"scale": 1.0}, **budget)
    dense, D_stats = mcmc.nuts(key, correlated, {"scale": 1.0}, dense_mass=True, **budget)
    steps_diagonal = float(np.mean(d_stats["num_steps"]))
    steps_dense = float(np.mean(D_stats["num_steps"]))
    # a diagonal metric needs trees about 1/sqrt(1 - RHO) = 14 times longer; at least 3 times
    assert steps_dense * 3 < steps_diagonal, (steps_dense, steps_diagonal)
    for z in (diagonal["z"], dense["z"]):  # both sample N(0, COV)
        z = np.asarray(z).reshape(-1, 2)
        np.testing.assert_allclose(np.cov(z.T), COV, atol=0.25)
        assert abs(np.corrcoef(z.T)[0, 1] - RHO) < 0.01


def test_the_reference_samplers_name_their_families():
    assert reference.SAMPLERS == ("nuts", "nuts_dense", "mams")
    assert {reference.FAMILY[s] for s in reference.SAMPLERS} == {"NUTS", "MAMS"}
