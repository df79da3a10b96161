"""CIFAR-style ResNet (3×3 stride-1 stem, no max-pool) and the SimCLR projection head.

torchvision's ResNet hard-codes the ImageNet stem (7×7 stride 2 + max-pool), which turns an 8×8
digit into a 2×2 map before the first block; the CIFAR stem is what the WEINCE code uses for
small images (SPECS C.6), so we build the residual stages from torchvision's ``BasicBlock``.
"""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock

from infonce_lab.config import BackboneConfig


class ResNetCIFAR(nn.Module):
    def __init__(self, in_channels: int, widths: list[int], blocks: list[int]) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, widths[0], 3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
        )
        stages: list[nn.Module] = []
        c_in = widths[0]
        for i, (c_out, n_blocks) in enumerate(zip(widths, blocks, strict=True)):
            stride = 1 if i == 0 else 2
            layers: list[nn.Module] = []
            for j in range(n_blocks):
                s = stride if j == 0 else 1
                down = None
                if s != 1 or c_in != c_out:
                    down = nn.Sequential(
                        nn.Conv2d(c_in, c_out, 1, stride=s, bias=False), nn.BatchNorm2d(c_out)
                    )
                layers.append(BasicBlock(c_in, c_out, stride=s, downsample=down))
                c_in = c_out
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.out_dim = c_in
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.stages(self.stem(x))).flatten(1)


class Encoder(nn.Module):
    """backbone → h; head(h) → z. The head is SimCLR's: Linear → ReLU → Linear, no biases."""

    def __init__(self, backbone: nn.Module, feat_dim: int, hidden: int, out_dim: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Sequential(
            nn.Linear(feat_dim, hidden, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, out_dim, bias=False),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.backbone(x)
        return h, self.head(h)


def build_encoder(cfg: BackboneConfig, in_channels: int) -> Encoder:
    if cfg.kind == "resnet_cifar":
        bb = ResNetCIFAR(in_channels, list(cfg.widths), list(cfg.blocks))
        return Encoder(bb, bb.out_dim, cfg.head_hidden, cfg.head_dim)
    raise ValueError(f"unknown backbone kind {cfg.kind!r}")
