"""pretrain: train one image encoder (dataset × backbone × loss × schedule × seed).

Writes models/vision/<dataset>/<run>/ (model.pt + checkpoints/epoch_XXXX.pt) and DVCLive telemetry
under reports/train/<run>/; a killed stage run again resumes (pipeline/pretrain.py). Under
``torchrun --nproc_per_node=K stages/pretrain.py …`` every process trains its slice of each batch.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.params import Run
from infonce_lab.pipeline.pretrain import pretrain

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...), backbone: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...),
         seed: int = typer.Option(...)) -> None:
    run = Run(dataset=dataset, backbone=backbone, loss=loss, schedule=schedule, seed=seed)
    if line := pretrain(params_or_exit(), run):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
