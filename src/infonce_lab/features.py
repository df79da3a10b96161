"""Frozen-feature files (h, z and labels per split, as .npz) and the test views for alignment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from infonce_lab.data.views import make_views
from infonce_lab.io import save_npz_atomic
from infonce_lab.params import AugmentConfig


def save_features(out_dir: Path, split: str, h: np.ndarray, z: np.ndarray | None, y: np.ndarray) -> None:
    arrays = {"h": h.astype(np.float32), "y": y}
    if z is not None:
        arrays["z"] = z.astype(np.float32)
    save_npz_atomic(out_dir / f"{split}.npz", **arrays)


@torch.no_grad()
def augmented_view_pairs(
    x: np.ndarray, augment: AugmentConfig, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Two augmented views of every image (the positive pairs that alignment is measured on)."""
    gen = torch.Generator().manual_seed(seed)
    v1, v2 = make_views(torch.as_tensor(x), augment, gen)
    return v1.numpy(), v2.numpy()
