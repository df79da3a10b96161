from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from infonce_lab.aggregate import (
    IncompleteSeeds,
    paired_comparison,
    select_on_validation,
    summarise,
)


def _frame(rows):  # noqa: ANN001, ANN202
    df = pd.DataFrame(rows)
    df["group"] = [f"d-b-{r['encoder.loss']}-{r['encoder.schedule']}" for r in rows]
    return df


def _row(loss, sched, seed, val, test):  # noqa: ANN001, ANN202
    return {"encoder.kind": "trained", "encoder.dataset": "d", "encoder.backbone": "b",
            "encoder.loss": loss, "encoder.schedule": sched, "encoder.seed": seed,
            "linear.val_acc": val, "linear.test_acc": test, "knn.val_acc": val, "knn.test_acc": test,
            "knn.test_recall_at_1": test, "knn.val_recall_at_1": val}


def test_paired_comparison_matches_scipy():
    a = [0.91, 0.93, 0.92, 0.95]
    b = [0.90, 0.90, 0.93, 0.91]
    df = _frame([_row("x", "s", i, 0.0, v) for i, v in enumerate(a)]
                + [_row("y", "s", i, 0.0, v) for i, v in enumerate(b)])
    res = paired_comparison(df, "d-b-x-s", "d-b-y-s", "linear.test_acc")
    diff = np.subtract(a, b)
    assert res["diff"]["mean"] == pytest.approx(diff.mean())
    assert res["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    lo, hi = stats.t.interval(0.95, df=3, loc=diff.mean(), scale=stats.sem(diff))
    assert res["diff"]["mean"] - res["diff"]["ci95"] == pytest.approx(lo)


def test_refuses_incomplete_seed_sets():
    df = _frame([_row("x", "s", 1, 0, 0.9), _row("x", "s", 2, 0, 0.9), _row("y", "s", 1, 0, 0.8)])
    with pytest.raises(IncompleteSeeds, match=r"seeds \[1, 2\] vs \[1\]"):
        paired_comparison(df, "d-b-x-s", "d-b-y-s", "linear.test_acc")


def test_selection_uses_validation_never_test():
    # y has the better test score but the worse validation score: x must be selected.
    rows = [_row("x", "s", i, 0.95, 0.90) for i in (1, 2)] + [_row("y", "s", i, 0.90, 0.99) for i in (1, 2)]
    df = _frame(rows)
    sel = select_on_validation(df, summarise(df))
    chosen = sel["d-b/all/linear.test_acc"]
    assert chosen["selected"] == "d-b-x-s"
    assert chosen["test"]["mean"] == pytest.approx(0.90)


def test_selection_skips_configurations_missing_seeds():
    rows = ([_row("x", "s", i, 0.90, 0.90) for i in (1, 2)]
            + [_row("y", "s", 1, 0.99, 0.99)])  # y lacks seed 2
    df = _frame(rows)
    sel = select_on_validation(df, summarise(df))
    assert sel["d-b/all/linear.test_acc"]["selected"] == "d-b-x-s"
