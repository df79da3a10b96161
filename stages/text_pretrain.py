"""text_pretrain: unsupervised SimCSE for every seed (text.study.seeds) of one text configuration
(dataset × encoder × loss × schedule).

Writes models/text/<dataset>/<configuration>/<run>/ (model.safetensors + meta.json,
checkpoints/step_XXXXX/) and DVCLive telemetry under reports/text/train/<configuration>/<run>/; a
killed stage run again resumes at the seed it was on.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.params import Configuration

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...), encoder: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...)) -> None:
    from infonce_lab.pipeline.text_pretrain import text_pretrain

    for line in text_pretrain(params_or_exit(), Configuration(dataset, encoder, loss, schedule)):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
