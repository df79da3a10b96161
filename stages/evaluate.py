"""evaluate: linear probe and weighted kNN on one run's frozen features."""

from __future__ import annotations

from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.evaluation.protocol import check_knn_k, evaluate_features
from infonce_lab.features import load_features
from infonce_lab.io import write_json_atomic

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(run: str = typer.Option(...), dataset: str = typer.Option(...),
         backbone: str = typer.Option(...), loss: str = typer.Option(...),
         schedule: str = typer.Option(...), seed: int = typer.Option(...)) -> None:
    params = params_or_exit()
    torch.set_num_threads(params.training.threads)
    feats = Path("data/features") / run
    train, test = load_features(feats, "train"), load_features(feats, "test")
    check_knn_k(train.y, params.evaluation)
    views = (load_features(feats, "test_view1").h, load_features(feats, "test_view2").h)
    metrics = evaluate_features(train.h, train.y, test.h, test.y, params.evaluation, views)
    record = {"encoder": {"kind": "trained", "dataset": dataset, "backbone": backbone,
                          "loss": loss, "schedule": schedule, "seed": seed}, **metrics}
    write_json_atomic(Path("reports/metrics/runs") / f"{run}.json", record)
    print(f"{run}: linear test {metrics['linear']['test_acc']:.4f}, kNN test {metrics['knn']['test_acc']:.4f}")


if __name__ == "__main__":
    app()
