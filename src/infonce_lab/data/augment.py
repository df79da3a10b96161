"""Two-view augmentation for small grey-level images, batched on tensors.

torchvision's v2 transforms draw one set of random parameters per call, so applied to a batch
tensor every image gets the same rotation; per-image randomness would need a Python loop over
images, which dominates a step on 8×8 digits. Here every image draws its own affine matrix
(rotation, scale, shear, translation) and one ``grid_sample`` warps the whole batch; intensity
jitter, cutout and noise are broadcast ops. All randomness comes from one ``torch.Generator``, so
the views are reproducible from the seed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from infonce_lab.params import DigitsAugment

if TYPE_CHECKING:
    from infonce_lab.data.batch_part import BatchPart


def _uniform(n: int, half_width: float, gen: torch.Generator, device: torch.device) -> torch.Tensor:
    return (torch.rand(n, generator=gen, device=device) * 2.0 - 1.0) * half_width


def random_affine_matrices(
    n: int, height: int, cfg: DigitsAugment, gen: torch.Generator, device: torch.device
) -> torch.Tensor:
    """(n, 2, 3) matrices for ``F.affine_grid`` in normalised coordinates."""
    rot = _uniform(n, math.radians(cfg.rotate_deg), gen, device)
    shear = _uniform(n, math.radians(cfg.shear_deg), gen, device)
    scale = 1.0 + _uniform(n, cfg.scale, gen, device)
    # A shift of t pixels is 2t/H in the [-1, 1] coordinates of affine_grid.
    tx = _uniform(n, 2.0 * cfg.translate_px / height, gen, device)
    ty = _uniform(n, 2.0 * cfg.translate_px / height, gen, device)
    cos, sin, tan = torch.cos(rot), torch.sin(rot), torch.tan(shear)
    # grid = A @ [x, y, 1]: samples the input at A·p, so this is the inverse warp; for a random
    # augmentation the distribution is what matters, and it is symmetric.
    a11 = cos / scale
    a12 = (-sin + cos * tan) / scale
    a21 = sin / scale
    a22 = (cos + sin * tan) / scale
    return torch.stack(
        [torch.stack([a11, a12, tx], dim=1), torch.stack([a21, a22, ty], dim=1)], dim=1
    )


def augment_batch(x: torch.Tensor, cfg: DigitsAugment, gen: torch.Generator,
                  part: BatchPart | None = None) -> torch.Tensor:
    """One random view of each image in ``x`` (n, C, H, W) with values in [0, 1]; with ``part``,
    ``x`` is that part of a larger batch (:class:`~infonce_lab.data.batch_part.BatchPart`)."""
    n, _, h, w = x.shape
    total = n if part is None else part.total
    rows = slice(0, n) if part is None else part.rows(n)
    dev = x.device
    theta = random_affine_matrices(total, h, cfg, gen, dev)[rows].to(x.dtype)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    if cfg.contrast > 0 or cfg.brightness > 0:
        c = 1.0 + _uniform(total, cfg.contrast, gen, dev)[rows].view(n, 1, 1, 1)
        b = _uniform(total, cfg.brightness, gen, dev)[rows].view(n, 1, 1, 1)
        out = out * c + b
    if cfg.erase_prob > 0:
        s = min(cfg.erase_size_px, h, w)
        top = torch.randint(0, h - s + 1, (total,), generator=gen, device=dev)[rows]
        left = torch.randint(0, w - s + 1, (total,), generator=gen, device=dev)[rows]
        on = (torch.rand(total, generator=gen, device=dev) < cfg.erase_prob)[rows]
        rows_i = torch.arange(h, device=dev).view(1, h, 1)
        cols = torch.arange(w, device=dev).view(1, 1, w)
        box = (
            (rows_i >= top.view(n, 1, 1)) & (rows_i < (top + s).view(n, 1, 1))
            & (cols >= left.view(n, 1, 1)) & (cols < (left + s).view(n, 1, 1))
            & on.view(n, 1, 1)
        )
        out = out.masked_fill(box.unsqueeze(1), 0.0)
    if cfg.noise_std > 0:
        noise = torch.randn((total, *out.shape[1:]), generator=gen, device=dev, dtype=out.dtype)
        out = out + cfg.noise_std * noise[rows]
    return out.clamp_(0.0, 1.0)
