"""Frozen-feature evaluation: linear probe, kNN, splits."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool

from infonce_lab.params.base import (
    WORK,
    LearningRate,
    Seed,
    Strict,
    Temperature,
    Unique,
    WeightDecay,
)


class ProbeConfig(Strict):
    """Linear probe on frozen features (one Linear layer, cross-entropy, Adam)."""

    epochs: Annotated[int, Field(ge=1, le=10_000), WORK] = 100   # bounded work: the paper's 100
    lr: LearningRate = 1e-2
    batch_size: Annotated[int, Field(ge=1)] = 256
    weight_decay: WeightDecay = 0.0
    standardize: StrictBool = True
    seeds: Annotated[list[Seed], Field(min_length=1), Unique, WORK] = [1, 2, 3, 4, 5]


class KNNConfig(Strict):
    """Weighted kNN on cosine similarity of L2-normalised features (weights exp((s−s_max)/T))."""

    k: Annotated[int, Field(ge=1)] = 50
    temperature: Temperature = 0.1


class FewLabelsConfig(Strict):
    """The probe and kNN from ``per_class`` labels of each class, averaged over ``draws``
    stratified label draws from the probe's training split (the SSL literature's few-label
    protocol; SimCLR §4.2)."""

    per_class: Annotated[int, Field(ge=1)] = 3
    draws: Annotated[int, Field(ge=1, le=10_000), WORK] = 20
    seed: Seed = 0


class EvaluationConfig(Strict):
    """WEINCE App. F.1, F.3–F.4. The probe trains on the split of ``split_seeds[0]``; kNN
    averages all splits."""

    val_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.2
    split_seeds: Annotated[list[Seed], Field(min_length=1), Unique, WORK] = [1, 2, 3, 4, 5]
    recall_ks: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1), Unique] = [
        1, 2, 5, 10, 20, 50]
    view_seed: Seed = 0  # the two augmented views of the test set used for alignment
    probe: ProbeConfig = ProbeConfig()
    knn: KNNConfig = KNNConfig()
    few_labels: FewLabelsConfig = FewLabelsConfig()
    batch_size: Annotated[int, Field(ge=1)] = 1024

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["EvaluationConfig", "FewLabelsConfig", "KNNConfig", "ProbeConfig"]
