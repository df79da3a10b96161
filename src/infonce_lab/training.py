"""The contrastive training loop: two augmented views, one loss, a temperature schedule.

Pure of file I/O: telemetry and checkpoints go through callbacks, so the stage decides where
things are written and tests can run the loop in memory.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from infonce_lab.config import (
    BackboneConfig,
    DigitsAugment,
    LossConfig,
    ScheduleConfig,
    TrainingConfig,
)
from infonce_lab.data.augment import two_views
from infonce_lab.losses import build_loss, gather_with_grad, similarity_stats, summarise_stats
from infonce_lab.losses.geometry import alignment, uniformity
from infonce_lab.models import Encoder, build_encoder
from infonce_lab.runtime import is_rank0, lr_at, resolve_device, seed_everything
from infonce_lab.schedules import build_schedule

LogFn = Callable[[int, dict[str, float]], None]
CheckpointFn = Callable[[int, Encoder], None]


def init_encoder(backbone: BackboneConfig, in_channels: int, seed: int) -> Encoder:
    """The encoder a run starts from; the random-init baseline is exactly this, untrained."""
    torch.manual_seed(seed)
    return build_encoder(backbone, in_channels)


@dataclass
class TrainResult:
    encoder: Encoder
    loss_state: dict
    steps: int
    seconds: float
    samples_per_s: float
    final_loss: float


def train_encoder(
    x_train: np.ndarray,
    *,
    backbone: BackboneConfig,
    loss: LossConfig,
    schedule: ScheduleConfig,
    augment: DigitsAugment,
    training: TrainingConfig,
    seed: int,
    on_log: LogFn | None = None,
    on_checkpoint: CheckpointFn | None = None,
) -> TrainResult:
    device = resolve_device(training.device)
    seed_everything(seed, training.threads)
    x_all = torch.as_tensor(x_train, dtype=torch.float32, device=device)
    n = x_all.shape[0]
    if training.batch_size > n:
        raise ValueError(
            f"training.batch_size = {training.batch_size} exceeds the {n} training images"
        )
    steps_per_epoch = n // training.batch_size  # drop_last, as SimCLR
    total = steps_per_epoch * training.epochs
    encoder = init_encoder(backbone, x_all.shape[1], seed).to(device)
    loss_fn = build_loss(loss)
    sched = build_schedule(schedule, total, steps_per_epoch)
    params = encoder.parameters()
    if training.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=training.lr, momentum=0.9, weight_decay=training.weight_decay)
    elif training.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=training.lr, weight_decay=training.weight_decay)
    else:
        opt = torch.optim.Adam(params, lr=training.lr, weight_decay=training.weight_decay)
    gen = torch.Generator(device=device).manual_seed(seed)
    warmup = training.warmup_epochs * steps_per_epoch
    checkpoints = set(training.checkpoint_epochs)
    encoder.train()
    step, t0, last = 0, time.perf_counter(), float("nan")
    window_t, window_n = time.perf_counter(), 0
    for epoch in range(1, training.epochs + 1):
        perm = torch.randperm(n, generator=gen, device=device)
        for b in range(steps_per_epoch):
            idx = perm[b * training.batch_size : (b + 1) * training.batch_size]
            x = x_all[idx]
            v1, v2 = two_views(x, augment, gen)
            tau = sched.tau(step)
            lr = lr_at(step, total, warmup, training.lr, training.lr_schedule)
            for g in opt.param_groups:
                g["lr"] = lr
            # One forward over both views: half the kernel launches of two passes.
            _, z = encoder(torch.cat([v1, v2]))
            # Under DDP every process computes the loss on the global batch (gather_with_grad).
            z1, z2 = (gather_with_grad(v) for v in z.chunk(2))
            value, stats = loss_fn(z1, z2, tau)
            if not torch.isfinite(value):
                raise FloatingPointError(
                    f"non-finite loss {value.item()} at step {step} (epoch {epoch}); "
                    "lower training.lr or raise the temperature"
                )
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            last = float(value.detach())
            window_n += 2 * len(idx)
            step += 1
            if on_log is not None and is_rank0() and (
                step % training.log_every_steps == 0 or step == total
            ):
                now = time.perf_counter()
                with torch.no_grad():
                    zd1, zd2 = z1.detach(), z2.detach()
                    record = {
                        "loss": last,
                        "lr": float(lr),
                        "epoch": float(epoch),
                        "samples_per_s": window_n / max(now - window_t, 1e-9),
                        "alignment": float(alignment(zd1, zd2)),
                        "uniformity": float(uniformity(zd1)),
                        **{k: float(v) for k, v in similarity_stats(zd1, zd2).items()},
                        **summarise_stats(stats),
                    }
                    if math.isfinite(tau):
                        record["tau"] = float(tau)
                on_log(step, record)
                window_t, window_n = time.perf_counter(), 0
        if on_checkpoint is not None and epoch in checkpoints:
            on_checkpoint(epoch, encoder)
    seconds = time.perf_counter() - t0
    encoder.eval()
    return TrainResult(
        encoder=encoder,
        loss_state=loss_fn.state_dict(),
        steps=step,
        seconds=seconds,
        samples_per_s=2 * steps_per_epoch * training.batch_size * training.epochs / max(seconds, 1e-9),
        final_loss=last,
    )


@torch.no_grad()
def extract_features(
    encoder: Encoder, x: np.ndarray, batch_size: int = 1024, device: str | torch.device = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """Frozen backbone features h and projector outputs z (eval mode, no augmentation)."""
    encoder = encoder.to(device).eval()
    hs, zs = [], []
    for start in range(0, len(x), batch_size):
        xb = torch.as_tensor(x[start : start + batch_size], dtype=torch.float32, device=device)
        h, z = encoder(xb)
        hs.append(h.float().cpu())
        zs.append(z.float().cpu())
    return torch.cat(hs).numpy(), torch.cat(zs).numpy()
