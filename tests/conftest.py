"""Shared fixtures of the unit tests."""

from __future__ import annotations

import jax
import pytest

# The unit tests compile without JAX's persistent compilation cache, whatever
# JAX_COMPILATION_CACHE_DIR says (the book build keeps using it). With the cache on, the
# full test session died of a segmentation fault inside XLA, in `executable.serialize()`
# called by `compilation_cache.put_executable_and_time` (jax/jaxlib 0.10.2, CPU), on two
# machines; every half of the test files passed alone, so it needs the whole session.
jax.config.update("jax_enable_compilation_cache", False)


@pytest.fixture
def x64():
    """Run one test in JAX double precision, then restore the previous setting."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)
