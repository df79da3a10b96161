"""What the pretrain and text_pretrain stages share: the resume folder and its fingerprint, the
DVCLive logger, the distributed start, the summary a run writes, a loss placed on the device.

With ``checkpoint_every_steps`` the full training state is kept in ``.resume/<run>/`` (outside
DVC's outputs): a killed stage, run again with the same params, resumes from it and ends with the
same weights as an uninterrupted run; the folder is removed once the run has finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from infonce_lab.losses.objects import Loss
from infonce_lab.params import LossConfig
from infonce_lab.pipeline.registry import build_loss
from infonce_lab.train.loop import STATE_FORMAT, Resume, TrainResult
from infonce_lab.train.runtime import is_rank0

RESUME_DIR = Path(".resume")


def fingerprint(parts: dict[str, Any]) -> str:
    """What shaped the run's trajectory; the logging cadence is left out."""
    training = {k: v for k, v in parts["training"].items() if k != "log_every_steps"}
    blob = json.dumps({**parts, "training": training, "state_format": STATE_FORMAT},
                      sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def init_distributed() -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch.distributed as dist

        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")


def resume_for(run_id: str, fp: str, every_steps: int) -> tuple[Path, Resume | None]:
    """The run's work folder, emptied when it holds another configuration's state."""
    work = RESUME_DIR / run_id
    stamp = work / "fingerprint"
    if is_rank0():
        if work.is_dir() and (not every_steps or not stamp.is_file() or stamp.read_text() != fp):
            print(f"note: {work} holds what a run under other params left; starting afresh")
            shutil.rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
        stamp.write_text(fp)
    if not every_steps:
        return work, None
    if (work / "state.pt").is_file():
        print(f"resuming {run_id} from {work / 'state.pt'}")
    return work, Resume(work / "state.pt", fp, every_steps)


@contextmanager
def live_logger(live_dir: Path) -> Iterator[Callable[[int, dict[str, float]], None]]:
    """DVCLive's ``train/<key>`` series, one step per telemetry record."""
    from dvclive import Live

    with Live(dir=str(live_dir), save_dvc_exp=False, dvcyaml=None, report=None) as live:
        def on_log(step: int, record: dict[str, float]) -> None:
            live.step = step
            for k, v in record.items():
                live.log_metric(f"train/{k}", v)
            live.next_step()

        yield on_log


def summary(result: TrainResult) -> dict[str, Any]:
    return {"steps": result.steps, "final_loss": result.final_loss,
            "train_seconds": round(result.seconds, 2),
            "samples_per_s": round(result.samples_per_s, 1),
            "resumed_from_step": result.resumed_from,
            "device": str(next(result.encoder.parameters()).device),
            "torch_threads": torch.get_num_threads()}


def loss_on(cfg: LossConfig, device: torch.device) -> tuple[Loss, torch.nn.Module | None]:
    """The built loss, and itself again when it has parameters for the optimizer."""
    loss_fn = build_loss(cfg)
    if isinstance(loss_fn, torch.nn.Module):
        return loss_fn.to(device), loss_fn
    return loss_fn, None


