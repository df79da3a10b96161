"""Encoders: a backbone producing features h and a projection head producing z.

``build_encoder`` dispatches on the backbone's kind: the small CIFAR-style ResNet of the embedded
default (no torchvision import: it costs every stage ~2 s), or torchvision's ResNet-18/50 and ViT-S
for the paper's protocol (models/vision.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from infonce_lab.models.resnet import Encoder
from infonce_lab.models.resnet import build_encoder as _build_resnet_cifar
from infonce_lab.params import (
    BackboneConfig,
    ResNetConfig,
    TorchvisionResNetConfig,
    ViTSmallConfig,
)

STEMS = {"auto": None, "cifar": True, "standard": False}


def _resnet(cfg: TorchvisionResNetConfig, in_channels: int, image_size: int) -> nn.Module:
    from infonce_lab.models.vision import build_vision_encoder

    return build_vision_encoder(f"resnet{cfg.depth}", image_size=image_size,
                                in_channels=in_channels, cifar_stem=STEMS[cfg.stem],
                                head_dim=cfg.head_dim, head_hidden=cfg.head_hidden)


def _vit_small(cfg: ViTSmallConfig, in_channels: int, image_size: int) -> nn.Module:
    from infonce_lab.models.vision import build_vision_encoder

    return build_vision_encoder("vit_small", image_size=image_size, in_channels=in_channels,
                                patch_size=cfg.patch_size, head_dim=cfg.head_dim,
                                head_hidden=cfg.head_hidden)


# One builder per backbone kind (tests/test_registries.py holds it against the union); each
# takes the section, the input channels and the image size (None for resnet_cifar).
BACKBONES: dict[type, Callable[[Any, int, int | None], nn.Module]] = {
    ResNetConfig: lambda cfg, c, size: _build_resnet_cifar(cfg, c),
    TorchvisionResNetConfig: _resnet,
    ViTSmallConfig: _vit_small,
}


def build_encoder(cfg: BackboneConfig, in_channels: int, image_size: int | None = None) -> nn.Module:
    """An encoder whose ``forward(x)`` returns ``(h, z)``; ``image_size`` is needed by the ViT and
    by the ResNet's automatic stem choice."""
    if cfg.kind != "resnet_cifar" and image_size is None:
        raise ValueError(f"backbone kind {cfg.kind!r} needs the image size")
    return BACKBONES[type(cfg)](cfg, in_channels, image_size)


__all__ = ["BACKBONES", "Encoder", "build_encoder"]
