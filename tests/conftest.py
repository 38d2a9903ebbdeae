"""Shared fixtures of the unit tests."""

from __future__ import annotations

import dataclasses

import jax
import pytest

from bnn_posteriors.site import profiles

# The whole test session in one process died twice of a segmentation fault inside XLA
# (jax/jaxlib 0.10.2, CPU): once in `executable.serialize()` of the persistent compilation
# cache, once in `backend_compile_and_load`, 70 % of the way through the tests. Each
# compiled program stays in JAX's in-memory caches with its memory mappings: three test
# files left 26 321 mappings in the process, against Linux's vm.max_map_count of 65 530, so
# the session runs out of mappings and XLA's next allocation fails. Clearing JAX's caches
# after every test module keeps the count at about 1 200 (measured on the same three files).
# The unit tests also compile without the persistent cache, whatever
# JAX_COMPILATION_CACHE_DIR says (the book build keeps using it).
jax.config.update("jax_enable_compilation_cache", False)
# The unit tests run tiny problems, so compiling costs them more than running: XLA's
# optimisation passes are skipped here (the book's chapters, and the kernels the tests
# start, compile as usual). Measured on four of the slowest files (test_mile, ch10's
# test_samplers, ch5's test_fits, test_symmetrised) on 2 workers: 269 s with the passes,
# 191 s without; every test passed both ways.
jax.config.update("jax_disable_most_optimizations", True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop every compiled program after each test module (see the comment above)."""
    yield
    jax.clear_caches()


@pytest.fixture(scope="session")
def settings_with():
    """A factory: ``settings_with(cls, profile="quick", **changes)``, the real settings of the
    chapter whose settings class is ``cls`` (:func:`profiles.settings_of`) with the given
    fields replaced (``dataclasses.replace``), so a test states only what it changes."""

    def make(cls, profile="quick", **changes):
        return dataclasses.replace(profiles.settings_of(cls, profile), **changes)

    return make


@pytest.fixture
def x64():
    """Run one test in JAX double precision, then restore the previous setting."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture
def catalogue_rules(monkeypatch):
    """Give claims of the catalogue other checks for one test: ``catalogue_rules({"C1.1":
    [{"part": "p", "rule": "less", "bound": 1.0}]})`` replaces C1.1's ``[[claim.check]]``
    entries (``statistic`` defaults to "the test's value"); the result is validated as the
    catalogue is. Returns the installed claims."""
    from bnn_posteriors.claims import checking

    def install(checks_by_claim: dict) -> tuple[dict, ...]:
        known = {claim["id"] for claim in checking._read_catalogue()}
        unknown = set(checks_by_claim) - known
        if unknown:
            raise ValueError(f"no such claims in the catalogue: {sorted(unknown)}")
        replaced = []
        for claim in checking._read_catalogue():
            claim = dict(claim)
            if claim["id"] in checks_by_claim:
                claim["check"] = [
                    {"statistic": "the test's value", **entry}
                    for entry in checks_by_claim[claim["id"]]
                ]
            replaced.append(claim)
        installed = checking.validated(tuple(replaced))
        monkeypatch.setattr(checking, "_read_catalogue", lambda: installed)
        return installed

    return install
