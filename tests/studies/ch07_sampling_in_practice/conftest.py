"""Fixtures of chapter 7's study tests."""

from __future__ import annotations

import functools

import pytest

from bnn_posteriors.site.settings_classes import SamplingInPracticeSettings


@pytest.fixture(scope="session")
def make_cfg(settings_with):
    """A factory: chapter 7's settings (quick unless ``profile`` says) with the given fields
    replaced."""
    return functools.partial(settings_with, SamplingInPracticeSettings)
