"""Tests of the run profiles: profile choice, chapter seeds, the settings files and objects."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from bnn_posteriors.site import profiles, settings_classes

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


def test_settings_are_frozen_and_equal_per_call():
    cfg = profiles.settings(CHAPTER, "quick")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.num_chains = 99
    assert profiles.settings(CHAPTER, "quick").num_chains == 4
    assert cfg == profiles.settings(CHAPTER, "quick") != profiles.settings(CHAPTER, "full")


def test_as_dict_is_a_copy_with_the_same_values():
    cfg = profiles.settings("03_symmetries", "quick")
    values = cfg.as_dict()
    assert values == vars(cfg) and values["profile"] == "quick"
    values["seed"] = 1
    values["counterexample"]["w1"] = 0.0
    assert cfg.seed != 1 and cfg.counterexample["w1"] == 0.5
    assert profiles.settings("03_symmetries", "quick").counterexample["w1"] == 0.5


def test_toml_values_become_tuples_none_and_exact_types():
    cfg = profiles.settings("03_symmetries", "full")
    assert cfg.mlp_widths == ((3, 8, 8, 1), (2, 16, 16, 16, 2))
    assert type(cfg.mlp_widths) is tuple and type(cfg.mlp_widths[0]) is tuple
    assert type(cfg.n_max) is int and type(cfg.sigma) is float
    assert profiles.settings("02_convexified_relu", "full").n_max is None
    assert profiles.settings("02_convexified_relu", "quick").n_max == 400


def test_profile_value_replaces_common_value():
    spec = profiles.chapters()["08_benchmarks"]
    assert profiles.settings("08_benchmarks", "quick").datasets == spec["quick"]["datasets"]
    assert profiles.settings("08_benchmarks", "full").datasets == spec["common"]["datasets"]


@pytest.mark.parametrize("chapter", sorted(profiles.chapters()))
def test_every_chapter_has_the_same_fields_in_both_profiles(chapter):
    quick, full = (profiles.settings(chapter, name) for name in profiles.PROFILES)
    assert type(quick) is type(full)
    assert isinstance(quick, profiles.Settings)
    assert type(quick) is profiles.settings_class(chapter) is settings_classes.CLASSES[chapter]


def test_a_setting_of_the_wrong_type_missing_or_unknown_is_refused(monkeypatch):
    spec = profiles.chapters()[CHAPTER]
    cases = {
        "num_chains": ("2.5", "of NarrowNetworksSettings's type int"),  # a float for an int
        "psis": ('"0.5"', "of NarrowNetworksSettings's type tuple"),  # a string for a tuple
    }
    for key, (value, message) in cases.items():
        text = f"seed = 1\n[common]\n[quick]\n{key} = {value}\n[full]\n{key} = {value}\n"
        changed = {**spec, "quick": {**spec["quick"], **profiles.parse_spec(text)["quick"]}}
        monkeypatch.setattr(profiles, "_spec", lambda chapter, changed=changed: changed)
        with pytest.raises(ValueError, match=f"{key} = .* is not {message}"):
            profiles.settings(CHAPTER, "quick")
    common = {key: value for key, value in spec["common"].items() if key != "sigma"}
    monkeypatch.setattr(profiles, "_spec", lambda chapter: {**spec, "common": common})
    with pytest.raises(ValueError, match="no value for NarrowNetworksSettings's field 'sigma'"):
        profiles.settings(CHAPTER, "quick")
    extra = {**spec["common"], "sigmaa": 1.0}
    monkeypatch.setattr(profiles, "_spec", lambda chapter: {**spec, "common": extra})
    with pytest.raises(ValueError, match="key 'sigmaa' is not a field of NarrowNetworksSettings"):
        profiles.settings(CHAPTER, "quick")


@pytest.mark.parametrize(
    ("value", "annotation", "expected"),
    [
        (1, float, True),
        (True, int, False),
        (None, int | None, True),
        ((1, 2.5), tuple[float, ...], True),
        ((1, "a"), tuple[int, ...], False),
        (((1,), (2, 3)), tuple[tuple[int, ...], ...], True),
        ({"w1": 0.5}, Mapping[str, float], True),
        ({"w1": "x"}, Mapping[str, float], False),
        ("a", str, True),
        ([1], tuple[int, ...], False),
    ],
)
def test_conforms_reads_the_settings_types(value, annotation, expected):
    assert profiles.conforms(value, annotation) is expected


GOOD = """
seed = 7
[common]
a = 1
[quick]
b = [1, [2, 3]]
c = "none"
[full]
b = []
c = 2
"""


def test_parse_spec_reads_a_good_file():
    spec = profiles.parse_spec(GOOD, "x.toml")
    assert spec["seed"] == 7
    assert dict(spec["quick"]) == {"b": (1, (2, 3)), "c": None}
    assert dict(spec["full"]) == {"b": (), "c": 2}
    with pytest.raises(TypeError):
        spec["quick"]["b"] = 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD + "[fast]\nb = 1\n", r"x.toml: unknown key 'fast'"),
        (GOOD.replace("seed = 7", "seed = 7\nnum_chains = 1"), r"unknown key 'num_chains'"),
        (GOOD.replace("c = 2", "c = 2\nnum_chain = 4"), r"'num_chain' of \[full\] .*\[quick\]"),
        (GOOD.replace('c = "none"', "d = 1"), r"'d' of \[quick\] is in neither \[common\]"),
        (GOOD.replace("seed = 7", "seed = -1"), "seed must be a non-negative integer"),
        (GOOD.replace("seed = 7", 'seed = "7"'), "seed must be a non-negative integer"),
        (GOOD.replace("seed = 7\n", ""), "seed must be a non-negative integer"),
        (GOOD.replace("a = 1", "seed = 1"), r"\[common\] must be a table of setting names"),
        (GOOD.replace("a = 1", "num-chains = 1"), r"found 'num-chains'"),
        (GOOD.replace("a = 1", "a = "), "x.toml: not valid TOML"),
    ],
)
def test_parse_spec_rejects_bad_files(text, message):
    with pytest.raises(ValueError, match=message):
        profiles.parse_spec(text, "x.toml")


def test_parse_spec_rejects_a_profile_that_is_not_a_table():
    text = "seed = 1\nquick = 3\n[full]\n"
    with pytest.raises(ValueError, match=r"\[quick\] must be a table.*found 3"):
        profiles.parse_spec(text, "x.toml")


def test_default_seed_ignores_the_seed_variable(monkeypatch):
    monkeypatch.setenv("BNN_SEED", "5")
    assert profiles.chapter_seed("07_sampling_in_practice") == 5
    assert profiles.default_seed("07_sampling_in_practice") == 20250707


def test_settings_of_a_class_are_its_chapters_settings():
    cfg = profiles.settings_of(settings_classes.MetricBNNSettings, "full")
    assert cfg == profiles.settings("06_metricbnn", "full")
    with pytest.raises(ValueError, match="Settings is not the settings class of any chapter"):
        profiles.settings_of(profiles.Settings)


def test_a_table_of_a_dataclass_field_becomes_that_dataclass_and_is_checked(monkeypatch):
    chapter = "09_ggn_null_space"
    cfg = profiles.settings(chapter, "quick")
    assert isinstance(cfg.map_laplace, settings_classes.MapLaplaceChoices)
    assert cfg.map_laplace.dtype == "float64" and cfg.map_laplace.tune_from is None  # "none"
    assert cfg.as_dict()["map_laplace"]["subset"] == "full"  # a plain dict in as_dict()
    spec = profiles.chapters()[chapter]
    table = dict(spec["common"]["map_laplace"])
    cases = [
        (
            {k: v for k, v in table.items() if k != "subset"},
            "map_laplace has no value for 'subset'",
        ),
        ({**table, "subsett": "full"}, "map_laplace.subsett is not a field of MapLaplaceChoices"),
        ({**table, "noise_rounds": 1.5}, "map_laplace = .* is not of .* MapLaplaceChoices"),
        ("full", "map_laplace = 'full' is not of .* MapLaplaceChoices"),
    ]
    for value, message in cases:
        common = {**spec["common"], "map_laplace": value}
        monkeypatch.setattr(profiles, "_spec", lambda c, common=common: {**spec, "common": common})
        with pytest.raises(ValueError, match=message):
            profiles.settings(chapter, "quick")


def test_conforms_reads_a_dataclass_as_a_table_of_all_its_fields():
    choices = profiles.chapters()["06_metricbnn"]["common"]["map_laplace"]
    assert profiles.conforms(dict(choices), settings_classes.MapLaplaceChoices)
    assert not profiles.conforms({**choices, "tune": 1}, settings_classes.MapLaplaceChoices)
    assert not profiles.conforms({}, settings_classes.MapLaplaceChoices)
