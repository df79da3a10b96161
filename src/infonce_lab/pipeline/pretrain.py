"""The pretrain stage: one image configuration's params → encoder, loss, schedule, optimizer and
batch source for each of its seeds → the training loop →
``models/vision/<dataset>/<configuration>/<run>/`` (model.pt + checkpoints/) and DVCLive
telemetry under ``reports/train/<configuration>/<run>/``, replaced only when every seed has
finished. Resumable after a kill (``pipeline/training_run.py``); under ``torchrun`` every process
trains its slice of each global batch and only rank 0 writes.
"""

from __future__ import annotations

import os
import shutil
from functools import partial
from typing import Any

import numpy as np
import torch

from infonce_lab.io import atomic_dir, write_json_atomic
from infonce_lab.params import (
    AugmentConfig,
    BackboneConfig,
    ConfigError,
    Configuration,
    LossConfig,
    Params,
    Run,
    ScheduleConfig,
    TrainingConfig,
)
from infonce_lab.pipeline import paths
from infonce_lab.pipeline.binding import model_binding
from infonce_lab.pipeline.registry import build_schedule
from infonce_lab.pipeline.training_run import (
    FINISHED,
    finished_line,
    init_distributed,
    live_logger,
    loss_on,
    resume_fingerprint,
    resume_for,
    summary,
    sweep_abandoned,
    train_configuration,
)
from infonce_lab.train.loop import CheckpointFn, LogFn, Plan, Resume, TrainResult, fit
from infonce_lab.train.optim import build_optimizer
from infonce_lab.train.progress import Progress
from infonce_lab.train.runtime import is_rank0, resolve_device


def train_image(x: np.ndarray, *, backbone: BackboneConfig, loss: LossConfig,
                schedule: ScheduleConfig, augment: AugmentConfig, training: TrainingConfig,
                seed: int, on_log: LogFn | None = None, on_checkpoint: CheckpointFn | None = None,
                resume: Resume | None = None, progress: Progress | None = None,
                y: np.ndarray | None = None) -> TrainResult:
    """One image run from its params sections; ``on_checkpoint`` gets the epoch just ended.
    ``y``: the classes of ``x``'s rows (−1: unlabelled), read only by a loss that needs them
    (the label oracle, ``mask_same_class``); every other loss never sees them."""
    from infonce_lab.models.build import init_encoder
    from infonce_lab.train.image_source import ImageViews

    t = training
    if t.batch_size > len(x):
        raise ValueError(f"training.batch_size = {t.batch_size} exceeds the {len(x)} "
                         "training images")
    device = resolve_device(t.device)
    spe = len(x) // t.batch_size  # drop_last, as SimCLR
    encoder = init_encoder(backbone, x.shape[1], seed, x.shape[-1]).to(device)
    channels_last = t.channels_last and device.type == "cuda"
    if channels_last:
        encoder = encoder.to(memory_format=torch.channels_last)
    loss_fn, learned = loss_on(loss, device)
    if loss.needs_labels and y is None:
        raise ValueError("the loss masks same-class negatives (mask_same_class: true) and needs "
                         "the training images' labels: train_image(..., y=labels)")
    optimizer = build_optimizer(t.optimizer, encoder, t.lr, t.weight_decay, t.momentum,
                                exclude_bias_and_norm=t.exclude_bias_and_norm, extra=learned)
    plan = Plan(total_steps=spe * t.epochs, steps_per_epoch=spe, batch_size=t.batch_size,
                lr=t.lr, lr_schedule=t.lr_schedule, warmup_steps=t.warmup_epochs * spe,
                log_every_steps=t.log_every_steps,
                checkpoint_steps=frozenset(e * spe for e in t.checkpoint_epochs),
                bf16=t.precision == "bf16", compile=t.compile, threads=t.threads,
                sync_batchnorm=t.sync_batchnorm)
    by_epoch = None if on_checkpoint is None else (
        lambda step, enc: on_checkpoint(step // spe, enc))
    source = ImageViews(x, augment, device, seed, channels_last,
                        y_train=y if loss.needs_labels else None)
    return fit(source, encoder, loss_fn,
               build_schedule(schedule, spe), optimizer, plan, device=device, seed=seed,
               on_log=on_log, on_checkpoint=by_epoch, resume=resume,
               progress=progress)


def pretrain(params: Params, config: Configuration) -> list[dict[str, Any]]:
    """Train every seed of one image configuration; returns the lines the stage prints."""
    runs = [r for r in params.runs() if r.config == config]
    if not runs:
        raise ValueError(f"configuration {config.to_str()} is not part of the study in "
                         "params.yaml (study: or primary:)")
    sweep_abandoned({r.id for r in params.runs()} | {r.id for r in params.text_runs()})
    return train_configuration(runs, partial(pretrain_run, params),
                               paths.configuration_model_dir(config),
                               paths.TRAIN / config.to_str())


def check_training_memory(params: Params, run: Run, channels: int, native_size: int) -> None:
    """On the CPU, refuse a batch whose activations and similarity matrices cannot fit this
    machine before the first step allocates them (models.footprint, params.footprint)."""
    from infonce_lab.models.footprint import training_activation_bytes
    from infonce_lab.params.footprint import PROCESS_BASE, fmt_bytes, machine_bytes

    tcfg = params.training
    if resolve_device(tcfg.device).type != "cpu":
        return  # on the GPU: the params-time bound (params.footprint) is all that is checked
    per_process = max(1, tcfg.batch_size // int(os.environ.get("WORLD_SIZE", "1")))
    size = getattr(params.datasets[run.dataset].augment, "size", None) or native_size
    act = training_activation_bytes(params.backbones[run.backbone], channels, size,
                                    2 * per_process)
    m = (2 if getattr(params.losses[run.loss], "candidates", None) == "all_views" else 1) \
        * per_process
    # torchrun's processes on this host share its memory: each holds its slice of the batch.
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    need, room = local * (act + 25 * m * m + PROCESS_BASE), machine_bytes()
    if need > room:
        raise ConfigError(
            f"training.batch_size = {tcfg.batch_size}: a training step of backbone "
            f"{run.backbone!r} at {size}×{size} would hold ≈ {fmt_bytes(act)} of activations "
            f"and {fmt_bytes(25 * m * m)} of similarity matrices per process ({local} on this "
            f"host), more than this machine's "
            f"{fmt_bytes(room)}. Lower training.batch_size (or train on a GPU).")


def pretrain_run(params: Params, run: Run) -> dict[str, Any]:
    """Train one image run into ``.resume/<run>/finished/``; returns the line the stage prints."""
    from infonce_lab.data import load_raw
    from infonce_lab.models.build import checkpoint_meta, save_encoder

    data = load_raw(paths.raw_dir(run.dataset))
    x = data.pretrain_x()
    tcfg, bb = params.training, params.backbones[run.backbone]
    check_training_memory(params, run, x.shape[1], x.shape[-1])
    fp = resume_fingerprint(params, run)
    init_distributed()
    work, resume = resume_for(run.id, fp, tcfg.checkpoint_every_steps)
    if (line := finished_line(work)) is not None:
        return line if is_rank0() else {}
    train = partial(train_image, x, backbone=bb, loss=params.losses[run.loss],
                    schedule=params.schedules[run.schedule],
                    augment=params.datasets[run.dataset].augment, training=tcfg, seed=run.seed,
                    resume=resume, progress=Progress(run.id), y=data.pretrain_y())
    if not is_rank0():  # the other processes only train: rank 0 logs and writes
        train()
        return {}
    meta = {**model_binding(params, run), **checkpoint_meta(bb, x)}
    ckpt_dir = work / "checkpoints"

    def on_checkpoint(epoch: int, enc: torch.nn.Module) -> None:
        # Kept beside the resume state, so a run resumed after this epoch still has it.
        save_encoder(enc, ckpt_dir / f"epoch_{epoch:04d}.pt", {**meta, "epoch": epoch})

    with atomic_dir(work / FINISHED) as done:
        model_dir, live_dir = done / "model", done / "train"
        (model_dir / "checkpoints").mkdir(parents=True)
        with live_logger(live_dir, run.id) as on_log:
            result = train(on_log=on_log, on_checkpoint=on_checkpoint)
        for f in sorted(ckpt_dir.glob("epoch_*.pt*")):   # each checkpoint and its .sha256
            shutil.copy2(f, model_dir / "checkpoints" / f.name)
        save_encoder(result.encoder, model_dir / "model.pt",
                     {**meta, "epoch": tcfg.epochs, "loss_state": result.loss_state})
        write_json_atomic(live_dir / "run.json", {"run": run.model_dump(), **summary(result)})
        line = {"run": run.id, "final_loss": result.final_loss,
                "train_seconds": round(result.seconds, 1)}
        write_json_atomic(done / "line.json", line)
    return line
