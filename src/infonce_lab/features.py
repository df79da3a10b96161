"""Frozen-feature files: data/features/<encoder>/{train,test}.npz with h, z and labels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from infonce_lab.config import AugmentConfig
from infonce_lab.data.views import make_views
from infonce_lab.io import save_npz_atomic


@dataclass(frozen=True)
class FeatureSet:
    h: np.ndarray
    z: np.ndarray | None
    y: np.ndarray


def save_features(out_dir: Path, split: str, h: np.ndarray, z: np.ndarray | None, y: np.ndarray) -> None:
    arrays = {"h": h.astype(np.float32), "y": y}
    if z is not None:
        arrays["z"] = z.astype(np.float32)
    save_npz_atomic(out_dir / f"{split}.npz", **arrays)


def load_features(feat_dir: str | Path, split: str) -> FeatureSet:
    path = Path(feat_dir) / f"{split}.npz"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no features; run the evaluate stage for this run")
    with np.load(path) as f:
        return FeatureSet(h=f["h"], z=f.get("z"), y=f["y"])


@torch.no_grad()
def augmented_view_pairs(
    x: np.ndarray, augment: AugmentConfig, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Two augmented views of every image (the positive pairs that alignment is measured on)."""
    gen = torch.Generator().manual_seed(seed)
    v1, v2 = make_views(torch.as_tensor(x), augment, gen)
    return v1.numpy(), v2.numpy()
