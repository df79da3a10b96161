"""Load an encoder saved by the pretrain stage (weights only: no pickled code is executed)."""

from __future__ import annotations

from pathlib import Path

import torch
from pydantic import TypeAdapter
from torch import nn

from infonce_lab.config import BackboneConfig
from infonce_lab.models import build_encoder


def load_encoder(path: str | Path, map_location: str | torch.device = "cpu") -> tuple[nn.Module, dict]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no checkpoint; run the pretrain stage for this run")
    blob = torch.load(path, map_location=map_location, weights_only=True)
    cfg = TypeAdapter(BackboneConfig).validate_python(blob["backbone"])
    encoder = build_encoder(cfg, int(blob["in_channels"]), blob.get("image_size"))
    encoder.load_state_dict(blob["state_dict"])
    encoder.eval()
    meta = {k: v for k, v in blob.items() if k != "state_dict"}
    return encoder, meta
