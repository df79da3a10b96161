"""One entry point for augmented views, whatever the dataset's augmentation: the digits' batched
affine jitter or SimCLR's crop/flip/colour pipeline. Training, feature extraction (alignment of
two test views) and the tail diagnostics' banks all draw their views here."""

from __future__ import annotations

import torch

from infonce_lab.data.batch_part import BatchPart
from infonce_lab.params import AugmentConfig, DigitsAugment


def as_float(x: torch.Tensor) -> torch.Tensor:
    """uint8 images → float32 in [0, 1]; float images unchanged."""
    return x if x.is_floating_point() else x.float() / 255.0


def augment_one(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator,
                part: BatchPart | None = None) -> torch.Tensor:
    """One augmented view of every image of the batch, every draw from ``gen`` (``part``: ``x``
    is that part of a larger batch)."""
    if isinstance(cfg, DigitsAugment):
        from infonce_lab.data.augment import augment_batch

        return augment_batch(as_float(x), cfg, gen, part)
    from infonce_lab.data.simclr_augment import SimCLRAugment, simclr_augment

    runtime = SimCLRAugment(
        size=cfg.size or int(x.shape[-1]), scale=tuple(cfg.scale), ratio=tuple(cfg.ratio),
        flip_p=cfg.flip_p, jitter=tuple(cfg.jitter), jitter_p=cfg.jitter_p, gray_p=cfg.gray_p,
        blur_p=cfg.blur_p, blur_sigma=tuple(cfg.blur_sigma),
    )
    return simclr_augment(x, runtime, gen, part)


def make_views(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator,
               part: BatchPart | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Two independent views (the first drawn before the second: the digits' historical order)."""
    return augment_one(x, cfg, gen, part), augment_one(x, cfg, gen, part)
