"""Fixtures of chapter 7's study tests."""

from __future__ import annotations

import dataclasses

import pytest

from bnn_posteriors.site import profiles


@pytest.fixture(scope="session")
def make_cfg():
    """A factory: ``profiles.settings("07_sampling_in_practice", profile)`` (quick unless
    ``profile`` says) with the given fields replaced (``dataclasses.replace``)."""

    def make(profile="quick", **over):
        cfg = profiles.settings("07_sampling_in_practice", profile)
        return dataclasses.replace(cfg, **over)

    return make
