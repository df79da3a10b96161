"""Evaluation on frozen features: linear probe, kNN, geometry, statistics over seeds."""

from infonce_lab.evaluation.geometry import alignment, uniformity
from infonce_lab.evaluation.knn import knn_accuracy, topk_cosine
from infonce_lab.evaluation.probe import linear_probe
from infonce_lab.evaluation.stats import mean_ci

__all__ = ["alignment", "knn_accuracy", "linear_probe", "mean_ci", "topk_cosine", "uniformity"]
