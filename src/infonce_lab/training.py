"""The contrastive training loop: two augmented views, one loss, a temperature schedule.

Pure of file I/O except for the optional resume state: telemetry and the diagnostics' checkpoints
go through callbacks, so the stage decides where things are written and tests run the loop in
memory. The same loop runs the embedded default on the CPU and the paper's protocol on GPUs:

- data stay uint8 on the training device when they fit (a CIFAR train set is 150 MB) and both
  views are made there in one batched call (no PIL, no worker processes);
- bf16 autocast on CUDA with float32 similarities and loss; channels_last; optional torch.compile;
- under ``torchrun`` each process takes its slice of every global batch, the encoder is wrapped in
  DDP and the loss sees the gathered global batch (``gather_with_grad``);
- a full training state every ``checkpoint_every_steps`` (atomic); a killed run restarted with the
  same params resumes from it and ends with the same weights as an uninterrupted run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from infonce_lab.checkpointing import load_state, rng_state, save_state, set_rng_state
from infonce_lab.config import (
    AugmentConfig,
    BackboneConfig,
    LossConfig,
    ScheduleConfig,
    TrainingConfig,
)
from infonce_lab.data.views import make_views
from infonce_lab.losses import build_loss, gather_with_grad
from infonce_lab.losses.telemetry import step_record
from infonce_lab.models import Encoder, build_encoder
from infonce_lab.runtime import (
    FiniteGuard,
    is_rank0,
    lr_at,
    resolve_device,
    seed_everything,
)
from infonce_lab.schedules import build_schedule

LogFn = Callable[[int, dict[str, float]], None]
CheckpointFn = Callable[[int, Encoder], None]


def init_encoder(backbone: BackboneConfig, in_channels: int, seed: int,
                 image_size: int | None = None) -> Encoder:
    """The encoder a run starts from; the random-init baseline is exactly this, untrained."""
    torch.manual_seed(seed)
    return build_encoder(backbone, in_channels, image_size)


def build_optimizer(params: Any, model: torch.nn.Module, training: TrainingConfig
                    ) -> torch.optim.Optimizer:
    if training.optimizer == "lars" or (training.optimizer == "sgd" and training.exclude_bias_and_norm):
        from infonce_lab.optim import build_optimizer as build

        return build(training.optimizer, model, training.lr, training.weight_decay,
                     training.momentum)
    if training.optimizer == "sgd":
        return torch.optim.SGD(params, lr=training.lr, momentum=training.momentum,
                               weight_decay=training.weight_decay)
    if training.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=training.lr, weight_decay=training.weight_decay)
    return torch.optim.Adam(params, lr=training.lr, weight_decay=training.weight_decay)


def _on_device(x_train: np.ndarray, device: torch.device) -> torch.Tensor:
    """The train set on the training device when it fits in a quarter of free memory (uint8 stays
    uint8); otherwise in pinned host memory, each batch copied over."""
    x = torch.from_numpy(np.ascontiguousarray(x_train))
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return x.to(device) if x.numel() * x.element_size() < free // 4 else x.pin_memory()
    return x if x.dtype == torch.uint8 else x.to(torch.float32)


@dataclass
class Resume:
    """Where the full training state lives, how often it is written, and whose it is."""

    path: Path
    fingerprint: str
    every_steps: int


@dataclass
class TrainResult:
    encoder: Encoder
    loss_state: dict
    steps: int
    seconds: float
    samples_per_s: float
    final_loss: float
    resumed_from: int = 0
    history: list[tuple[int, dict[str, float]]] = field(default_factory=list)


def _distributed() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def train_encoder(
    x_train: np.ndarray,
    *,
    backbone: BackboneConfig,
    loss: LossConfig,
    schedule: ScheduleConfig,
    augment: AugmentConfig,
    training: TrainingConfig,
    seed: int,
    on_log: LogFn | None = None,
    on_checkpoint: CheckpointFn | None = None,
    resume: Resume | None = None,
) -> TrainResult:
    device = resolve_device(training.device)
    seed_everything(seed, training.threads, compiled=training.compile)
    rank, world = _distributed()
    x_all = _on_device(x_train, device)
    n = x_all.shape[0]
    if training.batch_size > n:
        raise ValueError(
            f"training.batch_size = {training.batch_size} exceeds the {n} training images"
        )
    if training.batch_size % world:
        raise ValueError(f"training.batch_size = {training.batch_size} is not divisible by the "
                         f"{world} processes")
    local = training.batch_size // world
    steps_per_epoch = n // training.batch_size  # drop_last, as SimCLR
    total = steps_per_epoch * training.epochs
    encoder = init_encoder(backbone, x_all.shape[1], seed, x_all.shape[-1]).to(device)
    channels_last = training.channels_last and device.type == "cuda"
    if channels_last:
        encoder = encoder.to(memory_format=torch.channels_last)
    loss_fn = build_loss(loss)
    sched = build_schedule(schedule, steps_per_epoch)
    opt = build_optimizer(encoder.parameters(), encoder, training)
    gen = torch.Generator(device=device).manual_seed(seed)
    warmup = training.warmup_epochs * steps_per_epoch
    checkpoints = set(training.checkpoint_epochs)
    step, epoch, start_b, perm, last = 0, 1, 0, None, float("nan")
    history: list[tuple[int, dict[str, float]]] = []
    state = load_state(resume.path, resume.fingerprint) if resume is not None else None
    if state is not None:
        encoder.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        loss_fn.load_state_dict(state["loss_state"])
        step, epoch, start_b, perm = state["step"], state["epoch"], state["batch"], state["perm"]
        last, history = state["last_loss"], [(s, r) for s, r in state["history"]]
        set_rng_state(state["rng"], gen)
        perm = perm.to(device)
        if on_log is not None and is_rank0():
            for s, r in history:  # the telemetry of the steps before the kill, replayed
                on_log(s, r)
    resumed_from = step
    model: torch.nn.Module = encoder
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(encoder, device_ids=[device.index] if device.type == "cuda" else None)
    if training.compile:
        model = torch.compile(model)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16,
                              enabled=training.precision == "bf16" and device.type == "cuda")
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model.train()
    guard = FiniteGuard(device)
    advice = "lower training.lr or raise the temperature" + (
        f"; the last good training state is kept in {resume.path}" if resume is not None else "")
    t0 = time.perf_counter()
    window_t, window_n = time.perf_counter(), 0
    while epoch <= training.epochs:
        if perm is None:
            perm = torch.randperm(n, generator=gen, device=device)
        for b in range(start_b, steps_per_epoch):
            idx = perm[b * training.batch_size: (b + 1) * training.batch_size]
            idx = idx[rank * local: (rank + 1) * local]
            x = x_all[idx.to(x_all.device)].to(device, non_blocking=True)
            v1, v2 = make_views(x, augment, gen)
            tau = sched.tau(step)
            lr = lr_at(step, total, warmup, training.lr, training.lr_schedule)
            for g in opt.param_groups:
                g["lr"] = lr
            with autocast:
                # One forward over both views: half the kernel launches of two passes.
                _, z = model(torch.cat([v1, v2]).contiguous(memory_format=fmt))
            # Similarities and loss in float32; under DDP on the gathered global batch.
            z1, z2 = (gather_with_grad(v.float()) for v in z.chunk(2))
            value, stats = loss_fn(z1, z2, tau)
            guard.update(value, step)
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            last_t = value.detach()
            window_n += 2 * training.batch_size
            step += 1
            if is_rank0() and (step % training.log_every_steps == 0 or step == total):
                guard.check(advice)
                last = float(last_t)
                now = time.perf_counter()
                record = step_record(z1, z2, stats, loss=last, lr=lr, epoch=epoch,
                                     samples_per_s=window_n / max(now - window_t, 1e-9),
                                     tau=tau)
                history.append((step, record))
                if on_log is not None:
                    on_log(step, record)
                window_t, window_n = time.perf_counter(), 0
            if b == steps_per_epoch - 1 and on_checkpoint is not None and is_rank0() \
                    and epoch in checkpoints:
                guard.check(advice)
                on_checkpoint(epoch, encoder)
            if resume is not None and resume.every_steps and step % resume.every_steps == 0 \
                    and step < total and is_rank0():
                guard.check(advice)  # never overwrite the last good state with a NaN one
                last = float(last_t)
                done = b == steps_per_epoch - 1
                save_state(resume.path, {
                    "fingerprint": resume.fingerprint, "step": step,
                    "epoch": epoch + 1 if done else epoch, "batch": 0 if done else b + 1,
                    "perm": None if done else perm.cpu(),
                    "model": encoder.state_dict(), "optimizer": opt.state_dict(),
                    "loss_state": loss_fn.state_dict(), "last_loss": last,
                    "history": [[s, r] for s, r in history], "rng": rng_state(gen),
                })
        epoch, start_b, perm = epoch + 1, 0, None
    guard.check(advice)
    if step > resumed_from:
        last = float(last_t)
    seconds = time.perf_counter() - t0
    encoder.eval()
    return TrainResult(
        encoder=encoder,
        loss_state=loss_fn.state_dict(),
        steps=step,
        seconds=seconds,
        samples_per_s=2 * (step - resumed_from) * training.batch_size / max(seconds, 1e-9),
        final_loss=last,
        resumed_from=resumed_from,
        history=history,
    )


@torch.no_grad()
def extract_features(
    encoder: Encoder, x: np.ndarray, batch_size: int = 1024, device: str | torch.device = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """Frozen backbone features h and projector outputs z (eval mode, no augmentation); uint8
    images are scaled to [0, 1] as the training views are."""
    encoder = encoder.to(device).eval()
    hs, zs = [], []
    for start in range(0, len(x), batch_size):
        xb = torch.as_tensor(x[start : start + batch_size], device=device)
        xb = xb.float() / 255.0 if xb.dtype == torch.uint8 else xb.float()
        h, z = encoder(xb)
        hs.append(h.float().cpu())
        zs.append(z.float().cpu())
    return torch.cat(hs).numpy(), torch.cat(zs).numpy()
