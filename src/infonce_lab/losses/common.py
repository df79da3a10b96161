"""Pieces shared by the pairwise losses: the candidate similarity matrix and hard-negative
selection.

Two candidate sets (``candidates``):

- ``all_views`` — SimCLR's NT-Xent (Chen et al. 2020): the 2N views are stacked and every view is
  an anchor; its candidates are the other 2N − 1 views (its positive and 2N − 2 negatives, half
  of them from its own view). The matrix is 2N×2N and its diagonal (self-pairs) is masked.
- ``cross_view`` — unsupervised SimCSE (Gao et al. 2021, §3; ``cl_forward`` in the released
  code): each row of view 1 is an anchor and its candidates are the N rows of view 2, the
  positive on the diagonal and N − 1 negatives. The matrix is N×N and nothing is masked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F

Candidates = Literal["all_views", "cross_view"]
CANDIDATES: tuple[str, ...] = ("all_views", "cross_view")


def pair_similarities(z1: torch.Tensor, z2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine matrix of the 2N stacked views and each anchor's positive index.

    Rows 0..N−1 are view 1, rows N..2N−1 view 2; the positive of row i is row (i + N) mod 2N. The
    diagonal (self-pairs) is left as computed: callers mask it. Reduced-precision inputs are
    promoted to float32 (DESIGN: precision); float64 stays float64.
    """
    z, n = _unit_views(z1, z2)
    pos = torch.arange(2 * n, device=z.device).roll(n)
    return z @ z.T, pos


def _unit_views(z1: torch.Tensor, z2: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The 2N views stacked (view 1 first) and L2-normalised, in float32 at least; and N."""
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"z1 and z2 must both be (N, d); got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    if n < 2:
        raise ValueError("a contrastive batch needs N >= 2 pairs")
    z = torch.cat([z1, z2], dim=0)
    if z.dtype in (torch.float16, torch.bfloat16):
        z = z.float()
    return F.normalize(z, dim=1), n


def candidate_similarities(z1: torch.Tensor, z2: torch.Tensor, candidates: Candidates = "all_views"
                           ) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """``(sim, pos, has_self)``: the anchors × candidates cosine matrix, each anchor's positive
    column, and whether column i of row i is the anchor itself (then callers mask it).

    ``all_views`` is :func:`pair_similarities` (2N×2N, self-pairs on the diagonal);
    ``cross_view`` is view 1 against view 2 (N×N, positives on the diagonal).
    """
    if candidates == "all_views":
        sim, pos = pair_similarities(z1, z2)
        return sim, pos, True
    if candidates != "cross_view":
        raise ValueError(f"unknown candidates {candidates!r}: expected one of {CANDIDATES}")
    z, n = _unit_views(z1, z2)
    a, b = z.split(n)
    return a @ b.T, torch.arange(n, device=z.device), False


def n_negatives(n_cols: int, has_self: bool) -> int:
    """Negatives per anchor: every candidate column but the positive (and the anchor itself)."""
    return n_cols - (2 if has_self else 1)


def self_mask(m: int, device: torch.device) -> torch.Tensor:
    return torch.eye(m, dtype=torch.bool, device=device)


def negatives_mask(pos: torch.Tensor, has_self: bool = True) -> torch.Tensor:
    """True where column j is a negative of row i (neither i itself nor its positive)."""
    m = pos.shape[0]
    if has_self:
        mask = ~self_mask(m, pos.device)
    else:
        mask = torch.ones(m, m, dtype=torch.bool, device=pos.device)
    mask[torch.arange(m, device=pos.device), pos] = False
    return mask


def same_class_mask(labels: torch.Tensor, pos: torch.Tensor, has_self: bool = True
                    ) -> torch.Tensor:
    """True where column j is a negative of row i from row i's own class: the false negatives
    the label oracle of Chuang et al. 2020 (§5) removes. ``labels`` (N,) are the classes of the
    N pairs, row i of view 1 and of view 2 alike; a negative label (torchvision's −1 for an
    unlabelled image, as STL-10's unlabeled split) is a class unknown, never masked, not even
    against another −1. The anchor itself and its positive are never in the mask."""
    if labels.ndim != 1 or labels.is_floating_point():
        raise ValueError(f"labels must be one integer class per pair, (N,); got "
                         f"{tuple(labels.shape)} {labels.dtype}")
    m = pos.shape[0]
    n = m // 2 if has_self else m
    if labels.shape[0] != n:
        raise ValueError(f"{labels.shape[0]} labels for a batch of {n} pairs")
    lab = labels.to(pos.device)
    if has_self:  # all_views: rows and columns are view 1 then view 2, each of the N pairs
        lab = torch.cat([lab, lab])
    same = (lab[:, None] == lab[None, :]) & (lab >= 0)[:, None]
    return same & negatives_mask(pos, has_self)


@torch.no_grad()
def hardest_negatives(sim: torch.Tensor, pos: torch.Tensor, m: int,
                      has_self: bool = True, exclude: torch.Tensor | None = None
                      ) -> torch.Tensor:
    """Column indices of each row's ``m`` most similar negatives (no gradient through the choice).
    ``exclude``: negatives that may not be chosen (the oracle's same-class ones); a row left with
    fewer than ``m`` gets excluded columns last, which the caller masks."""
    allowed = negatives_mask(pos, has_self)
    if exclude is not None:
        allowed = allowed & ~exclude
    masked = sim.detach().masked_fill(~allowed, float("-inf"))
    return masked.topk(min(m, n_negatives(sim.shape[1], has_self)), dim=1).indices


def topm_cross_entropy(
    sim: torch.Tensor, pos: torch.Tensor, m: int, logit: Callable[[torch.Tensor], torch.Tensor],
    has_self: bool = True, exclude: torch.Tensor | None = None,
) -> torch.Tensor:
    """Cross-entropy over [positive | m hardest negatives] with logits ``logit(s)``. ``exclude``
    (the oracle's same-class negatives) leaves those out of the hardest set; a row with fewer than
    ``m`` negatives left scores only those (the rest of its slots are −∞, weight 0)."""
    rows = torch.arange(sim.shape[0], device=sim.device)
    idx = hardest_negatives(sim, pos, m, has_self, exclude)
    s = torch.cat([sim[rows, pos].unsqueeze(1), sim.gather(1, idx)], dim=1)
    target = torch.zeros(sim.shape[0], dtype=torch.long, device=sim.device)
    logits = logit(s)
    if exclude is not None:
        # A row with fewer than m negatives left filled its last slots with columns that are not
        # negatives (excluded, itself, its positive): they get −∞, exact in cross_entropy (softmax
        # weight and gradient 0); the target column is the positive, so no row is all −∞.
        chosen = (negatives_mask(pos, has_self) & ~exclude).gather(1, idx)
        dropped = torch.cat([torch.zeros_like(chosen[:, :1]), ~chosen], dim=1)
        logits = logits.masked_fill(dropped, float("-inf"))
    return F.cross_entropy(logits, target)


@torch.no_grad()
def similarity_stats(z1: torch.Tensor, z2: torch.Tensor,
                     candidates: Candidates = "all_views") -> dict[str, torch.Tensor]:
    """Telemetry of a batch over the loss's own candidate set: positive and negative cosine
    summaries and the share of anchors whose positive is their top candidate (log steps only)."""
    sim, pos, has_self = candidate_similarities(z1.detach(), z2.detach(), candidates)
    rows = torch.arange(sim.shape[0], device=sim.device)
    s_neg = sim[negatives_mask(pos, has_self)]
    # torch.quantile refuses inputs above 2^24 elements; a prefix is plenty for telemetry.
    q = torch.tensor([0.5, 0.9, 0.99], device=sim.device, dtype=sim.dtype)
    qs = torch.quantile(s_neg[: 1 << 24], q)
    return {
        "pos_sim": sim[rows, pos].mean(),
        "neg_sim_mean": s_neg.mean(),
        "neg_sim_q50": qs[0],
        "neg_sim_q90": qs[1],
        "neg_sim_q99": qs[2],
        "neg_sim_max": s_neg.max(),
        "top1_acc": ((sim.masked_fill(self_mask(sim.shape[0], sim.device), -2) if has_self else sim)
                     .argmax(1) == pos).float().mean(),
    }
