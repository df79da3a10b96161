"""aggregate: mean and spread over seeds → reports/summary.json and reports/tables/*.csv."""

from __future__ import annotations

from infonce_lab.stage import params_or_exit, stage, stage_app

app = stage_app()


@app.command(help=__doc__)
@stage
def main() -> None:
    params = params_or_exit()  # before the heavy imports: a bad file is refused in a second
    from infonce_lab.pipeline.aggregate import write_aggregates

    write_aggregates(params)


if __name__ == "__main__":
    app()
