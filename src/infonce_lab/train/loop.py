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
pipeline decides where things go and tests run the loop in memory. :func:`fit` is the step loop;
what carries over between steps (and across a kill) is :class:`~infonce_lab.train.state.
TrainingState`, what happens after a step is :class:`~infonce_lab.train.hooks.StepHooks`. It takes built objects — the
encoder, the loss (whose parameters, if it has any, are already in the optimizer), the schedule —
so it knows no params section.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from infonce_lab.data.batch_part import BatchPart
from infonce_lab.losses import gather_rows, gather_with_grad
from infonce_lab.losses.objects import Loss, needs_labels
from infonce_lab.schedules import Schedule
from infonce_lab.train.hooks import CheckpointFn, LogFn, Resume, StepHooks, ValidateFn
from infonce_lab.train.plan import Plan
from infonce_lab.train.progress import Progress
from infonce_lab.train.runtime import (
    FiniteGuard,
    global_batchnorm,
    lr_at,
    rank_step_seed,
    seed_everything,
)
from infonce_lab.train.state import TrainingState

__all__ = ["STATE_FORMAT", "BatchSource", "CheckpointFn", "LogFn", "Plan", "Resume",
           "TrainResult", "ValidateFn", "distributed", "fit"]

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
    local = _rows_per_process(batch, world)
    with_labels = _reads_labels(loss_fn, source)
    state = (TrainingState.read(resume.path, resume.fingerprint, encoder, optimizer, loss_fn,
                                source, device) if resume is not None else TrainingState())
    resumed_from = state.step
    encoder, model = _wrapped(encoder, plan, device, world)
    hooks = StepHooks(state, encoder, optimizer, loss_fn, source, FiniteGuard(device), plan,
                      on_log, on_checkpoint, validate, resume, progress)
    hooks.replay()
    # Every step's τ and learning rate before the loop (pure functions of the step), as DINO
    # precomputes its schedules: nothing is asked of the schedule inside the step.
    taus = [schedule.tau(s) for s in range(total)]
    lrs = [lr_at(s, total, plan.warmup_steps, plan.lr, plan.lr_schedule) for s in range(total)]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16,
                              enabled=plan.bf16 and device.type == "cuda")
    model.train()
    t0 = time.perf_counter()
    loss = torch.full((), math.nan)
    while state.step < total:
        step = state.step
        if state.perm is None:
            state.perm = source.order()
        b = step % spe
        idx = state.perm[b * batch:(b + 1) * batch][rank * local:(rank + 1) * local]
        inputs = source.inputs(idx, BatchPart(rank * local, batch))
        if world > 1:   # dropout (the text views) from this rank's own stream
            torch.manual_seed(rank_step_seed(seed, step, rank))
        for g in optimizer.param_groups:
            g["lr"] = lrs[step]
        with autocast:
            # Both views in one forward: half the kernel launches of two passes, and each text
            # pair's two copies see independent dropout masks (SimCSE's augmentation).
            _, z = model(**inputs) if isinstance(inputs, dict) else model(inputs)
        z1, z2 = (gather_with_grad(v.float()) for v in z.chunk(2))  # the loss in float32
        labels = {"labels": gather_rows(source.labels(idx))} if with_labels else {}
        value, stats = loss_fn(z1, z2, taus[step], **labels)
        state.add_run_stats(stats)
        hooks.guard.update(value, step)
        _optimizer_step(optimizer, value, encoder, plan.max_grad_norm)
        loss = value.detach()
        state.step += 1
        hooks.after_step(z1, z2, stats, loss, taus[step], lrs[step])
        if state.step % spe == 0:
            state.perm = None
    hooks.finish(loss, resumed_from)
    return _result(state, encoder, loss_fn, plan, resumed_from, time.perf_counter() - t0)


def _rows_per_process(batch: int, world: int) -> int:
    if batch % world:
        raise ValueError(f"the batch size {batch} is not divisible by the {world} processes")
    return batch // world


def _reads_labels(loss_fn: Loss, source: BatchSource) -> bool:
    """Only a loss that reads labels (the label oracle) gets them; for every other loss the step
    is the same ops in the same order as without labels, so its weights are unchanged."""
    with_labels = needs_labels(loss_fn)
    if with_labels and not callable(getattr(source, "labels", None)):
        raise ValueError(f"the loss reads class labels (needs_labels: mask_same_class) but the "
                         f"batch source {type(source).__name__} has none (the text study's "
                         "sentences are unlabelled)")
    return with_labels


def _wrapped(encoder: nn.Module, plan: Plan, device: torch.device, world: int,
             ) -> tuple[nn.Module, nn.Module]:
    """(the encoder, what the step calls): under DDP with global batch norm where asked,
    compiled where asked."""
    model = encoder
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        encoder = global_batchnorm(encoder, device, plan.sync_batchnorm)
        model = DDP(encoder, device_ids=[device.index] if device.type == "cuda" else None,
                    find_unused_parameters=plan.find_unused_parameters)
    if plan.compile:
        model = torch.compile(model)
    return encoder, model


def _optimizer_step(optimizer: torch.optim.Optimizer, value: torch.Tensor, encoder: nn.Module,
                    max_grad_norm: float | None) -> None:
    optimizer.zero_grad(set_to_none=True)
    value.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(encoder.parameters(), max_grad_norm)
    optimizer.step()


def _result(state: TrainingState, encoder: nn.Module, loss_fn: Loss, plan: Plan,
            resumed_from: int, seconds: float) -> TrainResult:
    """The run's result, with the best validated weights loaded where the plan selects them."""
    selected = state.step
    if plan.select_best and state.best_model is not None:
        encoder.load_state_dict(state.best_model)
        selected = state.best_step
    encoder.eval()
    return TrainResult(
        encoder=encoder, loss_state=loss_fn.state_dict(), steps=state.step, seconds=seconds,
        samples_per_s=2 * (state.step - resumed_from) * plan.batch_size / max(seconds, 1e-9),
        final_loss=state.last_loss, resumed_from=resumed_from, history=state.history,
        selected_step=selected, val_history=state.val_history, train_stats=state.run_means())
