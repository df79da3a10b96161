"""download: materialise a dataset under data/raw/<dataset>/ with a checksum manifest."""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.stage import fail, params_or_exit, stage, stage_app, stage_instance

app = stage_app()


@app.command(help=__doc__)
@stage
def main(dataset: str | None = typer.Option(None, metavar="NAME", help="a name under 'datasets:' in params.yaml"),
         out: Path = typer.Option(Path("data/raw"), help="parent folder of the dataset")) -> None:
    params = params_or_exit()
    from infonce_lab.data import materialise

    dataset = stage_instance(dataset=dataset)["dataset"]
    if dataset not in params.datasets:
        fail(f"--dataset {dataset!r}: not defined under 'datasets:' ({', '.join(params.datasets)})")
    manifest = materialise(params.datasets[dataset], out / dataset)
    print(f"{dataset}: {manifest['n_train']} train / {manifest['n_test']} test images -> {out / dataset}")


if __name__ == "__main__":
    app()
