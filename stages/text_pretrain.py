"""text_pretrain: unsupervised SimCSE for every seed (text.study.seeds) of one text configuration
(dataset × encoder × loss × schedule).

Writes models/text/<dataset>/<configuration>/<run>/ (model.safetensors + meta.json,
checkpoints/step_XXXXX/) and DVCLive telemetry under reports/text/train/<configuration>/<run>/; a
killed stage run again resumes at the seed it was on.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.cli import params_or_exit, stage, stage_instance
from infonce_lab.params import Configuration

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str | None = typer.Option(None), encoder: str | None = typer.Option(None),
         loss: str | None = typer.Option(None), schedule: str | None = typer.Option(None)) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.text_pretrain import text_pretrain

    names = stage_instance(dataset=dataset, encoder=encoder, loss=loss, schedule=schedule)
    for line in text_pretrain(params, Configuration(*names.values())):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
