"""The contrastive training loop of every modality: a batch source gives the two views of a batch,
the encoder embeds both in one forward pass, a loss scores them at the schedule's τ.

What the loop owns, for images and text alike:

- under ``torchrun`` each process takes its slice of every global batch, the encoder is wrapped
  in DDP and the loss sees the gathered global batch (``gather_with_grad``; a loss that reads
  labels gets them gathered in the same order, ``gather_rows``), so 2 processes with N/2 rows
  each give 1 process's loss and gradients;
- bf16 autocast on CUDA with float32 similarities and loss; optional torch.compile and gradient
  clipping;
- the learning-rate schedule, the finite guard (the first non-finite step, checked before anything
  is written), telemetry records, the checkpoints kept for the diagnostics, validation with best-
  checkpoint selection;
- a full training state every ``Resume.every_steps`` (atomic): a killed run restarted with the
  same params resumes from it and ends with the same weights as an uninterrupted run.

It does no file I/O beyond that state: telemetry, checkpoints and validation are callbacks, so the
pipeline decides where things go and tests run the loop in memory. It takes built objects — the
encoder, the loss (whose parameters, if it has any, are already in the optimizer), the schedule —
so it knows no params section.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from infonce_lab.data.batch_part import BatchPart
from infonce_lab.losses import gather_rows, gather_with_grad
from infonce_lab.losses.objects import Loss, needs_labels
from infonce_lab.losses.telemetry import step_record
from infonce_lab.schedules import Schedule
from infonce_lab.train.checkpointing import load_state, save_state
from infonce_lab.train.progress import Progress
from infonce_lab.train.runtime import (
    FiniteGuard,
    global_batchnorm,
    is_rank0,
    lr_at,
    rank_step_seed,
    seed_everything,
)

LogFn = Callable[[int, dict[str, float]], None]
CheckpointFn = Callable[[int, nn.Module], None]
ValidateFn = Callable[[nn.Module], float]

# Per-anchor loss statistics averaged over every step of the run, not only the logged ones:
# WEINCE's effective inverse temperature κ and mixing weight λ (losses/weince.py).
RUN_STATS = ("inv_tau_eff", "lambda")
# Part of every resume fingerprint: a state written by another layout of this file is not read.
STATE_FORMAT = 2


class BatchSource(Protocol):
    """Where a batch's two views come from. ``inputs`` returns what the encoder's forward takes
    (a tensor, or a dict of keyword tensors) for both views of the rows ``idx``, view 1 first;
    ``part`` says where those rows sit in the global batch (a DDP rank's share), so a source
    draws its randomness for the whole batch and hands each rank its rows' draws. A source whose
    rows have classes may also have ``labels(idx)`` (an integer tensor, one per row): the loop
    asks for it only when the loss ``needs_labels``."""

    n: int
    order_device: torch.device   # where ``order``'s permutation lives (restored there)

    def order(self) -> torch.Tensor: ...

    def inputs(self, idx: torch.Tensor, part: BatchPart | None = None
               ) -> torch.Tensor | dict[str, torch.Tensor]: ...

    def rng_state(self) -> dict[str, Any]: ...

    def set_rng_state(self, state: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Plan:
    """What the loop does, in optimizer steps (the pipeline turns epochs into steps)."""

    total_steps: int
    steps_per_epoch: int
    batch_size: int                 # global, over every process
    lr: float
    lr_schedule: str
    warmup_steps: int = 0
    log_every_steps: int = 5
    checkpoint_steps: frozenset[int] = frozenset()
    eval_every_steps: int = 0
    select_best: bool = False
    max_grad_norm: float | None = None
    bf16: bool = False              # autocast, on CUDA only
    compile: bool = False
    threads: int | None = None
    # DDP: parameters the loss may not reach (a transformer's pooler under mean pooling) are
    # looked for each step; without it DDP stops at the second step waiting for their gradients.
    find_unused_parameters: bool = False
    sync_batchnorm: bool = False    # DDP on an accelerator: BN over the global batch
    advice: str = "lower training.lr or raise the temperature"


@dataclass
class Resume:
    """Where the full training state lives, how often it is written, and whose it is."""

    path: Path
    fingerprint: str
    every_steps: int


@dataclass
class TrainResult:
    encoder: nn.Module
    loss_state: dict[str, Any]
    steps: int
    seconds: float
    samples_per_s: float
    final_loss: float
    resumed_from: int = 0
    history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    selected_step: int = 0
    val_history: list[tuple[int, float]] = field(default_factory=list)
    train_stats: dict[str, float] = field(default_factory=dict)


def distributed() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def fit(source: BatchSource, encoder: nn.Module, loss_fn: Loss, schedule: Schedule,
        optimizer: torch.optim.Optimizer, plan: Plan, *, device: torch.device, seed: int,
        on_log: LogFn | None = None, on_checkpoint: CheckpointFn | None = None,
        validate: ValidateFn | None = None, resume: Resume | None = None,
        progress: Progress | None = None) -> TrainResult:
    # Seeded here, after the encoder was built: dropout masks (text) start from the seed whatever
    # building the encoder drew.
    seed_everything(seed, plan.threads, compiled=plan.compile)
    rank, world = distributed()
    batch, spe, total = plan.batch_size, plan.steps_per_epoch, plan.total_steps
    if batch % world:
        raise ValueError(f"the batch size {batch} is not divisible by the {world} processes")
    local = batch // world
    # Only a loss that reads labels (the label oracle) gets them; for every other loss the step
    # below is the same ops in the same order as without this, so its weights are unchanged.
    with_labels = needs_labels(loss_fn)
    if with_labels and not callable(getattr(source, "labels", None)):
        raise ValueError(f"the loss reads class labels (needs_labels: mask_same_class) but the "
                         f"batch source {type(source).__name__} has none (the text study's "
                         "sentences are unlabelled)")
    step, perm, last = 0, None, math.nan
    history: list[tuple[int, dict[str, float]]] = []
    val_history: list[tuple[int, float]] = []
    best: tuple[float, int, dict[str, torch.Tensor] | None] = (-math.inf, 0, None)
    run_sums: dict[str, torch.Tensor] = {}
    state = load_state(resume.path, resume.fingerprint) if resume is not None else None
    if state is not None:
        encoder.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        loss_fn.load_state_dict(state["loss_state"])
        step, last = state["step"], state["last_loss"]
        perm = state["perm"].to(source.order_device) if state["perm"] is not None else None
        history = [(s, r) for s, r in state["history"]]
        val_history = [(s, v) for s, v in state["val_history"]]
        best = (state["best_score"], state["best_step"], state["best_model"])
        run_sums = {k: v.to(device) for k, v in state["run_sums"].items()}
        source.set_rng_state(state["rng"])
        if on_log is not None and is_rank0():
            for s, r in history:  # the telemetry of the steps before the kill, replayed
                on_log(s, r)
    resumed_from = step
    model: nn.Module = encoder
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        encoder = global_batchnorm(encoder, device, plan.sync_batchnorm)

        model = DDP(encoder, device_ids=[device.index] if device.type == "cuda" else None,
                    find_unused_parameters=plan.find_unused_parameters)
    if plan.compile:
        model = torch.compile(model)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16,
                              enabled=plan.bf16 and device.type == "cuda")
    guard = FiniteGuard(device)
    advice = plan.advice + (
        f"; the last good training state is kept in {resume.path}" if resume is not None else "")

    def run_validation(at: int) -> None:
        nonlocal best
        if validate is None:
            return
        score = float(validate(encoder))
        encoder.train()
        val_history.append((at, score))
        if plan.select_best and score > best[0]:
            best = (score, at, copy.deepcopy(encoder.state_dict()))

    model.train()
    t0 = time.perf_counter()
    window_t, window_n = time.perf_counter(), 0
    last_t = torch.full((), math.nan)
    while step < total:
        if perm is None:
            perm = source.order()
        b = step % spe
        idx = perm[b * batch:(b + 1) * batch][rank * local:(rank + 1) * local]
        inputs = source.inputs(idx, BatchPart(rank * local, batch))
        if world > 1:   # dropout (the text views) from this rank's own stream
            torch.manual_seed(rank_step_seed(seed, step, rank))
        tau = schedule.tau(step)
        lr = lr_at(step, total, plan.warmup_steps, plan.lr, plan.lr_schedule)
        for g in optimizer.param_groups:
            g["lr"] = lr
        with autocast:
            # Both views in one forward: half the kernel launches of two passes, and each text
            # pair's two copies see independent dropout masks (SimCSE's augmentation).
            _, z = model(**inputs) if isinstance(inputs, dict) else model(inputs)
        z1, z2 = (gather_with_grad(v.float()) for v in z.chunk(2))  # the loss in float32
        if with_labels:  # gathered in rank order, as z: row i of both is the same pair
            value, stats = loss_fn(z1, z2, tau, labels=gather_rows(source.labels(idx)))
        else:
            value, stats = loss_fn(z1, z2, tau)
        for key in RUN_STATS:
            if key in stats:  # on the device, no sync
                mean = stats[key].detach().double().mean()
                run_sums[key] = run_sums[key] + mean if key in run_sums else mean
        guard.update(value, step)
        optimizer.zero_grad(set_to_none=True)
        value.backward()
        if plan.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(encoder.parameters(), plan.max_grad_norm)
        optimizer.step()
        last_t = value.detach()
        window_n += 2 * batch
        step += 1
        if is_rank0() and (step % plan.log_every_steps == 0 or step == total):
            guard.check(advice)
            last = float(last_t)
            now = time.perf_counter()
            record = step_record(z1, z2, stats, loss=last, lr=lr, epoch=1 + (step - 1) // spe,
                                 samples_per_s=window_n / max(now - window_t, 1e-9), tau=tau,
                                 candidates=loss_fn.candidates)
            history.append((step, record))
            if on_log is not None:
                on_log(step, record)
            if progress is not None:
                progress.update(step, total, spe, record)
            window_t, window_n = time.perf_counter(), 0
        if plan.eval_every_steps and step % plan.eval_every_steps == 0:
            run_validation(step)
        if on_checkpoint is not None and is_rank0() and step in plan.checkpoint_steps:
            guard.check(advice)
            on_checkpoint(step, encoder)
        if resume is not None and resume.every_steps and step % resume.every_steps == 0 \
                and step < total and is_rank0():
            guard.check(advice)  # never overwrite the last good state with a NaN one
            last = float(last_t)
            save_state(resume.path, {
                "fingerprint": resume.fingerprint, "step": step,
                "perm": None if step % spe == 0 else perm.cpu(),
                "model": encoder.state_dict(), "optimizer": optimizer.state_dict(),
                "loss_state": loss_fn.state_dict(), "last_loss": last,
                "history": [[s, r] for s, r in history],
                "val_history": [[s, v] for s, v in val_history],
                "best_score": best[0], "best_step": best[1], "best_model": best[2],
                "run_sums": {k: v.cpu() for k, v in run_sums.items()},
                "rng": source.rng_state(),
            })
        if step % spe == 0:
            perm = None
    guard.check(advice)
    if step > resumed_from:
        last = float(last_t)
    if plan.eval_every_steps and (not val_history or val_history[-1][0] != step):
        run_validation(step)
    seconds = time.perf_counter() - t0
    selected = step
    if plan.select_best and best[2] is not None:
        encoder.load_state_dict(best[2])
        selected = best[1]
    encoder.eval()
    return TrainResult(
        encoder=encoder, loss_state=loss_fn.state_dict(), steps=step, seconds=seconds,
        samples_per_s=2 * (step - resumed_from) * batch / max(seconds, 1e-9), final_loss=last,
        resumed_from=resumed_from, history=history, selected_step=selected,
        val_history=val_history,
        train_stats={f"{k}_mean": float(v) / step for k, v in run_sums.items()} if step else {},
    )
