"""Run profiles: ``quick`` (CI, minutes on a 2-core CPU) and ``full`` (the papers' budgets).

A chapter asks :func:`settings` for its settings under the profile named by
``BNN_PROFILE`` (default ``quick``); its seed is fixed per chapter, or ``BNN_SEED``.
The settings are data, ``settings/<chapter>.toml``: the ``seed``, a ``[common]`` table
for both profiles and ``[quick]`` and ``[full]`` tables that add or replace keys. A key
not in ``[common]`` must be in both profile tables (else it is a typo, or missing from
one profile); nothing else may be in the file. TOML has no null: the string ``"none"``
is read as ``None``; arrays are read as tuples. Each chapter's settings are an instance of
its typed class in :mod:`bnn_posteriors.site.settings_classes`, whose fields the file must
fill exactly, each value of its field's type; a field whose type is a dataclass (e.g.
:class:`~bnn_posteriors.site.settings_classes.MapLaplaceChoices`) is a table that names every
one of its fields.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.resources
import keyword
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from bnn_posteriors.site.settings_classes import CLASSES, Settings
from bnn_posteriors.store import provenance

PROFILES = ("quick", "full")
DEFAULT_PROFILE = "quick"
S = TypeVar("S", bound=Settings)
_RESERVED = ("profile", "seed", "as_dict")  # fields of Settings, not settings of a file


def profile_name(name: str | None = None) -> str:
    """The active profile: ``name`` if given, else ``$BNN_PROFILE``, else ``quick``."""
    if name is None:
        name = os.environ.get("BNN_PROFILE", "").strip() or DEFAULT_PROFILE
    if name not in PROFILES:
        raise ValueError(
            f"unknown profile {name!r} (from BNN_PROFILE or the argument); "
            f"choose one of {', '.join(PROFILES)}"
        )
    return name


def default_seed(chapter: str) -> int:
    """The chapter's fixed seed, whatever ``$BNN_SEED`` says (that of its committed results)."""
    return _spec(chapter)["seed"]


def chapter_seed(chapter: str) -> int:
    """The chapter's seed: ``$BNN_SEED`` if set, else the chapter's fixed default."""
    spec = _spec(chapter)
    raw = os.environ.get("BNN_SEED", "").strip()
    if raw and not raw.isdecimal():
        raise ValueError(f"BNN_SEED must be a non-negative integer, got {raw!r}")
    return int(raw) if raw else spec["seed"]


def settings(chapter: str, profile: str | None = None) -> Settings:
    """The settings of ``chapter`` under ``profile``: a frozen dataclass of ``profile``, ``seed``
    and the chapter's TOML keys (the profile's values replacing the ``[common]`` ones)."""
    spec = _spec(chapter)
    name = profile_name(profile)
    values = copy.deepcopy({**spec["common"], **spec[name]})
    cls = settings_class(chapter)
    source = f"bnn_posteriors/site/settings/{chapter}.toml [{name}]"
    _check_fields(cls, values, source)
    hints = typing.get_type_hints(cls)
    for key, value in values.items():  # a checked table of a dataclass field becomes one
        if dataclasses.is_dataclass(hints[key]):
            values[key] = hints[key](**value)
    return cls(profile=name, seed=chapter_seed(chapter), **values)


def settings_of(cls: type[S], profile: str | None = None) -> S:
    """:func:`settings` of the chapter whose settings class is ``cls``, typed as ``cls``."""
    chapters = [chapter for chapter, known in CLASSES.items() if known is cls]
    if not chapters:
        raise ValueError(f"{cls.__name__} is not the settings class of any chapter")
    cfg = settings(chapters[0], profile)
    assert isinstance(cfg, cls)
    return cfg


PACKAGES = ("jax", "numpyro", "blackjax", "optax", "arviz", "numpy", "scipy")


def versions_report(cfg: Settings, extra: tuple[str, ...] = ()) -> str:
    """The 'Versions' watermark of a chapter: profile, seed, Python and package versions.

    ``cfg`` is the chapter's :func:`settings` object; ``extra`` names more packages.
    """
    if not (hasattr(cfg, "profile") and hasattr(cfg, "seed")):
        raise ValueError("cfg must be a settings object with 'profile' and 'seed' attributes")
    found = provenance.versions((*PACKAGES, *extra))
    packages = ", ".join(f"{name} {found[name] or 'not installed'}" for name in (*PACKAGES, *extra))
    return f"profile {cfg.profile}, seed {cfg.seed}, python {found['python']}\n{packages}"


def chapters() -> MappingProxyType:
    """Read-only view of the per-chapter specifications: ``{"seed", "common", "quick", "full"}``."""
    return MappingProxyType({name: _spec(name) for name in _chapter_names()})


def parse_spec(text: str, source: str = "<settings>") -> MappingProxyType:
    """The read-only ``{"seed", "common", "quick", "full"}`` of a chapter's TOML text, checked
    (see the module doc); ``source`` names the file in the error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{source}: not valid TOML: {error}") from None
    tables = {name: data.pop(name, {}) for name in ("common", *PROFILES)}
    seed = data.pop("seed", None)
    if data:
        raise ValueError(
            f"{source}: unknown key {sorted(data)[0]!r}; a settings file holds only seed, "
            f"[common], [quick] and [full]"
        )
    if type(seed) is not int or seed < 0:
        raise ValueError(f"{source}: seed must be a non-negative integer, got {seed!r}")
    for name, table in tables.items():
        bad = [key for key in table if not _usable(key)] if isinstance(table, dict) else [table]
        if bad:
            raise ValueError(
                f"{source}: [{name}] must be a table of setting names (Python names other "
                f"than {', '.join(_RESERVED)}), found {bad[0]!r}"
            )
    for name, other in zip(PROFILES, reversed(PROFILES), strict=True):
        if alone := sorted(set(tables[name]) - set(tables["common"]) - set(tables[other])):
            raise ValueError(
                f"{source}: key {alone[0]!r} of [{name}] is in neither [common] nor [{other}] "
                f"(a typo, or a setting missing from [{other}])"
            )
    converted = {name: MappingProxyType(_from_toml(table)) for name, table in tables.items()}
    return MappingProxyType({"seed": seed, **converted})


def _usable(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key) and key not in _RESERVED


def _from_toml(value: Any) -> Any:
    """A TOML value as the chapters see it: arrays as tuples, ``"none"`` as None."""
    if isinstance(value, list):
        return tuple(_from_toml(item) for item in value)
    if isinstance(value, dict):
        return {key: _from_toml(item) for key, item in value.items()}
    return None if value == "none" else value


_SETTINGS_DIR = importlib.resources.files("bnn_posteriors.site").joinpath("settings")


@functools.cache
def _chapter_names() -> tuple[str, ...]:
    return tuple(sorted(f.name[:-5] for f in _SETTINGS_DIR.iterdir() if f.name.endswith(".toml")))


@functools.cache
def _spec(chapter: str) -> MappingProxyType:
    if chapter not in _chapter_names():
        known = ", ".join(_chapter_names())
        raise ValueError(f"no settings for chapter {chapter!r}; known chapters: {known}")
    text = _SETTINGS_DIR.joinpath(f"{chapter}.toml").read_text("utf-8")
    return parse_spec(text, f"bnn_posteriors/site/settings/{chapter}.toml")


def settings_class(chapter: str) -> type[Settings]:
    """The typed settings class of ``chapter`` (:mod:`bnn_posteriors.site.settings_classes`)."""
    _spec(chapter)  # names the known chapters if ``chapter`` is not one
    if chapter not in CLASSES:
        raise ValueError(f"chapter {chapter!r} has a settings file but no settings class")
    return CLASSES[chapter]


def _check_fields(cls: type[Settings], values: Mapping[str, Any], source: str) -> None:
    """Raise if ``values`` are not exactly ``cls``'s fields, each of its declared type."""
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls) if f.name not in ("profile", "seed")]
    if missing := [key for key in fields if key not in values]:
        raise ValueError(f"{source}: no value for {cls.__name__}'s field {missing[0]!r}")
    if extra := [key for key in values if key not in fields]:
        raise ValueError(
            f"{source}: key {extra[0]!r} is not a field of {cls.__name__} "
            f"(add it to bnn_posteriors/site/settings_classes.py, or remove it)"
        )
    for key in fields:
        if dataclasses.is_dataclass(hints[key]) and isinstance(values[key], Mapping):
            names = [f.name for f in dataclasses.fields(hints[key])]
            if missing := [name for name in names if name not in values[key]]:
                raise ValueError(f"{source}: {key} has no value for {missing[0]!r}")
            if extra := [name for name in values[key] if name not in names]:
                raise ValueError(
                    f"{source}: {key}.{extra[0]} is not a field of {hints[key].__name__}"
                )
        if not conforms(values[key], hints[key]):
            raise ValueError(
                f"{source}: {key} = {values[key]!r} is not of {cls.__name__}'s type "
                f"{_type_name(hints[key])}"
            )


def conforms(value: Any, annotation: Any) -> bool:
    """Whether a settings value (TOML: arrays as tuples) is of the type ``annotation``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return True
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        names = [f.name for f in dataclasses.fields(annotation)]
        return (
            isinstance(value, Mapping)
            and sorted(value) == sorted(names)
            and all(conforms(value[name], hints[name]) for name in names)
        )
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if annotation is float:  # TOML writes 1 for 1.0
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(item, args[0]) for item in value)
        return len(args) == len(value) and all(map(conforms, value, args))
    if origin is Mapping:
        return isinstance(value, Mapping) and all(
            isinstance(k, str) and conforms(v, args[1]) for k, v in value.items()
        )
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    raise TypeError(f"settings fields cannot be of type {annotation!r}")


def _type_name(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)
