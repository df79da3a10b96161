from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from infonce_lab.models.vision import (
    ProjectionHead,
    VisionEncoder,
    build_vision_encoder,
    resnet_backbone,
    vit_small_backbone,
)
from infonce_lab.train.optim import LARS, build_optimizer, param_groups


def n_params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


# --- parameter counts from the architecture, not from constants -------------------------------

WIDTHS = (64, 128, 256, 512)


def conv_bn(c_in: int, c_out: int, k: int) -> int:
    return c_in * c_out * k * k + 2 * c_out  # bias-free conv + BN (γ, β)


def resnet18_formula(in_ch: int, stem_k: int) -> int:
    total = conv_bn(in_ch, 64, stem_k)
    c_in = 64
    for i, w in enumerate(WIDTHS):
        for j in range(2):
            total += conv_bn(c_in, w, 3) + conv_bn(w, w, 3)
            if j == 0 and (i > 0 or c_in != w):
                total += conv_bn(c_in, w, 1)
            c_in = w
    return total


def resnet50_formula(in_ch: int, stem_k: int) -> int:
    total = conv_bn(in_ch, 64, stem_k)
    c_in = 64
    for w, n in zip(WIDTHS, (3, 4, 6, 3), strict=True):
        for j in range(n):
            total += conv_bn(c_in, w, 1) + conv_bn(w, w, 3) + conv_bn(w, 4 * w, 1)
            if j == 0:
                total += conv_bn(c_in, 4 * w, 1)
            c_in = 4 * w
    return total


def vit_formula(in_ch: int, image: int, patch: int, d: int = 384, mlp: int = 1536,
                layers: int = 12) -> int:
    tokens = (image // patch) ** 2 + 1
    embed = in_ch * patch * patch * d + d + d + tokens * d  # patch conv (+bias), cls, positions
    block = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (d * mlp + mlp) + (mlp * d + d)
    return embed + layers * block + 2 * d  # + final LayerNorm


def test_resnet18_param_count_matches_formula_and_torchvision():
    from torchvision.models import resnet18

    std, dim = resnet_backbone(18, cifar_stem=False)
    assert dim == 512
    tv_total = n_params(resnet18(weights=None))
    assert n_params(std) == resnet18_formula(3, 7) == tv_total - (512 * 1000 + 1000)
    cifar, _ = resnet_backbone(18, cifar_stem=True)
    assert n_params(cifar) == resnet18_formula(3, 3)
    assert n_params(std) == 11_176_512 and n_params(cifar) == 11_168_832  # the formula's values


def test_resnet50_param_count_and_forward():
    net, dim = resnet_backbone(50, cifar_stem=True)
    assert dim == 2048 and n_params(net) == resnet50_formula(3, 3)
    h = net.eval()(torch.rand(2, 3, 32, 32))
    assert h.shape == (2, 2048)


def test_vit_small_param_count():
    net, dim = vit_small_backbone(224, 16)
    assert dim == 384 and n_params(net) == vit_formula(3, 224, 16) == 21_665_664
    one_ch, _ = vit_small_backbone(32, 4, in_channels=1)
    assert n_params(one_ch) == vit_formula(1, 32, 4)


# --- shapes -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("arch", "size", "channels", "stem", "patch", "h_dim"),
    [
        ("resnet18", 32, 3, True, 4, 512),
        ("resnet18", 96, 3, False, 4, 512),
        ("resnet18", 32, 1, True, 4, 512),
        ("vit_small", 32, 3, None, 4, 384),
        ("vit_small", 64, 3, None, 8, 384),
        ("vit_small", 32, 1, None, 4, 384),
    ],
)
def test_encoder_shapes(arch, size, channels, stem, patch, h_dim):
    torch.manual_seed(0)
    enc = build_vision_encoder(arch, image_size=size, in_channels=channels, cifar_stem=stem,
                               patch_size=patch)
    h, z = enc(torch.rand(2, channels, size, size))
    assert h.shape == (2, h_dim) and z.shape == (2, 64)
    assert enc.feature_dim == h_dim and torch.isfinite(z).all()


def test_automatic_stem_and_bad_args():
    small = build_vision_encoder("resnet18", image_size=32, in_channels=3)
    large = build_vision_encoder("resnet18", image_size=96, in_channels=1)
    assert small.backbone.conv1.kernel_size == (3, 3) and isinstance(small.backbone.maxpool,
                                                                     nn.Identity)
    assert large.backbone.conv1.kernel_size == (7, 7) and large.backbone.conv1.in_channels == 1
    assert isinstance(large.backbone.maxpool, nn.MaxPool2d)
    with pytest.raises(ValueError, match="divisible"):
        vit_small_backbone(32, 5)
    with pytest.raises(ValueError, match="unknown vision arch"):
        build_vision_encoder("vgg", image_size=32, in_channels=3)


def _after_stem(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    seen: list[torch.Size] = []
    handle = net.layer1.register_forward_pre_hook(lambda _m, args: seen.append(args[0].shape))
    with torch.no_grad():
        net.eval()(x)
    handle.remove()
    return seen[0]


def test_cifar_stem_keeps_resolution_standard_stem_quarters_it():
    cifar, _ = resnet_backbone(18, cifar_stem=True)
    std, _ = resnet_backbone(18, cifar_stem=False)
    assert not any(isinstance(m, nn.MaxPool2d) for m in cifar.modules())
    assert _after_stem(cifar, torch.rand(1, 3, 32, 32)) == (1, 64, 32, 32)
    assert _after_stem(std, torch.rand(1, 3, 96, 96)) == (1, 64, 24, 24)  # conv /2, max-pool /2


def test_projection_head_has_no_biases():
    head = ProjectionHead(512, 64)
    linears = [m for m in head if isinstance(m, nn.Linear)]
    assert [tuple(m.weight.shape) for m in linears] == [(512, 512), (64, 512)]
    assert all(m.bias is None for m in linears) and isinstance(head[1], nn.ReLU)
    assert ProjectionHead(8, 4, hidden=16)[2].weight.shape == (4, 16)
    # same state-dict layout as resnet.Encoder's head
    assert set(VisionEncoder(nn.Identity(), ProjectionHead(8)).state_dict()) == {
        "head.0.weight", "head.2.weight"}


def test_channels_last_matches_contiguous():
    torch.manual_seed(0)
    enc = build_vision_encoder("resnet18", image_size=32, in_channels=3).eval()
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        h_ref, z_ref = enc(x)
        enc = enc.to(memory_format=torch.channels_last)
        h, z = enc(x.contiguous(memory_format=torch.channels_last))
    torch.testing.assert_close(h, h_ref, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(z, z_ref, rtol=1e-4, atol=1e-5)


# --- LARS ---------------------------------------------------------------------------------------

def _two_params() -> tuple[nn.Parameter, nn.Parameter]:
    return nn.Parameter(torch.tensor([[3.0, 4.0]])), nn.Parameter(torch.tensor([1.0]))


def test_lars_two_steps_against_hand_computation():
    w, b = _two_params()
    lr, wd, eta, mom = 0.1, 0.1, 0.01, 0.9
    opt = LARS([{"params": [w]}, {"params": [b], "weight_decay": 0.0, "lars_exclude": True}],
               lr=lr, momentum=mom, weight_decay=wd, trust_coefficient=eta, eps=0.0)
    g_w, g_b = [0.6, 0.8], 0.5  # ‖g_w‖ = 1
    for _ in range(2):
        w.grad, b.grad = torch.tensor([g_w]), torch.tensor([g_b])
        opt.step()
    # step 1: ‖w‖ = 5, trust = 0.01·5/(1 + 0.1·5) = 1/30, u = (g + 0.1·w)/30 = (0.03, 0.04)
    w1 = [3.0 - lr * 0.03, 4.0 - lr * 0.04]
    assert w1 == pytest.approx([2.997, 3.996])
    # step 2: w1 = 0.999·(3, 4) so ‖w1‖ = 4.995
    trust = eta * 4.995 / (1.0 + wd * 4.995)
    buf = [mom * 0.03 + trust * (0.6 + wd * w1[0]), mom * 0.04 + trust * (0.8 + wd * w1[1])]
    assert w.detach().flatten().tolist() == pytest.approx([w1[0] - lr * buf[0],
                                                           w1[1] - lr * buf[1]], rel=1e-6)
    # the excluded bias is plain SGD with momentum and no decay: 1 − 0.1·0.5 − 0.1·(0.9·0.5 + 0.5)
    assert b.item() == pytest.approx(1.0 - lr * 0.5 - lr * (mom * 0.5 + 0.5), rel=1e-6)


def test_lars_excluded_group_equals_torch_sgd():
    torch.manual_seed(0)
    p1, p2 = nn.Parameter(torch.randn(5)), nn.Parameter(torch.randn(5))
    p2.data.copy_(p1.data)
    ours = LARS([{"params": [p1], "lars_exclude": True, "weight_decay": 0.0}], lr=0.05)
    ref = torch.optim.SGD([p2], lr=0.05, momentum=0.9)
    for _ in range(3):
        g = torch.randn(5)
        p1.grad, p2.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    torch.testing.assert_close(p1, p2)


def test_lars_large_trust_no_momentum_is_a_relative_normalized_step():
    # documented: wd = 0, momentum = 0 ⇒ each adapted tensor moves by lr·η·‖w‖ along −g/‖g‖,
    # unclipped however large η is; a tensor with ‖w‖ = 0 falls back to trust 1 (a plain step)
    w = nn.Parameter(torch.tensor([3.0, 4.0]))
    zero = nn.Parameter(torch.zeros(2))
    lr, eta = 0.01, 50.0
    opt = LARS([w, zero], lr=lr, momentum=0.0, trust_coefficient=eta, eps=0.0)
    g = torch.tensor([0.0, 1e-3])
    w.grad, zero.grad = g.clone(), g.clone()
    opt.step()
    assert w.detach().tolist() == pytest.approx([3.0, 4.0 - lr * eta * 5.0])  # 4 − 2.5
    assert zero.detach().tolist() == pytest.approx([0.0, -lr * 1e-3])
    assert not opt.state[w]  # no momentum buffer kept at momentum 0


def test_lars_converges_on_least_squares():
    torch.manual_seed(0)
    x = torch.randn(64, 5)
    w_true, b_true = torch.randn(5, 1), 0.3
    y = x @ w_true + b_true
    model = nn.Linear(5, 1)
    opt = build_optimizer("lars", model, lr=0.5, weight_decay=0.0)
    opt.param_groups[0]["trust_coefficient"] = 0.02
    total = 600
    for step in range(total):
        for group in opt.param_groups:
            # 20 steps of linear warmup, then a half cosine to 0 (SimCLR's recipe with LARS)
            group["lr"] = (0.5 * (step + 1) / 20 if step < 20 else
                           0.25 * (1 + math.cos(math.pi * (step - 20) / (total - 20))))
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert loss.item() < 1e-4
    torch.testing.assert_close(model.weight.detach(), w_true.T, atol=1e-2, rtol=0)


# --- schedule and builder -----------------------------------------------------------------------

def _small_net() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4, 2))


def test_param_groups_split():
    net = _small_net()
    decayed, excluded = param_groups(net, 1e-4, exclude_bias_and_norm=True)
    assert {id(p) for p in decayed["params"]} == {id(net[0].weight), id(net[3].weight)}
    assert len(excluded["params"]) == 4  # conv bias, BN γ and β, linear bias
    assert decayed["weight_decay"] == 1e-4 and not decayed["lars_exclude"]
    assert excluded["weight_decay"] == 0.0 and excluded["lars_exclude"]
    (only,) = param_groups(net, 1e-4, exclude_bias_and_norm=False)
    assert len(only["params"]) == 6 and only["weight_decay"] == 1e-4


@pytest.mark.parametrize(
    ("name", "cls", "n_groups"),
    [("adam", torch.optim.Adam, 1), ("adamw", torch.optim.AdamW, 1),
     ("sgd", torch.optim.SGD, 2), ("lars", LARS, 2)],
)
def test_build_optimizer(name, cls, n_groups):
    opt = build_optimizer(name, _small_net(), lr=3e-4, weight_decay=1e-6)
    assert type(opt) is cls and len(opt.param_groups) == n_groups
    assert opt.param_groups[0]["weight_decay"] == 1e-6 and opt.param_groups[0]["lr"] == 3e-4
    if n_groups == 2:
        assert opt.param_groups[1]["weight_decay"] == 0.0 and opt.param_groups[1]["lars_exclude"]
        assert opt.param_groups[0]["momentum"] == 0.9
    with pytest.raises(ValueError):
        build_optimizer("rmsprop", _small_net(), lr=1e-3, weight_decay=0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_adam_foreach_is_the_per_tensor_update_bit_for_bit(name):
    """build_optimizer's foreach route against torch's per-tensor loop (the CPU's default):
    identical weights and moments after steps under a moving learning rate, with weight decay."""
    torch.manual_seed(0)
    nets = [_small_net(), _small_net()]
    nets[1].load_state_dict(nets[0].state_dict())
    ours = build_optimizer(name, nets[0], lr=3e-3, weight_decay=1e-2)
    cls = torch.optim.Adam if name == "adam" else torch.optim.AdamW
    ref = cls(nets[1].parameters(), lr=3e-3, weight_decay=1e-2, foreach=False)
    assert ours.param_groups[0]["foreach"] and not ref.param_groups[0]["foreach"]
    x = torch.randn(16, 3, 3, 3)   # _small_net's conv leaves 1×1
    for step in range(25):
        for net, opt in zip(nets, (ours, ref), strict=True):
            for g in opt.param_groups:
                g["lr"] = 3e-3 * (1 + math.cos(math.pi * step / 25)) / 2 + 1e-5
            opt.zero_grad(set_to_none=True)
            (net(x).sin().sum() + step * net(x).square().mean()).backward()
            opt.step()
    for p, q in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        assert torch.equal(p, q)
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(ours.state[p][key], ref.state[q][key])
