"""A gradient-correct all-gather for contrastive negatives under DDP.

Every process gathers all processes' embeddings and computes the loss on the global batch (so
WEINCE's tail sets and ρ0 are the global ones and the loss value is the single-process value).
The backward must *sum* the gradient of the gathered tensor over processes before each keeps its
own slice: every process's loss depends on every process's rows, and DDP then averages parameter
gradients, which with the sum gives exactly the single-process gradient. Returning the local slice
without the sum — as several popular SimCLR codebases once did — silently drops the negatives'
gradient (ANCHORS.md §3.1).
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class _GatherWithGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        world = dist.get_world_size()
        sizes = [torch.zeros(1, dtype=torch.long, device=x.device) for _ in range(world)]
        dist.all_gather(sizes, torch.tensor([x.shape[0]], device=x.device))
        sizes_i = [int(s) for s in sizes]
        if len(set(sizes_i)) != 1:
            raise ValueError(f"all processes need the same local batch size, got {sizes_i}")
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x.contiguous())
        ctx.rank, ctx.n = dist.get_rank(), x.shape[0]
        return torch.cat(parts, dim=0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        grad = grad.contiguous()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad[ctx.rank * ctx.n : (ctx.rank + 1) * ctx.n]


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate ``x`` from all processes in rank order; identity when not distributed."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return x
    return _GatherWithGrad.apply(x)
