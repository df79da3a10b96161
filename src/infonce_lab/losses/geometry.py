"""Wang & Isola's alignment and uniformity on L2-normalised rows (essay §3.1–3.2): training losses
(DirectAU) and evaluation metrics alike."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    return F.normalize(x, dim=1)


def alignment(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    """Mean over positive pairs of ‖x_i − y_i‖^α (rows normalised here)."""
    x, y = unit_rows(x), unit_rows(y)
    return (x - y).norm(dim=1).pow(alpha).mean()


def uniformity(x: torch.Tensor, t: float = 2.0) -> torch.Tensor:
    """log of the mean over distinct pairs i < j of exp(−t‖x_i − x_j‖²), as the official code."""
    x = unit_rows(x)
    if x.shape[0] < 2:
        raise ValueError("uniformity needs at least two rows")
    sq = torch.pdist(x, p=2).pow(2)
    return torch.logsumexp(-t * sq, dim=0) - math.log(sq.numel())
