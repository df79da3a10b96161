"""What every training loop shares, image or text: device choice, seeding, the learning-rate
schedule and the rank-0 rule. Kept free of models and data so both loops import it."""

from __future__ import annotations

import math
import sys

import numpy as np
import torch


def resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("training.device = 'cuda' but no CUDA device is visible; use 'auto'")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def seed_everything(seed: int, threads: int | None = None, compiled: bool = False) -> None:
    """Same seed, same thread count, CPU → bit-identical weights and metrics.

    ``torch.use_deterministic_algorithms`` imports ``torch._inductor.config`` (≈ 1.7 s, a third
    of a pretrain stage's start-up) only to pass the flag on to compiled code; eager runs set the
    ATen flag alone, and ``compiled=True`` (training.compile) takes the public route.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    np.random.seed(seed % (2**32))
    if compiled or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch._C._set_deterministic_algorithms(True, warn_only=True)


def rank_step_seed(seed: int, step: int, rank: int) -> int:
    """The global generator's seed on DDP rank ``rank`` at ``step``: each rank its own stream
    (seeded alike, every rank would draw rank 0's dropout masks), fixed by the step alone, so a
    resumed run needs no per-rank generator state to draw what the uninterrupted one did."""
    return int(np.random.SeedSequence([seed, step, rank]).generate_state(1)[0])


def global_batchnorm(module: torch.nn.Module, device: torch.device,
                     enabled: bool) -> torch.nn.Module:
    """``module`` with its batch norms synchronised across the DDP processes (SimCLR §2.2: with
    per-device BN a model can tell a rank's positives by their slice's statistics), where torch
    can: SyncBatchNorm runs on accelerators only, so on the CPU ``module`` is returned as it is.
    The parameters and buffers are the same tensors, so an optimizer built before still holds
    them and the state dict's keys are unchanged."""
    if not enabled or device.type == "cpu":
        return module
    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(module)


def is_rank0() -> bool:
    """Only rank 0 logs and writes (DESIGN: distributed)."""
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def barrier() -> None:
    """Wait for every process of a distributed run; nothing otherwise."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def lr_at(step: int, total: int, warmup: int, base: float, kind: str) -> float:
    """Linear warmup over ``warmup`` steps, then cosine / linear decay to 0 at ``total``, or constant.

    A closed form of the step rather than a ``torch.optim.lr_scheduler``: the loop sets every
    step's rate from it, so a run resumed at step s needs no scheduler state in its checkpoint
    and is at the rate a fresh run has at s (tests/train/test_resume.py: identical weights),
    and the warmup-then-cosine shape needs SequentialLR's milestone bookkeeping otherwise."""
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    if kind == "constant":
        return base
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if kind == "linear":
        return base * (1.0 - progress)
    return base * 0.5 * (1.0 + math.cos(math.pi * progress))


class FiniteGuard:
    """Remembers, on the device, the first step whose loss was not finite.

    ``if not torch.isfinite(loss)`` every step is a host sync before the backward pass: on a GPU
    the CPU then waits for the forward to finish before it can queue anything else, and a
    launch-bound step (ResNet-18 on 32×32 images on an H200) loses its CPU/GPU overlap. Here the
    test is a device-side ``where``, and :meth:`check` — the only sync — runs where the loop
    syncs anyway (a telemetry record, a saved state, the end). A NaN step makes every later loss
    NaN, so the run still stops, at most one logging window later, naming the first bad step;
    anything written to disk is checked first.
    """

    def __init__(self, device: torch.device) -> None:
        self.first_bad = torch.full((), -1, dtype=torch.long, device=device)

    def update(self, loss: torch.Tensor, step: int) -> None:
        bad = ~torch.isfinite(loss.detach()) & (self.first_bad < 0)
        self.first_bad = torch.where(bad, step, self.first_bad)

    def check(self, advice: str) -> None:
        step = int(self.first_bad)
        if step >= 0:
            raise FloatingPointError(f"non-finite loss at step {step}; {advice}")
