"""What the pretrain and text_pretrain stages share: one configuration's seeds trained in one
process, the resume folder and its fingerprint, the DVCLive logger, the distributed start, the
summary a run writes, a loss placed on the device.

With ``checkpoint_every_steps`` the full training state is kept in ``.resume/<run>/`` (outside
DVC's outputs): a killed stage, run again with the same params, resumes from it and ends with the
same weights as an uninterrupted run. A finished run waits in ``.resume/<run>/finished/`` until
every seed of its configuration has finished, so a stage killed at its fifth seed starts again at
the fifth; the folders are removed once the configuration's outputs are in place.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from infonce_lab.io import read_json, replaced_together
from infonce_lab.losses.objects import Loss
from infonce_lab.machine import cpu_model
from infonce_lab.params import LossConfig, Params, Run, TextRun
from infonce_lab.pipeline.binding import run_fingerprint
from infonce_lab.pipeline.registry import build_loss
from infonce_lab.train.loop import STATE_FORMAT, Resume, TrainResult, distributed
from infonce_lab.train.runtime import barrier, is_rank0

RESUME_DIR = Path(".resume")
LIVE_DIR = Path("live")  # telemetry of the runs in progress (gitignored)
FINISHED = "finished"  # .resume/<run>/finished/: model/, train/ and line.json of a finished run


def train_configuration(runs: Sequence[Run | TextRun], train_one: Callable[[Run | TextRun], dict],
                        model_root: Path, train_root: Path) -> list[dict[str, Any]]:
    """Every seed of one configuration in one process, then both of its folders replaced at once.

    One stage instance per configuration rather than per seed: a default-study run trains for
    ≈ 12 s, and a stage instance of its own costs ≈ 2 s of start-up and ≈ 3 s of DVC's
    bookkeeping. ``train_one`` leaves the run in ``.resume/<run>/finished/`` (rank 0) and returns
    the line the stage prints.
    """
    lines = [train_one(run) for run in runs]
    if not is_rank0():
        return []
    with replaced_together() as outputs:
        models, telemetry = outputs.dir(model_root), outputs.dir(train_root)
        for run in runs:
            done = RESUME_DIR / run.id / FINISHED
            # Linked, not moved: until the commit lands, .resume/<run>/finished stays whole, so
            # a stage stopped before it (Ctrl-C, a kill) keeps every finished seed.
            shutil.copytree(done / "model", models / run.id, copy_function=_link_or_copy)
            shutil.copytree(done / "train", telemetry / run.id, copy_function=_link_or_copy)
    for run in runs:
        shutil.rmtree(RESUME_DIR / run.id, ignore_errors=True)
    return lines


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(src, dst)


def finished_line(work: Path) -> dict[str, Any] | None:
    """The stage's line of a run already finished in this configuration's interrupted stage."""
    f = work / FINISHED / "line.json"
    if not f.is_file():
        return None
    if not ((work / FINISHED / "model").is_dir() and (work / FINISHED / "train").is_dir()):
        # Moved into the configuration's outputs by a stage killed before it removed this
        # folder: nothing here to keep.
        print(f"{work.name}: {work / FINISHED} was already moved into the outputs; training again")
        shutil.rmtree(work / FINISHED)
        return None
    print(f"{work.name}: finished before the stage was stopped; kept ({work / FINISHED})")
    return read_json(f)


def resume_fingerprint(params: Params, run: Run | TextRun) -> str:
    """What a resume state must have been written under: the run's params and the state's
    format (a state of an earlier format is not read)."""
    return f"{run_fingerprint(params, run)}-state{STATE_FORMAT}"


def init_distributed() -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch.distributed as dist

        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")


def sweep_abandoned(current: set[str], roots: Sequence[Path] = (RESUME_DIR, LIVE_DIR)
                    ) -> list[Path]:
    """Remove what runs no longer in the study left (their resume state, their live
    telemetry): a failed run keeps ``.resume/<run>/`` so that its next attempt resumes, but a
    run whose seed or configuration left params.yaml has no next attempt. Returns what was
    removed; the runs in ``current`` are left alone."""
    removed = []
    if not is_rank0():
        return removed
    for root in roots:
        for folder in sorted(root.iterdir()) if root.is_dir() else []:
            if folder.is_dir() and folder.name not in current:
                shutil.rmtree(folder, ignore_errors=True)
                print(f"removed {folder}: left by run {folder.name}, which is no longer part of "
                      "the study", file=sys.stderr)
                removed.append(folder)
    return removed


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
    barrier()  # the other processes look into the folder only once rank 0 has settled it
    if not every_steps:
        return work, None
    if (work / "state.pt").is_file():
        print(f"resuming {run_id} from {work / 'state.pt'}")
    return work, Resume(work / "state.pt", fp, every_steps)


@contextmanager
def live_logger(live_dir: Path, run_id: str) -> Iterator[Callable[[int, dict[str, float]], None]]:
    """DVCLive's ``train/<key>`` series, one step per telemetry record, written while training
    into ``live/<run>/`` (readable mid-run: ``dvc plots show live/<run>/plots/metrics/train/
    loss.tsv``) and moved into ``live_dir`` — inside the stage's atomic output — when it ends."""
    from dvclive import Live

    live_root = LIVE_DIR / run_id
    if live_root.exists():  # a killed run's: a resumed run replays its history from step 0
        shutil.rmtree(live_root)
    with Live(dir=str(live_root), save_dvc_exp=False, dvcyaml=None, report=None) as live:
        def on_log(step: int, record: dict[str, float]) -> None:
            live.step = step
            for k, v in record.items():
                live.log_metric(f"train/{k}", v)
            live.next_step()

        print(f"live telemetry: {live_root}/plots/metrics/train/ (dvc plots show "
              f"{live_root}/plots/metrics/train/loss.tsv)")
        yield on_log
    live_dir.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(live_root, live_dir, dirs_exist_ok=True)
    shutil.rmtree(live_root, ignore_errors=True)
    if LIVE_DIR.is_dir() and not any(LIVE_DIR.iterdir()):
        LIVE_DIR.rmdir()


def summary(result: TrainResult) -> dict[str, Any]:
    return {"steps": result.steps, "final_loss": result.final_loss,
            "train_seconds": round(result.seconds, 2),
            "samples_per_s": round(result.samples_per_s, 1),
            "resumed_from_step": result.resumed_from,
            "device": str(next(result.encoder.parameters()).device),
            "machine": cpu_model(),  # bit-identical results hold per CPU model, not across them
            "torch_threads": torch.get_num_threads(),
            "processes": distributed()[1]}   # DDP: each holds batch/processes (its own BN)


def loss_on(cfg: LossConfig, device: torch.device) -> tuple[Loss, torch.nn.Module | None]:
    """The built loss, and itself again when it has parameters for the optimizer."""
    loss_fn = build_loss(cfg)
    if isinstance(loss_fn, torch.nn.Module):
        return loss_fn.to(device), loss_fn
    return loss_fn, None


