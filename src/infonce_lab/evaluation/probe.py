"""Linear probe on frozen features: one Linear layer, cross-entropy, Adam (WEINCE App. F.3).

The probe sees only feature tensors, never the encoder, so the backbone cannot be fine-tuned by
accident (the bug that invalidated more than one public SimCLR repository).

Probes for several seeds train together as one batched model: each seed keeps its own
initialisation and its own data order, the summed loss gives each probe exactly its own
gradient, and Adam is elementwise, so the result is that of separate runs in one fifth of the
Python overhead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

Arr = np.ndarray | torch.Tensor


def linear_probes(
    train_x: Arr,
    train_y: Arr,
    eval_sets: dict[str, tuple[Arr, Arr]],
    seeds: Sequence[int],
    epochs: int = 100,
    lr: float = 3e-4,
    batch_size: int = 256,
    weight_decay: float = 0.0,
    standardize: bool = False,
) -> list[dict[str, float]]:
    """One probe per seed; returns, per seed, the accuracy on each named evaluation set.

    ``standardize`` z-scores features with the training mean and standard deviation (an affine
    map the linear layer could learn, but Adam converges far faster on standardised inputs).
    """
    x = torch.as_tensor(train_x, dtype=torch.float32)
    y = torch.as_tensor(train_y).long()
    n, d = x.shape
    mean = x.mean(0, keepdim=True) if standardize else torch.zeros(1, d)
    std = x.std(0, keepdim=True).clamp_min(1e-6) if standardize else torch.ones(1, d)
    x = (x - mean) / std
    n_classes = int(y.max()) + 1
    for _, ey in eval_sets.values():
        n_classes = max(n_classes, int(torch.as_tensor(ey).max()) + 1)
    k = len(seeds)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    bound = 1.0 / np.sqrt(d)  # nn.Linear's default initialisation
    weight = torch.stack([torch.empty(n_classes, d).uniform_(-bound, bound, generator=g) for g in gens])
    bias = torch.stack([torch.empty(n_classes).uniform_(-bound, bound, generator=g) for g in gens])
    weight.requires_grad_(True)
    bias.requires_grad_(True)
    opt = torch.optim.Adam([weight, bias], lr=lr, weight_decay=weight_decay)
    for _ in range(epochs):
        perms = torch.stack([torch.randperm(n, generator=g) for g in gens])
        for start in range(0, n, batch_size):
            idx = perms[:, start : start + batch_size]  # (k, b)
            logits = torch.baddbmm(bias.unsqueeze(1), x[idx], weight.transpose(1, 2))
            loss = F.cross_entropy(logits.flatten(0, 1), y[idx].flatten(), reduction="sum")
            opt.zero_grad(set_to_none=True)
            (loss / idx.shape[1]).backward()
            opt.step()
    out: list[dict[str, float]] = [{} for _ in seeds]
    with torch.no_grad():
        for name, (ex, ey) in eval_sets.items():
            ex = (torch.as_tensor(ex, dtype=torch.float32) - mean) / std
            ey = torch.as_tensor(ey).long()
            pred = (torch.einsum("nd,kcd->knc", ex, weight) + bias.unsqueeze(1)).argmax(-1)
            for i in range(k):
                out[i][name] = float((pred[i] == ey).float().mean())
    return out
