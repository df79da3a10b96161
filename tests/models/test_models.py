from __future__ import annotations

import torch

from infonce_lab.io import write_checksum
from infonce_lab.models import build_encoder
from infonce_lab.models.build import load_encoder
from infonce_lab.params import ResNetConfig


def test_shapes_and_feature_dims():
    cfg = ResNetConfig(widths=[8, 16, 32], blocks=[1, 2, 1], head_hidden=24, head_dim=12)
    enc = build_encoder(cfg, in_channels=1)
    h, z = enc(torch.rand(5, 1, 8, 8))
    assert h.shape == (5, 32) and z.shape == (5, 12)


def test_checkpoint_round_trip(tmp_path):
    cfg = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=8, head_dim=4)
    torch.manual_seed(0)
    enc = build_encoder(cfg, 1).eval()
    torch.save({"state_dict": enc.state_dict(), "backbone": cfg.model_dump(), "in_channels": 1},
               tmp_path / "model.pt")
    write_checksum(tmp_path / "model.pt")   # what save_encoder records beside every checkpoint
    loaded, meta = load_encoder(tmp_path / "model.pt")
    x = torch.rand(3, 1, 8, 8)
    assert torch.equal(enc(x)[0], loaded(x)[0]) and meta["in_channels"] == 1


def test_basic_block_is_torchvisions():
    from torchvision.models.resnet import BasicBlock as TVBlock

    from infonce_lab.models.resnet import BasicBlock

    torch.manual_seed(0)
    down = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 1, stride=2, bias=False), torch.nn.BatchNorm2d(8))
    ref = TVBlock(4, 8, stride=2, downsample=down).eval()
    ours = BasicBlock(4, 8, stride=2, downsample=torch.nn.Sequential(
        torch.nn.Conv2d(4, 8, 1, stride=2, bias=False), torch.nn.BatchNorm2d(8))).eval()
    assert set(ref.state_dict()) == set(ours.state_dict())
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(3, 4, 8, 8)
    assert torch.equal(ref(x), ours(x))
