"""Geometry of a representation: alignment and uniformity (the same functions the DirectAU loss
uses) and the effective rank of the feature covariance."""

from __future__ import annotations

import torch

from infonce_lab.losses.geometry import alignment, uniformity, unit_rows

__all__ = ["alignment", "effective_rank", "uniformity", "unit_rows"]


def effective_rank(x: torch.Tensor) -> float:
    """exp of the Shannon entropy of the normalised eigenvalues of the feature covariance
    (Roy & Vetterli 2007): d for isotropic features, 1 for features on a line."""
    x = x.double()
    x = x - x.mean(0, keepdim=True)
    if x.shape[1] > x.shape[0]:
        # More dimensions than rows (TF-IDF): the covariance's non-zero eigenvalues are the
        # squared singular values over n − 1; a d×d eigenproblem would cost O(d³).
        s = torch.linalg.svdvals(x)
        eig = s.pow(2) / max(1, x.shape[0] - 1)
    else:
        eig = torch.linalg.eigvalsh(x.T @ x / max(1, x.shape[0] - 1)).clamp_min(0)
    p = eig / eig.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))
