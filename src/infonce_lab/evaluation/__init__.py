"""Evaluation on frozen features: linear probe, kNN, geometry, statistics over seeds."""

from infonce_lab.evaluation.geometry import alignment, effective_rank, uniformity
from infonce_lab.evaluation.knn import knn_accuracy, knn_recall, topk_cosine
from infonce_lab.evaluation.probe import linear_probe
from infonce_lab.evaluation.stats import mean_ci

__all__ = [
    "alignment", "effective_rank", "knn_accuracy", "knn_recall", "linear_probe", "mean_ci",
    "topk_cosine", "uniformity",
]
