"""Linear probe on frozen features: one Linear layer, cross-entropy, Adam (SPECS C.7).

The probe sees only feature tensors, never the encoder, so the backbone cannot be fine-tuned by
accident (the bug that invalidated more than one public SimCLR repository).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def linear_probe(
    train_x: np.ndarray | torch.Tensor,
    train_y: np.ndarray | torch.Tensor,
    eval_sets: dict[str, tuple[np.ndarray | torch.Tensor, np.ndarray | torch.Tensor]],
    seed: int,
    epochs: int = 100,
    lr: float = 3e-4,
    batch_size: int = 256,
    weight_decay: float = 0.0,
    standardize: bool = False,
) -> dict[str, float]:
    """Train on ``train_x`` and return the accuracy on each named evaluation set.

    ``standardize`` z-scores features with the training mean and standard deviation (an affine
    map the linear layer could learn, but Adam converges far faster on standardised inputs).
    """
    x = torch.as_tensor(train_x, dtype=torch.float32)
    y = torch.as_tensor(train_y).long()
    mean = x.mean(0, keepdim=True) if standardize else torch.zeros(1, x.shape[1])
    std = x.std(0, keepdim=True).clamp_min(1e-6) if standardize else torch.ones(1, x.shape[1])
    x = (x - mean) / std
    n_classes = int(y.max()) + 1
    for _, (_, ey) in eval_sets.items():
        n_classes = max(n_classes, int(torch.as_tensor(ey).max()) + 1)
    gen = torch.Generator().manual_seed(seed)
    layer = nn.Linear(x.shape[1], n_classes)
    with torch.no_grad():
        bound = 1.0 / np.sqrt(x.shape[1])
        layer.weight.uniform_(-bound, bound, generator=gen)
        layer.bias.uniform_(-bound, bound, generator=gen)
    opt = torch.optim.Adam(layer.parameters(), lr=lr, weight_decay=weight_decay)
    n = x.shape[0]
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            b = perm[start : start + batch_size]
            loss = F.cross_entropy(layer(x[b]), y[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    out: dict[str, float] = {}
    with torch.no_grad():
        for name, (ex, ey) in eval_sets.items():
            ex = (torch.as_tensor(ex, dtype=torch.float32) - mean) / std
            pred = layer(ex).argmax(dim=1)
            out[name] = float((pred == torch.as_tensor(ey).long()).float().mean())
    return out
