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


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from all processes in rank order; identity when not distributed."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return x
    return torch.cat(all_gather(x), dim=0)
