"""NT-Xent (SimCLR's InfoNCE) over the 2N×(2N−1) candidate matrix, or SimCSE's InfoNCE over the
N×N cross-view matrix, and the CLIP-style symmetric InfoNCE for paired modalities.

Usage — the function on two views (its knobs by keyword, the schema's values), or the bound
loss the pipeline builds from a params section::

    value, stats = info_nce(z1, z2, 0.2, decoupled=False, topm_weight=0.0, top_m=50,
                            candidates="all_views")  # z1, z2: (N, d), row i a positive pair
    loss = build_loss(InfoNCEConfig(decoupled=True))  # pipeline.registry
    value, stats = loss(z1, z2, tau)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from infonce_lab.losses.common import (
    Candidates,
    candidate_similarities,
    negatives_mask,
    same_class_mask,
    self_mask,
    topm_cross_entropy,
)
from infonce_lab.losses.geometry import unit_rows
from infonce_lab.losses.objects import StatelessLoss


def info_nce(
    z1: torch.Tensor,
    z2: torch.Tensor,
    temperature: float,
    *,
    decoupled: bool,
    topm_weight: float,
    top_m: int,
    candidates: Candidates,
    labels: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean over the anchors of −log softmax(s/τ) at the positive.

    ``candidates``: ``all_views`` (SimCLR: 2N anchors, 2N − 1 candidates each) or
    ``cross_view`` (SimCSE: the N rows of view 1 against the N rows of view 2).
    ``decoupled`` leaves the positive out of the denominator (DCL, Yeh et al. 2022).
    ``topm_weight`` > 0 adds that weight times the softmax cross-entropy over [positive | top_m
    hardest negatives]: the control for WEINCE's released recipe (its repository's script; the
    paper, App. F.2, describes only the logits), so a WEINCE gain cannot be credited to its
    auxiliary hard-negative term.
    ``labels`` (N,), the class of each pair: every negative of the anchor's own class leaves the
    denominator and the top-M set (the label oracle, :func:`same_class_mask`); stats then hold
    ``masked_negative_share``, the share of negatives it removed. An anchor with no negative left
    contributes 0 (its softmax holds the positive alone) — with ``decoupled`` too, whose
    denominator would be empty.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    sim, pos, has_self = candidate_similarities(z1, z2, candidates)
    m = sim.shape[0]
    logits = sim / temperature
    if has_self:
        logits = logits.masked_fill(self_mask(m, sim.device), float("-inf"))
    same: torch.Tensor | None = None
    stats: dict[str, torch.Tensor] = {}
    if labels is not None:
        # Chuang et al. 2020, §5: the "unbiased" objective draws negatives from p⁻ (the other
        # classes) only. −∞ removes a column exactly (exp(−∞) = 0, and zero gradient); the
        # positive column is never masked, so every row keeps one finite logit.
        same = same_class_mask(labels, pos, has_self)
        logits = logits.masked_fill(same, float("-inf"))
        negatives = negatives_mask(pos, has_self)
        stats["masked_negative_share"] = (same.sum() / negatives.sum()).detach().float()
    if decoupled:
        rows = torch.arange(m, device=sim.device)
        pos_logit = logits[rows, pos]
        neg_logits = logits.clone()
        neg_logits[rows, pos] = float("-inf")
        if same is None:
            loss = (torch.logsumexp(neg_logits, dim=1) - pos_logit).mean()
        else:
            # A row whose negatives were all masked has logsumexp(∅) = −∞ and a NaN gradient
            # even behind torch.where; its row is made finite first and its term set to 0, the
            # value the coupled loss gives it (its softmax then holds the positive alone).
            left = (negatives & ~same).any(dim=1)
            lse = torch.logsumexp(neg_logits.masked_fill(~left[:, None], 0.0), dim=1)
            loss = torch.where(left, lse - pos_logit, torch.zeros_like(lse)).mean()
    else:
        loss = F.cross_entropy(logits, pos)
    if topm_weight > 0:
        loss = loss + topm_weight * topm_cross_entropy(sim, pos, top_m, lambda s: s / temperature,
                                                       has_self, same)
    return loss, stats


def symmetric_info_nce(
    za: torch.Tensor, zb: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """CLIP's loss: ½[CE over rows of za·zbᵀ/τ + CE over its columns]; pairs are (za_i, zb_i).

    Unlike NT-Xent there are no within-modality candidates: each anchor's N candidates are the
    other modality's rows (the geometry paper's symmetric InfoNCE).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if za.shape != zb.shape or za.ndim != 2:
        raise ValueError(f"za and zb must both be (N, d); got {tuple(za.shape)} and {tuple(zb.shape)}")
    a, b = unit_rows(za), unit_rows(zb)
    logits = a @ b.T / temperature
    target = torch.arange(a.shape[0], device=a.device)
    a2b = F.cross_entropy(logits, target)
    b2a = F.cross_entropy(logits.T, target)
    return 0.5 * (a2b + b2a), {"loss_a_to_b": a2b.detach(), "loss_b_to_a": b2a.detach()}


class InfoNCELoss(StatelessLoss):
    """``tau_scale`` ≠ 1 runs InfoNCE at ``tau_scale`` × the schedule's τ (a temperature control
    that shares its schedule with the losses it controls). ``mask_same_class``: the label oracle
    (Chuang et al. 2020, §5), which needs the batch's labels (``needs_labels``)."""

    def __init__(self, *, decoupled: bool, topm_weight: float, top_m: int,
                 candidates: Candidates, tau_scale: float, mask_same_class: bool) -> None:
        self.decoupled, self.topm_weight, self.top_m = decoupled, topm_weight, top_m
        self.candidates, self.tau_scale = candidates, tau_scale
        self.mask_same_class = self.needs_labels = mask_same_class

    def __call__(self, z1, z2, tau, labels=None):  # noqa: ANN001, ANN204
        if self.mask_same_class and labels is None:
            raise ValueError("mask_same_class: this InfoNCE masks same-class negatives and needs "
                             "the batch's labels (loss(z1, z2, tau, labels=y))")
        scaled = self.tau_scale != 1.0
        if scaled:
            tau = tau * self.tau_scale
        loss, stats = info_nce(z1, z2, tau, decoupled=self.decoupled,
                               topm_weight=self.topm_weight, top_m=self.top_m,
                               candidates=self.candidates,
                               labels=labels if self.mask_same_class else None)
        if scaled:  # telemetry's "tau" is the schedule's; this is the one the loss used
            stats["tau_scaled"] = torch.tensor(float(tau))
        return loss, stats


class SymmetricInfoNCELoss(StatelessLoss):
    def __call__(self, z1, z2, tau):  # noqa: ANN001, ANN204
        return symmetric_info_nce(z1, z2, tau)
