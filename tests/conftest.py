"""Shared fixtures of the unit tests."""

from __future__ import annotations

import jax
import pytest


@pytest.fixture
def x64():
    """Run one test in JAX double precision, then restore the previous setting."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)
