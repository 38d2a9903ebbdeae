"""Run profiles: ``quick`` (CI, minutes on a 2-core CPU) and ``full`` (the papers' budgets).

A chapter never hard-codes a budget: it asks :func:`settings` for its settings
object, which depends on the profile named by the ``BNN_PROFILE`` environment
variable (default ``quick``). The chapter's seed is fixed per chapter and can be
overridden with ``BNN_SEED``.
"""

from __future__ import annotations

import os
from types import MappingProxyType, SimpleNamespace

PROFILES = ("quick", "full")
DEFAULT_PROFILE = "quick"

# Per chapter: the default seed and the settings of each profile. Keys common to
# both profiles are given once under "common".
_CHAPTERS: dict[str, dict] = {
    "01_narrow_networks": {
        "seed": 20250101,
        "common": {
            "dataset": "synthetic_regression_1x",
            "n_obs": 20,  # observations drawn from the data file
            "sigma": 0.5,  # observation noise of the model (the data's is about 0.29)
            "tau": 1.0,  # prior standard deviation of every weight
            "sigmas_weak": (1.0, 2.0),  # weaker likelihoods for the dependence on σ
            "depths_orbit": (2, 3, 4, 5, 6),
            "depths_penalty": (2, 3, 4, 5, 6),
            "psis": (0.1, 1.0, 3.0),
            "depths_minima": (2, 3, 4),
            "depths_g": (2, 3, 5, 10),
            "depths_vi": tuple(range(1, 11)),
            "depths_mcmc": tuple(range(1, 9)),
            "target_acceptance_rate": 0.95,
        },
        "quick": {
            "num_chains": 4,
            "num_warmup": 500,
            "num_samples": 500,
            "n_starts": 256,
            "opt_steps": 1000,
            "newton_steps": 50,
            "vi_starts": 64,
            "svi_depths": (2, 4, 8),
            "svi_steps": 3000,
            "svi_particles": 16,
            "kl_mc_samples": 20_000,
        },
        "full": {
            "num_chains": 8,
            "num_warmup": 2000,
            "num_samples": 5000,
            "n_starts": 2048,
            "opt_steps": 5000,
            "newton_steps": 100,
            "vi_starts": 256,
            "svi_depths": tuple(range(2, 9)),
            "svi_steps": 20000,
            "svi_particles": 64,
            "kl_mc_samples": 1_000_000,
        },
    },
    "03_symmetries": {
        "seed": 20250303,
        "common": {
            "dataset": "synthetic_regression_1x",
            "n_max": 200,  # rows used, as the authors' datapoint_limit
            "sigma": 1.0,  # observation noise of the model (fixed)
            "tau2s": (1.0, 0.1, 0.01, 0.001),  # prior variances of Fig. 2, extended downwards
            "tau2s_figure": (1.0, 0.1),  # the two panels of the authors' Fig. 2
            "mlp_widths": ((3, 8, 8, 1), (2, 16, 16, 16, 2)),
            "n_mlps": 5,
            "n_prior_draws": 10_000,
            "counterexample": {"w1": 0.5, "w2": 0.8, "b1": 0.9},
            "paper_root": 0.77754,  # the value marked in the authors' Fig. 6
            "adjusted_sigma0": 0.1,  # Prop. B.5: theta0 ~ N(0, sigma0^2)
            "adjusted_eps": 0.1,  # Prop. B.5: 1/Sigma_ii ~ U(1 - eps, 1 + eps)
            "target_acceptance_rate": 0.9,
        },
        "quick": {
            "num_chains": 12,
            "num_warmup": 300,
            "num_samples": 300,
            "svi_steps": 3000,
            "n_adjusted_seeds": 3,
        },
        "full": {
            "num_chains": 12,
            "num_warmup": 1000,
            "num_samples": 1000,
            "svi_steps": 20000,
            "n_adjusted_seeds": 10,
        },
    },
}


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


def chapter_seed(chapter: str) -> int:
    """The chapter's seed: ``$BNN_SEED`` if set, else the chapter's fixed default."""
    _known(chapter)
    raw = os.environ.get("BNN_SEED", "").strip()
    if not raw:
        return int(_CHAPTERS[chapter]["seed"])
    try:
        seed = int(raw)
    except ValueError:
        raise ValueError(f"BNN_SEED must be a non-negative integer, got {raw!r}") from None
    if seed < 0:
        raise ValueError(f"BNN_SEED must be a non-negative integer, got {seed}")
    return seed


def settings(chapter: str, profile: str | None = None) -> SimpleNamespace:
    """The settings object of ``chapter`` under ``profile`` (read-only attributes).

    Contains ``profile`` and ``seed`` next to the chapter's budget and model settings.
    """
    spec = _known(chapter)
    name = profile_name(profile)
    values = {**spec.get("common", {}), **spec[name]}
    return SimpleNamespace(profile=name, seed=chapter_seed(chapter), **values)


def chapters() -> MappingProxyType:
    """Read-only view of the per-chapter specifications."""
    return MappingProxyType(_CHAPTERS)


def _known(chapter: str) -> dict:
    if chapter not in _CHAPTERS:
        raise ValueError(
            f"no settings for chapter {chapter!r}; known chapters: {', '.join(sorted(_CHAPTERS))}"
        )
    return _CHAPTERS[chapter]
