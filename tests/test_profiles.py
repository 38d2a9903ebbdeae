"""Tests of the run profiles: profile choice, chapter seeds and the settings object."""

from __future__ import annotations

import pytest

from bnn_posteriors import profiles

CHAPTER = "01_narrow_networks"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Every test starts without BNN_PROFILE and BNN_SEED in the environment."""
    monkeypatch.delenv("BNN_PROFILE", raising=False)
    monkeypatch.delenv("BNN_SEED", raising=False)


def test_default_profile_is_quick():
    assert profiles.profile_name() == "quick"
    assert profiles.settings(CHAPTER).profile == "quick"


@pytest.mark.parametrize("value", ["", "   "])
def test_blank_profile_variable_means_default(monkeypatch, value):
    monkeypatch.setenv("BNN_PROFILE", value)
    assert profiles.profile_name() == "quick"


def test_profile_from_environment(monkeypatch):
    monkeypatch.setenv("BNN_PROFILE", "full")
    assert profiles.profile_name() == "full"
    assert profiles.settings(CHAPTER).profile == "full"


def test_profile_argument_overrides_environment(monkeypatch):
    monkeypatch.setenv("BNN_PROFILE", "full")
    assert profiles.profile_name("quick") == "quick"


@pytest.mark.parametrize("source", ["env", "argument"])
def test_unknown_profile_is_named_in_error(monkeypatch, source):
    if source == "env":
        monkeypatch.setenv("BNN_PROFILE", "turbo")
        call = profiles.profile_name
    else:
        call = lambda: profiles.profile_name("turbo")
    with pytest.raises(ValueError, match=r"unknown profile 'turbo'.*quick, full"):
        call()


def test_settings_merge_common_and_profile_values():
    spec = profiles.chapters()[CHAPTER]
    for name in profiles.PROFILES:
        s = profiles.settings(CHAPTER, name)
        assert s.profile == name
        assert s.seed == spec["seed"]
        for key, value in {**spec["common"], **spec[name]}.items():
            assert getattr(s, key) == value


def test_full_profile_has_larger_budgets_than_quick():
    quick = profiles.settings(CHAPTER, "quick")
    full = profiles.settings(CHAPTER, "full")
    for key in ("num_chains", "num_warmup", "num_samples", "svi_steps"):
        assert getattr(full, key) > getattr(quick, key)
    assert quick.sigma == full.sigma  # a common setting


def test_default_seed_is_the_chapters_fixed_seed():
    assert profiles.chapter_seed(CHAPTER) == 20250101


@pytest.mark.parametrize(("raw", "expected"), [("7", 7), (" 0 ", 0), ("", 20250101)])
def test_seed_override(monkeypatch, raw, expected):
    monkeypatch.setenv("BNN_SEED", raw)
    assert profiles.chapter_seed(CHAPTER) == expected
    assert profiles.settings(CHAPTER).seed == expected


@pytest.mark.parametrize("raw", ["abc", "1.5", "-3"])
def test_bad_seed_is_rejected(monkeypatch, raw):
    monkeypatch.setenv("BNN_SEED", raw)
    with pytest.raises(ValueError, match="BNN_SEED must be a non-negative integer"):
        profiles.chapter_seed(CHAPTER)


@pytest.mark.parametrize("call", [profiles.chapter_seed, profiles.settings])
def test_unknown_chapter_is_named_in_error(call):
    with pytest.raises(ValueError, match=r"no settings for chapter '99_nowhere'.*01_narrow"):
        call("99_nowhere")


def test_chapters_view_is_read_only():
    view = profiles.chapters()
    assert CHAPTER in view
    with pytest.raises(TypeError):
        view["new"] = {}


def test_versions_report_names_profile_seed_and_packages():
    cfg = profiles.settings("01_narrow_networks", "quick")
    report = profiles.versions_report(cfg, extra=("pytest", "no-such-package-xyz"))
    first, second = report.splitlines()
    assert first.startswith(f"profile quick, seed {cfg.seed}, python ")
    assert "jax " in second and "numpyro " in second and "pytest " in second
    assert "no-such-package-xyz not installed" in second
    with pytest.raises(ValueError, match="settings object"):
        profiles.versions_report(object())
