"""evaluate: every run of one image dataset — frozen features extracted from its final weights
and scored by the linear probe, weighted kNN and alignment/uniformity — and the dataset's
baselines (raw pixels, random-init encoders) under the same protocol
(infonce_lab.pipeline.evaluate)."""

from __future__ import annotations

import typer

from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a dataset of study.datasets")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.evaluate import evaluate_dataset

    evaluate_dataset(params, stage_instance(dataset=dataset)["dataset"])


if __name__ == "__main__":
    app()
