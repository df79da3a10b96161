"""pretrain: train every seed of one image configuration (dataset × backbone × loss × schedule).

The seeds are the block's: ``study.seeds`` for a grid configuration, ``primary.seeds`` for the
primary block's. Writes models/vision/<dataset>/<configuration>/<run>/ (model.pt +
checkpoints/epoch_XXXX.pt) and DVCLive telemetry under reports/train/<configuration>/<run>/; a
killed stage run again resumes at the seed it was on (pipeline/pretrain.py). Under
``training.launcher: "torchrun --nproc_per_node=K"`` the stage re-executes itself under torchrun
(an argument list, no shell) and every process trains its slice of each batch. Under dvc repro the
instance's names come from ``DVC_STAGE`` (``stage.stage_instance``); by hand, give the four flags.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.params import Configuration
from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a dataset of study.datasets"),
         backbone: str | None = typer.Option(None, metavar="NAME", help="a backbone of study.backbones"),
         loss: str | None = typer.Option(None, metavar="NAME", help="a loss of study.losses"),
         schedule: str | None = typer.Option(None, metavar="NAME", help="a schedule of study.schedules")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.launch import relaunch_if_needed
    from infonce_lab.pipeline.pretrain import pretrain

    names = stage_instance(dataset=dataset, backbone=backbone, loss=loss, schedule=schedule)
    relaunch_if_needed(params)
    for line in pretrain(params, Configuration(*names.values())):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
