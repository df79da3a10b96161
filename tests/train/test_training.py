from __future__ import annotations

import math

import pytest
import torch

from infonce_lab.models.build import extract_features
from infonce_lab.params import (
    DigitsAugment,
    FixedSchedule,
    InfoNCEConfig,
    ResNetConfig,
    TrainingConfig,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.train.runtime import lr_at

SMALL = ResNetConfig(widths=[8, 16], blocks=[1, 1], head_hidden=16, head_dim=8)


def _train(x, seed=1, **kw):
    logs, ckpts = [], []
    cfg = TrainingConfig(epochs=3, batch_size=32, lr=1e-3, log_every_steps=2, device="cpu",
                         checkpoint_epochs=[2], **kw)
    res = train_image(x, backbone=SMALL, loss=InfoNCEConfig(), schedule=FixedSchedule(tau=0.5),
                        augment=DigitsAugment(), training=cfg, seed=seed,
                        on_log=lambda s, r: logs.append((s, r)),
                        on_checkpoint=lambda e, enc: ckpts.append(e))
    return res, logs, ckpts


def test_runs_logs_and_checkpoints(digits_splits):
    x = digits_splits.train_x[:100]
    res, logs, ckpts = _train(x)
    assert res.steps == 3 * (100 // 32)
    assert ckpts == [2]
    assert [s for s, _ in logs] == [2, 4, 6, 8, 9]
    rec = logs[-1][1]
    for key in ("loss", "tau", "lr", "samples_per_s", "alignment", "uniformity", "neg_sim_q99"):
        assert math.isfinite(rec[key])
    assert rec["tau"] == 0.5


def test_bit_identical_on_cpu_for_the_same_seed(digits_splits):
    x = digits_splits.train_x[:96]
    a, _, _ = _train(x, seed=7)
    b, _, _ = _train(x, seed=7)
    c, _, _ = _train(x, seed=8)
    sa, sb, sc = a.encoder.state_dict(), b.encoder.state_dict(), c.encoder.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_extract_is_frozen_and_deterministic(digits_splits):
    res, _, _ = _train(digits_splits.train_x[:64])
    before = {k: v.clone() for k, v in res.encoder.state_dict().items()}
    h1, z1 = extract_features(res.encoder, digits_splits.test_x[:50], batch_size=16)
    h2, _ = extract_features(res.encoder, digits_splits.test_x[:50], batch_size=50)
    after = res.encoder.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BN stats untouched too
    assert h1.shape == (50, 16) and z1.shape == (50, 8)
    assert torch.allclose(torch.as_tensor(h1), torch.as_tensor(h2), atol=1e-5)


def test_batch_larger_than_dataset_is_a_clear_error(digits_splits):
    with pytest.raises(ValueError, match="training.batch_size = 32 exceeds"):
        _train(digits_splits.train_x[:20])


def test_lr_schedule():
    assert lr_at(0, 100, 10, 1.0, "cosine") == pytest.approx(0.1)
    assert lr_at(10, 100, 10, 1.0, "cosine") == pytest.approx(1.0)
    assert lr_at(100, 100, 10, 1.0, "cosine") == pytest.approx(0.0, abs=1e-12)
    assert lr_at(55, 100, 10, 1.0, "cosine") == pytest.approx(0.5)
    assert lr_at(80, 100, 0, 2.0, "constant") == 2.0


def test_finite_guard_names_the_first_bad_step_and_only_raises_on_check() -> None:
    from infonce_lab.train.runtime import FiniteGuard

    guard = FiniteGuard(torch.device("cpu"))
    for step, v in enumerate([1.0, 2.0, float("nan"), float("inf"), 3.0]):
        guard.update(torch.tensor(v), step)
        if step == 1:
            guard.check("advice")  # finite so far: no error
    with pytest.raises(FloatingPointError, match=r"non-finite loss at step 2; advice"):
        guard.check("advice")


def test_seed_everything_sets_determinism_without_importing_inductor() -> None:
    import subprocess
    import sys

    code = ("import sys, torch\n"
            "from infonce_lab.train.runtime import seed_everything\n"
            "assert not torch.are_deterministic_algorithms_enabled()\n"
            "seed_everything(0, 1)\n"
            "assert torch.are_deterministic_algorithms_enabled()\n"
            "assert torch.is_deterministic_algorithms_warn_only_enabled()\n"
            "assert 'torch._inductor.config' not in sys.modules\n"
            "seed_everything(0, 1, compiled=True)\n"
            "import torch._inductor.config as c\n"
            "assert c.deterministic\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
