"""The training loop's state between steps: what a resumed run reads back, besides the built
objects (encoder, optimizer, loss, batch source), to continue as if it had never stopped."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from infonce_lab.losses.objects import Loss
from infonce_lab.train.checkpointing import load_state, save_state

# Per-anchor loss statistics averaged over every step of the run, not only the logged ones:
# WEINCE's effective inverse temperature κ and mixing weight λ (losses/weince.py).
RUN_STATS = ("inv_tau_eff", "lambda")


@dataclass
class TrainingState:
    step: int = 0
    perm: torch.Tensor | None = None          # the epoch's order; None at an epoch's start
    last_loss: float = math.nan
    history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    val_history: list[tuple[int, float]] = field(default_factory=list)
    best_score: float = -math.inf
    best_step: int = 0
    best_model: dict[str, torch.Tensor] | None = None
    run_sums: dict[str, torch.Tensor] = field(default_factory=dict)  # on the device, no sync

    @classmethod
    def read(cls, path: Any, fingerprint: str, encoder: nn.Module,
             optimizer: torch.optim.Optimizer, loss_fn: Loss, source: Any,
             device: torch.device) -> TrainingState:
        """The state saved at ``path`` for ``fingerprint`` (and the objects set from it), or a
        fresh one when there is none."""
        saved = load_state(path, fingerprint)
        if saved is None:
            return cls()
        encoder.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loss_fn.load_state_dict(saved["loss_state"])
        source.set_rng_state(saved["rng"])
        perm = saved["perm"]
        return cls(step=saved["step"], last_loss=saved["last_loss"],
                   perm=perm.to(source.order_device) if perm is not None else None,
                   history=[(s, r) for s, r in saved["history"]],
                   val_history=[(s, v) for s, v in saved["val_history"]],
                   best_score=saved["best_score"], best_step=saved["best_step"],
                   best_model=saved["best_model"],
                   run_sums={k: v.to(device) for k, v in saved["run_sums"].items()})

    def write(self, path: Any, fingerprint: str, steps_per_epoch: int, encoder: nn.Module,
              optimizer: torch.optim.Optimizer, loss_fn: Loss, source: Any) -> None:
        assert self.perm is not None  # written mid-run, before the epoch's end resets it
        save_state(path, {
            "fingerprint": fingerprint, "step": self.step,
            "perm": None if self.step % steps_per_epoch == 0 else self.perm.cpu(),
            "model": encoder.state_dict(), "optimizer": optimizer.state_dict(),
            "loss_state": loss_fn.state_dict(), "last_loss": self.last_loss,
            "history": [[s, r] for s, r in self.history],
            "val_history": [[s, v] for s, v in self.val_history],
            "best_score": self.best_score, "best_step": self.best_step,
            "best_model": self.best_model,
            "run_sums": {k: v.cpu() for k, v in self.run_sums.items()},
            "rng": source.rng_state(),
        })

    def add_run_stats(self, stats: dict[str, torch.Tensor]) -> None:
        for key in RUN_STATS:
            if key in stats:
                mean = stats[key].detach().double().mean()
                self.run_sums[key] = self.run_sums[key] + mean if key in self.run_sums else mean

    def add_validation(self, at: int, score: float, encoder: nn.Module, select_best: bool) -> None:
        self.val_history.append((at, score))
        if select_best and score > self.best_score:
            self.best_score, self.best_step = score, at
            self.best_model = copy.deepcopy(encoder.state_dict())

    def run_means(self) -> dict[str, float]:
        return ({f"{k}_mean": float(v) / self.step for k, v in self.run_sums.items()}
                if self.step else {})
