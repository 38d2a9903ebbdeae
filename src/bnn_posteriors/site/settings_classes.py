"""The typed settings of each chapter: one frozen dataclass per ``settings/<chapter>.toml``.

:func:`bnn_posteriors.site.profiles.settings` fills a chapter's class from its TOML file and
checks that the file's keys are the class's fields and that each value has the field's type,
so a study that takes, say, :class:`MetricBNNSettings` is type-checked against the settings it
reads. A new setting is a line in the TOML file and a field here (the test of the profiles
fails until both agree).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """A chapter's settings under one profile, read-only; each chapter's class adds its fields."""

    profile: str
    seed: int

    def as_dict(self) -> dict[str, Any]:
        """A copy of the settings as a dict: changing it leaves the settings unchanged."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MapLaplaceChoices:
    """The choices in which the papers' MAP → Laplace pipelines differ, declared once in a
    chapter's settings (the table ``map_laplace``) instead of in function bodies; read by
    :func:`bnn_posteriors.inference.map_laplace.fit_map` and ``fit_laplace``, which check the
    values.

    The MAP: the start ``init_scheme`` (``nets.INIT_SCHEMES``), ``bias``, the precision
    ``dtype`` ("float32", "float64" or None for ``nets.mlp_init``'s own), AdamW's decoupled
    ``weight_decay``, the ``noise_rounds`` of a regression whose σ is refitted to the residuals,
    and ``whole_program`` (the start and the training one compiled program). The Laplace
    approximation: the GGN ``subset`` ("full", "last_layer"), the evidence ``tune`` (None,
    "prior", "noise"), the prior precision ``tune_from`` at which the GGN is built and the
    tuning starts (None: the MAP's own), and ``ggn_noise_scale``, the GGN's σ where it is not
    the MAP's (None).
    """

    init_scheme: str
    bias: bool
    dtype: str | None
    weight_decay: float
    noise_rounds: int
    whole_program: bool
    subset: str
    tune: str | None
    tune_from: float | None
    ggn_noise_scale: float | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class NarrowNetworksSettings(Settings):
    """Chapter 1's settings (``settings/01_narrow_networks.toml``)."""

    dataset: str
    n_obs: int
    sigma: float
    tau: float
    sigmas_weak: tuple[float, ...]
    depths_orbit: tuple[int, ...]
    depths_penalty: tuple[int, ...]
    psis: tuple[float, ...]
    depths_minima: tuple[int, ...]
    depths_g: tuple[int, ...]
    depths_vi: tuple[int, ...]
    depths_mcmc: tuple[int, ...]
    depths_rate: tuple[int, ...]
    target_acceptance_rate: float
    num_chains: int
    num_warmup: int
    num_samples: int
    n_starts: int
    opt_steps: int
    newton_steps: int
    vi_starts: int
    svi_depths: tuple[int, ...]
    svi_steps: int
    svi_particles: int
    kl_mc_samples: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConvexifiedReluSettings(Settings):
    """Chapter 2's settings (``settings/02_convexified_relu.toml``)."""

    dataset: str
    split_seed: int
    widths_hidden: tuple[int, ...]
    tau: float
    lemma_widths: tuple[int, ...]
    lemma_datasets: tuple[str, ...]
    lemma_rows: int
    warm_steps: int
    warm_learning_rate: float
    target_acceptance_rate: float
    dip_alpha: float
    min_ess: int
    n_boot: int
    boot_level: float
    n_directions: int
    paper_num_chains: int
    paper_num_warmup: int
    paper_num_samples: int
    num_chains: int
    num_warmup: int
    num_samples: int
    n_max: int | None
    max_tree_depth: int
    lemma_draws: int
    n_components: int
    nuts_chunk: int | None
    cache: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class SymmetriesSettings(Settings):
    """Chapter 3's settings (``settings/03_symmetries.toml``)."""

    dataset: str
    n_max: int
    sigma: float
    tau2s: tuple[float, ...]
    tau2s_figure: tuple[float, ...]
    mlp_widths: tuple[tuple[int, ...], ...]
    n_mlps: int
    n_prior_draws: int
    counterexample: Mapping[str, float]
    paper_root: float
    adjusted_sigma0: float
    adjusted_eps: float
    adjusted_scan: tuple[float, ...]
    trap_depth: int
    trap_sigma0s: tuple[float, ...]
    trap_init_scale: float
    trap_runs: int
    target_acceptance_rate: float
    num_chains: int
    num_warmup: int
    num_samples: int
    svi_steps: int
    n_adjusted_seeds: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ElboTemperingSettings(Settings):
    """Chapter 4's settings (``settings/04_elbo_tempering.toml``)."""

    datasets: tuple[str, ...]
    n_max: int
    noise_scale: float
    prior_scale: float
    tau: float
    init_scale: float
    learning_rate: float
    p_fractions: tuple[float, ...]
    p_width: int
    p_n_max: int
    p_repeats: int
    limit_widths: tuple[int, ...]
    family_draws: int
    mnist_n_test: int
    mnist_prior_var: float
    mnist_init_scale: float
    mnist_learning_rate: float
    mnist_samples: int
    mnist_folds: int
    mnist_depth: int
    bootstrap: int
    ece_bins: int
    repeats: int
    widths: tuple[int, ...]
    svi_steps: int
    svi_particles: int
    mnist_width: int
    mnist_steps: int
    mnist_batch: int
    mnist_etas: tuple[float, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SymmetrisedVISettings(Settings):
    """Chapter 5's settings (``settings/05_symmetrised_vi.toml``)."""

    toy_n_train: int
    toy_n_test: int
    toy_noise: float
    noise_scale: float
    prior_scale: float
    activation: str
    mlp_widths: tuple[tuple[int, ...], ...]
    n_mlps: int
    small_width: int
    identity_samples: int
    identity_repeats: int
    separations: tuple[float, ...]
    infonce_ks: tuple[int, ...]
    infonce_samples: int
    learning_rate: float
    init_scale: float
    mnist_n_test: int
    mnist_pool: int
    mnist_learning_rate: float
    mnist_init_scale: float
    eval_samples: int
    target_acceptance_rate: float
    widths: tuple[int, ...]
    n_seeds: int
    svi_steps: int
    svi_particles: int
    mnist_widths: tuple[int, ...]
    mnist_perms: int | None
    mnist_seeds: int
    mnist_n_train: int
    mnist_steps: int
    mnist_particles: int
    mnist_chunk: int | None
    cache: bool
    num_chains: int
    num_warmup: int
    num_samples: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class MetricBNNSettings(Settings):
    """Chapter 6's settings (``settings/06_metricbnn.toml``)."""

    snelson_widths: tuple[int, ...]
    snelson_sigma: float
    prior_precision: float
    map_laplace: MapLaplaceChoices
    map_learning_rate: float
    num_particles: int
    num_refine: int
    refine_learning_rate: float
    snelson_drift: float
    snelson_map_steps: int
    snelson_steps: int
    lin_gap_min_maps: int
    latent_dim: int
    ae_hidden: tuple[int, ...]
    ae_learning_rate: float
    lam_plus: float
    lam_minus: float
    ae_components: int
    pred_samples: int
    straightness_threshold: float
    banana_widths: tuple[int, ...]
    banana_drift: float
    banana_steps: int
    ring_radius: float
    banana_min_maps: int
    uci_hidden: tuple[int, ...]
    uci_drift: float
    uci_steps: int
    mnist_drift: float
    depths: tuple[int, ...]
    depth_width: int
    depth_min_maps: int
    cost_steps: int
    cost_ae_updates: int
    cost_ae_batch: int
    ae_updates: int
    ae_batch: int
    cache: bool
    snelson_repeats: int
    banana_ae_updates: int
    banana_map_steps: int
    uci_seeds: tuple[int, ...]
    uci_map_steps: int
    uci_ae_updates: int
    mnist_n_test: int
    mnist_n_train: int
    mnist_map_steps: int
    mnist_ae_updates: int
    mnist_refine_n: int
    mnist_steps: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class SamplingInPracticeSettings(Settings):
    """Chapter 7's settings (``settings/07_sampling_in_practice.toml``)."""

    dataset: str
    split_seed: int
    hidden: tuple[int, ...]
    hidden_many: tuple[int, ...]
    prior_scale: float
    de_learning_rate: float
    de_weight_decay: float
    de_max_epochs: int
    de_batch_size: int
    de_patience: int
    n_orderings: int
    n_boot: int
    n_boot_pairs: int
    n_boot_w2: int
    permuted_groups: int
    scales: tuple[float, ...]
    many_seeds: tuple[int, ...]
    many_results: str | None
    glorot_scale: float
    mild_scales: tuple[float, ...]
    n_chains: int
    tuning_steps: int
    sampling_steps: int
    thinning: int
    n_chains_many: int
    n_chains_many_accelerator: int
    tuning_steps_many: int
    sampling_steps_many: int
    prior_datasets: tuple[str, ...]
    prior_depths: tuple[int, ...]
    prior_chains: int
    prior_n_max: int | None
    prior_tuning_steps: int
    prior_sampling_steps: int
    prior_results: str | None
    cache: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class BenchmarksSettings(Settings):
    """Chapter 8's settings (``settings/08_benchmarks.toml``)."""

    datasets: tuple[str, ...]
    widths_hidden: tuple[int, ...]
    prior_scale: float
    map_learning_rate: float
    map_laplace: MapLaplaceChoices
    map_sigma: float
    aleatoric_var: float
    mfvi_noise: float
    mfvi_learning_rate: float
    mfvi_init_scale: float
    mfvi_pred_samples: int
    de_members: int
    de_learning_rate: float
    de_weight_decay: float
    de_max_epochs: int
    de_batch_size: int
    de_patience: int
    de_noise: float
    bde_chains: int
    thinning: int
    splits: tuple[int, ...]
    n_max: Mapping[str, int]
    map_steps: int
    mfvi_steps: int
    mfvi_particles: int
    tuning_steps: int
    sampling_steps: int
    mile_resumable: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class GGNNullSpaceSettings(Settings):
    """Chapter 9's settings (``settings/09_ggn_null_space.toml``)."""

    map_laplace: MapLaplaceChoices

    rank_widths: tuple[int, ...]
    rank_points: tuple[int, ...]
    rank_directions: int
    activation: str
    toy_widths: tuple[int, ...]
    toy_noise_scale: float
    uci_hidden: tuple[int, ...]
    uci_noise: float | str
    uci_map_noise_scale: float
    map_prior_precision: float
    map_learning_rate: float
    pred_samples: int
    ap_batch_size: int
    ap_sweeps: int
    ap_vectors: int
    kernel_rtol: float
    slq_matvecs: int
    slq_probes: int
    diffusion_max_rank: int
    vk_optimiser: str
    vk_learning_rate: float
    vk_kl_points: int
    vk_kl_scales: tuple[tuple[float, ...], ...]
    vk_mfvi_learning_rate: float
    vk_mbnn_drift: float
    mnist_n_train: int
    mnist_n_test: int
    mnist_hidden: tuple[int, ...]
    mnist_activation: str
    vk_class_kl_weight: float
    vk_class_optimiser: str
    vk_class_learning_rate: float
    uci_names: tuple[str, ...]
    map_steps: int
    diffusion_steps: int
    diffusion_samples: int
    vk_steps: int
    vk_mc_samples: int
    vk_mfvi_steps: int
    vk_mbnn_steps: int
    vk_mbnn_ae_updates: int
    vk_mnist: bool
    tie_back_names: tuple[str, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReferencePosteriorsSettings(Settings):
    """Chapter 10's settings (``settings/10_reference_posteriors.toml``)."""

    problems: tuple[str, ...]
    target_acceptance_rate: float
    max_num_doublings: int
    mams_target_acceptance_rate: float
    mams_integration_steps: float
    mams_initial_step_size: float
    score_problems: tuple[str, ...]
    score_results: str
    floor_draws: int
    floor_splits: int
    validation_results: str
    live_problems: tuple[str, ...]
    live_methods: tuple[str, ...]
    figure_seed: int
    single_mode: tuple[str, ...]
    num_chains: int
    num_chains_accelerator: int
    num_warmup: int
    num_samples: int
    num_kept: int
    chunk_size: int
    results: str | None
    cache: bool
    score_seeds: tuple[int, ...]
    methods: Mapping[str, Mapping[str, Any]]


# The class of each chapter's settings file
CLASSES: Mapping[str, type[Settings]] = {
    "01_narrow_networks": NarrowNetworksSettings,
    "02_convexified_relu": ConvexifiedReluSettings,
    "03_symmetries": SymmetriesSettings,
    "04_elbo_tempering": ElboTemperingSettings,
    "05_symmetrised_vi": SymmetrisedVISettings,
    "06_metricbnn": MetricBNNSettings,
    "07_sampling_in_practice": SamplingInPracticeSettings,
    "08_benchmarks": BenchmarksSettings,
    "09_ggn_null_space": GGNNullSpaceSettings,
    "10_reference_posteriors": ReferencePosteriorsSettings,
}
