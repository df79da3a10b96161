"""report: reports/index.html (self-contained) and reports/REPORT.md from metrics and plot data
(including the diagnose stage's reports/tails/ and the simulate stage's reports/sims/); and
reports/dvc.yaml's generated plots list brought to the study's runs, so `dvc plots` draws every
run of a `dvc exp run -S study.…` without a manual step."""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.stage import params_or_exit, stage, stage_app

app = stage_app()


@app.command(help=__doc__)
@stage(timed=False)
def main(out: Path = typer.Option(Path("reports"), help="the reports folder: read, then written")) -> None:
    params = params_or_exit()
    from infonce_lab.pipeline.dvc_plots import PLOTS_FILE, refresh
    from infonce_lab.pipeline.report import write_report

    write_report(params, out)
    if refresh(params):
        print(f"{PLOTS_FILE}: the plots now follow the study's runs (commit it with the results)")


if __name__ == "__main__":
    app()
