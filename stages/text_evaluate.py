"""text_evaluate: every text run of one text dataset — STS Spearman, polarity probe and kNN,
alignment and uniformity — and the dataset's baselines (TF-IDF, untuned encoders) under the same
protocol (infonce_lab.pipeline.text_evaluate)."""

from __future__ import annotations

import typer

from infonce_lab.stage import params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a dataset of text.study.datasets")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.text_evaluate import evaluate_text_dataset

    evaluate_text_dataset(params, stage_instance(dataset=dataset)["dataset"])


if __name__ == "__main__":
    app()
