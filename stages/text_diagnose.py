"""text_diagnose: the WEINCE tail diagnostics on one packaged sentence encoder as it ships
(``text.tails``): a 32 × 256 bank of word-crop views → reports/tails/text/<encoder>.json."""

from __future__ import annotations

import json

import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.pipeline.text_diagnose import text_diagnose

app = typer.Typer(add_completion=False)


@app.command()
@stage
def main(encoder: str = typer.Option(...)) -> None:
    print(json.dumps(text_diagnose(params_or_exit(), encoder)))


if __name__ == "__main__":
    app()
