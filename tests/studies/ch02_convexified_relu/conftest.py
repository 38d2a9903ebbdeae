"""Chapter 2's settings for its unit tests: the quick profile's, with the values the tests'
synthetic results and their expected numbers assume (so a change of the profile leaves the
tests' numbers as they are)."""

from __future__ import annotations

import pytest

from bnn_posteriors.site.settings_classes import ConvexifiedReluSettings


@pytest.fixture
def cfg(settings_with) -> ConvexifiedReluSettings:
    """The settings the evidence tests read: widths 8 and 64, an ESS gate of 100 of 200 draws."""
    return settings_with(
        ConvexifiedReluSettings,
        widths_hidden=(8, 64),
        lemma_datasets=("airfoil",),
        lemma_widths=(2, 8),
        lemma_rows=20,
        dip_alpha=0.05,
        min_ess=100,
        num_samples=200,
        num_chains=4,
        num_warmup=100,
        n_components=16,
        n_directions=8,
        n_boot=1000,
        boot_level=0.95,
        n_max=400,
        max_tree_depth=8,
        nuts_chunk=None,
    )


@pytest.fixture
def tiny_cfg(settings_with) -> ConvexifiedReluSettings:
    """Tiny budgets for the runs' tests: widths 2 and 3 (those of test_posterior_runs' RUNS),
    40 draws per chain and an ESS gate of 10."""
    return settings_with(
        ConvexifiedReluSettings,
        widths_hidden=(2, 3),
        tau=1.0,
        num_chains=2,
        warm_steps=20,
        warm_learning_rate=0.01,
        num_warmup=20,
        num_samples=40,
        target_acceptance_rate=0.8,
        max_tree_depth=3,
        nuts_chunk=None,
        cache=False,
        n_components=4,
        n_directions=3,
        dip_alpha=0.05,
        min_ess=10,
        n_boot=50,
        boot_level=0.9,
    )
