"""text_pretrain: unsupervised SimCSE for every seed (text.study.seeds) of one text configuration
(dataset × encoder × loss × schedule).

Writes models/text/<dataset>/<configuration>/<run>/ (model.safetensors + meta.json,
checkpoints/step_XXXXX/) and DVCLive telemetry under reports/text/train/<configuration>/<run>/; a
killed stage run again resumes at the seed it was on.
"""

from __future__ import annotations

import json

import typer

from infonce_lab.params import Configuration
from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a dataset of text.study.datasets"),
         encoder: str | None = typer.Option(None, metavar="NAME", help="an encoder of text.study.encoders"),
         loss: str | None = typer.Option(None, metavar="NAME", help="a loss of text.study.losses"),
         schedule: str | None = typer.Option(None, metavar="NAME", help="a schedule of text.study.schedules"),
         ) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.text_pretrain import text_pretrain

    names = stage_instance(dataset=dataset, encoder=encoder, loss=loss, schedule=schedule)
    for line in text_pretrain(params, Configuration(*names.values())):
        print(json.dumps(line))


if __name__ == "__main__":
    app()
