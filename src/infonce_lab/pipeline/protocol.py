"""The evaluation protocol on cached features (WEINCE §4, App. F.1, F.3–F.4; first version).

A stratified validation split of the labelled train set (⌊val_fraction·n_c⌋ per class, shuffled
with the split seed). The linear probe trains on the rest of the first split and is scored on
validation and test, averaged over the probe seeds; the kNN (weighted accuracy and recall@k) uses
the rest as its bank and is averaged over all split seeds. The few-label probe and kNN draw
``few_labels.per_class`` labels of each class from the probe's training split, averaged over
draws. Validation numbers are for selection;
test numbers are what gets reported. Geometry: alignment of two augmented views of each test
image, uniformity and effective rank of the clean test features.
"""

from __future__ import annotations

import numpy as np
import torch

from infonce_lab.data.splits import stratified_split
from infonce_lab.evaluation.few_labels import few_label_accuracy
from infonce_lab.evaluation.geometry import alignment, effective_rank, uniformity
from infonce_lab.evaluation.knn import knn_accuracy, knn_recall
from infonce_lab.evaluation.probe import linear_probes
from infonce_lab.params import ConfigError, EvaluationConfig


def bank_size(n_train_labels: np.ndarray, cfg: EvaluationConfig) -> int:
    """The smallest kNN bank over split seeds (what ``evaluation.knn.k`` must not exceed)."""
    return min(len(stratified_split(n_train_labels, cfg.val_fraction, s)[0]) for s in cfg.split_seeds)


def check_evaluation(train_y: np.ndarray, cfg: EvaluationConfig) -> None:
    """Fail before any compute when ``evaluation.knn.k`` exceeds the kNN bank or
    ``evaluation.few_labels.per_class`` a class of the probe's training split."""
    fit_idx, _ = stratified_split(train_y, cfg.val_fraction, cfg.split_seeds[0])
    smallest = int(np.unique(np.asarray(train_y)[fit_idx], return_counts=True)[1].min())
    if cfg.few_labels.per_class > smallest:
        raise ConfigError(
            f"evaluation.few_labels.per_class = {cfg.few_labels.per_class}: the smallest class "
            f"of the probe's training split has {smallest} examples; use a value <= {smallest}")
    bank = bank_size(train_y, cfg)
    if cfg.knn.k > bank:
        raise ConfigError(
            f"evaluation.knn.k = {cfg.knn.k}: larger than the kNN bank ({bank} training features "
            f"after the validation split); use k <= {bank}"
        )
    if max(cfg.recall_ks) > bank:
        raise ConfigError(
            f"evaluation.recall_ks = {cfg.recall_ks}: {max(cfg.recall_ks)} is larger than the kNN "
            f"bank ({bank}); use values <= {bank}"
        )


def evaluate_features(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    cfg: EvaluationConfig,
    test_views: tuple[np.ndarray, np.ndarray] | None = None,
    projected: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> dict[str, dict[str, float]]:
    fit_idx, val_idx = stratified_split(train_y, cfg.val_fraction, cfg.split_seeds[0])
    accs = linear_probes(
        train_x[fit_idx], train_y[fit_idx],
        {"val": (train_x[val_idx], train_y[val_idx]), "test": (test_x, test_y)},
        seeds=cfg.probe.seeds, epochs=cfg.probe.epochs, lr=cfg.probe.lr,
        batch_size=cfg.probe.batch_size, weight_decay=cfg.probe.weight_decay,
        standardize=cfg.probe.standardize,
    )
    knn: dict[str, list[float]] = {}
    for split_seed in cfg.split_seeds:
        fit_idx, val_idx = stratified_split(train_y, cfg.val_fraction, split_seed)
        fx, fy = train_x[fit_idx], train_y[fit_idx]
        for name, (qx, qy) in {"val": (train_x[val_idx], train_y[val_idx]),
                               "test": (test_x, test_y)}.items():
            knn.setdefault(f"{name}_acc", []).append(
                knn_accuracy(fx, fy, qx, qy, cfg.knn.k, cfg.knn.temperature))
            for k, r in knn_recall(fx, fy, qx, qy, cfg.recall_ks).items():
                knn.setdefault(f"{name}_recall_at_{k}", []).append(r)
    few = cfg.few_labels
    fit_idx, _ = stratified_split(train_y, cfg.val_fraction, cfg.split_seeds[0])
    out = {
        "few": few_label_accuracy(train_x[fit_idx], train_y[fit_idx], test_x, test_y,
                                  per_class=few.per_class, draws=few.draws, seed=few.seed,
                                  k=cfg.knn.k, temperature=cfg.knn.temperature),
        "linear": {
            "val_acc": float(np.mean([a["val"] for a in accs])),
            "test_acc": float(np.mean([a["test"] for a in accs])),
            "test_acc_probe_std": float(np.std([a["test"] for a in accs])),
        },
        "knn": {k: float(np.mean(v)) for k, v in knn.items()},
    }
    h = torch.as_tensor(test_x, dtype=torch.float64)
    out["geometry"] = {"uniformity": float(uniformity(h)), "effective_rank": effective_rank(h)}
    if test_views is not None:
        v1, v2 = (torch.as_tensor(v, dtype=torch.float64) for v in test_views)
        out["geometry"]["alignment"] = float(alignment(v1, v2))
    if projected is not None:  # (test z, view-1 z, view-2 z): the space the losses act on
        z, z1, z2 = (torch.as_tensor(v, dtype=torch.float64) for v in projected)
        out["geometry_z"] = {"alignment": float(alignment(z1, z2)),
                             "uniformity": float(uniformity(z))}
    return out
