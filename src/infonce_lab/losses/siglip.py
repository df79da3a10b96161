"""The pairwise sigmoid loss of SigLIP (Zhai et al. 2023, "Sigmoid Loss for Language Image
Pre-Training", §3.2, Eq. 1 and Algorithm 1), with its learnable temperature and bias.

Every pair (i, j) of the N × N cross-view similarity matrix is its own binary problem — the
positive pairs on the diagonal, label +1; every other pair, label −1 — so no row is normalised
over its candidates as InfoNCE's softmax is:

    L = −(1/N) Σ_i Σ_j log σ(y_ij · (t·x_iᵀy_j + b)),    t = exp(t′),

with t′ and b learned (initialised at t′ = log 10 and b = −10, §3.2, so the N² − N negatives do
not dominate the first steps). Because both are parameters, the run's temperature schedule is
not used (the params schema pairs this loss with ``kind: none``).

Usage — the function on two views, or the bound loss the pipeline builds from a params section::

    value = sigmoid_loss(z1, z2, log_scale, bias)
    loss = build_loss(SigLIPConfig())  # pipeline.registry
    value, stats = loss(z1, z2, tau)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def sigmoid_loss(z1: torch.Tensor, z2: torch.Tensor, log_scale: torch.Tensor,
                 bias: torch.Tensor) -> torch.Tensor:
    """Eq. 1 on the N cross-view pairs of each row, divided by N (Algorithm 1's ``/ n``), in the
    inputs' precision (the loop passes float32)."""
    z1, z2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    logits = (z1 @ z2.T) * log_scale.exp() + bias
    labels = 2.0 * torch.eye(z1.shape[0], device=z1.device, dtype=logits.dtype) - 1.0
    return -F.logsigmoid(labels * logits).sum() / z1.shape[0]


class SigmoidLoss(nn.Module):
    """SigLIP's loss with t′ and b as parameters (``learn_scale``/``learn_bias`` False freeze
    them at their initial values, the paper's ablation)."""

    candidates = "cross_view"

    def __init__(self, *, scale_init: float, bias_init: float, learn_scale: bool,
                 learn_bias: bool) -> None:
        super().__init__()
        self.log_scale = nn.Parameter(torch.tensor(math.log(scale_init)),
                                      requires_grad=learn_scale)
        self.bias = nn.Parameter(torch.tensor(float(bias_init)), requires_grad=learn_bias)

    def forward(self, z1: torch.Tensor, z2: torch.Tensor, tau: float
                ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        loss = sigmoid_loss(z1, z2, self.log_scale, self.bias)
        return loss, {"scale": self.log_scale.detach().exp(), "bias": self.bias.detach().clone()}
