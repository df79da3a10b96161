"""DirectAU: Wang & Isola's alignment + uniformity used directly as the training loss (essay §6)."""

from __future__ import annotations

import torch

from infonce_lab.losses.geometry import alignment, uniformity


def direct_au(
    z1: torch.Tensor, z2: torch.Tensor, alpha: float = 2.0, t: float = 2.0, weight: float = 1.0
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """L_align(α) + weight·½(L_uniform(z1; t) + L_uniform(z2; t)), as the official STL-10 example."""
    align = alignment(z1, z2, alpha)
    unif = 0.5 * (uniformity(z1, t) + uniformity(z2, t))
    return align + weight * unif, {"alignment": align.detach(), "uniformity": unif.detach()}
