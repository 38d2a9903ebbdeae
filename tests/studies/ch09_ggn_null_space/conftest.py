"""Fixtures shared by chapter 9's study tests: its settings and a tiny float64 toy fit (no
data files)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.site.settings_classes import GGNNullSpaceSettings
from bnn_posteriors.studies.ch09_ggn_null_space import study


@pytest.fixture(scope="session")
def make_cfg(settings_with):
    """A factory: the quick settings of chapter 9 (or of the chapter whose settings class
    ``cls`` is: the tie back takes chapter 6's) with the given fields replaced."""

    def make(cls=GGNNullSpaceSettings, **over):
        return settings_with(cls, **over)

    return make


@pytest.fixture(scope="module")
def tiny_toy_fit():
    """``fit(cfg, hidden)``: the MAP of a tanh MLP on 20 points of sin(2x) with a gap at
    |x| < 0.5 (its 5 test points), in float64; x64 is switched off again after the module."""
    jax.config.update("jax_enable_x64", True)

    def fit(cfg, hidden):
        rng = np.random.default_rng(0)
        x = np.concatenate([rng.uniform(-2, -0.5, 10), rng.uniform(0.5, 2, 10)])[:, None]
        xg = np.linspace(-0.4, 0.4, 5)[:, None]
        return study.fit(
            "toy",
            x,
            np.sin(2 * x[:, 0]),
            xg,
            np.sin(2 * xg[:, 0]),
            rng_key=jax.random.PRNGKey(0),
            hidden=hidden,
            cfg=cfg,
            noise_scale=0.3,
        )

    yield fit
    jax.config.update("jax_enable_x64", False)
