"""Per-encoder metrics → per-configuration summaries over seeds (mean, std, 95% t-interval)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from infonce_lab.config import Params
from infonce_lab.evaluation.stats import mean_ci
from infonce_lab.io import read_json

METRICS = ("linear.test_acc", "linear.val_acc", "knn.test_acc", "knn.val_acc")


def group_id(enc: dict[str, Any]) -> str:
    """Encoders that differ only by seed share a group."""
    kind = enc["kind"]
    if kind == "trained":
        return f"{enc['dataset']}-{enc['backbone']}-{enc['loss']}-{enc['schedule']}"
    if kind == "random_init":
        return f"{enc['dataset']}-{enc['backbone']}-random_init"
    return f"{enc['dataset']}-{kind}"


def _flatten(record: dict[str, Any]) -> dict[str, Any]:
    row = {f"encoder.{k}": v for k, v in record["encoder"].items()}
    for section, values in record.items():
        if section != "encoder":
            row.update({f"{section}.{k}": v for k, v in values.items()})
    return row


def collect(params: Params, metrics_dir: str | Path = "reports/metrics") -> pd.DataFrame:
    """One row per encoder of the *current* study (stale files of removed runs are ignored)."""
    metrics_dir = Path(metrics_dir)
    rows = []
    for run in params.runs():
        path = metrics_dir / "runs" / f"{run.id}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the evaluate stage for {run.id}")
        rows.append({"encoder_id": run.id, **_flatten(read_json(path))})
    for dataset in params.study.datasets:
        path = metrics_dir / "baselines" / f"{dataset}.json"
        if not params.study.baselines:
            continue
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; run the baselines stage for {dataset}")
        for name, record in read_json(path).items():
            rows.append({"encoder_id": f"{dataset}-{name}", **_flatten(record)})
    df = pd.DataFrame(rows)
    df["group"] = [group_id({k.removeprefix("encoder."): r[k] for k in df.columns
                             if k.startswith("encoder.") and pd.notna(r[k])})
                   for _, r in df.iterrows()]
    return df


def summarise(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """{group: {"kind", "dataset", ..., "n_encoders", metric: {mean, std, n, ci95}}}.

    Trained groups also get ``gain_over_random_init``: per metric, the paired difference to the
    random-init encoder of the same backbone and seed (that encoder is the run's own starting
    point), summarised with a paired t-interval.
    """
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for group, part in df.groupby("group", sort=False):
        first = part.iloc[0]
        info = {k.removeprefix("encoder."): first[k] for k in part.columns
                if k.startswith("encoder.") and k != "encoder.seed" and pd.notna(first[k])}
        out[group].update(info)
        out[group]["n_encoders"] = int(len(part))
        for metric in METRICS:
            out[group][metric] = mean_ci(part[metric].astype(float).tolist())
        if info.get("kind") == "trained":
            gains = _paired_gains(df, part)
            if gains:
                out[group]["gain_over_random_init"] = gains
    return dict(out)


def _paired_gains(df: pd.DataFrame, part: pd.DataFrame) -> dict[str, Any]:
    base = df[df["encoder.kind"] == "random_init"]
    pairs = part.merge(base, on=["encoder.dataset", "encoder.backbone", "encoder.seed"],
                       suffixes=("", ".base"))
    if pairs.empty:
        return {}
    return {m: mean_ci((pairs[m].astype(float) - pairs[f"{m}.base"].astype(float)).tolist())
            for m in ("linear.test_acc", "knn.test_acc")}
