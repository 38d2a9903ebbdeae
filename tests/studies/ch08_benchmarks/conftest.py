"""Fixtures of chapter 8's study tests."""

from __future__ import annotations

import pytest

from bnn_posteriors.site.settings_classes import BenchmarksSettings


@pytest.fixture
def cfg(settings_with):
    """Chapter 8's quick settings with tiny budgets, one data set (airfoil, whole: no
    ``n_max``) and one split."""
    return settings_with(
        BenchmarksSettings,
        seed=3,
        widths_hidden=(4,),
        prior_scale=1.0,
        map_steps=30,
        map_learning_rate=0.01,
        map_sigma=0.1,
        aleatoric_var=0.1,
        mfvi_noise=0.1,
        mfvi_steps=30,
        mfvi_learning_rate=0.01,
        mfvi_particles=1,
        mfvi_init_scale=0.1,
        mfvi_pred_samples=10,
        de_members=2,
        de_learning_rate=0.01,
        de_weight_decay=0.005,
        de_max_epochs=3,
        de_batch_size=8,
        de_patience=2,
        de_noise=1.0,
        bde_chains=2,
        tuning_steps=20,
        sampling_steps=10,
        thinning=2,
        mile_resumable=False,
        datasets=("airfoil",),
        splits=(1,),
        n_max={},
    )
