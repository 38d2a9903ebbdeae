"""Tests of the named random streams."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bnn_posteriors.util.streams import name_word, numpy_stream, stream


def draws(key) -> np.ndarray:
    return np.asarray(jax.random.normal(key, (4,)))


def test_a_stream_depends_on_its_seed_and_name_only():
    first = draws(stream(7, "walk"))
    draws(stream(7, "refine"))  # another stream used in between changes nothing
    np.testing.assert_array_equal(draws(stream(7, "walk")), first)
    assert not np.allclose(draws(stream(7, "refine")), first)
    assert not np.allclose(draws(stream(8, "walk")), first)
    assert jax.dtypes.issubdtype(stream(7, "walk").dtype, jax.dtypes.prng_key)  # a typed key


def test_the_name_word_is_stable_across_processes():
    # BLAKE2b, not Python's salted hash: the same word on every machine and run (pinned: a
    # change of the hash would change every named stream's draws)
    assert name_word("walk") == 0x99830371
    assert name_word("walk") != name_word("walks")
    assert 0 <= name_word("a") < 2**32


def test_numpy_streams_are_named_too():
    a = numpy_stream(3, "orderings").normal(size=3)
    np.testing.assert_array_equal(numpy_stream(3, "orderings").normal(size=3), a)
    assert not np.allclose(numpy_stream(3, "bootstrap").normal(size=3), a)


@pytest.mark.parametrize(("seed", "name"), [(-1, "x"), (1.5, "x"), (True, "x"), (1, ""), (1, 3)])
def test_bad_input_gets_a_clear_error(seed, name):
    with pytest.raises(ValueError, match="stream"):
        stream(seed, name)
