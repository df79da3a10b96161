"""SigLIP's sigmoid loss: against a brute-force double loop, through gradcheck, and through the
training loop, which must hand its learnable temperature and bias to the optimizer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml

from infonce_lab.losses.siglip import SigmoidLoss, sigmoid_loss
from infonce_lab.params import (
    DigitsAugment,
    NoSchedule,
    ResNetConfig,
    SigLIPConfig,
    TrainingConfig,
    parse_params,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.pipeline.registry import build_loss


def _brute(z1: torch.Tensor, z2: torch.Tensor, t: float, b: float) -> float:
    n = len(z1)
    u = [v / math.sqrt(float(v @ v)) for v in z1.double()]
    w = [v / math.sqrt(float(v @ v)) for v in z2.double()]
    total = 0.0
    for i in range(n):
        for j in range(n):
            y = 1.0 if i == j else -1.0
            logit = t * float(u[i] @ w[j]) + b
            total += math.log1p(math.exp(-y * logit))  # −log σ(y·logit)
    return total / n


@pytest.mark.parametrize(("t", "b"), [(10.0, -10.0), (3.0, 0.5)])
def test_matches_the_double_loop_of_eq_1(t, b):
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(7, 5, generator=g), torch.randn(7, 5, generator=g)
    got = sigmoid_loss(z1.double(), z2.double(), torch.tensor(math.log(t), dtype=torch.float64),
                       torch.tensor(b, dtype=torch.float64))
    assert float(got) == pytest.approx(_brute(z1, z2, t, b), rel=1e-12)


def test_gradients_in_float64():
    g = torch.Generator().manual_seed(1)
    z1 = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    ls = torch.tensor(math.log(4.0), dtype=torch.float64, requires_grad=True)
    bias = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(sigmoid_loss, (z1, z2, ls, bias))


def test_the_registry_builds_a_module_with_the_papers_init():
    loss = build_loss(SigLIPConfig())
    assert isinstance(loss, SigmoidLoss)
    assert float(loss.log_scale.detach().exp()) == pytest.approx(10.0)
    assert float(loss.bias.detach()) == -10.0
    frozen = build_loss(SigLIPConfig(learn_scale=False, learn_bias=False))
    assert not any(p.requires_grad for p in frozen.parameters())


def _train(loss: SigLIPConfig, digits_splits, **kw):
    logs: list[dict[str, float]] = []
    res = train_image(digits_splits.train_x[:256], loss=loss, schedule=NoSchedule(),
                      backbone=ResNetConfig(widths=[8], blocks=[1], head_hidden=8, head_dim=8),
                      augment=DigitsAugment(), seed=0, on_log=lambda s, r: logs.append(r),
                      training=TrainingConfig(epochs=2, batch_size=64, lr=0.05, warmup_epochs=0,
                                              log_every_steps=1, device="cpu", **kw))
    return res, logs


@pytest.mark.parametrize("optimizer", ["adam", "lars"])
def test_the_loop_learns_the_temperature_and_bias(digits_splits, optimizer):
    res, logs = _train(SigLIPConfig(), digits_splits, optimizer=optimizer)
    state = res.loss_state
    assert set(state) == {"log_scale", "bias"}
    assert float(state["log_scale"]) != pytest.approx(math.log(10.0), abs=1e-6)
    assert float(state["bias"]) != pytest.approx(-10.0, abs=1e-6)
    # Telemetry records the value each step's forward used: the init first, then the learned one.
    assert logs[0]["scale"] == pytest.approx(10.0) and logs[0]["bias"] == -10.0
    assert logs[-1]["scale"] != pytest.approx(10.0, abs=1e-6)
    assert "tau" not in logs[-1]  # no schedule: the loss's own temperature is the record
    frozen, _ = _train(SigLIPConfig(learn_scale=False, learn_bias=False), digits_splits,
                       optimizer=optimizer)
    assert float(frozen.loss_state["bias"]) == -10.0


def test_params_pair_it_with_a_schedule_of_kind_none():
    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    raw["study"].update(losses=["siglip"], schedules=["fixed_t02"])
    with pytest.raises(ValueError, match=r"schedules.fixed_t02.kind = .fixed.: expected .none.*learns its own"):
        parse_params(raw)
    raw["study"]["schedules"] = ["learned"]
    assert parse_params(raw).schedules["learned"].kind == "none"
