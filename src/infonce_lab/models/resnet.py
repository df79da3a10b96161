"""CIFAR-style ResNet (3×3 stride-1 stem, no max-pool) and the SimCLR projection head.

torchvision's ResNet hard-codes the ImageNet stem (7×7 stride 2 + max-pool), which turns an 8×8
digit into a 2×2 map before the first block; the CIFAR stem is what the WEINCE code uses for
small images (WEINCE App. F.2). The basic block is written out here rather than imported from
torchvision because importing torchvision costs about 2 s (it pulls in torch._dynamo), paid by
every stage process that loads an encoder — minutes over a study of dozens of runs. It is the
same block as torchvision's ``BasicBlock`` (3×3 conv-BN-ReLU, 3×3 conv-BN, identity or 1×1
projection shortcut); a test checks the two agree weight for weight.
"""

from __future__ import annotations

import torch
from torch import nn

from infonce_lab.params import BackboneConfig


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


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
