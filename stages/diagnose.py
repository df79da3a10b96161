"""diagnose: the tail diagnostics of every run of one image dataset, at every kept checkpoint and
at the final weights (infonce_lab.pipeline.diagnose), into reports/tails/runs/<dataset>/<run>.json
(scalars per epoch) and reports/tails/plots/<dataset>/<run>.json (the data behind the figures)."""

from __future__ import annotations

import typer

from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a dataset of study.datasets")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.diagnose import diagnose_dataset

    diagnose_dataset(params, stage_instance(dataset=dataset)["dataset"])


if __name__ == "__main__":
    app()
