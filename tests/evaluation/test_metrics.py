"""The metric declarations (evaluation/metrics.py): consistent among themselves, produced by the
evaluation protocols under exactly those names, and the lists the aggregate stage and the report
use are the ones derived from them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from infonce_lab import aggregate
from infonce_lab.evaluation import metrics
from infonce_lab.params import EvaluationConfig
from infonce_lab.pipeline.protocol import evaluate_features
from infonce_lab.report import render


def test_declarations_are_consistent():
    names = [m.name for m in metrics.METRICS]
    assert len(names) == len(set(names))
    for m in metrics.METRICS:
        assert m.selected_on is None or m.selected_on in metrics.BY_NAME, m.name
        assert not m.headline or m.compared, f"{m.name}: a headline metric is compared"
        assert m.name.count(".") == 1
    assert metrics.names(headline=True) and metrics.names(table=True)


def test_the_image_protocol_writes_every_image_metric_by_its_declared_name():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 40)
    x = rng.normal(size=(120, 6)) + 2.0 * np.eye(6)[y % 6]
    cfg = EvaluationConfig(probe={"epochs": 5}, recall_ks=[1, 2, 5, 10, 20, 50])
    out = evaluate_features(x[:90], y[:90], x[90:], y[90:], cfg,
                            test_views=(x[90:], x[90:] + 0.1),
                            projected=(x[90:, :3], x[90:, :3], x[90:, :3] + 0.1))
    written = {f"{section}.{key}" for section, values in out.items() for key in values}
    image = {m.name for m in metrics.METRICS if m.name.split(".")[0] in (
        "linear", "knn", "geometry", "geometry_z", "few")}
    assert image <= written, image - written
    # z's geometry is z's: the projected rows, not h's (brute force: the loss's own functions)
    from infonce_lab.losses.geometry import alignment, uniformity
    z = torch.as_tensor(x[90:, :3], dtype=torch.float64)
    assert out["geometry_z"]["uniformity"] == pytest.approx(float(uniformity(z)))
    assert out["geometry_z"]["alignment"] == pytest.approx(float(alignment(z, z + 0.1)))


def test_the_stages_lists_are_derived():
    assert aggregate.COMPARED == ("linear.test_acc", "knn.test_acc", "knn.test_recall_at_1",
                                  "knn.test_recall_at_2", "knn.test_recall_at_5",
                                  "knn.test_recall_at_10", "knn.test_recall_at_20",
                                  "knn.test_recall_at_50", "few.probe_test_acc",
                                  "few.knn_test_acc")
    # a recall@k that evaluation.recall_ks leaves out is not compared (not a KeyError)
    runs = pd.DataFrame(columns=["linear.test_acc", "knn.test_recall_at_1", "knn.test_recall_at_50"])
    assert aggregate.compared(runs) == ["linear.test_acc", "knn.test_recall_at_1",
                                        "knn.test_recall_at_50"]
    assert aggregate.AU_METRICS == render.EXPLORED_METRICS == ("linear.test_acc", "knn.test_acc")
    assert [c for c, _ in render.METRIC_COLUMNS] == list(metrics.names(table=True))
    assert set(aggregate.TEXT_METRICS) == set(metrics.names(text=True))


def test_aggregate_summarises_every_metric_the_image_protocol_writes():
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), 40)
    x = rng.normal(size=(120, 6)) + 2.0 * np.eye(6)[y % 6]
    out = evaluate_features(x[:90], y[:90], x[90:], y[90:],
                            EvaluationConfig(probe={"epochs": 5}, recall_ks=[1, 5, 50]),
                            test_views=(x[90:], x[90:] + 0.1),
                            projected=(x[90:, :3], x[90:, :3], x[90:, :3] + 0.1))
    columns = {f"{s}.{k}" for s, values in out.items() for k in values}
    summarised = set(aggregate.metric_columns(pd.DataFrame(columns=sorted(columns))))
    assert {m.name for m in metrics.METRICS if m.table} <= summarised
    assert not any(c.endswith("_std") for c in summarised)
