"""Chapter 5's settings for its unit tests: the quick profile's, with the values the tests'
expected numbers assume (so a change of the profile leaves the tests' numbers as they are)."""

from __future__ import annotations

import pytest

from bnn_posteriors.site.settings_classes import SymmetrisedVISettings


@pytest.fixture
def tiny_cfg(settings_with) -> SymmetrisedVISettings:
    """Tiny budgets for the runs' tests: widths 2 and 3 on 12 toy points, 2 paired seeds of
    5 SVI steps; MNIST at width 2 on 6 images pooled 4 × 4, with the exact I."""
    return settings_with(
        SymmetrisedVISettings,
        toy_n_train=12,
        toy_n_test=8,
        toy_noise=0.2,
        noise_scale=0.3,
        prior_scale=1.0,
        activation="relu",
        widths=(2, 3),
        n_seeds=2,
        svi_steps=5,
        learning_rate=0.02,
        svi_particles=1,
        init_scale=0.1,
        eval_samples=8,
        mnist_n_train=6,
        mnist_n_test=4,
        mnist_pool=4,
        mnist_widths=(2,),
        mnist_seeds=2,
        mnist_steps=3,
        mnist_learning_rate=0.01,
        mnist_particles=1,
        mnist_init_scale=0.01,
        mnist_perms=None,
        mnist_chunk=None,
        cache=False,
    )
