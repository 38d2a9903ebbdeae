"""Tests of bnn_posteriors.evaluation.predictive: the model average of class probabilities and
its entropy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bnn_posteriors.evaluation import predictive


def linear_logits(params, x):
    return x @ params


def test_class_probs_is_the_mean_of_softmaxes():
    rng = np.random.default_rng(0)
    thetas = jnp.asarray(rng.normal(size=(5, 6)), jnp.float32)  # 5 samples of a 2x3 matrix
    x = jnp.asarray(rng.normal(size=(4, 2)), jnp.float32)
    probs = predictive.class_probs(thetas, lambda t: t.reshape(2, 3), linear_logits, x)
    expected = np.mean([jax.nn.softmax(x @ t.reshape(2, 3), axis=-1) for t in thetas], axis=0)
    assert probs.shape == (4, 3)
    np.testing.assert_allclose(probs, expected, rtol=1e-6)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)


def test_entropy_known_values():
    np.testing.assert_allclose(predictive.entropy(np.full((3, 4), 0.25)), np.log(4), rtol=1e-12)
    np.testing.assert_allclose(
        predictive.entropy([[1.0, 0.0], [0.5, 0.5]]), [0.0, np.log(2)], atol=1e-10
    )
    p = np.array([0.2, 0.3, 0.5])
    assert predictive.entropy(p) == pytest.approx(-np.sum(p * np.log(p)))


def test_entropy_rejects_a_scalar():
    with pytest.raises(ValueError, match="class axis"):
        predictive.entropy(0.5)
