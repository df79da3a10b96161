"""DirectAU: Wang & Isola's alignment + uniformity used directly as the training loss (essay §6).

Usage — the function on two views, or the bound loss the pipeline builds from a params section::

    value, stats = direct_au(z1, z2, alpha=2.0, t=2.0, weight=1.0)
    loss = build_loss(DirectAUConfig(schedule_drives="t"))  # pipeline.registry
    value, stats = loss(z1, z2, tau)
"""

from __future__ import annotations

from typing import Literal

import torch

from infonce_lab.losses.geometry import alignment, uniformity
from infonce_lab.losses.objects import StatelessLoss


def direct_au(
    z1: torch.Tensor, z2: torch.Tensor, *, alpha: float, t: float, weight: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """L_align(α) + weight·½(L_uniform(z1; t) + L_uniform(z2; t)), as the official STL-10 example."""
    align = alignment(z1, z2, alpha)
    unif = 0.5 * (uniformity(z1, t) + uniformity(z2, t))
    return align + weight * unif, {"alignment": align.detach(), "uniformity": unif.detach()}


class DirectAULoss(StatelessLoss):
    """``schedule_drives: t`` maps the schedule's τ to the uniformity kernel's t = 1/(2τ).

    On the unit sphere exp(−t‖u − v‖²) = e^{−2t}·exp(2t·uᵀv): the kernel is a softmax-style weight
    with inverse temperature 2t, which matches InfoNCE's exp(uᵀv/τ) when t = 1/(2τ).
    """

    def __init__(self, *, alpha: float, t: float, weight: float,
                 schedule_drives: Literal["t"] | None) -> None:
        self.alpha, self.t, self.weight, self.schedule_drives = alpha, t, weight, schedule_drives

    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        t = 1.0 / (2.0 * tau) if self.schedule_drives == "t" else self.t
        loss, stats = direct_au(z1, z2, alpha=self.alpha, t=t, weight=self.weight)
        stats["uniformity_t"] = torch.tensor(t)
        return loss, stats
