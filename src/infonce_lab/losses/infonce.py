"""NT-Xent (SimCLR's InfoNCE) over the 2N×(2N−1) candidate matrix."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def pair_similarities(z1: torch.Tensor, z2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine matrix of the 2N stacked views (self-pairs set to −inf) and each anchor's positive.

    Rows 0..N−1 are view 1, rows N..2N−1 view 2; the positive of row i is row (i + N) mod 2N.
    Reduced-precision inputs are promoted to float32 (DESIGN: precision); float64 stays float64.
    """
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"z1 and z2 must both be (N, d); got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    z = torch.cat([z1, z2], dim=0)
    if z.dtype in (torch.float16, torch.bfloat16):
        z = z.float()
    z = F.normalize(z, dim=1)
    sim = z @ z.T
    eye = torch.eye(2 * n, dtype=torch.bool, device=z.device)
    sim = sim.masked_fill(eye, float("-inf"))
    pos = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return sim, pos


def info_nce(
    z1: torch.Tensor, z2: torch.Tensor, temperature: float, decoupled: bool = False
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean over the 2N anchors of −log softmax(s/τ) at the positive.

    ``decoupled=True`` leaves the positive out of the denominator (DCL, Yeh et al. 2022).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    sim, pos = pair_similarities(z1, z2)
    logits = sim / temperature
    rows = torch.arange(sim.shape[0], device=sim.device)
    if decoupled:
        pos_logit = logits[rows, pos]
        neg_logits = logits.clone()
        neg_logits[rows, pos] = float("-inf")
        loss = (torch.logsumexp(neg_logits, dim=1) - pos_logit).mean()
    else:
        loss = F.cross_entropy(logits, pos)
    with torch.no_grad():
        s_pos = sim[rows, pos]
        neg_mask = torch.isfinite(sim)
        neg_mask[rows, pos] = False
        s_neg = sim[neg_mask]
        # torch.quantile refuses inputs above 2^24 elements; a prefix is plenty for telemetry.
        qs = torch.quantile(
            s_neg[: 1 << 24],
            torch.tensor([0.5, 0.9, 0.99], device=s_neg.device, dtype=s_neg.dtype),
        )
        stats = {
            "pos_sim": s_pos.mean(),
            "neg_sim_mean": s_neg.mean(),
            "neg_sim_q50": qs[0],
            "neg_sim_q90": qs[1],
            "neg_sim_q99": qs[2],
            "neg_sim_max": s_neg.max(),
            "top1_acc": (logits.argmax(dim=1) == pos).float().mean(),
        }
    return loss, stats
