"""The plan a training run follows (:func:`infonce_lab.train.loop.fit`)."""

from __future__ import annotations

from dataclasses import dataclass


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
