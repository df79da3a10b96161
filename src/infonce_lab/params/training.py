"""The image training loop's params."""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, model_validator

from infonce_lab.params.base import (
    WORK,
    LearningRate,
    Name,
    PosFloat,
    Seed,
    Strict,
    Threads,
    WeightDecay,
    _KeyProblem,
)

LAUNCHERS = ("python", "python3", "torchrun")
# torchrun's options: --name, --name=value or --name value; a value is a host, port, count,
# backend or path — no quote, space, $, `, ;, |, &, <, >, (, ) or glob character.
_OPTION = re.compile(r"^--?[A-Za-z][A-Za-z0-9_-]*(=[A-Za-z0-9_.:,/+@-]+)?$")
_VALUE = re.compile(r"^[A-Za-z0-9_.:,/+@-]+$")
# The torchrun options that place and connect the processes (torch.distributed.run), in either
# spelling (nproc_per_node, nproc-per-node). Not: --no-python, --module/-m or --run-path, which
# change what runs; --log-dir, --redirects, --tee, --local-ranks-filter, which write files
# outside the stage's outputs.
TORCHRUN_OPTIONS = frozenset({
    "standalone", "nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port",
    "rdzv_backend", "rdzv_endpoint", "rdzv_id", "rdzv_conf", "rdzv_timeout", "max_restarts",
    "monitor_interval", "local_addr", "start_method", "role"})


def parse_launcher(launcher: str) -> list[str]:
    """``training.launcher`` as the argument list it starts (never a shell command line):
    ``python``/``python3`` alone, or ``torchrun`` and its options. Raises ValueError on anything
    else."""
    try:
        argv = shlex.split(launcher)
    except ValueError as exc:
        raise ValueError(f"{launcher!r}: {exc}") from None
    if not argv or argv[0] not in LAUNCHERS:
        raise ValueError(f"{launcher!r}: must start with one of {', '.join(LAUNCHERS)}")
    if argv[0] != "torchrun" and len(argv) > 1:
        raise ValueError(f"{launcher!r}: {argv[0]} takes no options here")
    prev_takes_value = False
    for tok in argv[1:]:
        if _OPTION.match(tok):
            name = tok.lstrip("-").split("=", 1)[0].replace("-", "_")
            if name not in TORCHRUN_OPTIONS:
                raise ValueError(f"{launcher!r}: {tok!r} is not one of the torchrun options "
                                 f"allowed here ({', '.join(sorted(TORCHRUN_OPTIONS))})")
            prev_takes_value = "=" not in tok and name != "standalone"
        elif prev_takes_value and _VALUE.match(tok):
            prev_takes_value = False
        else:
            raise ValueError(f"{launcher!r}: {tok!r} is not a torchrun option (--name, "
                             "--name=value, --name value; values of letters, digits and . _ : , / "
                             "+ @ -)")
    return argv


def _launcher(value: str) -> str:
    parse_launcher(value)
    return value


class TrainingConfig(Strict):
    epochs: Annotated[int, Field(ge=1, le=100_000), WORK] = 150
    batch_size: Annotated[int, Field(ge=2, le=1_048_576)] = 256
    lr: LearningRate = 1e-3
    weight_decay: WeightDecay = 1e-6
    optimizer: Literal["adam", "adamw", "sgd", "lars"] = "adam"
    momentum: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.9       # sgd and lars
    exclude_bias_and_norm: StrictBool = True   # lars/sgd: no weight decay or adaptation on 1-D params
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    lr_schedule: Literal["constant", "cosine"] = "cosine"
    checkpoint_epochs: list[Annotated[int, Field(ge=1)]] = []
    log_every_steps: Annotated[int, Field(ge=1)] = 5
    device: Literal["auto", "cpu", "cuda"] = "auto"
    threads: Threads = 2
    precision: Literal["fp32", "bf16"] = "bf16"    # bf16 autocast on CUDA only; loss in float32
    channels_last: StrictBool = True   # CUDA only: faster on the CPU too, but rounds differently
    compile: StrictBool = False                          # torch.compile the encoder
    # DDP on GPUs: batch-norm statistics over the global batch (SimCLR §2.2's "global BN"), so
    # BN cannot tell a rank's positives apart by their slice's statistics. CPU DDP keeps
    # per-rank BN: torch's SyncBatchNorm runs on accelerators only.
    sync_batchnorm: StrictBool = True
    # Full training state (model, optimizer, RNGs, position) every this many steps, for resuming
    # a killed stage; 0: never.
    checkpoint_every_steps: Annotated[int, Field(ge=0)] = 0
    # How the pretrain stage starts its processes: "python", or "torchrun …" for DDP. Parsed into
    # an argument list (parse_launcher) and started without a shell: dvc.yaml does not see it.
    launcher: Annotated[str, AfterValidator(_launcher)] = "python"

    @model_validator(mode="after")
    def _within_epochs(self) -> TrainingConfig:
        if self.warmup_epochs > self.epochs:
            raise _KeyProblem("training.warmup_epochs", self.warmup_epochs,
                              f"at most training.epochs ({self.epochs})")
        late = [e for e in self.checkpoint_epochs if e > self.epochs]
        if late:
            raise _KeyProblem("training.checkpoint_epochs", self.checkpoint_epochs,
                              f"epochs within training.epochs ({self.epochs}); {late} would "
                              "never be written and their diagnostics silently missing")
        if len(set(self.checkpoint_epochs)) != len(self.checkpoint_epochs):
            raise _KeyProblem("training.checkpoint_epochs", self.checkpoint_epochs,
                              "unique epochs")
        return self


class StepCostConfig(Strict):
    """The step_cost stage: the WEINCE paper's "Computational overhead" (§3) measured at its
    shapes — a ResNet-18 on 64-pixel images (Tiny-ImageNet) at batch 256 — on this machine:
    the loss stage's forward and backward on its own, and the full step (forward of both views,
    loss, backward, optimizer step) with each loss, interleaved. Random tensors stand in for the
    views: the time is the arithmetic's, and data loading and augmentation, left out, would only
    lower the loss stage's share."""

    backbone: Name = "resnet18"          # a name under backbones:
    image_size: Annotated[int, Field(ge=8, le=512)] = 64
    channels: Annotated[int, Field(ge=1, le=4)] = 3
    batch: Annotated[int, Field(ge=2, le=4096)] = 256      # pairs: 2 × batch views per step
    reference: Name = "infonce"          # names under losses:
    treatment: Name = "weince"
    tau: PosFloat = 0.5                  # the paper's τ; the arithmetic does not depend on it
    steps: Annotated[int, Field(ge=2, le=50)] = 3          # timed full steps per loss, after one untimed
    loss_repeats: Annotated[int, Field(ge=5, le=1000)] = 30  # timed loss stages per loss
    seed: Seed = 0

# What `from infonce_lab.params import *` re-exports (tests/params: every public name defined here).
__all__ = ["LAUNCHERS", "StepCostConfig", "TORCHRUN_OPTIONS", "TrainingConfig", "parse_launcher"]
