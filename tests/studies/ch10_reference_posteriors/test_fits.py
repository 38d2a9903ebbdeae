"""Tests of chapter 10's MethodFit and the predictive of parameter draws."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.models.numpyro_models import MLP
from bnn_posteriors.studies.ch10_reference_posteriors import problems
from bnn_posteriors.studies.ch10_reference_posteriors.fits import MethodFit, draws_predictive

X = np.linspace(-1, 1, 6, dtype=np.float32)[:, None]


def test_draws_predictive_has_one_draw_axis_per_set_of_points():
    spec = MLP((1, 2, 1), activation="tanh")
    prob = problems.Problem("tiny", "tiny", spec, X, X[:, 0], X[:2], X[:2, 0], X[:3])
    sites = {
        "W0": np.ones((4, 1, 2)),
        "b0": np.zeros((4, 2)),
        "W1": np.ones((4, 2, 1)),
        "b1": np.arange(4.0)[:, None],
        "log_sigma": np.zeros(4),
    }
    pred = draws_predictive(prob, sites)
    assert pred["test"]["f"].shape == (4, 2) and pred["grid"]["f"].shape == (4, 3)
    assert pred["test"]["f"].dtype == np.float32 and np.all(pred["test"]["noise_scale"] == 1)
    np.testing.assert_allclose(pred["grid"]["f"][:, 0], 2 * np.tanh(-1.0) + np.arange(4.0))


def test_method_fit_rejects_malformed_predictives():
    ok = {"test": {"f": np.zeros((3, 2)), "noise_scale": np.ones(3)}}
    assert MethodFit(ok, 10.0).extra_flops == 0.0
    with pytest.raises(ValueError, match="noise_scale"):
        MethodFit({"test": {"f": np.zeros((3, 2)), "noise_scale": np.ones(2)}}, 1.0)
    with pytest.raises(ValueError, match="probs must be"):
        MethodFit({"test": {"probs": np.zeros((3, 2))}}, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        MethodFit(ok, -1.0)
