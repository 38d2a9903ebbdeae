"""The chapter's data: rows of the authors' 1-D regression file and what the prose cites of them.

[SAP] §2.1 and Fig. 2 use ``synthetic_regression_1x``: x on a grid over [−3, 3], y ≈ x + ε.
The narrow network f(x) = (∏_l w_l) x sees the data only through the least-squares slope
β̂ = Σ x_i y_i / Σ x_i² and the likelihood precision Σ x_i² / σ² of β.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.theory import narrow_network as theory


def draw_sample(rng_key, x_all, y_all, n_obs: int, sigma: float):
    """``n_obs`` rows of the file drawn without replacement, and their summary.

    ``x_all``: (N, 1) inputs, ``y_all``: (N,) targets. Returns ``(x, y, summary)``: the
    sample's x and y, (n_obs,) each, and a dict of floats: ``beta_hat`` (the sample's
    least-squares slope), ``precision`` = Σ x_i² / σ², ``n_rows`` = N and ``noise_sd`` (the
    standard deviation of the file's residuals about its own least-squares line).
    """
    x_all, y_all = np.asarray(x_all), np.asarray(y_all)
    if x_all.ndim != 2 or x_all.shape[1] != 1 or y_all.shape != (x_all.shape[0],):
        raise ValueError(
            f"x_all must be (N, 1) and y_all (N,), got {x_all.shape} and {y_all.shape}"
        )
    if not (isinstance(n_obs, int | np.integer) and 1 <= n_obs <= y_all.shape[0]):
        raise ValueError(f"n_obs must be an integer in [1, {y_all.shape[0]}], got {n_obs!r}")
    rows = jax.random.choice(rng_key, y_all.shape[0], (n_obs,), replace=False)
    x, y = jnp.asarray(x_all[rows, 0]), jnp.asarray(y_all[rows])
    slope_all = float(theory.ls_slope(x_all[:, 0], y_all))
    summary = {
        "beta_hat": float(theory.ls_slope(x, y)),
        "precision": float(jnp.sum(x**2) / sigma**2),
        "n_rows": y_all.shape[0],
        "noise_sd": float(np.std(y_all - slope_all * x_all[:, 0])),
    }
    return x, y, summary
