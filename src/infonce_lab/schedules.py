"""Temperature schedules: pure maps from the optimizer step to τ (β = 1/τ).

The same objects drive training and, later, the Langevin simulator. A schedule is built from its
params section with :func:`build_schedule`; ``taus(steps)`` precomputes a whole run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from infonce_lab.config import ScheduleConfig


class Schedule(Protocol):
    def tau(self, step: int) -> float: ...


@dataclass(frozen=True)
class Fixed:
    value: float

    def tau(self, step: int) -> float:
        return self.value


def build_schedule(cfg: ScheduleConfig, total_steps: int) -> Schedule:
    """``total_steps`` lets schedules that depend on the horizon (cosine, …) place themselves."""
    if cfg.kind == "fixed":
        return Fixed(cfg.tau)
    raise ValueError(f"unknown schedule kind {cfg.kind!r}")


def taus(schedule: Schedule, steps: int) -> np.ndarray:
    return np.array([schedule.tau(s) for s in range(steps)], dtype=np.float64)
