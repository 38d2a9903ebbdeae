"""Chapter 3's settings for its unit tests: the quick profile's, with the values the tests'
synthetic results and their expected numbers assume (so a change of the profile leaves the
tests' numbers as they are)."""

from __future__ import annotations

import pytest

from bnn_posteriors.site.settings_classes import SymmetriesSettings


@pytest.fixture
def cfg(settings_with) -> SymmetriesSettings:
    """The settings the evidence tests read: 4 chains, 3 adjusted runs per τ² of the scan."""
    return settings_with(
        SymmetriesSettings,
        tau2s=(1.0, 0.1, 0.01, 0.001),
        tau2s_figure=(1.0, 0.1),
        n_max=200,
        num_chains=4,
        n_adjusted_seeds=3,
        adjusted_scan=(1.1, 1.5),
        adjusted_sigma0=0.1,
        adjusted_eps=0.1,
    )


@pytest.fixture
def tiny_cfg(settings_with) -> SymmetriesSettings:
    """Tiny budgets for the runs' tests (12 rows, 2 chains of 20 draws, 50 SVI steps); its
    ``dataset`` names no data set: the test that loads one replaces the loader."""
    return settings_with(
        SymmetriesSettings,
        dataset="toy",
        seed=0,
        n_max=12,
        sigma=0.5,
        tau2s=(1.0, 0.01),
        num_chains=2,
        num_warmup=30,
        num_samples=20,
        target_acceptance_rate=0.9,
        svi_steps=50,
        n_adjusted_seeds=2,
        adjusted_scan=(1.5,),
        adjusted_sigma0=0.1,
        adjusted_eps=0.1,
        trap_depth=3,
        trap_sigma0s=(0.1, 1.0),
        trap_init_scale=0.01,
        trap_runs=2,
    )
