"""pretrain: train one encoder (dataset × backbone × loss × schedule × seed).

Writes models/vision/<dataset>/<run>/model.pt (+ checkpoints/epoch_XXXX.pt) and DVCLive telemetry under
reports/train/<run>/. Outputs are replaced only when training finishes. With
``training.checkpoint_every_steps`` the full training state is kept in .resume/<run>/ (outside
DVC's outputs): a killed stage, run again with the same params, resumes from it and ends with the
same weights as an uninterrupted run; the folder is removed once the run has finished.

Under ``torchrun --nproc_per_node=K stages/pretrain.py …`` every process trains on its slice of
each global batch; only rank 0 writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import torch
import typer

from infonce_lab.cli import params_or_exit, stage
from infonce_lab.config import Run
from infonce_lab.data import load_raw
from infonce_lab.io import atomic_dir, write_json_atomic
from infonce_lab.pipeline import paths
from infonce_lab.runtime import is_rank0
from infonce_lab.training import Resume, train_encoder

app = typer.Typer(add_completion=False)
RESUME_DIR = Path(".resume")


def _save(encoder: torch.nn.Module, path: Path, meta: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save({"state_dict": encoder.state_dict(), **meta}, tmp)
    tmp.replace(path)


def _fingerprint(parts: dict) -> str:
    """What shaped the run's trajectory; logging cadence and the device are left out."""
    training = {k: v for k, v in parts["training"].items() if k not in ("log_every_steps",)}
    blob = json.dumps({**parts, "training": training}, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _init_distributed() -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        import torch.distributed as dist

        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)


@app.command()
@stage
def main(dataset: str = typer.Option(...), backbone: str = typer.Option(...),
         loss: str = typer.Option(...), schedule: str = typer.Option(...),
         seed: int = typer.Option(...)) -> None:
    params = params_or_exit()
    run = Run(dataset=dataset, backbone=backbone, loss=loss, schedule=schedule, seed=seed)
    if run not in params.runs():
        raise ValueError(f"run {run.id} is not part of the study in params.yaml (study: …)")
    data = load_raw(paths.raw_dir(dataset))
    bb_cfg = params.backbones[backbone]
    meta = {"run": run.model_dump(), "backbone": bb_cfg.model_dump(mode="json"),
            "in_channels": int(data.train_x.shape[1])}
    if bb_cfg.kind != "resnet_cifar":  # the ViT and the automatic ResNet stem need it to rebuild
        meta["image_size"] = int(data.train_x.shape[-1])
    tcfg = params.training
    work = RESUME_DIR / run.id
    fingerprint = _fingerprint({
        "run": run.model_dump(), "dataset": params.datasets[dataset].model_dump(mode="json"),
        "backbone": bb_cfg.model_dump(mode="json"), "loss": params.losses[loss].model_dump(mode="json"),
        "schedule": params.schedules[schedule].model_dump(mode="json"),
        "training": tcfg.model_dump(mode="json")})
    _init_distributed()
    stamp = work / "fingerprint"
    if is_rank0() and work.is_dir() and (not tcfg.checkpoint_every_steps or not stamp.is_file()
                          or stamp.read_text() != fingerprint):
        print(f"note: {work} holds what a run under other params left; starting afresh")
        shutil.rmtree(work)
    if is_rank0():
        work.mkdir(parents=True, exist_ok=True)
        stamp.write_text(fingerprint)
    resume = None
    if tcfg.checkpoint_every_steps:
        resume = Resume(work / "state.pt", fingerprint, tcfg.checkpoint_every_steps)
        if (work / "state.pt").is_file():
            print(f"resuming {run.id} from {work / 'state.pt'}")
    train_kw = {"backbone": bb_cfg, "loss": params.losses[loss],
                "schedule": params.schedules[schedule], "augment": params.datasets[dataset].augment,
                "training": tcfg, "seed": seed, "resume": resume}
    if not is_rank0():  # the other processes only train: rank 0 logs and writes
        train_encoder(data.pretrain_x(), **train_kw)
        return
    ckpt_dir = work / "checkpoints"
    from dvclive import Live

    with atomic_dir(paths.model_dir(run)) as model_dir, \
            atomic_dir(Path("reports/train") / run.id) as live_dir:
        (model_dir / "checkpoints").mkdir()
        with Live(dir=str(live_dir), save_dvc_exp=False, dvcyaml=None, report=None) as live:
            def on_log(step: int, record: dict[str, float]) -> None:
                live.step = step
                for k, v in record.items():
                    live.log_metric(f"train/{k}", v)
                live.next_step()

            def on_checkpoint(epoch: int, encoder: torch.nn.Module) -> None:
                # Kept beside the resume state, so a run resumed after this epoch still has it.
                ckpt_dir.mkdir(parents=True, exist_ok=True)
                _save(encoder, ckpt_dir / f"epoch_{epoch:04d}.pt", {**meta, "epoch": epoch})

            result = train_encoder(data.pretrain_x(), on_log=on_log,
                                   on_checkpoint=on_checkpoint, **train_kw)
        if ckpt_dir.is_dir():
            for f in sorted(ckpt_dir.glob("epoch_*.pt")):
                shutil.copy2(f, model_dir / "checkpoints" / f.name)
        _save(result.encoder, model_dir / "model.pt",
              {**meta, "epoch": tcfg.epochs, "loss_state": result.loss_state})
        write_json_atomic(live_dir / "run.json", {
            "run": run.model_dump(), "steps": result.steps, "final_loss": result.final_loss,
            "train_seconds": round(result.seconds, 2),
            "samples_per_s": round(result.samples_per_s, 1),
            "resumed_from_step": result.resumed_from,
            "device": str(next(result.encoder.parameters()).device),
            "torch_threads": torch.get_num_threads(),
        })
    if work.is_dir():
        shutil.rmtree(work)
    print(json.dumps({"run": run.id, "final_loss": result.final_loss,
                      "train_seconds": round(result.seconds, 1)}))


if __name__ == "__main__":
    app()
