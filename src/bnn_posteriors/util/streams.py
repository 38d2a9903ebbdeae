"""Named random streams: one key or generator per (seed, name), whatever the order of use.

The book's convention for new code. A computation asks for its randomness by name,
``stream(seed, "walk")``, instead of splitting a key by position or folding in a magic
number: adding, removing or reordering another draw never changes this one's numbers, and
the name says in the code what the draws are for. :func:`stream` gives a typed JAX key
(``jax.random.key``), :func:`numpy_stream` a NumPy generator for the same name. The name is
hashed with BLAKE2b (stable across processes and machines, unlike Python's ``hash``).

Older chapters still split keys by position; moving them changes every draw, so it is done
only together with a full re-sweep of their checks.
"""

from __future__ import annotations

import hashlib

import jax
import numpy as np


def name_word(name: str) -> int:
    """The 32-bit word of ``name``: the first four bytes of its BLAKE2b digest."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a stream needs a non-empty name, got {name!r}")
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "little")


def _seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"a stream's seed must be an integer ≥ 0, got {seed!r}")
    return int(seed)


def stream(seed: int, name: str) -> jax.Array:
    """The typed JAX key of the stream ``name`` under ``seed``: ``jax.random.key(seed)``
    folded with :func:`name_word` of the name. Nested names ("walk/refine") are names."""
    return jax.random.fold_in(jax.random.key(_seed(seed)), name_word(name))


def numpy_stream(seed: int, name: str) -> np.random.Generator:
    """The NumPy generator of the stream ``name`` under ``seed`` (a ``SeedSequence`` of the
    seed and :func:`name_word` of the name)."""
    return np.random.default_rng([_seed(seed), name_word(name)])
