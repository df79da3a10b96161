"""``training.sync_batchnorm``: under DDP on an accelerator every batch norm becomes a
SyncBatchNorm sharing the same parameters and buffers (so the optimizer and the saved state dict
are untouched); on the CPU, where torch has no SyncBatchNorm kernel, nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import infonce_lab.pipeline.pretrain as pretrain
from infonce_lab.models.build import init_encoder
from infonce_lab.params import (
    DigitsAugment,
    FixedSchedule,
    InfoNCEConfig,
    ResNetConfig,
    TrainingConfig,
)
from infonce_lab.train.runtime import global_batchnorm

_SMALL = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=8, head_dim=4)


def _encoder() -> nn.Module:
    return init_encoder(_SMALL, 1, 0, 16)


def _norms(m: nn.Module) -> list[type]:
    return [type(c) for c in m.modules() if isinstance(c, nn.modules.batchnorm._BatchNorm)]


def test_accelerator_gets_sync_batchnorm_on_the_same_tensors() -> None:
    enc = _encoder()
    before = dict(enc.state_dict(keep_vars=True))
    params = {id(p) for p in enc.parameters()}
    n_norms = len(_norms(enc))
    assert n_norms and nn.SyncBatchNorm not in _norms(enc)
    # Converting touches no device memory: the device only decides whether to convert.
    out = global_batchnorm(enc, torch.device("cuda", 0), enabled=True)
    assert set(_norms(out)) == {nn.SyncBatchNorm}
    assert len(_norms(out)) == n_norms
    assert {id(p) for p in out.parameters()} == params
    after = out.state_dict(keep_vars=True)
    assert list(after) == list(before)
    for k, v in before.items():
        assert after[k] is v, k


def test_cpu_or_disabled_leaves_the_module_alone() -> None:
    enc = _encoder()
    kinds = _norms(enc)
    assert global_batchnorm(enc, torch.device("cpu"), enabled=True) is enc
    assert global_batchnorm(enc, torch.device("cuda", 0), enabled=False) is enc
    assert _norms(enc) == kinds


def test_converted_encoder_computes_the_same_features_in_eval() -> None:
    # Extraction runs in eval mode, where SyncBatchNorm uses the running statistics like BN.
    ref, conv = _encoder(), global_batchnorm(_encoder(), torch.device("cuda", 0), enabled=True)
    x = torch.rand(5, 1, 16, 16, generator=torch.Generator().manual_seed(1))
    ref.eval()
    conv.eval()
    with torch.no_grad():
        torch.testing.assert_close(conv(x), ref(x), rtol=0, atol=0)


@pytest.mark.parametrize("flag", [True, False])
def test_the_pretrain_stage_passes_the_key_to_the_loop(flag: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append(args[5].sync_batchnorm)
        raise RuntimeError("stop before training")

    monkeypatch.setattr(pretrain, "fit", spy)
    x = np.random.default_rng(0).random((8, 1, 16, 16), dtype=np.float32)
    with pytest.raises(RuntimeError, match="stop before training"):
        pretrain.train_image(x, backbone=_SMALL, loss=InfoNCEConfig(),
                             schedule=FixedSchedule(tau=0.5), augment=DigitsAugment(),
                             training=TrainingConfig(epochs=1, batch_size=4, threads=1,
                                                     sync_batchnorm=flag), seed=0)
    assert seen == [flag]
