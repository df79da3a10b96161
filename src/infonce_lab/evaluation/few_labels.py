"""Few-label evaluation: a linear probe and kNN that see only ``per_class`` labels of each class.

The semi-supervised protocol of the SSL literature (SimCLR §4.2 reports 1% and 10% labels): with
every label, a task as small as digits is saturated and raw pixels beat every trained encoder on
kNN; with a handful of labels per class, what the features have learned is what separates them.
Each draw is a stratified subset of the labelled set; the accuracies are averaged over draws, so
the number has little label-draw noise left and the spread over encoder seeds is the study's.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from infonce_lab.evaluation.knn import knn_accuracy


def label_draws(labels: np.ndarray, per_class: int, draws: int, seed: int) -> list[np.ndarray]:
    """``draws`` index sets, each ``per_class`` indices of every class (without replacement
    within a draw), sorted; the same for any features given the same labels and seed."""
    labels = np.asarray(labels)
    classes, counts = np.unique(labels, return_counts=True)
    if per_class > counts.min():
        raise ValueError(f"per_class = {per_class}: class {classes[counts.argmin()]} has only "
                         f"{counts.min()} labelled examples")
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(labels == c) for c in classes]
    return [np.sort(np.concatenate([rng.choice(m, per_class, replace=False) for m in members]))
            for _ in range(draws)]


def few_label_accuracy(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray,
                       test_y: np.ndarray, *, per_class: int, draws: int, seed: int, k: int,
                       temperature: float) -> dict[str, float]:
    """Mean test accuracy over label draws of a standardised L2 logistic regression (C = 1) and
    of the weighted cosine kNN (``k`` capped at the draw's size), with their spreads over draws.

    scikit-learn's L-BFGS solves the probe exactly on these tiny sets in milliseconds; the Adam
    probe of the full protocol (``linear_probes``) is made for thousands of examples."""
    probe, knn = [], []
    for idx in label_draws(train_y, per_class, draws, seed):
        x, y = train_x[idx], train_y[idx]
        scale = StandardScaler().fit(x)
        fit = LogisticRegression(max_iter=5000).fit(scale.transform(x), y)
        probe.append(fit.score(scale.transform(test_x), test_y))
        knn.append(knn_accuracy(x, y, test_x, test_y, min(k, len(idx)), temperature))
    return {"probe_test_acc": float(np.mean(probe)), "knn_test_acc": float(np.mean(knn)),
            "probe_test_acc_draw_std": float(np.std(probe)),
            "knn_test_acc_draw_std": float(np.std(knn))}
