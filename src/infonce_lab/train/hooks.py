"""What the training loop does after an optimizer step, in this order: a telemetry record (every
``log_every_steps`` and at the last step), validation (every ``eval_every_steps``), a kept
checkpoint (``checkpoint_steps``), the resume state (every ``Resume.every_steps``). Each reads
the loss on the host only when it writes something: the only syncs of a step."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from infonce_lab.losses.objects import Loss
from infonce_lab.losses.telemetry import step_record
from infonce_lab.train.plan import Plan
from infonce_lab.train.progress import Progress
from infonce_lab.train.runtime import FiniteGuard, is_rank0
from infonce_lab.train.state import TrainingState

LogFn = Callable[[int, dict[str, float]], None]
CheckpointFn = Callable[[int, nn.Module], None]
ValidateFn = Callable[[nn.Module], float]


@dataclass
class Resume:
    """Where the full training state lives, how often it is written, and whose it is."""

    path: Path
    fingerprint: str
    every_steps: int


@dataclass
class StepHooks:
    state: TrainingState
    encoder: nn.Module
    optimizer: torch.optim.Optimizer
    loss_fn: Loss
    source: Any
    guard: FiniteGuard
    plan: Plan
    on_log: LogFn | None = None
    on_checkpoint: CheckpointFn | None = None
    validate: ValidateFn | None = None
    resume: Resume | None = None
    progress: Progress | None = None
    window_t: float = field(default_factory=time.perf_counter)
    window_n: int = 0

    @property
    def advice(self) -> str:
        """What to do about a non-finite loss; where the last good state is, only when one was
        written (a run that fails before its first state has none to keep)."""
        kept = self.resume is not None and Path(self.resume.path).is_file()
        return self.plan.advice + (f"; the last good training state is kept in "
                                   f"{self.resume.path}" if kept else "")

    def replay(self) -> None:
        """The telemetry of the steps before a kill, logged again for the resumed run."""
        if self.on_log is not None and is_rank0():
            for s, r in self.state.history:
                self.on_log(s, r)

    def after_step(self, z1: torch.Tensor, z2: torch.Tensor, stats: dict[str, torch.Tensor],
                   loss: torch.Tensor, tau: float, lr: float) -> None:
        step, plan = self.state.step, self.plan
        self.window_n += 2 * plan.batch_size
        if is_rank0() and (step % plan.log_every_steps == 0 or step == plan.total_steps):
            self._log(z1, z2, stats, loss, tau, lr)
        if plan.eval_every_steps and step % plan.eval_every_steps == 0:
            self.validation(step)
        if self.on_checkpoint is not None and is_rank0() and step in plan.checkpoint_steps:
            self.guard.check(self.advice)
            self.on_checkpoint(step, self.encoder)
        if self.resume is not None and self.resume.every_steps and is_rank0() \
                and step % self.resume.every_steps == 0 and step < plan.total_steps:
            self.guard.check(self.advice)  # never overwrite the last good state with a NaN one
            self.state.last_loss = float(loss)
            self.state.write(self.resume.path, self.resume.fingerprint, plan.steps_per_epoch,
                             self.encoder, self.optimizer, self.loss_fn, self.source)

    def _log(self, z1: torch.Tensor, z2: torch.Tensor, stats: dict[str, torch.Tensor],
             loss: torch.Tensor, tau: float, lr: float) -> None:
        self.guard.check(self.advice)
        step, spe = self.state.step, self.plan.steps_per_epoch
        self.state.last_loss = float(loss)
        now = time.perf_counter()
        record = step_record(z1, z2, stats, loss=self.state.last_loss, lr=lr,
                             epoch=1 + (step - 1) // spe,
                             samples_per_s=self.window_n / max(now - self.window_t, 1e-9),
                             tau=tau, candidates=self.loss_fn.candidates)
        self.state.history.append((step, record))
        if self.on_log is not None:
            self.on_log(step, record)
        if self.progress is not None:
            self.progress.update(step, self.plan.total_steps, spe, record)
        self.window_t, self.window_n = time.perf_counter(), 0

    def validation(self, at: int) -> None:
        if self.validate is None:
            return
        score = float(self.validate(self.encoder))
        self.encoder.train()
        self.state.add_validation(at, score, self.encoder, self.plan.select_best)

    def finish(self, loss: torch.Tensor, resumed_from: int) -> None:
        """After the last step: the finite check, the final loss, a last validation."""
        self.guard.check(self.advice)
        step = self.state.step
        if step > resumed_from:
            self.state.last_loss = float(loss)
        if self.plan.eval_every_steps and (not self.state.val_history
                                           or self.state.val_history[-1][0] != step):
            self.validation(step)
