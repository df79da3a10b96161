"""check_params: validate params.yaml once, before any other stage of the DAG runs.

DVC re-runs this stage whenever params.yaml changes at all (it is a file dependency, so a new
top-level key or a typo counts too) and every root stage depends on its marker, so a bad params
file stops ``dvc repro`` / ``dvc exp run`` here, in about a second, with the dotted key — instead
of DVC running nothing (a key no stage lists) or each stage failing on its own. The marker's
content never changes, so a valid edit re-runs only the stages whose own params changed. Each
stage still validates on its own start (``stage.params_or_exit``), whatever started it.
"""

from __future__ import annotations

from infonce_lab.pipeline.params_check import record_valid
from infonce_lab.stage import params_or_exit, stage, stage_app

app = stage_app()


@app.command(help=__doc__)
@stage
def main() -> None:
    record_valid(params_or_exit())


if __name__ == "__main__":
    app()
