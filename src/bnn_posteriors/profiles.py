"""Run profiles: ``quick`` (CI, minutes on a 2-core CPU) and ``full`` (the papers' budgets).

A chapter never hard-codes a budget: it asks :func:`settings` for its settings
object, which depends on the profile named by the ``BNN_PROFILE`` environment
variable (default ``quick``). The chapter's seed is fixed per chapter and can be
overridden with ``BNN_SEED``.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
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
            "num_warmup": 1000,  # 500 left a chain stuck at L = 6 on one CPU (R-hat 1.31)
            "target_acceptance_rate": 0.99,  # smaller steps: fewer divergences in the funnel
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
    "02_convexified_relu": {
        "seed": 20250202,
        "common": {
            "dataset": "airfoil",  # [SAP] App. D.2
            "split_seed": 1,  # the first of the authors' three splits
            "widths_hidden": (8, 64),  # hidden neurons of Figs. 8-9
            "tau": 1.0,  # prior standard deviation of every weight
            "lemma_widths": (2, 8, 64),
            "lemma_datasets": ("airfoil", "concrete", "synthetic_regression_1x"),
            "lemma_rows": 200,  # training rows per data set in the Lemma E.1 check
            "warm_steps": 2000,  # Adam steps of the warm starts
            "warm_learning_rate": 0.01,
            "num_warmup": 100,  # [SAP] App. D.2
            "target_acceptance_rate": 0.8,
            "dip_alpha": 0.05,  # C2.2: the dip test does not reject at 5 %
            "dip_pass_rate": 0.9,  # ... for at least 90 % of (chain, component) pairs
            "min_ess": 100,  # median within-chain ESS for the dip test to be meaningful
            "n_directions": 8,  # random 1-D projections of the bivariate density (C2.4)
        },
        "quick": {
            "num_chains": 4,
            "num_samples": 200,
            "n_max": 400,  # airfoil rows in use (280 for training): a weaker, faster posterior
            "max_tree_depth": 8,
            "lemma_draws": 10_000,
            "n_components": 16,
        },
        "full": {
            "num_chains": 10,  # [SAP] App. D.2
            "num_samples": 1000,
            "n_max": None,  # all 1503 rows (1052 for training)
            "max_tree_depth": 10,  # NUTS' usual cap
            "lemma_draws": 100_000,
            "n_components": 32,
        },
    },
    "04_elbo_tempering": {
        "seed": 20250404,
        "common": {
            "datasets": ("synthetic_regression_1x", "concrete"),
            "n_max": 200,  # rows used per regression set (p = 140 for training)
            "noise": 1.0,  # σ of the Gaussian likelihood: ℓ = (y − f)²/2 as in the slides
            "prior_scale": 1.0,  # P0 = N(0, 1) for every weight
            "tau": 0.1,  # η_N = τ p / N for the regression sets
            "init_scale": 1.0,  # initial sd of q relative to the prior's
            "learning_rate": 0.03,
            "p_fractions": (0.125, 0.25, 0.5, 1.0),  # sub-samples for the O(p) scaling
            "limit_widths": (16, 64, 256, 1024, 4096, 16384),  # C4.2, C4.5, closed form
            "family_draws": 32,  # i.i.d. draws of N neurons from a fixed ν, averaged
            "mnist_n_test": 1000,
            "mnist_prior_var": 0.2,  # Osawa et al. (2019), as in the slides
            "mnist_init_scale": 0.1,
            "mnist_learning_rate": 0.01,
            "mnist_samples": 32,  # draws of q for the predictive probabilities
            "ece_bins": 15,
        },
        "quick": {
            "widths": (16, 64, 256, 1024),
            "svi_steps": 1500,
            "svi_particles": 2,
            "mnist_width": 100,
            "mnist_steps": 1000,
            "mnist_batch": 100,
            "mnist_etas": (1e-3, 1e-2, 1e-1, 1.0),
        },
        "full": {
            "widths": (16, 64, 256, 1024, 4096),
            "svi_steps": 3000,
            "svi_particles": 2,
            "mnist_width": 200,
            "mnist_steps": 2000,
            "mnist_batch": 100,
            "mnist_etas": (1e-4, 1e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0),
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
    "05_symmetrised_vi": {
        "seed": 20250505,
        "common": {
            "toy_n_train": 30,  # 1-D regression toy: x ~ U(-2, 2), y = sin 2x + x/2 + N(0, 0.2²)
            "toy_n_test": 500,
            "toy_noise": 0.2,  # noise of the data
            "noise": 0.3,  # observation noise σ of the model (fixed)
            "prior_scale": 1.0,  # every weight and bias ~ N(0, 1)
            "activation": "relu",
            "mlp_widths": ((2, 3, 4, 1), (3, 5, 2)),  # C5.1: |G| = 3!·4! and 5!
            "n_mlps": 5,
            "small_width": 4,  # C5.2: |G| = 4! = 24, enumerated
            "identity_samples": 10_000,
            "separations": (0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.0, 3.0),
            "infonce_ks": (1, 2, 4, 16, 64, 256, 1024),
            "infonce_samples": 500,
            "learning_rate": 0.02,
            "init_scale": 0.1,
            "mnist_n_test": 1000,
            "mnist_pool": 2,  # 28×28 → 14×14 average pooling (196 inputs), for the CPU budget
            "mnist_learning_rate": 0.01,
            "mnist_init_scale": 0.01,
            "eval_samples": 256,
            "target_acceptance_rate": 0.9,
        },
        "quick": {
            "widths": (2, 4, 8),
            "n_seeds": 3,
            "svi_steps": 2000,
            "svi_particles": 4,
            "mnist_widths": (4, 8),
            "mnist_n_train": 1000,
            "mnist_steps": 1500,
            "mnist_particles": 1,
            "num_chains": 6,
            "num_warmup": 300,
            "num_samples": 300,
        },
        "full": {
            "widths": (2, 4, 6, 8, 10, 12),
            "n_seeds": 5,
            "svi_steps": 5000,
            "svi_particles": 8,
            "mnist_widths": (4, 8, 16),
            "mnist_n_train": 4000,
            "mnist_steps": 4000,
            "mnist_particles": 1,
            "num_chains": 8,
            "num_warmup": 1000,
            "num_samples": 1000,
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


PACKAGES = ("jax", "numpyro", "blackjax", "optax", "arviz", "numpy", "scipy")


def versions_report(cfg: SimpleNamespace, extra: tuple[str, ...] = ()) -> str:
    """The 'Versions' watermark of a chapter: profile, seed, Python and package versions.

    ``cfg`` is the chapter's :func:`settings` object; ``extra`` names more packages.
    """
    for attr in ("profile", "seed"):
        if not hasattr(cfg, attr):
            raise ValueError(f"cfg must be a settings object with a {attr!r} attribute")

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    packages = ", ".join(f"{name} {version(name)}" for name in (*PACKAGES, *extra))
    return f"profile {cfg.profile}, seed {cfg.seed}, python {platform.python_version()}\n{packages}"


def chapters() -> MappingProxyType:
    """Read-only view of the per-chapter specifications."""
    return MappingProxyType(_CHAPTERS)


def _known(chapter: str) -> dict:
    if chapter not in _CHAPTERS:
        raise ValueError(
            f"no settings for chapter {chapter!r}; known chapters: {', '.join(sorted(_CHAPTERS))}"
        )
    return _CHAPTERS[chapter]
