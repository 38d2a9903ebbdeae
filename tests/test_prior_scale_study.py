"""Tests of the [SAP] App. D.6 prior-scale unit (``inference.prior_scale_study``)."""

from types import SimpleNamespace

import jax
import numpy as np

from bnn_posteriors.studies import prior_scale_study as study


def fake_split(name, seed, n_max=None):
    rng = np.random.default_rng(len(name) + seed)
    x = rng.normal(size=(36, 2)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
    return SimpleNamespace(x_train=x[:20], y_train=y[:20], x_val=x[20:28], y_val=y[20:28],
                           x_test=x[28:], y_test=y[28:])  # fmt: skip


def test_rows_and_paired_chain_lppds(monkeypatch):
    monkeypatch.setattr(study.data, "load_split", fake_split)
    grid = (0.5, 1.0)
    rows, chain_lppd = study.prior_scale_study(
        jax.random.PRNGKey(0), ("toy",), (1,), grid, n_chains=2, split_seed=0, n_max=None,
        tuning_steps=40, sampling_steps=10, thinning=5, width=4, max_epochs=3, batch_size=8,
    )  # fmt: skip
    assert [(r[0], r[1], r[2]) for r in rows] == [("toy", 1, 0.5), ("toy", 1, 1.0)]
    assert all(np.isfinite(r[3]) and r[4] > 0 for r in rows)
    per_chain = np.array(chain_lppd)
    assert per_chain.shape == (1, 2, len(grid)) and np.all(np.isfinite(per_chain))
    # the ensemble of a scale's chains scores at least the mean of its single chains
    # (log of a mean of densities ≥ mean of the logs, per test point)
    assert rows[1][3] >= per_chain[0, :, 1].mean() - 1e-6
