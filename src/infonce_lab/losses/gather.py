"""A gradient-correct all-gather for contrastive negatives under DDP.

Every process gathers all processes' embeddings and computes the loss on the global batch (so
WEINCE's tail sets and ρ0 are the global ones and the loss value is the single-process value).
The backward must *sum* the gradient of the gathered tensor over processes before each keeps its
own slice: every process's loss depends on every process's rows, and DDP then averages parameter
gradients, which with the sum gives exactly the single-process gradient. Returning the local slice
without the sum — as several popular SimCLR codebases once did — silently drops the negatives'
gradient (ANCHORS.md §3.1). torch's own ``torch.distributed.nn.functional.all_gather`` does the
sum (reduce-scatter on NCCL, all-to-all then a sum elsewhere); tests/train/test_ddp_training.py
checks the gradients against one process's. Equal local batches are the loop's check.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.nn.functional import all_gather


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from all processes in rank order; identity when not distributed."""
    if not _distributed():
        return x
    return torch.cat(all_gather(x), dim=0)


@torch.no_grad()
def gather_rows(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from all processes in rank order, without a gradient: what goes with
    the gathered embeddings and has none (the batch's class labels for the label oracle), in the
    same order as :func:`gather_with_grad`, so row i of both is the same pair. Identity when not
    distributed."""
    if not _distributed():
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=0)
