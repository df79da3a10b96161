"""The image training loop's params."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from infonce_lab.params.base import Strict


class TrainingConfig(Strict):
    epochs: Annotated[int, Field(ge=1)] = 150
    batch_size: Annotated[int, Field(ge=2)] = 256
    lr: Annotated[float, Field(gt=0.0)] = 1e-3
    weight_decay: Annotated[float, Field(ge=0.0)] = 1e-6
    optimizer: Literal["adam", "adamw", "sgd", "lars"] = "adam"
    momentum: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.9       # sgd and lars
    exclude_bias_and_norm: bool = True   # lars/sgd: no weight decay or adaptation on 1-D params
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    lr_schedule: Literal["constant", "cosine"] = "cosine"
    checkpoint_epochs: list[Annotated[int, Field(ge=1)]] = []
    log_every_steps: Annotated[int, Field(ge=1)] = 5
    device: Literal["auto", "cpu", "cuda"] = "auto"
    threads: Annotated[int, Field(ge=1)] = 2
    precision: Literal["fp32", "bf16"] = "bf16"    # bf16 autocast on CUDA only; loss in float32
    channels_last: bool = True                     # on CUDA only (no gain on the CPU)
    compile: bool = False                          # torch.compile the encoder
    # Full training state (model, optimizer, RNGs, position) every this many steps, for resuming
    # a killed stage; 0: never.
    checkpoint_every_steps: Annotated[int, Field(ge=0)] = 0
    # The pretrain stage's launcher (dvc.yaml interpolates it): "python", or "torchrun …" for DDP.
    launcher: Annotated[str, Field(pattern=r"^(python3?|torchrun( +--?[A-Za-z_-]+(=| +)\S+)*)$")] = "python"
