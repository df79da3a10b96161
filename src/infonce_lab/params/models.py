"""Backbones: the small CIFAR-style ResNet, torchvision's ResNet-18/50 and ViT-S."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from infonce_lab.params.base import PosInt, Strict

Stages = Annotated[list[PosInt], Field(min_length=1, max_length=6)]  # one entry per ResNet stage


class ResNetConfig(Strict):
    """A CIFAR-style ResNet (3×3 stem, no max-pool) with a SimCLR projection head."""

    kind: Literal["resnet_cifar"] = "resnet_cifar"
    widths: Stages = [32, 64, 128]
    blocks: Stages = [1, 1, 1]
    head_hidden: PosInt = 128
    head_dim: PosInt = 64

    @model_validator(mode="after")
    def _same_depth(self) -> ResNetConfig:
        if len(self.widths) != len(self.blocks):
            raise ValueError(
                f"widths has {len(self.widths)} stages but blocks has {len(self.blocks)}; "
                "give one block count per stage"
            )
        return self


class TorchvisionResNetConfig(Strict):
    """torchvision ResNet-18/50 from scratch, fc → identity, SimCLR's projection head."""

    kind: Literal["resnet"] = "resnet"
    depth: Literal[18, 50] = 18
    stem: Literal["auto", "cifar", "standard"] = "auto"   # auto: CIFAR stem up to 32 px
    head_hidden: PosInt | None = None   # None: the feature width
    head_dim: PosInt = 64


class ViTSmallConfig(Strict):
    """ViT-S (width 384, depth 12, 6 heads); the class token is h."""

    kind: Literal["vit_small"] = "vit_small"
    patch_size: PosInt = 4
    head_hidden: PosInt | None = None
    head_dim: PosInt = 64


BackboneConfig = Annotated[ResNetConfig | TorchvisionResNetConfig | ViTSmallConfig,
                          Field(discriminator="kind")]

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["BackboneConfig", "ResNetConfig", "Stages", "TorchvisionResNetConfig", "ViTSmallConfig"]
