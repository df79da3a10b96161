"""torchvision backbones (ResNet-18/50, ViT-S) for the image experiments, and the SimCLR head.

As in WEINCE's code (App. F.2): the ResNets are torchvision's, trained from scratch, with fc
replaced by identity so h is the pooled 512-d (R18) or 2048-d (R50) feature. Small images
(CIFAR-10/100, ImageNet-32) get the CIFAR stem — 3×3 stride-1 conv, no max-pool — because the
ImageNet stem (7×7 stride 2 + max-pool) would shrink a 32-px image to 8×8 before the first block;
STL-10 (96 px) and ImageNet-style data keep the standard stem. The paper gives no ViT-S recipe
(§4, §4.1 only name it); ViT-S/patch is the usual DeiT-S shape (12 layers, 6 heads, width 384,
MLP 1536) with the class token as h.

torchvision is imported inside the builders, not at module level: importing it costs about 2 s
(see models/resnet.py), and stages that only need the CIFAR ResNet import this package too.

``VisionEncoder`` has the same surface as ``resnet.Encoder`` — ``forward(x) -> (h, z)`` and the
``backbone``/``head`` submodules, with the head's layers at ``head.0``/``head.2`` — so the
training, feature and evaluation code can treat the two alike.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

VISION_ARCHS: tuple[str, ...] = ("resnet18", "resnet50", "vit_small")

# ImageNet-32 and CIFAR are 32 px and take the CIFAR stem; STL-10 (96 px) and anything larger keep
# the ImageNet stem (as in WEINCE's code, App. F.2). Sizes in between (e.g. 64-px Tiny-ImageNet,
# whose pipeline the paper does not give) are on the standard-stem side of this threshold; pass
# cifar_stem explicitly to override.
CIFAR_STEM_MAX_SIZE = 32


def _kaiming_conv(conv: nn.Conv2d) -> nn.Conv2d:
    # The same init torchvision's ResNet gives its own convs, so a swapped stem is not the odd one out.
    nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
    return conv


def resnet_backbone(depth: Literal[18, 50], cifar_stem: bool,
                    in_channels: int = 3) -> tuple[nn.Module, int]:
    """torchvision ResNet-``depth`` without fc, returning (module, feature dim 512 | 2048)."""
    from torchvision.models import resnet18, resnet50

    if depth == 18:
        net, dim = resnet18(weights=None), 512
    elif depth == 50:
        net, dim = resnet50(weights=None), 2048
    else:
        raise ValueError(f"ResNet depth must be 18 or 50, got {depth!r}")
    if cifar_stem:
        net.conv1 = _kaiming_conv(nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False))
        net.maxpool = nn.Identity()
    elif in_channels != 3:
        net.conv1 = _kaiming_conv(nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False))
    net.fc = nn.Identity()
    return net, dim


def vit_small_backbone(image_size: int, patch_size: int,
                       in_channels: int = 3) -> tuple[nn.Module, int]:
    """torchvision ViT-S/``patch_size`` whose output is the 384-d class token (heads = identity)."""
    if image_size <= 0 or patch_size <= 0 or image_size % patch_size != 0:
        raise ValueError(
            f"ViT needs a positive image_size divisible by patch_size; got image_size={image_size}, "
            f"patch_size={patch_size}"
        )
    from torchvision.models import VisionTransformer

    hidden = 384
    net = VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=12,
                            num_heads=6, hidden_dim=hidden, mlp_dim=1536)
    if in_channels != 3:
        proj = nn.Conv2d(in_channels, hidden, kernel_size=patch_size, stride=patch_size)
        # torchvision's own patch-embedding init, which it applies only to the 3-channel conv it built
        fan_in = in_channels * patch_size * patch_size
        nn.init.trunc_normal_(proj.weight, std=math.sqrt(1.0 / fan_in))
        nn.init.zeros_(proj.bias)
        net.conv_proj = proj
    net.heads = nn.Identity()
    return net, hidden


class ProjectionHead(nn.Sequential):
    """SimCLR head (WEINCE App. F.2): Linear(d_in→hidden) → ReLU → Linear(hidden→d_out), no
    biases.

    ``hidden`` defaults to d_in, as in the paper's code. A Sequential so the state-dict keys
    (``0.weight``, ``2.weight``) match ``resnet.Encoder``'s head.
    """

    def __init__(self, d_in: int, d_out: int = 64, hidden: int | None = None) -> None:
        hidden = d_in if hidden is None else hidden
        super().__init__(
            nn.Linear(d_in, hidden, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, d_out, bias=False),
        )
        self.d_in, self.hidden, self.d_out = d_in, hidden, d_out


class VisionEncoder(nn.Module):
    """backbone → h; head(h) → z — the ``resnet.Encoder`` API for torchvision backbones."""

    def __init__(self, backbone: nn.Module, head: ProjectionHead) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.feature_dim = head.d_in
        self.out_dim = head.d_out

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.backbone(x)
        return h, self.head(h)


def build_vision_encoder(arch: str, *, image_size: int, in_channels: int,
                         cifar_stem: bool | None = None, patch_size: int = 4, head_dim: int = 64,
                         head_hidden: int | None = None) -> VisionEncoder:
    """Backbone ``arch`` ∈ {resnet18, resnet50, vit_small} plus the SimCLR head.

    ``cifar_stem=None`` picks the CIFAR stem for image_size ≤ 32 (CIFAR, ImageNet-32) and the
    standard stem above (STL-10 at 96 px); it is ignored by the ViT. ``patch_size`` is the ViT's
    only. ``head_hidden=None`` makes the head's hidden width the feature dim.
    """
    if arch in ("resnet18", "resnet50"):
        stem = image_size <= CIFAR_STEM_MAX_SIZE if cifar_stem is None else cifar_stem
        backbone, dim = resnet_backbone(18 if arch == "resnet18" else 50, stem, in_channels)
    elif arch == "vit_small":
        backbone, dim = vit_small_backbone(image_size, patch_size, in_channels)
    else:
        raise ValueError(f"unknown vision arch {arch!r}; expected one of {VISION_ARCHS}")
    return VisionEncoder(backbone, ProjectionHead(dim, head_dim, head_hidden))
