"""S1 of SPECS D.8: annealed Langevin dynamics of InfoNCE on (S¹)^4 with two positive pairs,
started in the interleaved trap, under the literal (P1) and the normalised (P2) dynamics.

The threshold c* = 1/ΔE_max comes from the exact landscape (a watershed of U_0 on the
rotation-quotiented 3-torus, ``s1_barrier``); a chain is "trapped" when a quench of F_β̄ from its
state ends away from the global set (U_0 > 1e-6). Both are vectorised over chains; the only loops
are over dynamics and over the checks in time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from infonce_lab.schedules import BetaGrowth, LogAnneal
from infonce_lab.simulation.barriers import quench, s1_barrier
from infonce_lab.simulation.landscape import (
    S1_PAIRS,
    S1_TRAP_ANGLES,
    free_energy_grad_fn,
    infonce_grad,
    s1_angles_to_z,
    u0,
)
from infonce_lab.simulation.trapping import TrapCurve, escape_hazard_fit, trap_probabilities


def _curve_json(c: TrapCurve) -> dict[str, Any]:
    return {"name": c.name, "t": c.times.tolist(), "n": c.n, "p_trap": c.p_trap.tolist(),
            "trap_ci": [c.trap_ci[0].tolist(), c.trap_ci[1].tolist()],
            "p_surv": c.p_surv.tolist(), "surv_ci": [c.surv_ci[0].tolist(), c.surv_ci[1].tolist()]}


def run_s1(
    *,
    kappa_s: float = 1.0,
    grid: int = 128,
    beta_bar: float = 20.0,
    chains: int = 200,
    dt: float = 1e-2,
    horizon: float = 200.0,
    K: float = math.e,
    c_ratios: Sequence[float] = (0.5, 1.0, 2.0),
    sqrt_beta0: float = 1.0,
    dynamics: Sequence[str] = ("P2", "P1"),
    check_every: int = 500,
    angle_sd: float = 0.05,
    seed: int = 0,
) -> dict[str, Any]:
    """Barriers and c* of S1, then P_trap(t) (occupancy and survival, Wilson CIs) for the log
    schedule at each c/c* and a fast √t schedule, under each dynamics."""
    barrier = s1_barrier(grid, beta_bar, kappa_s)
    c_star = barrier.c_star
    steps = int(round(horizon / dt))
    schedules = {f"log c/c*={r:g}": LogAnneal(c=r * c_star, K=K, time_per_step=dt, tau_max=1e6)
                 for r in c_ratios}
    schedules["sqrt"] = BetaGrowth(form="sqrt", beta0=sqrt_beta0, rate=1.0, time_per_step=dt,
                                   beta_max=1e6)
    rng = np.random.default_rng(seed)
    angles = np.asarray(S1_TRAP_ANGLES)[None, :] + angle_sd * rng.standard_normal((chains, 4))
    z0 = s1_angles_to_z(angles)
    f_grad = free_energy_grad_fn(S1_PAIRS, beta_bar, kappa_s)

    def in_trap(z: np.ndarray) -> np.ndarray:
        res = quench(z, f_grad, u0_fn=lambda zz: u0(zz, S1_PAIRS, kappa_s))
        return ~res.is_global

    def grad(z: np.ndarray, beta: float | np.ndarray) -> np.ndarray:
        return infonce_grad(z, S1_PAIRS, beta, kappa_s)

    runs: dict[str, Any] = {}
    for dyn in dynamics:
        curves = trap_probabilities(grad, z0, in_trap, list(schedules.values()), steps, dt,
                                    names=list(schedules), check_every=check_every,
                                    dynamics=dyn, rng=seed)  # type: ignore[arg-type]
        rows = []
        for c in curves:
            fit = escape_hazard_fit(c.times, c.k_surv, K) if c.name.startswith("log") else None
            rows.append({**_curve_json(c), "p_trap_end": float(c.p_trap[-1]),
                         "p_trap_end_ci": [float(c.trap_ci[0][-1]), float(c.trap_ci[1][-1])],
                         # SPECS D.3(4): escape hazard ∝ (t+K)^(−c/c*) → slope −c/c*
                         "hazard_slope": None if fit is None else float(fit.slope)})
        runs[dyn] = rows
    return {
        "barrier": {"delta_e_max_u0": barrier.delta_e_max_u0, "delta_e_max_f": barrier.delta_e_max_f,
                    "c_star": c_star, "c_star_f": barrier.c_star_f, "grid": grid,
                    "beta_bar": beta_bar, "kappa_s": kappa_s, "trap_u0": barrier.trap_u0,
                    "trap_barrier_u0": barrier.trap_barrier_u0,
                    "trap_barrier_f": barrier.trap_barrier_f},
        "chains": chains, "dt": dt, "horizon": horizon, "c_ratios": list(c_ratios),
        "dynamics": runs,
    }
