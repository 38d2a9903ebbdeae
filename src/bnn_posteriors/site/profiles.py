"""Run profiles: ``quick`` (CI, minutes on a 2-core CPU) and ``full`` (the papers' budgets).

A chapter asks :func:`settings` for its settings under the profile named by
``BNN_PROFILE`` (default ``quick``); its seed is fixed per chapter, or ``BNN_SEED``.
The settings are data, ``settings/<chapter>.toml``: the ``seed``, a ``[common]`` table
for both profiles and ``[quick]`` and ``[full]`` tables that add or replace keys. A key
not in ``[common]`` must be in both profile tables (else it is a typo, or missing from
one profile); nothing else may be in the file. TOML has no null: the string ``"none"``
is read as ``None``; arrays are read as tuples.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.resources
import keyword
import os
import tomllib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bnn_posteriors.store import provenance

PROFILES = ("quick", "full")
DEFAULT_PROFILE = "quick"
_RESERVED = ("profile", "seed", "as_dict")  # fields of Settings, not settings of a file


@dataclasses.dataclass(frozen=True)
class Settings:
    """A chapter's settings under one profile, read-only; each chapter adds its own fields."""

    profile: str
    seed: int

    def as_dict(self) -> dict[str, Any]:
        """A copy of the settings as a dict: changing it leaves the settings unchanged."""
        return dataclasses.asdict(self)

    if TYPE_CHECKING:  # each chapter's own fields are made at run time, from its TOML

        def __getattr__(self, name: str) -> Any: ...


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
    return _settings_class(chapter)(profile=name, seed=chapter_seed(chapter), **values)


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


@functools.cache
def _settings_class(chapter: str) -> type[Settings]:
    """The frozen dataclass of a chapter: the keys of all its tables as fields, in order."""
    keys = dict.fromkeys(key for name in ("common", *PROFILES) for key in _spec(chapter)[name])
    fields = [(key, Any) for key in keys]
    return dataclasses.make_dataclass(f"Settings_{chapter}", fields, bases=(Settings,), frozen=True)
