"""Files bound to their run: what a model records of whose it is, and the check on reading it.

A model's checksum (``model.pt.sha256``) says its bytes are intact, not that it is this run's:
a model and its checksum copied from another run, or one trained under params.yaml's earlier
values and never re-trained, pass it. Each model and checkpoint therefore records its run and the
fingerprint of the params sections that shaped it; the stages that read them check both.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from infonce_lab.io import CorruptFileError
from infonce_lab.params import Params, Run, TextRun


def fingerprint(parts: dict[str, Any]) -> str:
    """What shaped the run's trajectory; the logging cadence is left out."""
    training = {k: v for k, v in parts["training"].items() if k != "log_every_steps"}
    blob = json.dumps({**parts, "training": training}, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def run_fingerprint(params: Params, run: Run | TextRun) -> str:
    """What shaped a run's trajectory: its names and seed, and the sections they point to."""
    if isinstance(run, TextRun):
        parts = {"dataset": params.text.datasets[run.dataset],
                 "encoder": params.text.encoders[run.encoder], "training": params.text.training}
    else:
        parts = {"dataset": params.datasets[run.dataset],
                 "backbone": params.backbones[run.backbone], "training": params.training}
    parts |= {"loss": params.losses[run.loss], "schedule": params.schedules[run.schedule]}
    return fingerprint({"run": run.model_dump(),
                        **{k: v.model_dump(mode="json") for k, v in parts.items()}})


def model_binding(params: Params, run: Run | TextRun) -> dict[str, Any]:
    """What a run's model and checkpoints record of whose they are, and what a reader checks
    (:func:`check_binding`): the checksum beside a file says its bytes
    are intact, not that it is this run's, trained with these params."""
    return {"run": run.model_dump(), "params_fingerprint": run_fingerprint(params, run)}


def check_binding(path: Path, meta: dict[str, Any], expected: dict[str, Any]) -> None:
    """Refuse a model whose recorded run or params fingerprint is not ``expected``'s: one
    copied from another run (with its own, valid checksum), or trained under params.yaml's
    earlier values and never re-trained."""
    if meta.get("run") != expected["run"]:
        raise CorruptFileError(
            f"{path}: holds the model of run {meta.get('run')!r}, not of {expected['run']!r} "
            "(copied from another run?). Restore it (`dvc checkout`) or re-train the run "
            "(`dvc repro -f pretrain@…`, or text_pretrain@…).")
    if meta.get("params_fingerprint") != expected["params_fingerprint"]:
        raise CorruptFileError(
            f"{path}: trained with other params than params.yaml now gives this run (params "
            f"fingerprint {meta.get('params_fingerprint')}, now {expected['params_fingerprint']}"
            "). Re-train it (`dvc repro`; `dvc status` lists what changed).")
