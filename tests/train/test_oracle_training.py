"""The label oracle in the training loop (``mask_same_class``; Chuang et al. 2020, §5): the image
source hands the loss the classes of exactly the rows it embedded, only a loss that declares
``needs_labels`` gets them, and every other loss trains as it did before labels existed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from infonce_lab.data.batch_part import BatchPart
from infonce_lab.data.splits import LabelledSplits
from infonce_lab.losses import info_nce
from infonce_lab.losses.objects import StatelessLoss
from infonce_lab.models.build import init_encoder
from infonce_lab.params import (
    DigitsAugment,
    FixedSchedule,
    InfoNCEConfig,
    ResNetConfig,
    TrainingConfig,
)
from infonce_lab.pipeline.pretrain import train_image
from infonce_lab.schedules import Fixed
from infonce_lab.train.image_source import ImageViews
from infonce_lab.train.loop import Plan, fit
from loss_knobs import info_nce_knobs

SMALL = ResNetConfig(widths=[8], blocks=[1], head_hidden=8, head_dim=4)


class _Spy(StatelessLoss):
    """InfoNCE (masked when given labels) that records the keyword arguments of every call."""

    def __init__(self, needs: bool) -> None:
        self.needs_labels = needs
        self.calls: list[dict[str, Any]] = []

    def __call__(self, z1, z2, tau, **kw):  # noqa: ANN001, ANN003, ANN204
        self.calls.append({k: v.clone() for k, v in kw.items()})
        return info_nce(z1, z2, tau, labels=kw.get("labels"), **info_nce_knobs())


class _Recording(ImageViews):
    """The image source, noting the rows each step embeds and the rows it labels."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.embedded: list[torch.Tensor] = []
        self.labelled: list[torch.Tensor] = []

    def inputs(self, idx: torch.Tensor, part: BatchPart | None = None) -> torch.Tensor:
        self.embedded.append(idx.clone())
        return super().inputs(idx, part)

    def labels(self, idx: torch.Tensor) -> torch.Tensor:
        self.labelled.append(idx.clone())
        return super().labels(idx)


def _fit(source: Any, loss: StatelessLoss) -> None:
    encoder = init_encoder(SMALL, 1, 0, 8)
    fit(source, encoder, loss, Fixed(0.5), torch.optim.SGD(encoder.parameters(), lr=0.01),
        Plan(total_steps=4, steps_per_epoch=2, batch_size=16, lr=0.01, lr_schedule="constant"),
        device=torch.device("cpu"), seed=0)


def _data(n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((n, 1, 8, 8), dtype=np.float32), rng.integers(0, 4, n)


def test_the_loop_passes_labels_only_to_a_loss_that_needs_them():
    x, y = _data()
    plain = _Spy(needs=False)
    _fit(_Recording(x, DigitsAugment(), torch.device("cpu"), 0, y_train=y), plain)
    assert len(plain.calls) == 4 and all(call == {} for call in plain.calls)

    oracle, source = _Spy(needs=True), _Recording(x, DigitsAugment(), torch.device("cpu"), 0,
                                                  y_train=y)
    _fit(source, oracle)
    assert len(oracle.calls) == 4
    # each step's labels are the classes of the rows it embedded, in the same order
    for call, embedded, labelled in zip(oracle.calls, source.embedded, source.labelled,
                                        strict=True):
        assert torch.equal(labelled, embedded)
        assert torch.equal(call["labels"], torch.as_tensor(y)[embedded])


def test_a_source_without_labels_is_refused_before_any_update():
    x, _ = _data()
    with pytest.raises(ValueError, match="built without the images' labels"):
        _fit(ImageViews(x, DigitsAugment(), torch.device("cpu"), 0), _Spy(needs=True))

    class Sentences:   # what the text study's source offers: no labels at all
        n, order_device = 40, torch.device("cpu")

    with pytest.raises(ValueError, match="reads class labels.*Sentences has none"):
        _fit(Sentences(), _Spy(needs=True))


def _train(x: np.ndarray, loss: InfoNCEConfig, y: np.ndarray | None = None
           ) -> tuple[Any, list[dict[str, float]]]:
    logs: list[dict[str, float]] = []
    res = train_image(x, backbone=SMALL, loss=loss, schedule=FixedSchedule(tau=0.5),
                      augment=DigitsAugment(), seed=3, y=y, on_log=lambda s, r: logs.append(r),
                      training=TrainingConfig(epochs=2, batch_size=32, lr=1e-3, warmup_epochs=0,
                                              log_every_steps=1, device="cpu", threads=1))
    return res, logs


def test_labels_that_mask_nothing_train_infonce_bit_for_bit(digits_splits):
    """The oracle with every image its own class masks nothing: the same weights as InfoNCE, bit
    for bit (reading labels draws no random number and changes no value). With the real digit
    classes it removes ≈ 1/10 of the negatives and trains to other weights."""
    x, y = digits_splits.train_x[:128], digits_splits.train_y[:128]
    plain, _ = _train(x, InfoNCEConfig())
    distinct, _ = _train(x, InfoNCEConfig(mask_same_class=True), np.arange(len(x)))
    real, logs = _train(x, InfoNCEConfig(mask_same_class=True), y)
    a, b, c = (r.encoder.state_dict() for r in (plain, distinct, real))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    assert math.isfinite(real.final_loss)
    shares = [r["masked_negative_share"] for r in logs]
    assert all(0.02 < s < 0.25 for s in shares)   # 10 classes: ≈ 0.1 of every batch's negatives


def test_train_image_refuses_the_oracle_without_labels(digits_splits):
    with pytest.raises(ValueError, match="mask_same_class: true.*labels"):
        _train(digits_splits.train_x[:64], InfoNCEConfig(mask_same_class=True))


def test_pretraining_labels_mark_unlabeled_images_unknown():
    """STL-10's unlabeled split is pretrained on too: its images get −1, a class the oracle never
    masks (losses.common.same_class_mask)."""
    x = np.zeros((3, 1, 2, 2), np.float32)
    splits = LabelledSplits(x, np.array([4, 1, 4]), x, np.array([0, 1, 2]), ["a"], "test",
                            unlabeled_x=np.zeros((2, 1, 2, 2), np.float32))
    assert splits.pretrain_y().tolist() == [4, 1, 4, -1, -1]
    assert len(splits.pretrain_y()) == len(splits.pretrain_x())
    labelled = LabelledSplits(x, np.array([4, 1, 4]), x, np.array([0, 1, 2]), ["a"], "test")
    assert labelled.pretrain_y() is labelled.train_y
    with pytest.raises(ValueError, match="2 labels for 3 training images"):
        ImageViews(x, DigitsAugment(), torch.device("cpu"), 0, y_train=np.array([0, 1]))
