"""Tests of chapter 01's data sample: rows without replacement and their least-squares summary."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.studies.ch01_narrow_networks import narrow_data

pytestmark = pytest.mark.usefixtures("x64")

X_ALL = np.linspace(-3.0, 3.0, 20)[:, None]
Y_ALL = 2.0 * X_ALL[:, 0] + np.tile([0.1, -0.1], 10)


def test_draw_sample_summarises_the_rows_it_draws():
    x, y, summary = narrow_data.draw_sample(jax.random.key(0), X_ALL, Y_ALL, 8, 0.5)
    assert x.shape == y.shape == (8,) and len(set(np.asarray(x).tolist())) == 8
    rows = [int(np.argmin(np.abs(X_ALL[:, 0] - v))) for v in np.asarray(x)]
    np.testing.assert_allclose(np.asarray(y), Y_ALL[rows])
    np.testing.assert_allclose(summary["beta_hat"], np.sum(x * y) / np.sum(x**2))
    np.testing.assert_allclose(summary["precision"], np.sum(np.asarray(x) ** 2) / 0.25)
    assert summary["n_rows"] == 20
    slope = X_ALL[:, 0] @ Y_ALL / (X_ALL[:, 0] @ X_ALL[:, 0])
    np.testing.assert_allclose(summary["noise_sd"], np.std(Y_ALL - slope * X_ALL[:, 0]))


def test_draw_sample_rejects_bad_shapes_and_sizes():
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"x_all must be \(N, 1\)"):
        narrow_data.draw_sample(key, X_ALL[:, 0], Y_ALL, 8, 0.5)
    with pytest.raises(ValueError, match="n_obs must be an integer"):
        narrow_data.draw_sample(key, X_ALL, Y_ALL, 21, 0.5)
