"""Trapping probabilities under annealing schedules (annealing paper §3.2–3.3; our metrics).

Two estimators per time t, each over R chains started in the trap basin:

- occupancy  P_trap(t) = P(Z_t in the trap basin) — our protocol's metric;
- survival   S(t) = P(no check up to t found the chain outside the trap basin) — the first-exit
  probability, whose −log is the integrated escape rate ∫ r(s) ds of the annealing paper's App. B.4.

They differ once escaped chains can come back: for c < c* the process tracks the annealed Gibbs
law, whose trap mass decays only like exp(−β(t)·(U_trap − U_global)) = (t+K)^{−c·δ} (D.7(iv)), so
the occupancy exponent fit is not expected to give 1 − c/c*; the survival one is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats


def wilson_interval(
    k: np.ndarray | int, n: np.ndarray | int, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion k/n (no continuity correction; the same
    as scipy's ``binomtest(k, n).proportion_ci(method="wilson")``). Vectorised; NaN where n = 0."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = stats.norm.ppf(0.5 + level / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        center = (p + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    # Clip: at k = 0 or k = n the bounds are 0 or 1 exactly, up to round-off.
    return np.clip(center - half, 0.0, 1.0), np.clip(center + half, 0.0, 1.0)


@dataclass(frozen=True)
class TrapCurve:
    """Counts and proportions (with Wilson 95 % CIs) at the check times of one schedule."""

    name: str
    times: np.ndarray
    n: int
    k_trap: np.ndarray
    k_surv: np.ndarray
    p_trap: np.ndarray = field(init=False)
    trap_ci: tuple[np.ndarray, np.ndarray] = field(init=False)
    p_surv: np.ndarray = field(init=False)
    surv_ci: tuple[np.ndarray, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "p_trap", self.k_trap / self.n)
        object.__setattr__(self, "trap_ci", wilson_interval(self.k_trap, self.n))
        object.__setattr__(self, "p_surv", self.k_surv / self.n)
        object.__setattr__(self, "surv_ci", wilson_interval(self.k_surv, self.n))

    def at(self, t: float) -> int:
        """Index of the last check time ≤ t."""
        return int(np.searchsorted(self.times, t + 1e-9, side="right") - 1)
