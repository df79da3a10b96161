"""Wang & Isola's alignment and uniformity on L2-normalised rows (SPECS F.2)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def alignment(x: torch.Tensor, y: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    """Mean over positive pairs of ‖x_i − y_i‖^α (rows normalised here)."""
    x, y = F.normalize(x.float(), dim=1), F.normalize(y.float(), dim=1)
    return (x - y).norm(dim=1).pow(alpha).mean()


def uniformity(x: torch.Tensor, t: float = 2.0) -> torch.Tensor:
    """log of the mean over distinct pairs i < j of exp(−t‖x_i − x_j‖²), as the official code."""
    x = F.normalize(x.float(), dim=1)
    if x.shape[0] < 2:
        raise ValueError("uniformity needs at least two rows")
    sq = torch.pdist(x, p=2).pow(2)
    return torch.logsumexp(-t * sq, dim=0) - math.log(sq.numel())
