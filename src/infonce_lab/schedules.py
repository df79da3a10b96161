"""Temperature schedules: pure maps from the optimizer step to τ (β = 1/τ).

The same objects drive training and the Langevin simulator. They take steps: the epoch-based
params (cosine, step) are placed on the step axis by the caller (the pipeline's registry), and
``time_per_step`` in the β-growth ones maps a step to the time t of the theory (the annealing
paper's §4 leaves that map open, so it is a param).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Protocol


class Schedule(Protocol):
    def tau(self, step: int) -> float: ...


@dataclass(frozen=True)
class Fixed:
    value: float

    def tau(self, step: int) -> float:
        return self.value


@dataclass(frozen=True)
class LogAnneal:
    """β(t) = c·ln(t + K); τ = 1/β, bounded by tau_max where β is small or not positive (K ≤ 1)."""

    c: float
    K: float
    time_per_step: float
    tau_max: float

    def beta(self, step: int) -> float:
        return self.c * math.log(step * self.time_per_step + self.K)

    def tau(self, step: int) -> float:
        b = self.beta(step)
        return self.tau_max if b <= 1.0 / self.tau_max else 1.0 / b


@dataclass(frozen=True)
class Cosine:
    tau_min: float
    tau_max: float
    period_steps: float

    def tau(self, step: int) -> float:
        phase = 2.0 * math.pi * step / self.period_steps
        return self.tau_min + 0.5 * (self.tau_max - self.tau_min) * (1.0 + math.cos(phase))


@dataclass(frozen=True)
class BetaGrowth:
    form: str  # linear | sqrt | geometric
    beta0: float
    rate: float
    time_per_step: float
    beta_max: float

    def beta(self, step: int) -> float:
        t = step * self.time_per_step
        if self.form == "linear":
            b = self.beta0 + self.rate * t
        elif self.form == "sqrt":
            b = self.beta0 + self.rate * math.sqrt(t)
        else:  # geometric, in log space so huge t cannot overflow before the cap
            log_b = math.log(self.beta0) + t * math.log(self.rate)
            b = math.exp(min(log_b, math.log(self.beta_max)))
        return min(b, self.beta_max)

    def tau(self, step: int) -> float:
        return 1.0 / self.beta(step)


@dataclass(frozen=True)
class Piecewise:
    taus: tuple[float, ...]
    milestones_steps: tuple[float, ...]

    def tau(self, step: int) -> float:
        return self.taus[bisect.bisect_right(self.milestones_steps, step)]


def first_step_outside(schedule: Schedule, total_steps: int, lo: float, hi: float
                       ) -> tuple[int, float] | None:
    """The first of a run's ``total_steps`` steps whose τ is not finite or leaves [lo, hi], with
    that τ; None when every step's τ lies inside. Every step is evaluated, as the training loop
    does: a β that overflows (τ = 0) or a β0 near zero (τ astronomically large) shows wherever it
    happens on the run, not only where a closed form says it might."""
    for step in range(total_steps):
        tau = schedule.tau(step)
        if not lo <= tau <= hi:   # NaN fails too
            return step, tau
    return None


class NoTemperature:
    """For losses without a temperature; config validation keeps it away from those that need one."""

    def tau(self, step: int) -> float:
        return math.nan
