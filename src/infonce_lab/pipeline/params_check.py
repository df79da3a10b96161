"""The check_params stage: params.yaml validated, and its sizes held against this machine."""

from __future__ import annotations

from infonce_lab.io import write_json_atomic
from infonce_lab.params import Params
from infonce_lab.pipeline import paths


def record_valid(params: Params) -> None:
    """Write the marker every root stage depends on. Its bytes are the same for every valid
    params file: DVC then re-runs only the stages whose own params or inputs changed."""
    del params  # validated by the caller; the marker says nothing about which params
    write_json_atomic(paths.params_check(), {"params_file": "params.yaml", "valid": True})
