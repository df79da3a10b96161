"""text_pretrain: unsupervised SimCSE for one text run (dataset × encoder × loss × schedule × seed).

Writes models/text/<dataset>/<run>/ (model.safetensors + meta.json, checkpoints/step_XXXXX/) and
DVCLive telemetry under reports/text/train/<run>/; a killed stage run again resumes.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.params import TextRun
from infonce_lab.pipeline.text_pretrain import text_pretrain

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(dataset: str = typer.Option(...), encoder: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...),
         seed: int = typer.Option(...)) -> None:
    run = TextRun(dataset=dataset, encoder=encoder, loss=loss, schedule=schedule, seed=seed)
    if line := text_pretrain(params_or_exit(), run):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
