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
            # C2.3: the same ESS gate, and a percentile bootstrap over chains of each ratio
            "n_boot": 1000,
            "boot_level": 0.95,
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
            "p_width": 256,  # C4.2: N of the tempered fits over p (one of the widths)
            "limit_widths": (16, 64, 256, 1024, 4096, 16384),  # C4.2, C4.5, closed form
            "family_draws": 32,  # i.i.d. draws of N neurons from a fixed ν, averaged
            "mnist_n_test": 1000,
            "mnist_prior_var": 0.2,  # Osawa et al. (2019), as in the slides
            "mnist_init_scale": 0.1,
            "mnist_learning_rate": 0.01,
            "mnist_samples": 32,  # draws of q for the predictive probabilities
            "mnist_folds": 5,  # C4.4: cross-fitting, every one of the 5 000 images tested once
            "bootstrap": 2000,  # paired bootstrap resamples of the test images (C4.4)
            "ece_bins": 15,
        },
        "quick": {
            # random splits per regression set, averaged in C4.1 and C4.3 (with 4, C4.1's KL
            # rise from N = 16 to 64 varied from 6 % to 22 % over the seeds of the sweep)
            "repeats": 8,
            "widths": (16, 64, 256, 1024),
            "svi_steps": 1500,
            "svi_particles": 2,
            "mnist_width": 100,
            "mnist_steps": 1000,
            "mnist_batch": 100,
            "mnist_etas": (1e-3, 1e-2, 1e-1, 1.0),
        },
        "full": {
            "repeats": 8,
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
            "adjusted_sigma0": 0.1,  # Prop. B.5: theta0 ~ N(0, (sigma0 tau)^2): 0.1 prior sd
            "adjusted_eps": 0.1,  # Prop. B.5: 1/Sigma_ii ~ U(1 - eps, 1 + eps), relative to tau^2
            "adjusted_scan": (1.1, 1.25, 1.5),  # tau^2 / tau^2_c just above MFVI's threshold
            "target_acceptance_rate": 0.9,
        },
        "quick": {
            "num_chains": 12,
            "num_warmup": 300,
            "num_samples": 300,
            "svi_steps": 3000,
            "n_adjusted_seeds": 8,  # plain and adjusted SVI fits per tau^2 of the scan
        },
        "full": {
            "num_chains": 12,
            "num_warmup": 1000,
            "num_samples": 1000,
            "svi_steps": 20000,
            "n_adjusted_seeds": 8,  # as in quick: the median over 8 runs is the statistic
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
            # C5.2: the identity test is repeated with fresh keys to show that its z is calibrated
            "identity_repeats": 20,
            "separations": (0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.0, 3.0),
            "infonce_ks": (1, 2, 4, 16, 64, 256, 1024),
            # C5.2: Î_K ≤ I is tested as a z-score; at K ≫ |G| the gap I − E Î_K is ~0.02 nats,
            # which 500 draws (s.e. ~0.015) could not resolve
            "infonce_samples": 2000,
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
    "06_metricbnn": {
        "seed": 20250606,
        "common": {
            # [MBNN] App. A; the refinement loss is eq. 1 divided by n (and, for regression,
            # scaled by 2σ² so that its data term is the MSE the authors train with)
            "snelson_widths": (1, 32, 32, 32, 1),
            "snelson_sigma": 0.3,  # fixed Gaussian noise sd of the regression likelihood
            "prior_precision": 1.0,  # δ of the MAP's N(0, 1/δ) prior (LA re-tunes it)
            "map_learning_rate": 1e-3,
            "num_particles": 10,  # N
            "num_refine": 10,  # M
            "refine_learning_rate": 1e-3,  # η
            "snelson_drift": 1e-3,  # α
            # Snelson's part is the same in both profiles: C6.3's NLL difference is small and
            # its sign changed with a shorter MAP training (3000 steps)
            "snelson_map_steps": 10000,
            "snelson_steps": 1000,  # T (shorter walks in the quick profile made C6.4 too easy)
            "latent_dim": 32,  # k
            "ae_hidden": (256, 256),
            # Snelson's autoencoder, both profiles: App. A has 1000 epochs of batch 1024
            # (~10 000 updates); a shorter training leaves φ⁻¹ near the MAP, which passes the
            # loss part of C6.4 trivially
            "ae_updates": 4000,
            "ae_batch": 256,
            "ae_learning_rate": 1e-3,
            "lam_plus": 1.0,
            "lam_minus": 1.0,
            "ae_components": 64,  # principal directions the autoencoder sees
            "pred_samples": 200,  # posterior samples per predictive
            "loss_tolerance": 0.10,  # C6.1/C6.4: training loss within 10 % of the MAP's
            "straightness_threshold": 0.9,  # C6.4
            "banana_widths": (2, 16, 16, 2),
            "banana_drift": 0.1,
            "banana_steps": 100,  # T
            "ring_radius": 2.0,  # C6.5: ring at this multiple of the data's max radius
            "uci_hidden": (32, 32),
            "uci_drift": 0.1,
            "uci_steps": 50,  # T
            "uci_min_wins": 5,  # C6.6: MetricBNN NLL <= LA NLL on at least 5 of 6
            "mnist_drift": 0.1,
            "depths": (1, 2, 3, 4, 5),  # C6.8, Fig. 5
            "depth_width": 15,
            # C6.8 counts FLOPs (shapes only, nothing is run) at App. A's budgets: T = 1000,
            # 1000 epochs of batch 1024 over the N·T = 10 000 solutions (10 000 updates)
            "cost_steps": 1000,
            "cost_ae_updates": 10000,
            "cost_ae_batch": 1024,
        },
        "quick": {
            # MAPs of Snelson's pipeline in this build; C6.3/C6.4 are decided on the committed
            # full run's MAPs (their MAP-to-MAP spread needs tens of MAPs; see the chapter)
            "snelson_repeats": 3,
            "banana_ae_updates": 300,
            "banana_map_steps": 1000,
            "uci_seeds": (0,),
            "uci_map_steps": 500,
            "uci_ae_updates": 100,
            "mnist_n_test": 500,
            "mnist_n_train": 500,
            "mnist_map_steps": 200,
            "mnist_ae_updates": 100,
            "mnist_refine_n": 64,  # training images in the refinement loss
            "mnist_steps": 20,
        },
        "full": {
            # C6.3/C6.4: mean over this many MAPs (each its own walk and autoencoder) with a 95 %
            # t-interval; on 25 MAPs of an earlier sweep C6.3's difference had sd 0.11 and mean 0.05
            "snelson_repeats": 40,
            "banana_ae_updates": 4000,
            "banana_map_steps": 5000,
            "uci_seeds": (0, 1, 2),
            "uci_map_steps": 2000,
            "uci_ae_updates": 300,
            "mnist_n_test": 1000,
            "mnist_n_train": 1000,
            "mnist_map_steps": 500,
            "mnist_ae_updates": 300,
            "mnist_refine_n": 128,
            "mnist_steps": 50,  # T of App. A
        },
    },
    "07_sampling_in_practice": {
        "seed": 20250707,
        "common": {
            "dataset": "airfoil",  # [SAP] Figs. 1, 3-5, 7, 10, 11
            "split_seed": 1,
            "hidden": (16, 16, 16),  # [SAP] App. D.4
            "hidden_many": (16, 16, 16, 16),  # [SAP] Figs. 1, 7
            "prior_scale": 1.0,
            "de_learning_rate": 0.01,  # MILE's warm-start settings
            "de_weight_decay": 0.005,
            "de_max_epochs": 200,
            "de_batch_size": 64,
            "de_patience": 10,
            "n_orderings": 100,  # random chain orderings of the cumulative LPPD ([SAP] Fig. 5: 5)
            "n_boot": 200,  # bootstrap resamples of the chains (C7.4 interval)
            "n_boot_pairs": 2000,  # bootstrap resamples of the paired LPPD differences (C7.6)
            "n_boot_w2": 2000,  # bootstrap resamples of the chains (C7.2 W2 ratio interval)
            # C7.2: lower bound of "not negligible" for rho = within / between-chain W2^2, the
            # within-chain share of the functional variance; below it a chain is nearly a point
            "w2_ratio_floor": 0.1,
            # C7.1: permuted-start groups, each from another DE member (member g and n_chains - 1
            # permutations of it); the check averages over them, since one member's basin
            # decides its group's LPPD (with one group the gap's sd over seeds was 0.041)
            "permuted_groups": 3,
            "scales": (10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1),  # [SAP] Fig. 12
            "glorot_scale": 0.25,  # sqrt(2 / (16 + 16)), [SAP] App. D.6 eq. (23)
        },
        "quick": {
            "n_chains": 6,  # regular and permuted warm starts each
            "tuning_steps": 1000,
            "sampling_steps": 500,
            "thinning": 10,
            "n_chains_many": 16,
            "tuning_steps_many": 600,
            "sampling_steps_many": 300,
            "prior_datasets": ("airfoil",),
            "prior_depths": (1, 3),
            "prior_chains": 4,  # warm starts per cell: the pairs of the C7.6 differences
            "prior_n_max": None,
            "prior_tuning_steps": 400,
            "prior_sampling_steps": 200,
            # C7.6 clauses this budget decides: scale 0.1 only (the 5-seed sweep put the lower
            # ends for scale 10 and the Glorot scale on both sides of 0); full checks all three
            "prior_checked_scales": (0.1,),
            "cache": False,
        },
        "full": {
            "n_chains": 10,
            "tuning_steps": 10_000,  # MILE: 50 000 (reduced to fit the CPU budget)
            "sampling_steps": 5_000,  # MILE: 10 000
            "thinning": 10,
            "n_chains_many": 64,  # [SAP]: 10 000
            "tuning_steps_many": 2_000,
            "sampling_steps_many": 1_000,
            "prior_datasets": ("airfoil", "energy", "bikesharing"),
            "prior_depths": (1, 2, 3, 4),
            "prior_chains": 2,
            "prior_n_max": 2_000,  # bikesharing subsampled to 2 000 rows (others are smaller)
            "prior_tuning_steps": 1_000,
            "prior_sampling_steps": 500,
            "prior_checked_scales": (0.1, 10.0, 0.25),
            "cache": False,  # True makes each chain a resumable unit (different keys)
        },
    },
    "08_benchmarks": {
        "seed": 20250808,
        "common": {
            "datasets": ("airfoil", "bikesharing", "concrete", "energy"),  # [SAP] Table 2
            "widths_hidden": (16, 16, 16),  # 3 hidden layers of 16 ReLU units
            "prior_scale": 1.0,  # N(0, 1) prior on every weight and bias
            # Laplace ([SAP] App. D.7 and the authors' laplace_uci_benchmark.yaml)
            "map_learning_rate": 0.005,
            "map_weight_decay": 1e-4,  # optax.adamw's default, which the authors' script uses
            "map_sigma": 0.1,  # noise of the MAP's Gaussian NLL (their constant_variance_nll)
            "ggn_sigma": 1.0,  # noise of the GGN (their _pred_to_loss_fn, scale=1.0)
            "aleatoric_var": 0.1,  # added to the linearised variance (their aleatoric_var)
            # MFVI ([SAP] App. D.7 and the authors' mfvi_uci_benchmark.yaml)
            "mfvi_noise": 0.1,  # fixed observation noise of the likelihood and predictive
            "mfvi_learning_rate": 0.005,
            "mfvi_init_scale": 0.1353352832366127,  # exp(-2): their initial log std -2
            "mfvi_pred_samples": 100,
            # DE and BDE by MILE ([SAP] App. D.7, Sommer et al. 2025)
            "de_members": 10,
            "de_learning_rate": 0.01,
            "de_weight_decay": 0.005,
            "de_max_epochs": 200,
            "de_batch_size": 64,
            "de_patience": 10,
            "de_noise": 1.0,  # the members' training noise
            "bde_chains": 10,
            "thinning": 10,
            "sd_flag": 3.0,  # C8.2: flag differences larger than 3 split-sds
        },
        "quick": {
            "datasets": ("airfoil", "energy"),  # the two smallest; the rest costs > 3 min
            "splits": (1,),
            "n_max": {},
            "map_steps": 1000,
            "mfvi_steps": 3000,  # 800 left MFVI underfitted (airfoil RMSE 0.46)
            "mfvi_particles": 1,
            "tuning_steps": 800,
            "sampling_steps": 400,
        },
        "full": {
            "splits": (1, 2, 3),
            "n_max": {},
            "map_steps": 10_000,  # the paper's
            "mfvi_steps": 5000,  # the paper's
            "mfvi_particles": 1,  # the authors' code: 10 (on minibatches of 128)
            "tuning_steps": 2000,  # the paper's: 50 000 (too slow for this CPU)
            "sampling_steps": 1000,  # the paper's: 10 000; 100 samples kept per chain
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
