"""One telemetry row per logged training step — the same keys for the image and text loops."""

from __future__ import annotations

import math

import torch

from infonce_lab.losses.common import similarity_stats
from infonce_lab.losses.geometry import alignment, uniformity
from infonce_lab.losses.registry import summarise_stats


@torch.no_grad()
def step_record(z1: torch.Tensor, z2: torch.Tensor, stats: dict[str, torch.Tensor], *,
                loss: float, lr: float, epoch: float, samples_per_s: float,
                tau: float, candidates: str = "all_views") -> dict[str, float]:
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
