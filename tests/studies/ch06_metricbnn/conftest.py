"""Fixtures of chapter 6's study tests."""

from __future__ import annotations

import functools

import pytest

from bnn_posteriors.site.settings_classes import MetricBNNSettings

TINY = dict(  # tiny budgets: the studies run in seconds
    seed=0,
    uci_seeds=(0,),
    depths=(1, 2, 3),
    refine_learning_rate=1e-3,
    num_refine=2,
    num_particles=2,
    latent_dim=3,
    ae_hidden=(8,),
    ae_batch=8,
    ae_learning_rate=1e-3,
    lam_plus=1.0,
    lam_minus=1.0,
    ae_components=4,
    prior_precision=1.0,
    map_learning_rate=1e-3,
    pred_samples=4,
    ring_radius=2.0,
    banana_widths=(2, 4, 2),
    banana_map_steps=5,
    banana_steps=3,
    banana_drift=0.1,
    banana_ae_updates=5,
    uci_hidden=(4,),
    uci_map_steps=5,
    uci_steps=3,
    uci_drift=0.1,
    uci_ae_updates=5,
    mnist_n_train=12,
    mnist_map_steps=2,
    mnist_refine_n=4,
    mnist_steps=2,
    mnist_drift=0.1,
    mnist_ae_updates=3,
    cost_steps=3,
    depth_width=3,
    cost_ae_updates=2,
    cost_ae_batch=4,
    snelson_widths=(1, 8, 1),
    snelson_sigma=0.3,
    snelson_map_steps=20,
    snelson_steps=4,
    snelson_drift=1e-2,
    ae_updates=10,
    snelson_repeats=2,
    cache=False,
)


@pytest.fixture(scope="session")
def quick_cfg(settings_with):
    """A factory: chapter 6's quick settings with the given fields replaced."""
    return functools.partial(settings_with, MetricBNNSettings)


@pytest.fixture(scope="session")
def tiny_cfg(quick_cfg):
    """A factory of chapter 6's quick settings with tiny budgets (:data:`TINY`), and the
    given fields replaced."""

    def make(**over):
        return quick_cfg(**{**TINY, **over})

    return make
