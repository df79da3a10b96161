"""One telemetry row per logged training step — the same keys for the image and text loops."""

from __future__ import annotations

import math

import torch

from infonce_lab.losses.common import Candidates, similarity_stats
from infonce_lab.losses.geometry import alignment, uniformity


@torch.no_grad()
def step_record(z1: torch.Tensor, z2: torch.Tensor, stats: dict[str, torch.Tensor], *,
                loss: float, lr: float, epoch: float, samples_per_s: float,
                tau: float, candidates: Candidates = "all_views") -> dict[str, float]:
    """Loss, lr, epoch, throughput; alignment and uniformity of the batch's embeddings;
    similarity quantiles over the loss's ``candidates``; the loss's own statistics; τ when the
    loss has one."""
    zd1, zd2 = z1.detach(), z2.detach()
    record = {"loss": loss, "lr": float(lr), "epoch": float(epoch),
              "samples_per_s": samples_per_s, "alignment": float(alignment(zd1, zd2)),
              "uniformity": float(uniformity(zd1)),
              **{k: float(v) for k, v in similarity_stats(zd1, zd2, candidates).items()},
              **summarise_stats(stats)}
    if math.isfinite(tau):
        record["tau"] = float(tau)
    return record


def summarise_stats(stats: dict[str, torch.Tensor]) -> dict[str, float]:
    """Scalars as they are; per-anchor vectors as mean and quantiles (λ also: share above ½)."""
    out: dict[str, float] = {}
    for name, v in stats.items():
        v = v.detach().float().flatten()
        if v.numel() == 1:
            out[name] = float(v)
            continue
        qs = torch.quantile(v, torch.tensor([0.1, 0.5, 0.9], dtype=v.dtype, device=v.device))
        out[f"{name}_mean"] = float(v.mean())
        out[f"{name}_q10"], out[f"{name}_q50"], out[f"{name}_q90"] = (float(x) for x in qs)
        if name == "lambda":
            out["lambda_frac_gt_half"] = float((v > 0.5).float().mean())
    return out
