"""report: reports/index.html (self-contained) and reports/REPORT.md from metrics and plot data
(including the diagnose stage's reports/tails/ and the simulate stage's reports/sims/)."""

from __future__ import annotations

from pathlib import Path

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.pipeline.report import write_report

app = typer.Typer(add_completion=False)


@app.command()
@stage(timed=False)
def main(out: Path = typer.Option(Path("reports"))) -> None:
    write_report(params_or_exit(), out)


if __name__ == "__main__":
    app()
