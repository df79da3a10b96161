"""An image encoder's life outside training: build and seed it, save it, load it, extract its
frozen features. The checkpoint format lives here and nowhere else.

A checkpoint is one ``torch.save`` dict read back with ``weights_only=True`` (no pickled code is
executed): ``state_dict``, the backbone section (``backbone``), ``in_channels``, the image size
where the architecture needs it (``image_size``), and whatever the caller records beside it
(the run, the epoch, the loss's own state).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import TypeAdapter
from torch import nn

from infonce_lab.io import reading, replace_atomic, verify_checksum, write_checksum
from infonce_lab.models import Encoder, build_encoder
from infonce_lab.params import BackboneConfig


def init_encoder(backbone: BackboneConfig, in_channels: int, seed: int,
                 image_size: int | None = None) -> Encoder:
    """The encoder a run starts from; the random-init baseline is exactly this, untrained."""
    torch.manual_seed(seed)
    return build_encoder(backbone, in_channels, image_size)


def checkpoint_meta(backbone: BackboneConfig, x: np.ndarray) -> dict[str, Any]:
    """What :func:`load_encoder` needs to rebuild the architecture for images shaped like ``x``."""
    meta: dict[str, Any] = {"backbone": backbone.model_dump(mode="json"),
                            "in_channels": int(x.shape[1])}
    if backbone.kind != "resnet_cifar":  # the ViT and the automatic ResNet stem need it
        meta["image_size"] = int(x.shape[-1])
    return meta


def save_encoder(encoder: nn.Module, path: Path, meta: dict[str, Any]) -> None:
    """``meta`` must hold :func:`checkpoint_meta`'s keys; written to a temporary file, then renamed,
    with its SHA-256 beside it (``<name>.sha256``), which :func:`load_encoder` verifies."""
    with replace_atomic(path) as tmp:
        torch.save({"state_dict": encoder.state_dict(), **meta}, tmp)
    write_checksum(path)


def missing_model(path: Path) -> str:
    """What to do about an absent ``models/vision/<dataset>/<configuration>/<run>/model.pt``:
    the stage that writes it, by name, and the remote that may hold it."""
    config = path.parent.parent.name if path.name == "model.pt" else path.parent.name
    stage = f"pretrain@{config}" if config else "pretrain"
    return (f"{path}: no trained model here. Fetch it from the DVC remote (`dvc pull {stage}`; "
            f"docs/sharing.md sets a remote up), or train it (`dvc repro {stage}`; a run of the "
            f"primary block is `pretrain_primary@{config}`).")


def load_encoder(path: str | Path, map_location: str | torch.device = "cpu"
                 ) -> tuple[nn.Module, dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(missing_model(path))
    fix = ("Delete it and re-run the stage that writes it (`dvc repro -f <stage>`), or restore it "
           "from the DVC cache (`dvc checkout`).")
    verify_checksum(path, fix)
    with reading(path, "encoder checkpoint (torch.save of backbone, in_channels, state_dict)", fix):
        blob = torch.load(path, map_location=map_location, weights_only=True)
        cfg = TypeAdapter(BackboneConfig).validate_python(blob["backbone"])
        encoder = build_encoder(cfg, int(blob["in_channels"]), blob.get("image_size"))
        encoder.load_state_dict(blob["state_dict"])
    encoder.eval()
    meta = {k: v for k, v in blob.items() if k != "state_dict"}
    return encoder, meta


@torch.no_grad()
def extract_features(
    encoder: nn.Module, x: np.ndarray, batch_size: int = 1024, device: str | torch.device = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """Frozen backbone features h and projector outputs z (eval mode, no augmentation); uint8
    images are scaled to [0, 1] as the training views are."""
    encoder = encoder.to(device).eval()
    hs, zs = [], []
    for start in range(0, len(x), batch_size):
        xb = torch.as_tensor(x[start : start + batch_size], device=device)
        xb = xb.float() / 255.0 if xb.dtype == torch.uint8 else xb.float()
        h, z = encoder(xb)
        hs.append(h.float().cpu())
        zs.append(z.float().cpu())
    return torch.cat(hs).numpy(), torch.cat(zs).numpy()
