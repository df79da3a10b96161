"""The evaluation protocol on cached features (SPECS C.7, first version).

For each split seed: a stratified validation split of the labelled train set (⌊val_fraction·n_c⌋
per class); the linear probe trains on the rest and is scored on validation and test, averaged
over the probe seeds; the weighted kNN uses the rest as its bank. Results are averaged over split
seeds. Validation numbers are for selection; test numbers are what gets reported.
"""

from __future__ import annotations

import numpy as np

from infonce_lab.config import ConfigError, EvaluationConfig
from infonce_lab.data.datasets import stratified_split
from infonce_lab.evaluation.knn import knn_accuracy
from infonce_lab.evaluation.probe import linear_probes


def bank_size(n_train_labels: np.ndarray, cfg: EvaluationConfig) -> int:
    """The smallest kNN bank over split seeds (what ``evaluation.knn.k`` must not exceed)."""
    return min(len(stratified_split(n_train_labels, cfg.val_fraction, s)[0]) for s in cfg.split_seeds)


def check_knn_k(train_y: np.ndarray, cfg: EvaluationConfig) -> None:
    """Fail before any compute when ``evaluation.knn.k`` exceeds the kNN bank."""
    bank = bank_size(train_y, cfg)
    if cfg.knn.k > bank:
        raise ConfigError(
            f"evaluation.knn.k = {cfg.knn.k}: larger than the kNN bank ({bank} training features "
            f"after the validation split); use k <= {bank}"
        )


def evaluate_features(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    cfg: EvaluationConfig,
) -> dict[str, dict[str, float]]:
    probe_val, probe_test, knn_val, knn_test = [], [], [], []
    for split_seed in cfg.split_seeds:
        fit_idx, val_idx = stratified_split(train_y, cfg.val_fraction, split_seed)
        fx, fy = train_x[fit_idx], train_y[fit_idx]
        vx, vy = train_x[val_idx], train_y[val_idx]
        accs = linear_probes(
            fx, fy, {"val": (vx, vy), "test": (test_x, test_y)},
            seeds=cfg.probe.seeds, epochs=cfg.probe.epochs, lr=cfg.probe.lr,
            batch_size=cfg.probe.batch_size, weight_decay=cfg.probe.weight_decay,
            standardize=cfg.probe.standardize,
        )
        probe_val += [a["val"] for a in accs]
        probe_test += [a["test"] for a in accs]
        knn_val.append(knn_accuracy(fx, fy, vx, vy, cfg.knn.k, cfg.knn.temperature))
        knn_test.append(knn_accuracy(fx, fy, test_x, test_y, cfg.knn.k, cfg.knn.temperature))
    return {
        "linear": {
            "val_acc": float(np.mean(probe_val)),
            "test_acc": float(np.mean(probe_test)),
            "test_acc_probe_std": float(np.std(probe_test)),
        },
        "knn": {"val_acc": float(np.mean(knn_val)), "test_acc": float(np.mean(knn_test))},
    }
