"""Typed models of ``params.yaml``: the one place that validates input.

Every stage calls :func:`load_params` before it does any work, so a bad value fails within a
second, names its dotted key (``training.batch_size``), shows the offending value and says what is
allowed — and no output has been touched yet.

Named sections (``backbones``, ``losses``, ``schedules``, ``datasets``) are dictionaries of
configurations keyed by a name that the ``study`` lists refer to. A run is one element of the
product ``study.datasets × backbones × losses × schedules × seeds``; its id joins the names with
``-`` (see :func:`run_id`), which is why names may only use letters, digits and ``_``.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infonce_lab.config_text import TextConfig
from infonce_lab.config_vision import (
    ImageDataset,
    SimCLRAugmentConfig,
    TorchvisionResNetConfig,
    ViTSmallConfig,
)

NAME_PATTERN = r"^[A-Za-z0-9_]+$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class ConfigError(ValueError):
    """A params.yaml problem, already phrased for the user (dotted key, value, what is allowed)."""


class Strict(BaseModel):
    """Base model: unknown keys are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ----------------------------------------------------------------------------------- datasets
class DigitsAugment(Strict):
    """Two-view augmentation for small grey-level digits (applied batched, on tensors)."""

    rotate_deg: Annotated[float, Field(ge=0.0, le=180.0)] = 12.0
    scale: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1
    shear_deg: Annotated[float, Field(ge=0.0, le=45.0)] = 8.0
    translate_px: Annotated[float, Field(ge=0.0)] = 1.0
    contrast: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.3
    brightness: Annotated[float, Field(ge=0.0, le=1.0)] = 0.1
    noise_std: Annotated[float, Field(ge=0.0)] = 0.05
    erase_prob: Probability = 0.25
    erase_size_px: Annotated[int, Field(ge=1)] = 3


class DigitsDataset(Strict):
    """scikit-learn's digits: 1,797 real 8×8 handwritten digits shipped inside scikit-learn."""

    kind: Literal["digits"] = "digits"
    test_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.25
    split_seed: int = 0
    augment: DigitsAugment = DigitsAugment()


# The embedded default (digits) and the paper's datasets (config_vision.py).
DatasetConfig = Annotated[DigitsDataset | ImageDataset, Field(discriminator="kind")]
AugmentConfig = DigitsAugment | SimCLRAugmentConfig


# ---------------------------------------------------------------------------------- backbones
class ResNetConfig(Strict):
    """A CIFAR-style ResNet (3×3 stem, no max-pool) with a SimCLR projection head."""

    kind: Literal["resnet_cifar"] = "resnet_cifar"
    widths: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=6)] = [
        32,
        64,
        128,
    ]
    blocks: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1, max_length=6)] = [
        1,
        1,
        1,
    ]
    head_hidden: Annotated[int, Field(ge=1)] = 128
    head_dim: Annotated[int, Field(ge=1)] = 64

    @model_validator(mode="after")
    def _same_depth(self) -> ResNetConfig:
        if len(self.widths) != len(self.blocks):
            raise ValueError(
                f"widths has {len(self.widths)} stages but blocks has {len(self.blocks)}; "
                "give one block count per stage"
            )
        return self


BackboneConfig = Annotated[ResNetConfig | TorchvisionResNetConfig | ViTSmallConfig,
                          Field(discriminator="kind")]


# ------------------------------------------------------------------------------------- losses
# The candidate set of the InfoNCE- and WEINCE-kind losses: SimCLR's 2N − 1 other views of the
# batch (all_views) or SimCSE's N rows of the other view (cross_view; Gao et al. 2021).
CandidateSet = Literal["all_views", "cross_view"]


class InfoNCEConfig(Strict):
    """NT-Xent (SimCLR). ``decoupled`` drops the positive from the denominator (DCL, Yeh et al.);
    ``topm_weight`` > 0 adds the softmax top-M term of WEINCE's released recipe (the control);
    ``candidates`` picks SimCLR's or SimCSE's candidate set; ``tau_scale`` multiplies the
    schedule's τ (a temperature control on the same schedule)."""

    kind: Literal["info_nce"] = "info_nce"
    decoupled: bool = False
    topm_weight: Annotated[float, Field(ge=0.0)] = 0.0
    top_m: Annotated[int, Field(ge=1)] = 50
    candidates: CandidateSet = "all_views"
    tau_scale: Annotated[float, Field(gt=0.0)] = 1.0


class AutoBetaConfig(Strict):
    """The released recipe's global tail index β_t: a batch-level Weibull fit, EMA over steps."""

    frac: Annotated[float, Field(gt=0.0, le=1.0)] = 0.05
    min_points: Annotated[int, Field(ge=3)] = 1024
    r2_min: Annotated[float, Field(ge=0.0, le=1.0)] = 0.85
    clip: tuple[Annotated[float, Field(gt=0.0)], Annotated[float, Field(gt=0.0)]] = (0.5, 16.0)
    ema: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.9
    init: Annotated[float, Field(gt=0.0)] = 4.0


class WeinceConfig(Strict):
    """WEINCE (§3, App. E). Defaults are the released code's; see params.yaml for the variants."""

    kind: Literal["weince"] = "weince"
    tail_frac: Annotated[float, Field(gt=0.0, le=1.0)] = 0.10
    min_tail_points: Annotated[int, Field(ge=3)] = 32
    q: Probability = 0.2
    kappa_rho: Annotated[float, Field(ge=0.0)] = 10.0
    kappa_aic: Annotated[float, Field(ge=0.0)] = 1.0
    aic_margin: float = 2.0
    lambda_mode: Literal["product", "rho", "aic", "fixed"] = "product"
    lambda_fixed: Probability = 0.0
    beta: Literal["one", "per_anchor"] = "one"
    beta_clip: tuple[Annotated[float, Field(gt=0.0)], Annotated[float, Field(gt=0.0)]] = (0.5, 16.0)
    eps: Annotated[float, Field(gt=0.0, lt=0.1)] = 1e-6
    weib_topm_weight: Annotated[float, Field(ge=0.0)] = 0.0
    pl_topm_weight: Annotated[float, Field(ge=0.0)] = 0.0
    top_m: Annotated[int, Field(ge=1)] = 50
    auto_beta: AutoBetaConfig = AutoBetaConfig()
    candidates: CandidateSet = "all_views"

    @model_validator(mode="after")
    def _clip_order(self) -> WeinceConfig:
        for key in ("beta_clip",):
            lo, hi = getattr(self, key)
            if lo > hi:
                raise ValueError(f"{key} = {[lo, hi]}: lower bound above upper bound")
        return self


class DirectAUConfig(Strict):
    """Alignment + weight·uniformity (Wang & Isola). No temperature, unless ``schedule_drives: t``
    lets the run's schedule set the uniformity kernel's t = 1/(2τ)."""

    kind: Literal["direct_au"] = "direct_au"
    alpha: Annotated[float, Field(gt=0.0)] = 2.0
    t: Annotated[float, Field(gt=0.0)] = 2.0
    weight: Annotated[float, Field(ge=0.0)] = 1.0
    schedule_drives: Literal["t"] | None = None


class SymmetricInfoNCEConfig(Strict):
    """CLIP-style symmetric InfoNCE between the two views (or two modalities)."""

    kind: Literal["symmetric_info_nce"] = "symmetric_info_nce"


class SigLIPConfig(Strict):
    """SigLIP's pairwise sigmoid loss (Zhai et al. 2023, Eq. 1) with a learnable temperature
    t = exp(t′) and bias b, initialised at t = 10, b = −10 (§3.2). It learns its temperature, so
    its runs take ``schedules.<name>.kind: none``."""

    kind: Literal["siglip"] = "siglip"
    scale_init: Annotated[float, Field(gt=0.0)] = 10.0
    bias_init: float = -10.0
    learn_scale: bool = True
    learn_bias: bool = True


LossConfig = Annotated[
    InfoNCEConfig | WeinceConfig | DirectAUConfig | SymmetricInfoNCEConfig | SigLIPConfig,
    Field(discriminator="kind"),
]


def loss_takes_temperature(cfg: LossConfig) -> bool:
    if isinstance(cfg, SigLIPConfig):
        return False
    return not isinstance(cfg, DirectAUConfig) or cfg.schedule_drives is not None


# ---------------------------------------------------------------------------------- schedules
class FixedSchedule(Strict):
    """τ(step) = tau."""

    kind: Literal["fixed"] = "fixed"
    tau: Annotated[float, Field(gt=0.0)] = 0.2


class LogAnnealSchedule(Strict):
    """β(t) = c·ln(t + K) with t = step·time_per_step (annealing paper §2.2, A6);
    τ = min(tau_max, 1/β)."""

    kind: Literal["log_anneal"] = "log_anneal"
    c: Annotated[float, Field(gt=0.0)] = 1.0
    K: Annotated[float, Field(gt=0.0)] = 2.0
    time_per_step: Annotated[float, Field(gt=0.0)] = 1.0
    tau_max: Annotated[float, Field(gt=0.0)] = 1.0


class CosineSchedule(Strict):
    """Kukleva et al. (2023): τ = τ_min + ½(τ_max − τ_min)(1 + cos(2π·epoch/period))."""

    kind: Literal["cosine"] = "cosine"
    tau_min: Annotated[float, Field(gt=0.0)] = 0.1
    tau_max: Annotated[float, Field(gt=0.0)] = 1.0
    period_epochs: Annotated[float, Field(gt=0.0)] = 20.0

    @model_validator(mode="after")
    def _order(self) -> CosineSchedule:
        if self.tau_min > self.tau_max:
            raise ValueError(f"tau_min = {self.tau_min} is above tau_max = {self.tau_max}")
        return self


class BetaGrowthSchedule(Strict):
    """β grows from beta0 with t = step·time_per_step, capped at beta_max:
    linear β = β0 + rate·t; sqrt β = β0 + rate·√t; geometric β = β0·rate^t (rate ≥ 1)."""

    kind: Literal["linear_beta", "sqrt_beta", "geometric_beta"]
    beta0: Annotated[float, Field(gt=0.0)] = 1.0
    rate: Annotated[float, Field(ge=0.0)] = 0.01
    time_per_step: Annotated[float, Field(gt=0.0)] = 1.0
    beta_max: Annotated[float, Field(gt=0.0)] = 1e6

    @model_validator(mode="after")
    def _geometric_grows(self) -> BetaGrowthSchedule:
        if self.kind == "geometric_beta" and self.rate < 1.0:
            raise ValueError(f"rate = {self.rate}: a geometric schedule needs rate >= 1")
        return self


class StepSchedule(Strict):
    """Piecewise-constant τ: taus[i] from milestones_epochs[i-1] on."""

    kind: Literal["step"] = "step"
    taus: Annotated[list[Annotated[float, Field(gt=0.0)]], Field(min_length=1)] = [0.5, 0.2]
    milestones_epochs: list[Annotated[float, Field(gt=0.0)]] = [10.0]

    @model_validator(mode="after")
    def _lengths(self) -> StepSchedule:
        if len(self.milestones_epochs) != len(self.taus) - 1:
            raise ValueError(f"{len(self.taus)} taus need {len(self.taus) - 1} milestones, got "
                             f"{len(self.milestones_epochs)}")
        if sorted(self.milestones_epochs) != list(self.milestones_epochs):
            raise ValueError("milestones_epochs must be increasing")
        return self


class NoSchedule(Strict):
    """For losses without a temperature (DirectAU with schedule_drives: null)."""

    kind: Literal["none"] = "none"


ScheduleConfig = Annotated[
    FixedSchedule | LogAnnealSchedule | CosineSchedule | BetaGrowthSchedule | StepSchedule
    | NoSchedule,
    Field(discriminator="kind"),
]


# ----------------------------------------------------------------------------------- training
class TrainingConfig(Strict):
    epochs: Annotated[int, Field(ge=1)] = 150
    batch_size: Annotated[int, Field(ge=2)] = 256
    lr: Annotated[float, Field(gt=0.0)] = 1e-3
    weight_decay: Annotated[float, Field(ge=0.0)] = 1e-6
    optimizer: Literal["adam", "adamw", "sgd", "lars"] = "adam"
    momentum: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.9       # sgd and lars
    exclude_bias_and_norm: bool = True   # lars/sgd: no weight decay or adaptation on 1-D params
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    lr_schedule: Literal["constant", "cosine"] = "cosine"
    checkpoint_epochs: list[Annotated[int, Field(ge=1)]] = []
    log_every_steps: Annotated[int, Field(ge=1)] = 5
    device: Literal["auto", "cpu", "cuda"] = "auto"
    threads: Annotated[int, Field(ge=1)] = 2
    precision: Literal["fp32", "bf16"] = "bf16"    # bf16 autocast on CUDA only; loss in float32
    channels_last: bool = True                     # on CUDA only (no gain on the CPU)
    compile: bool = False                          # torch.compile the encoder
    # Full training state (model, optimizer, RNGs, position) every this many steps, for resuming
    # a killed stage; 0: never.
    checkpoint_every_steps: Annotated[int, Field(ge=0)] = 0
    # The pretrain stage's launcher (dvc.yaml interpolates it): "python", or "torchrun …" for DDP.
    launcher: Annotated[str, Field(pattern=r"^(python3?|torchrun( +--?[A-Za-z_-]+(=| +)\S+)*)$")] = "python"


# --------------------------------------------------------------------------------- evaluation
class ProbeConfig(Strict):
    """Linear probe on frozen features (one Linear layer, cross-entropy, Adam)."""

    epochs: Annotated[int, Field(ge=1)] = 100
    lr: Annotated[float, Field(gt=0.0)] = 1e-2
    batch_size: Annotated[int, Field(ge=1)] = 256
    weight_decay: Annotated[float, Field(ge=0.0)] = 0.0
    standardize: bool = True
    seeds: Annotated[list[int], Field(min_length=1)] = [1, 2, 3, 4, 5]


class KNNConfig(Strict):
    """Weighted kNN on cosine similarity of L2-normalised features (weights exp((s−s_max)/T))."""

    k: Annotated[int, Field(ge=1)] = 50
    temperature: Annotated[float, Field(gt=0.0)] = 0.1


class EvaluationConfig(Strict):
    """WEINCE App. F.1, F.3–F.4. The probe trains on the split of ``split_seeds[0]``; kNN
    averages all splits."""

    val_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.2
    split_seeds: Annotated[list[int], Field(min_length=1)] = [1, 2, 3, 4, 5]
    recall_ks: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] = [1, 2, 5, 10, 20, 50]
    view_seed: int = 0  # the two augmented views of the test set used for alignment
    probe: ProbeConfig = ProbeConfig()
    knn: KNNConfig = KNNConfig()
    batch_size: Annotated[int, Field(ge=1)] = 1024


# ------------------------------------------------------------------------------ tail diagnostics
class LinkBankConfig(Strict):
    """WEINCE §2.3.2: ``batches`` batches of ``batch_images`` images, two views each (the paper:
    32 × 256)."""

    batches: Annotated[int, Field(ge=4)] = 12
    batch_images: Annotated[int, Field(ge=8)] = 128
    embedding: Literal["z", "h"] = "z"  # projector outputs (the released code) or backbone features


class POTConfig(Strict):
    """WEINCE §2.3.1, Fig. 3: first-view cosines of distinct pairs in ``repeats`` batches of
    ``batch_images``."""

    repeats: Annotated[int, Field(ge=1)] = 16
    batch_images: Annotated[int, Field(ge=8)] = 257
    q: Annotated[float, Field(gt=0.5, lt=1.0)] = 0.99
    stability_qs: list[Annotated[float, Field(gt=0.5, lt=1.0)]] = [0.98, 0.985, 0.99, 0.992, 0.995]
    min_exceedances: Annotated[int, Field(ge=10)] = 100
    bootstrap: Annotated[int, Field(ge=0)] = 200  # image-cluster bootstrap replicates (ξ̂, x̂_F)
    density_bins: Annotated[int, Field(ge=5)] = 40


class LinkTestConfig(Strict):
    """WEINCE §2.3.2, App. D.3–D.5. ``placements``: where 1/τ sits in H1 (the paper leaves it
    open, so both are choices)."""

    placements: Annotated[list[Literal["inside", "outside"]], Field(min_length=1)] = ["inside", "outside"]
    held_in_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.5
    bootstrap: Annotated[int, Field(ge=100)] = 2000
    lrt_replicates: Annotated[int, Field(ge=0)] = 39
    lrt_every_placement: bool = False  # the LRT is most of the test's time: first placement only
    cv_folds: Annotated[int, Field(ge=0)] = 5
    optimizer: Literal["newton", "lbfgs"] = "newton"


class AblationConfig(Strict):
    """WEINCE App. D.6, D.1 (run with the first placement)."""

    frechet: bool = True
    hardness_ks: list[Annotated[int, Field(ge=1)]] = [32, 64, 128, 254]
    pool_sizes: list[Annotated[int, Field(ge=1)]] = [64, 128, 256, 512, 1024]
    pool_hard_k: Annotated[int, Field(ge=1)] = 32


class AllocationConfig(Strict):
    """WEINCE App. C.2, Fig. 6: random subsets of ``k`` negatives from a pool of ``pool`` per
    anchor."""

    pool: Annotated[int, Field(ge=2)] = 1024
    k: Annotated[int, Field(ge=1)] = 127
    subsets: Annotated[int, Field(ge=1)] = 20
    anchors: Annotated[int, Field(ge=1)] = 512
    bins: Annotated[int, Field(ge=5)] = 40
    bootstrap: Annotated[int, Field(ge=0)] = 400  # image-cluster bootstrap of the TV gap


class RepulsionConfig(Strict):
    """Wang & Isola's hardness-aware temperature (essay §5): the share of InfoNCE's repulsive
    gradient on each anchor's hardest negatives, on the link bank, at each τ."""

    taus: Annotated[list[Annotated[float, Field(gt=0.0)]], Field(min_length=2)] = [1.0, 0.5, 0.2, 0.1, 0.07]
    hard_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.01


class NoiseFloorConfig(Strict):
    """WEINCE App. C.1 (Fig. 5), the synthetic estimation experiment (independent of the runs)."""

    scores: Annotated[list[Annotated[float, Field(ge=-1.0, lt=1.0)]], Field(min_length=2)] = [0.15, 0.45, 0.70, 0.90]
    beta: Annotated[float, Field(gt=0.0)] = 0.8
    ns: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] = [100, 200, 500, 1000, 2000, 5000, 10000]
    replicates: Annotated[int, Field(ge=10)] = 12000
    seed: int = 20260113


class TailsConfig(Strict):
    """The diagnose stage: every run, every kept checkpoint and the final weights."""

    seed: int = 0  # one bank draw for every run and checkpoint: differences are the encoder's
    bank: LinkBankConfig = LinkBankConfig()
    pot: POTConfig = POTConfig()
    link: LinkTestConfig = LinkTestConfig()
    ablations: AblationConfig = AblationConfig()
    allocation: AllocationConfig = AllocationConfig()
    repulsion: RepulsionConfig = RepulsionConfig()
    noise_floor: NoiseFloorConfig = NoiseFloorConfig()

    @model_validator(mode="after")
    def _sizes_fit_the_bank(self) -> TailsConfig:
        negatives = 2 * self.bank.batch_images - 2
        for i, k in enumerate(self.ablations.hardness_ks):
            if k > negatives:
                raise _KeyProblem(f"tails.ablations.hardness_ks[{i}]", k,
                                  f"at most {negatives} (2·bank.batch_images − 2 negatives per anchor)")
        # Pools draw views of other images from the whole bank (2 views per image per batch).
        views = 2 * self.bank.batches * self.bank.batch_images
        pool_max = views - 2 * self.bank.batches  # worst case: the anchor's image in every batch
        for i, m in enumerate(self.ablations.pool_sizes):
            if not self.ablations.pool_hard_k <= m <= pool_max:
                raise _KeyProblem(f"tails.ablations.pool_sizes[{i}]", m,
                                  f"between tails.ablations.pool_hard_k ({self.ablations.pool_hard_k}) and "
                                  f"{pool_max} (the bank's views of other images)")
        if self.allocation.pool > pool_max:
            raise _KeyProblem("tails.allocation.pool", self.allocation.pool,
                              f"at most {pool_max} (the bank's views of other images)")
        if self.allocation.k > self.allocation.pool:
            raise _KeyProblem("tails.allocation.k", self.allocation.k,
                              f"at most tails.allocation.pool ({self.allocation.pool})")
        if self.allocation.anchors > views:
            raise _KeyProblem("tails.allocation.anchors", self.allocation.anchors,
                              f"at most {views} (the bank's anchors)")
        return self


# ------------------------------------------------------------------------------- simulations
Dynamics = Literal["P1", "P2"]
PosFloat = Annotated[float, Field(gt=0.0)]


class S0ScheduleConfig(Strict):
    """The fast schedules of S0 (annealing paper §6, App. A.2): β = β0 + r·√t, β0 + r·t, β0·r^t
    (capped at beta_max) and cosine-τ from 1/β0 to τ_min over each horizon T_c, held there after;
    β0 = c*."""

    sqrt_rate: PosFloat = 1.0
    linear_rate: PosFloat = 0.5
    geometric_rate: Annotated[float, Field(gt=1.0)] = 1.5
    beta_max: PosFloat = 100.0
    cosine_tau_min: PosFloat = 0.01
    cosine_horizons: list[PosFloat] = [100.0, 1000.0]


class _TimeAverage(Strict):
    chains: Annotated[int, Field(ge=4, multiple_of=2)] = 512
    horizon: PosFloat = 1000.0
    burn_in: Annotated[float, Field(ge=0.0)] = 100.0

    @model_validator(mode="after")
    def _burn_in_inside(self) -> _TimeAverage:
        if self.burn_in >= self.horizon:
            raise ValueError(f"burn_in = {self.burn_in}: expected below horizon ({self.horizon})")
        return self


class S0ErgodicityConfig(_TimeAverage):
    """Paper §3.1: at fixed β, time averages from both wells against the Gibbs mass of each
    dynamics' stationary law (P2: exp(−β·U); P1: exp(−β²·U))."""

    p2_beta: PosFloat = 2.25
    p1_beta: PosFloat = 1.5


class S0SgdConfig(_TimeAverage):
    """Paper §4: SGD with injected noise (P1 update, gradient error s·N(0, 1)) at η, η/2, η/4."""

    chains: Annotated[int, Field(ge=4, multiple_of=2)] = 2048
    horizon: PosFloat = 600.0
    beta: PosFloat = 1.5
    eta: PosFloat = 0.05
    grad_noise_sd: Annotated[float, Field(ge=0.0)] = 1.3


class S0ArrheniusConfig(Strict):
    """App. B.4: escape rates out of the trap at fixed β against Kramers–Arrhenius exp(−β·ΔE)."""

    betas: Annotated[list[PosFloat], Field(min_length=2)] = [2.0, 3.0, 4.0]
    chains: Annotated[int, Field(ge=10)] = 256
    horizon: PosFloat = 400.0
    transient: Annotated[float, Field(ge=0.0)] = 1.0


class S0Config(Strict):
    """S0, our test of the annealing paper's §3–4 (it has no experiments): the double well on S¹
    with a closed-form barrier, annealed (P2 by default), every verdict quantity at dt and dt/2;
    fixed-β ergodicity and SGD against the SDE."""

    a: Annotated[float, Field(gt=0.0, lt=4.0)] = 0.5
    chains: Annotated[int, Field(ge=10)] = 400
    dt: PosFloat = 0.05
    horizon: PosFloat = 10_000.0
    K: Annotated[float, Field(gt=1.0)] = math.e
    c_ratios: Annotated[list[PosFloat], Field(min_length=1)] = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0]
    fast: bool = True  # also the sqrt, linear, geometric and cosine-τ schedules
    schedule: S0ScheduleConfig = S0ScheduleConfig()
    dynamics: Dynamics = "P2"
    check_dt: PosFloat = 0.5
    freeze_crossings: PosFloat = 0.1
    hazard_min_barrier: Annotated[float, Field(ge=0.0)] = 3.0
    hazard_min_events: Annotated[int, Field(ge=1)] = 5
    hazard_bins: Annotated[int, Field(ge=3)] = 12
    angle_sd: Annotated[float, Field(ge=0.0)] = 0.05
    bootstrap: Annotated[int, Field(ge=100)] = 2000
    curve_points: Annotated[int, Field(ge=2)] = 120
    precision: Literal["float32", "float64"] = "float32"
    scheme: Literal["lm", "em"] = "lm"
    ergodicity: S0ErgodicityConfig = S0ErgodicityConfig()
    arrhenius: S0ArrheniusConfig = S0ArrheniusConfig()
    sgd: S0SgdConfig = S0SgdConfig()
    workers: Annotated[int, Field(ge=1, le=2)] = 2
    seed: int = 0


class S1Config(Strict):
    """S1, our test of the annealing paper's §3.2: InfoNCE on (S¹)^4 with two positive pairs,
    started in the interleaved trap.

    Each setting runs at dt_k = min(dt_max, h/(κ_s²β_k^p)) (p = 2 for P1, 1 for P2: the drift's
    stiffness at the trap) and again at half of it; see ``simulation/s1.py``."""

    kappa_s: PosFloat = 1.0
    grid: Annotated[int, Field(ge=16, multiple_of=4)] = 128
    beta_bar: PosFloat = 20.0
    chains: Annotated[int, Field(ge=10)] = 200
    dt_max: PosFloat = 1e-2
    h_p1: PosFloat = 0.5
    h_p2: PosFloat = 0.4
    horizon: PosFloat = 100.0
    horizon_p1: PosFloat = 5.0
    first_check: PosFloat = 0.1
    c_ratios: Annotated[list[PosFloat], Field(min_length=1)] = [0.5, 1.0, 2.0]
    sqrt_beta0: PosFloat | None = None  # None: c*, the critical log schedule's β(0)
    dynamics: Annotated[list[Dynamics], Field(min_length=1)] = ["P2", "P1"]
    angle_sd: Annotated[float, Field(ge=0.0)] = 0.05
    seed: int = 0

    @model_validator(mode="after")
    def _horizons(self) -> S1Config:
        if self.horizon_p1 > self.horizon:
            raise ValueError(f"horizon_p1 ({self.horizon_p1}) must not exceed horizon ({self.horizon})")
        if self.first_check > self.horizon_p1:
            raise ValueError("first_check must not exceed horizon_p1")
        return self


class HessianConfig(Strict):
    """Annealing paper §5, App. C.3: the Riemannian Hessian formula vs finite differences (and at
    half the FD step); log‖H‖ vs log β, asymptotically; Prop. C.2 against quenched minimizers; the
    escape barrier against the number of negatives (App. A.2)."""

    n_random: Annotated[int, Field(ge=1)] = 100
    betas: Annotated[list[PosFloat], Field(min_length=2)] = [1, 2, 5, 10, 20, 50, 100, 200]
    seed: int = 0
    margin_factor: PosFloat = 30.0
    beta_cap: PosFloat = 1e4
    c2_starts: Annotated[int, Field(ge=1)] = 200
    c2_uniform: Annotated[int, Field(ge=1)] = 20_000
    negatives_pairs: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2)] = [2, 3, 4]
    negatives_beta_bar: PosFloat = 50.0


class LargeBatchConfig(Strict):
    """Wang–Isola's Theorem 1 and the geometry paper's Thm 3.1 (large-batch gradient and value
    gaps)."""

    grad_seeds: Annotated[int, Field(ge=2)] = 20
    value_seeds: Annotated[int, Field(ge=2)] = 20
    wi_taus: Annotated[list[PosFloat], Field(min_length=1)] = [0.5, 0.2]
    wi_replicates: Annotated[int, Field(ge=2)] = 10


class GibbsConfig(Strict):
    """The geometry paper's Gibbs experiment: particles trained on the free energy vs the Gibbs
    law on S², at ``steps`` and at twice the steps."""

    taus: Annotated[list[PosFloat], Field(min_length=2)] = [10, 5, 2.5, 1, 0.5, 0.2, 0.1]
    bandwidth: PosFloat = 0.35
    extra_bandwidths: list[PosFloat] = [0.1]
    extra_taus: list[PosFloat] = [0.1]
    seeds: Annotated[int, Field(ge=2)] = 8
    particles: Annotated[int, Field(ge=8)] = 128
    bandwidth_seeds: Annotated[int, Field(ge=2)] = 4
    bandwidth_particles: Annotated[int, Field(ge=8)] = 256
    steps: Annotated[int, Field(ge=1)] = 700
    n_gibbs: Annotated[int, Field(ge=1000)] = 120_000
    radius: PosFloat = 0.5
    seed: int = 0

    @model_validator(mode="after")
    def _coldest_tau_rerun(self) -> GibbsConfig:
        # the bandwidth explanation is tested where the published curve parts: the lowest τ
        if self.extra_bandwidths and min(self.taus) not in self.extra_taus:
            raise ValueError(f"extra_taus {self.extra_taus} must contain the lowest of taus "
                             f"({min(self.taus)}): the smaller bandwidths are run where the "
                             "published bandwidth parts from the Gibbs law")
        return self


class LiftedEnergyConfig(Strict):
    """The geometry paper's multimodal result: the symmetric InfoNCE's large-batch limit against
    the lifted energy F^Sym on S¹ (two von Mises-mixture marginals), Monte Carlo against
    quadrature."""

    kappa: PosFloat = 6.0
    weight: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.7
    shift: float = 0.6
    sigma: Annotated[float, Field(ge=0.0)] = 0.3
    taus: Annotated[list[Annotated[float, Field(ge=0.025)]], Field(min_length=1)] = [0.2, 0.1, 0.05]
    quadrature_taus: Annotated[list[PosFloat], Field(min_length=2)] = [0.5, 0.2, 0.1, 0.05, 0.02, 0.01]
    ns: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2)] = [256, 1024, 4096]
    replicates: Annotated[int, Field(ge=2)] = 8
    grid: Annotated[int, Field(ge=256)] = 8192
    seed: int = 0


class ModalityGapConfig(Strict):
    """The geometry paper's modality-gap experiment: symmetric InfoNCE with two linear encoders
    on S¹, its identity and one-directional controls, at ``steps`` and twice the steps; D_sym vs
    σ_mis. And the check of the paper's lifted energy F^Sym (``lifted_energy``)."""

    sigmas: Annotated[list[Annotated[float, Field(ge=0.0)]], Field(min_length=2)] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    seeds: Annotated[int, Field(ge=4)] = 12
    steps: Annotated[int, Field(ge=1)] = 750
    batch: Annotated[int, Field(ge=2)] = 128
    n_eval: Annotated[int, Field(ge=100)] = 8000
    trim: Annotated[float, Field(ge=0.0, lt=0.5)] = 0.25
    outlier_factor: PosFloat = 10.0
    collapse_ratio: PosFloat = 0.1
    seed: int = 0
    lifted_energy: LiftedEnergyConfig = LiftedEnergyConfig()

    @model_validator(mode="after")
    def _some_mismatch(self) -> ModalityGapConfig:
        if not any(s > 0 for s in self.sigmas):
            raise ValueError("sigmas needs a value > 0: the gap claims are about mismatched "
                             "conditional laws (σ_mis > 0)")
        return self


class PlackettLuceConfig(Strict):
    """WEINCE Table 1 by Monte Carlo: winners of each index model against its closed-form link."""

    candidates: Annotated[int, Field(ge=2)] = 16
    sets: Annotated[int, Field(ge=1)] = 8
    trials: Annotated[int, Field(ge=100)] = 50_000  # per set: DKW half-width ≈ 0.0076 at 8 sets
    tau: PosFloat = 0.2      # Gumbel row: softmax(s/τ)
    beta: PosFloat = 2.0     # Weibull row: (1 − s)^{−β}
    alpha: PosFloat = 5.0    # Fréchet row: (1 + s)^α
    wrong_exponent: PosFloat = 1.25  # control: the model's own link with its exponent × this

    @field_validator("wrong_exponent")
    @classmethod
    def _wrong(cls, v: float) -> float:
        if v == 1.0:
            raise ValueError("must differ from 1 (the control scores winners against a wrong link)")
        return v


class LargeKConfig(Strict):
    """WEINCE Thm 2.4: non-canonical utilities approach the tail-weight law as K grows."""

    ks: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=2)] = [2, 4, 16, 64, 256]
    sets: Annotated[int, Field(ge=1)] = 4
    trials: Annotated[int, Field(ge=100)] = 40_000
    tau: PosFloat = 0.2      # the exponential-noise (Gumbel-domain) example U = s/τ + E


class MismatchConfig(Strict):
    """WEINCE Prop. C.3: certified bounds on min over τ̃ of the worst-set TV."""

    candidates: Annotated[int, Field(ge=2)] = 16
    sets: Annotated[int, Field(ge=1)] = 500
    taus: Annotated[list[PosFloat], Field(min_length=1)] = [0.1, 0.2]
    lambdas: list[Annotated[float, Field(gt=0.0, lt=1.0)]] = [0.33, 0.5]
    gap: Annotated[float, Field(gt=0.0, le=0.01)] = 1e-4  # upper − lower bound at the end


class LinkTheoryConfig(Strict):
    """WEINCE §2.1–2.2, Table 1, Thm 2.4, Prop. C.3: link theory that needs no encoder."""

    score_low: Annotated[float, Field(gt=-1.0, lt=1.0)] = -0.5
    score_high: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.95
    plackett_luce: PlackettLuceConfig = PlackettLuceConfig()
    large_k: LargeKConfig = LargeKConfig()
    mismatch: MismatchConfig = MismatchConfig()
    seed: int = 0

    @model_validator(mode="after")
    def _range(self) -> LinkTheoryConfig:
        if self.score_low >= self.score_high:
            raise _KeyProblem("simulation.link_theory.score_low", self.score_low,
                              f"below score_high ({self.score_high})")
        return self


Experiment = Literal["s0", "s1", "hessian", "large_batch", "gibbs", "modality_gap",
                     "link_theory"]


class SimulationConfig(Strict):
    """The simulate stage: one DVC stage instance per listed experiment (the annealing and
    geometry papers, Wang–Isola's Theorem 1)."""

    experiments: list[Experiment] = ["s0", "s1", "hessian", "large_batch", "gibbs", "modality_gap",
                                     "link_theory"]
    s0: S0Config = S0Config()
    s1: S1Config = S1Config()
    hessian: HessianConfig = HessianConfig()
    large_batch: LargeBatchConfig = LargeBatchConfig()
    gibbs: GibbsConfig = GibbsConfig()
    modality_gap: ModalityGapConfig = ModalityGapConfig()
    link_theory: LinkTheoryConfig = LinkTheoryConfig()

    @field_validator("experiments")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"entries must be unique, got {v}")
        return v


# --------------------------------------------------------------------------------- the study
Baseline = Literal["random_init", "raw_pixels"]


class StudyConfig(Strict):
    datasets: Annotated[list[Name], Field(min_length=1)]
    backbones: Annotated[list[Name], Field(min_length=1)]
    losses: Annotated[list[Name], Field(min_length=1)]
    schedules: Annotated[list[Name], Field(min_length=1)]
    seeds: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
    baselines: list[Baseline] = ["random_init", "raw_pixels"]

    @field_validator("datasets", "backbones", "losses", "schedules", "seeds", "baselines")
    @classmethod
    def _unique(cls, v: list[Any]) -> list[Any]:
        if len(set(v)) != len(v):
            raise ValueError(f"entries must be unique, got {v}")
        return v


class ReportConfig(Strict):
    title: str = "InfoNCE Lab report"
    # The pipeline claim: trained encoders beat their own random initialisation by more than this.
    min_gain_over_random: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0


class Params(Strict):
    study: StudyConfig
    datasets: dict[Name, DatasetConfig]
    backbones: dict[Name, BackboneConfig]
    losses: dict[Name, LossConfig]
    schedules: dict[Name, ScheduleConfig]
    training: TrainingConfig = TrainingConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    tails: TailsConfig = TailsConfig()
    simulation: SimulationConfig = SimulationConfig()
    text: TextConfig = TextConfig()
    report: ReportConfig = ReportConfig()

    @model_validator(mode="after")
    def _study_refers_to_known_names(self) -> Params:
        for section in ("datasets", "backbones", "losses", "schedules"):
            known = getattr(self, section)
            for i, name in enumerate(getattr(self.study, section)):
                if name not in known:
                    raise _KeyProblem(
                        f"study.{section}[{i}]",
                        name,
                        f"a name defined under '{section}:' ({', '.join(sorted(known)) or 'none'})",
                    )
        text = self.text.study
        for section, known in (("datasets", self.text.datasets), ("encoders", self.text.encoders),
                               ("losses", self.losses), ("schedules", self.schedules)):
            where = f"text.{section}" if section in ("datasets", "encoders") else section
            for i, name in enumerate(getattr(text, section)):
                if name not in known:
                    raise _KeyProblem(
                        f"text.study.{section}[{i}]", name,
                        f"a name defined under '{where}:' ({', '.join(sorted(known)) or 'none'})",
                    )
        if self.text.training.eval_every_steps:
            for name in text.datasets:
                if self.text.datasets[name].kind == "gensim":
                    raise _KeyProblem(
                        "text.training.eval_every_steps", self.text.training.eval_every_steps,
                        f"0: text.datasets.{name} (gensim) has no validation set",
                    )
        if self.text.training.selection == "best_val":
            for name in text.datasets:
                if self.text.datasets[name].kind == "gensim":
                    raise _KeyProblem(
                        "text.training.selection", "best_val",
                        f"'final': text.datasets.{name} (gensim) has no validation set to select "
                        "on — its Lee similarity pairs are the test set",
                    )
        pairs = [(lo, sc) for lo in self.study.losses for sc in self.study.schedules]
        pairs += [(lo, sc) for lo in text.losses for sc in text.schedules]
        for loss, sched in pairs:
            takes = loss_takes_temperature(self.losses[loss])
            gives = self.schedules[sched].kind != "none"
            if takes and not gives:
                raise _KeyProblem(
                    f"schedules.{sched}.kind", "none",
                    f"a temperature schedule: the study pairs it with losses.{loss} "
                    f"({self.losses[loss].kind}), which needs a temperature",
                )
            if gives and not takes and not isinstance(self.losses[loss], DirectAUConfig):
                raise _KeyProblem(
                    f"schedules.{sched}.kind", self.schedules[sched].kind,
                    f"'none': the study pairs it with losses.{loss} ({self.losses[loss].kind}), "
                    "which learns its own temperature",
                )
            if gives and not takes:
                raise _KeyProblem(
                    f"losses.{loss}.schedule_drives", None,
                    f"'t' (let the schedule drive the uniformity t = 1/(2τ)): the study "
                    f"pairs this {self.losses[loss].kind} loss, which has no temperature, with "
                    f"schedules.{sched} ({self.schedules[sched].kind}); or use a schedule of "
                    "kind 'none'",
                )
        return self

    # ----------------------------------------------------------------- run bookkeeping
    def text_runs(self) -> list[TextRun]:
        """Every run of the text study, in the order dvc.yaml's text matrix expands them."""
        s = self.text.study
        return [
            TextRun(dataset=d, encoder=e, loss=lo, schedule=sc, seed=seed)
            for d in s.datasets
            for e in s.encoders
            for lo in s.losses
            for sc in s.schedules
            for seed in s.seeds
        ]

    def runs(self) -> list[Run]:
        """Every run of the study, in the order dvc.yaml's matrix expands them."""
        s = self.study
        return [
            Run(dataset=d, backbone=b, loss=lo, schedule=sc, seed=seed)
            for d in s.datasets
            for b in s.backbones
            for lo in s.losses
            for sc in s.schedules
            for seed in s.seeds
        ]


class Run(Strict):
    dataset: Name
    backbone: Name
    loss: Name
    schedule: Name
    seed: int

    @property
    def id(self) -> str:
        return run_id(self.dataset, self.backbone, self.loss, self.schedule, self.seed)


class TextRun(Strict):
    dataset: Name
    encoder: Name
    loss: Name
    schedule: Name
    seed: int

    @property
    def id(self) -> str:
        return run_id(self.dataset, self.encoder, self.loss, self.schedule, self.seed)


def run_id(dataset: str, backbone: str, loss: str, schedule: str, seed: int | str) -> str:
    """The run id — identical to the suffix DVC gives the matrix stage (``pretrain@<id>``)."""
    return f"{dataset}-{backbone}-{loss}-{schedule}-{seed}"


class _KeyProblem(ValueError):
    """Raised inside validators when the problem belongs to a key other than the one validated."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        super().__init__(f"{key} = {value!r}: expected {allowed}")
        self.key, self.value, self.allowed = key, value, allowed


# ----------------------------------------------------------------------------------- loading
def _location(loc: tuple[Any, ...], raw: Any) -> list[str]:
    """The dotted key of an error: pydantic's location without the tags it inserts for a
    discriminated union (``schedules.cosine.cosine.tau_min`` for the entry *named* cosine of
    kind cosine). Walking the input tells a tag from a key: a tag is the ``kind`` of the mapping
    it follows, and there is at most one per mapping; every other element is a key or index."""
    out: list[str] = []
    node, tag_taken = raw, False
    for p in loc:
        if isinstance(node, dict) and not tag_taken and node.get("kind") == p:
            tag_taken = True
            continue
        out.append(str(p))
        if isinstance(node, dict) and p in node or isinstance(node, list) and isinstance(p, int) and 0 <= p < len(node):
            node, tag_taken = node[p], False
        else:
            node = None
    return out


def _format_error(err: ValidationError, source: str, raw: Any) -> str:
    lines = [f"{source}: invalid parameters ({err.error_count()} problem(s)):"]
    for e in err.errors():
        ctx_err = (e.get("ctx") or {}).get("error")
        if isinstance(ctx_err, _KeyProblem):
            lines.append(f"  - {ctx_err}")
            continue
        key = ".".join(_location(e["loc"], raw)) or "<root>"
        if e["type"] == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            lines.append(f"  - {key}.kind = {ctx.get('tag')!r}: expected one of "
                         f"{ctx.get('expected_tags')}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"  - {key}: unknown key (value {e['input']!r}); check the spelling")
        elif e["type"] == "missing":
            lines.append(f"  - {key}: required key is missing")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(f"  - {key} = {e['input']!r}: {msg}")
    return "\n".join(lines)


def parse_params(raw: Any, source: str = "params.yaml") -> Params:
    """Validate an already-loaded mapping; raise :class:`ConfigError` with a readable message."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        return Params.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_format_error(err, source, raw)) from None


def load_params(path: str | Path = "params.yaml") -> Params:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found (run from the repository root)")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    return parse_params(raw, str(path))


def params_hash(params: Params) -> str:
    """A short, stable hash of the validated parameters (for provenance)."""
    blob = json.dumps(params.model_dump(mode="json"), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


if __name__ == "__main__":  # `python -m infonce_lab.config [params.yaml]`: validate and exit
    import sys

    try:
        p = load_params(sys.argv[1] if len(sys.argv) > 1 else "params.yaml")
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    print(f"params OK: {len(p.runs())} run(s), hash {params_hash(p)}")
