"""Losses and temperature schedules (one schema class per kind; discriminated unions)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictBool, model_validator

import infonce_lab.schedules as math_schedules
from infonce_lab.params.base import (
    TAU_MAX,
    TAU_MIN,
    NonNegFloat,
    PosFloat,
    PosInt,
    Probability,
    Strict,
    Temperature,
)

# ------------------------------------------------------------------------------------- losses
# The candidate set of the InfoNCE- and WEINCE-kind losses: SimCLR's 2N − 1 other views of the
# batch (all_views) or SimCSE's N rows of the other view (cross_view; Gao et al. 2021).
CandidateSet = Literal["all_views", "cross_view"]


class LossSection(Strict):
    """The base of every loss section. ``takes_temperature``: whether the loss reads the
    schedule's τ; the study pairs one that does not with a schedule of kind ``none``, unless
    ``temperature_knob`` names the knob that lets a schedule drive it."""

    @property
    def takes_temperature(self) -> bool:
        return True

    # (knob, the value that takes τ, what τ then drives)
    temperature_knob: ClassVar[tuple[str, str, str] | None] = None

    @property
    def needs_labels(self) -> bool:
        """Whether a run of this loss reads its batch's class labels (only a label oracle does);
        a study without labels (the text study) may not list one."""
        return False


class InfoNCEConfig(LossSection):
    """NT-Xent (SimCLR). ``decoupled`` drops the positive from the denominator (DCL, Yeh et al.);
    ``topm_weight`` > 0 adds the softmax top-M term of WEINCE's released recipe (the control);
    ``candidates`` picks SimCLR's or SimCSE's candidate set; ``tau_scale`` multiplies the
    schedule's τ (a temperature control on the same schedule); ``mask_same_class`` drops every
    candidate of the anchor's own class but its positive from the denominator and the top-M set
    (the label oracle of Chuang et al. 2020, §5: a diagnostic control, it reads the training
    labels; image studies only)."""

    kind: Literal["info_nce"] = "info_nce"
    decoupled: StrictBool = False
    topm_weight: NonNegFloat = 0.0
    top_m: PosInt = 50
    candidates: CandidateSet = "all_views"
    tau_scale: PosFloat = 1.0
    # The "unbiased" objective of Chuang et al. 2020 (Debiased Contrastive Learning, §5's label
    # oracle: their Eq. 1 with negatives drawn from the other classes only), so a false negative
    # (a view of the anchor's own class) never sits in the denominator. It reads the dataset's
    # labels, which self-supervised practice does not have: it bounds what removing false
    # negatives can gain (the question WEINCE's down-weighting of near-positive negatives
    # raises), it is not a method. The text study has no labels: the params check refuses it
    # there (params.load).
    mask_same_class: StrictBool = False

    @property
    def needs_labels(self) -> bool:
        return self.mask_same_class


class AutoBetaConfig(Strict):
    """The released recipe's global tail index β_t: a batch-level Weibull fit, EMA over steps."""

    frac: Annotated[float, Field(gt=0.0, le=1.0)] = 0.05
    min_points: Annotated[int, Field(ge=3)] = 1024
    r2_min: Annotated[float, Field(ge=0.0, le=1.0)] = 0.85
    clip: tuple[PosFloat, PosFloat] = (0.5, 16.0)
    ema: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.9
    init: PosFloat = 4.0


class WeinceConfig(LossSection):
    """WEINCE (§3, App. E). Defaults are the released code's; see params.yaml for the variants."""

    kind: Literal["weince"] = "weince"
    tail_frac: Annotated[float, Field(gt=0.0, le=1.0)] = 0.10
    min_tail_points: Annotated[int, Field(ge=3)] = 32
    q: Probability = 0.2
    kappa_rho: NonNegFloat = 10.0
    kappa_aic: NonNegFloat = 1.0
    aic_margin: float = 2.0
    lambda_mode: Literal["product", "rho", "aic", "fixed"] = "product"
    lambda_fixed: Probability = 0.0
    beta: Literal["one", "per_anchor"] = "one"
    beta_clip: tuple[PosFloat, PosFloat] = (0.5, 16.0)
    eps: Annotated[float, Field(gt=0.0, lt=0.1)] = 1e-6
    weib_topm_weight: NonNegFloat = 0.0
    pl_topm_weight: NonNegFloat = 0.0
    top_m: PosInt = 50
    auto_beta: AutoBetaConfig = AutoBetaConfig()
    candidates: CandidateSet = "all_views"

    @model_validator(mode="after")
    def _clip_order(self) -> WeinceConfig:
        lo, hi = self.beta_clip
        if lo > hi:
            raise ValueError(f"beta_clip = {[lo, hi]}: lower bound above upper bound")
        return self


class DirectAUConfig(LossSection):
    """Alignment + weight·uniformity (Wang & Isola). No temperature, unless ``schedule_drives: t``
    lets the run's schedule set the uniformity kernel's t = 1/(2τ)."""

    kind: Literal["direct_au"] = "direct_au"
    alpha: PosFloat = 2.0
    t: PosFloat = 2.0
    weight: NonNegFloat = 1.0
    schedule_drives: Literal["t"] | None = None

    temperature_knob: ClassVar[tuple[str, str, str] | None] = (
        "schedule_drives", "t", "the uniformity t = 1/(2τ)")

    @property
    def takes_temperature(self) -> bool:
        return self.schedule_drives is not None


class SymmetricInfoNCEConfig(LossSection):
    """CLIP-style symmetric InfoNCE between the two views (or two modalities)."""

    kind: Literal["symmetric_info_nce"] = "symmetric_info_nce"


class SigLIPConfig(LossSection):
    """SigLIP's pairwise sigmoid loss (Zhai et al. 2023, Eq. 1) with a learnable temperature
    t = exp(t′) and bias b, initialised at t = 10, b = −10 (§3.2). It learns its temperature, so
    its runs take ``schedules.<name>.kind: none``."""

    kind: Literal["siglip"] = "siglip"
    scale_init: PosFloat = 10.0
    bias_init: float = -10.0
    learn_scale: StrictBool = True
    learn_bias: StrictBool = True

    @property
    def takes_temperature(self) -> bool:
        return False


LossConfig = Annotated[
    InfoNCEConfig | WeinceConfig | DirectAUConfig | SymmetricInfoNCEConfig | SigLIPConfig,
    Field(discriminator="kind"),
]


# ---------------------------------------------------------------------------------- schedules
class FixedSchedule(Strict):
    """τ(step) = tau."""

    kind: Literal["fixed"] = "fixed"
    tau: Temperature = 0.2

    def build(self, steps_per_epoch: int) -> math_schedules.Schedule:
        return math_schedules.Fixed(self.tau)


class LogAnnealSchedule(Strict):
    """β(t) = c·ln(t + K) with t = step·time_per_step (annealing paper §2.2, A6);
    τ = min(tau_max, 1/β)."""

    kind: Literal["log_anneal"] = "log_anneal"
    c: PosFloat = 1.0
    K: PosFloat = 2.0
    time_per_step: PosFloat = 1.0
    tau_max: Temperature = 1.0

    def build(self, steps_per_epoch: int) -> math_schedules.Schedule:
        return math_schedules.LogAnneal(self.c, self.K, self.time_per_step, self.tau_max)


class CosineSchedule(Strict):
    """Kukleva et al. (2023): τ = τ_min + ½(τ_max − τ_min)(1 + cos(2π·epoch/period))."""

    kind: Literal["cosine"] = "cosine"
    tau_min: Temperature = 0.1
    tau_max: Temperature = 1.0
    period_epochs: PosFloat = 20.0

    @model_validator(mode="after")
    def _order(self) -> CosineSchedule:
        if self.tau_min > self.tau_max:
            raise ValueError(f"tau_min = {self.tau_min} is above tau_max = {self.tau_max}")
        return self

    def build(self, steps_per_epoch: int) -> math_schedules.Schedule:
        return math_schedules.Cosine(self.tau_min, self.tau_max,
                                     self.period_epochs * steps_per_epoch)


class BetaGrowthSchedule(Strict):
    """β grows from beta0 with t = step·time_per_step, capped at beta_max:
    linear β = β0 + rate·t; sqrt β = β0 + rate·√t; geometric β = β0·rate^t (rate ≥ 1)."""

    kind: Literal["linear_beta", "sqrt_beta", "geometric_beta"]
    beta0: PosFloat = 1.0
    rate: NonNegFloat = 0.01
    time_per_step: PosFloat = 1.0
    beta_max: PosFloat = 1e6

    @model_validator(mode="after")
    def _geometric_grows(self) -> BetaGrowthSchedule:
        if self.kind == "geometric_beta" and self.rate < 1.0:
            raise ValueError(f"rate = {self.rate}: a geometric schedule needs rate >= 1")
        return self

    def build(self, steps_per_epoch: int) -> math_schedules.Schedule:
        return math_schedules.BetaGrowth(self.kind.removesuffix("_beta"), self.beta0, self.rate,
                                         self.time_per_step, self.beta_max)


class StepSchedule(Strict):
    """Piecewise-constant τ: taus[i] from milestones_epochs[i-1] on."""

    kind: Literal["step"] = "step"
    taus: Annotated[list[Temperature], Field(min_length=1)] = [0.5, 0.2]
    milestones_epochs: list[PosFloat] = [10.0]

    @model_validator(mode="after")
    def _lengths(self) -> StepSchedule:
        if len(self.milestones_epochs) != len(self.taus) - 1:
            raise ValueError(f"{len(self.taus)} taus need {len(self.taus) - 1} milestones, got "
                             f"{len(self.milestones_epochs)}")
        if sorted(self.milestones_epochs) != list(self.milestones_epochs):
            raise ValueError("milestones_epochs must be increasing")
        return self

    def build(self, steps_per_epoch: int) -> math_schedules.Schedule:
        return math_schedules.Piecewise(tuple(self.taus), tuple(
            m * steps_per_epoch for m in self.milestones_epochs))


class NoSchedule(Strict):
    """For losses without a temperature (DirectAU with schedule_drives: null)."""

    kind: Literal["none"] = "none"

    def build(self, steps_per_epoch: int) -> math_schedules.Schedule:
        return math_schedules.NoTemperature()


ScheduleConfig = Annotated[
    FixedSchedule | LogAnnealSchedule | CosineSchedule | BetaGrowthSchedule | StepSchedule
    | NoSchedule,
    Field(discriminator="kind"),
]

def schedule_range_problem(cfg: ScheduleConfig, steps_per_epoch: int, total_steps: int
                           ) -> str | None:
    """What is wrong with a schedule's τ on a run of ``total_steps``: a schedule whose τ is
    not finite or leaves [TAU_MIN, TAU_MAX] at some step; None when it stays inside."""
    if cfg.kind == "none":
        return None
    out = math_schedules.first_step_outside(cfg.build(steps_per_epoch), total_steps,
                                            TAU_MIN, TAU_MAX)
    if out is None:
        return None
    step, tau = out
    return (f"a schedule whose τ stays in [{TAU_MIN:g}, {TAU_MAX:g}] on every step; τ = {tau:.3g} "
            f"at step {step}")


# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["AutoBetaConfig", "BetaGrowthSchedule", "CandidateSet", "CosineSchedule",
    "DirectAUConfig", "FixedSchedule", "InfoNCEConfig", "LogAnnealSchedule", "LossConfig",
    "LossSection", "NoSchedule", "ScheduleConfig", "SigLIPConfig", "StepSchedule",
    "SymmetricInfoNCEConfig", "WeinceConfig", "schedule_range_problem"]
