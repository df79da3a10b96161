"""pretrain: train every seed of one image configuration (dataset × backbone × loss × schedule).

The seeds are the block's: ``study.seeds`` for a grid configuration, ``primary.seeds`` for the
primary block's. Writes models/vision/<dataset>/<configuration>/<run>/ (model.pt +
checkpoints/epoch_XXXX.pt) and DVCLive telemetry under reports/train/<configuration>/<run>/; a
killed stage run again resumes at the seed it was on (pipeline/pretrain.py). Under
``torchrun --nproc_per_node=K stages/pretrain.py …`` every process trains its slice of each batch.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.params import Configuration

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...), backbone: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...)) -> None:
    from infonce_lab.pipeline.pretrain import pretrain

    for line in pretrain(params_or_exit(), Configuration(dataset, backbone, loss, schedule)):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
