"""Build a loss callable ``(z1, z2, tau) -> (loss, stats)`` from its params section."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from infonce_lab.config import LossConfig
from infonce_lab.losses.infonce import info_nce

LossFn = Callable[[torch.Tensor, torch.Tensor, float], tuple[torch.Tensor, dict[str, torch.Tensor]]]


def build_loss(cfg: LossConfig) -> LossFn:
    if cfg.kind == "info_nce":
        return partial(_info_nce, decoupled=cfg.decoupled)
    raise ValueError(f"unknown loss kind {cfg.kind!r}")


def _info_nce(z1: torch.Tensor, z2: torch.Tensor, tau: float, *, decoupled: bool):
    return info_nce(z1, z2, tau, decoupled=decoupled)
