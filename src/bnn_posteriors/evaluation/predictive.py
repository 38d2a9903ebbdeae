"""Classification predictives of parameter samples: the Bayesian model average of the class
probabilities and its entropy ([MBNN] §5, Fig. 4 and Table 1).

Scores of a predictive (NLL, accuracy, ECE) are in :mod:`bnn_posteriors.evaluation.metrics`; this
module builds the predictive from samples θ_s and measures its uncertainty.
"""

from __future__ import annotations

import jax
import numpy as np

from bnn_posteriors.inference.metricbnn import push_forward


def class_probs(thetas, unravel, apply_fn, x) -> np.ndarray:
    """Posterior-mean class probabilities p(c | x) = (1/S) Σ_s softmax f(x; θ_s)_c.

    thetas: flat parameter samples (S, P); ``unravel`` maps one row to the parameters of
    ``apply_fn(params, x)`` → logits (n, C). Returns (n, C) probabilities.
    """
    f = push_forward(thetas, unravel, apply_fn, x)
    return np.asarray(jax.nn.softmax(f, axis=-1).mean(0))


def entropy(probs) -> np.ndarray:
    """Predictive entropy H[p(· | x)] = −Σ_c p_c log p_c in nats, per input: (..., C) → (...).

    Probabilities are clipped to [1e-12, 1] in float64, so a zero class contributes 0.
    """
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim < 1 or probs.shape[-1] < 1:
        raise ValueError(f"probs must have a class axis last, got shape {probs.shape}")
    probs = np.clip(probs, 1e-12, 1.0)
    return -np.sum(probs * np.log(probs), axis=-1)
