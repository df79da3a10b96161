"""Kind → builder: the one place where a params section becomes the object the math runs.

Each table has one entry per member of its schema union (``tests/test_registries.py`` holds it
in both directions), so a kind added on one side only fails in the tests, not in a study.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infonce_lab.losses.directau import DirectAULoss
from infonce_lab.losses.infonce import InfoNCELoss, SymmetricInfoNCELoss
from infonce_lab.losses.objects import Loss, protocol_gaps
from infonce_lab.losses.siglip import SigmoidLoss
from infonce_lab.losses.weince import AutoBeta, WeinceLoss
from infonce_lab.params import (
    BetaGrowthSchedule,
    CosineSchedule,
    DirectAUConfig,
    FixedSchedule,
    InfoNCEConfig,
    LogAnnealSchedule,
    LossConfig,
    NoSchedule,
    ScheduleConfig,
    SigLIPConfig,
    StepSchedule,
    SymmetricInfoNCEConfig,
    WeinceConfig,
)
from infonce_lab.schedules import (
    BetaGrowth,
    Cosine,
    Fixed,
    LogAnneal,
    NoTemperature,
    Piecewise,
    Schedule,
)


def _knobs(cfg: Any, *drop: str) -> dict[str, Any]:
    """A section's fields as keyword arguments (the schema names them as the math does)."""
    return {k: getattr(cfg, k) for k in type(cfg).model_fields if k not in ("kind", *drop)}


def _weince(c: WeinceConfig) -> WeinceLoss:
    return WeinceLoss(auto_beta=AutoBeta(**{**_knobs(c.auto_beta), "clip": tuple(c.auto_beta.clip)}),
                      **{**_knobs(c, "auto_beta"), "beta_clip": tuple(c.beta_clip)})


LOSSES: dict[type, Callable[[Any], Loss]] = {
    InfoNCEConfig: lambda c: InfoNCELoss(**_knobs(c)),
    WeinceConfig: _weince,
    DirectAUConfig: lambda c: DirectAULoss(**_knobs(c)),
    SymmetricInfoNCEConfig: lambda c: SymmetricInfoNCELoss(),
    SigLIPConfig: lambda c: SigmoidLoss(**_knobs(c)),
}

# Each takes the section and the run's steps per epoch (epoch-based knobs become steps).
SCHEDULES: dict[type, Callable[[Any, int], Schedule]] = {
    FixedSchedule: lambda c, spe: Fixed(c.tau),
    LogAnnealSchedule: lambda c, spe: LogAnneal(c.c, c.K, c.time_per_step, c.tau_max),
    CosineSchedule: lambda c, spe: Cosine(c.tau_min, c.tau_max, c.period_epochs * spe),
    BetaGrowthSchedule: lambda c, spe: BetaGrowth(c.kind.removesuffix("_beta"), c.beta0, c.rate,
                                                  c.time_per_step, c.beta_max),
    StepSchedule: lambda c, spe: Piecewise(tuple(c.taus),
                                           tuple(m * spe for m in c.milestones_epochs)),
    NoSchedule: lambda c, spe: NoTemperature(),
}


def build_loss(cfg: LossConfig) -> Loss:
    if type(cfg) not in LOSSES:
        raise ValueError(f"unknown loss config {type(cfg).__name__}")
    loss = LOSSES[type(cfg)](cfg)
    if gaps := protocol_gaps(loss):
        raise TypeError(f"loss kind {cfg.kind!r}: its builder made a {type(loss).__name__} "
                        f"without {', '.join(gaps)}; a loss is a StatelessLoss subclass or an "
                        "nn.Module with `candidates` (infonce_lab.losses.objects.Loss)")
    return loss


def build_schedule(cfg: ScheduleConfig, steps_per_epoch: int = 1) -> Schedule:
    """The schedule of a section; epoch-based knobs become steps through ``steps_per_epoch``."""
    if type(cfg) not in SCHEDULES:
        raise ValueError(f"unknown schedule config {type(cfg).__name__}")
    return SCHEDULES[type(cfg)](cfg, steps_per_epoch)
