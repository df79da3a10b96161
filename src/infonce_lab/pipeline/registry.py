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
    DirectAUConfig,
    InfoNCEConfig,
    LossConfig,
    ScheduleConfig,
    SigLIPConfig,
    SymmetricInfoNCEConfig,
    WeinceConfig,
)
from infonce_lab.schedules import Schedule


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
    """The schedule of a section; epoch-based knobs become steps through ``steps_per_epoch``.
    Each schedule section builds its own (``build``): the schema checks a schedule's τ over
    every step of the study's runs before any stage starts, so the builder sits beside it."""
    return cfg.build(steps_per_epoch)
