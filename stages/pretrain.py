"""pretrain: train one encoder (dataset × backbone × loss × schedule × seed).

Writes models/<run>/model.pt (+ checkpoints/epoch_XXX.pt) and DVCLive telemetry under
reports/train/<run>/. Outputs are replaced only when training finishes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.config import Run
from infonce_lab.data import load_raw
from infonce_lab.io import atomic_dir, write_json_atomic
from infonce_lab.models import Encoder
from infonce_lab.training import train_encoder

app = typer.Typer(add_completion=False)


def _save(encoder: Encoder, path: Path, meta: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save({"state_dict": encoder.state_dict(), **meta}, tmp)
    tmp.replace(path)


@app.command()
@stage
def main(dataset: str = typer.Option(...), backbone: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...),
         seed: int = typer.Option(...)) -> None:
    params = params_or_exit()
    run = Run(dataset=dataset, backbone=backbone, loss=loss, schedule=schedule, seed=seed)
    if run not in params.runs():
        raise ValueError(f"run {run.id} is not part of the study in params.yaml (study: …)")
    data = load_raw(Path("data/raw") / dataset)
    bb_cfg = params.backbones[backbone]
    meta = {"run": run.model_dump(), "backbone": bb_cfg.model_dump(mode="json"),
            "in_channels": int(data.train_x.shape[1])}
    from dvclive import Live

    with atomic_dir(Path("models") / run.id) as model_dir, \
            atomic_dir(Path("reports/train") / run.id) as live_dir:
        (model_dir / "checkpoints").mkdir()
        with Live(dir=str(live_dir), save_dvc_exp=False, dvcyaml=None, report=None) as live:
            def on_log(step: int, record: dict[str, float]) -> None:
                live.step = step
                for k, v in record.items():
                    live.log_metric(f"train/{k}", v)
                live.next_step()

            def on_checkpoint(epoch: int, encoder: Encoder) -> None:
                _save(encoder, model_dir / "checkpoints" / f"epoch_{epoch:04d}.pt",
                      {**meta, "epoch": epoch})

            result = train_encoder(
                data.train_x, backbone=bb_cfg, loss=params.losses[loss],
                schedule=params.schedules[schedule], augment=params.datasets[dataset].augment,
                training=params.training, seed=seed, on_log=on_log, on_checkpoint=on_checkpoint,
            )
        _save(result.encoder, model_dir / "model.pt",
              {**meta, "epoch": params.training.epochs, "loss_state": result.loss_state})
        write_json_atomic(live_dir / "run.json", {
            "run": run.model_dump(), "steps": result.steps, "final_loss": result.final_loss,
            "train_seconds": round(result.seconds, 2),
            "samples_per_s": round(result.samples_per_s, 1),
            "device": str(next(result.encoder.parameters()).device),
            "torch_threads": torch.get_num_threads(),
        })
    print(json.dumps({"run": run.id, "final_loss": result.final_loss,
                      "train_seconds": round(result.seconds, 1)}))


if __name__ == "__main__":
    app()
