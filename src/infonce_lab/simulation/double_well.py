"""S0 of SPECS D.8: a double well on the circle whose barrier is known in closed form.

U(θ) = −cos 2θ − a·cos θ, 0 < a < 4, on S¹ ∋ z = (cos θ, sin θ). Global minimum θ = 0
(U = −1 − a), shallow ("trap") minimum θ = π (U = a − 1), saddles where cos θ = −a/4
(U = 1 + a²/8). The escape cost of the trap is ΔE = 2 − a + a²/8 (1.53125 at a = 0.5) and
c* = 1/ΔE (SPECS D.2 A5).

β-dependence. U has none, so we take L(z, β) = β·U(z), the analogue of L ≈ β·U_0 for InfoNCE
(SPECS D.7(i)). Then P2 (drift −grad(L/β) = −grad U, noise √(2/β)) has stationary law
∝ exp(−β·U): the classical annealing setting in which the Hajek threshold is c* = 1/ΔE. P1 (drift
−β·grad U, noise √(2/β)) has stationary law ∝ exp(−β²·U), i.e. effective barrier β²·ΔE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate


def _check_a(a: float) -> None:
    if not 0.0 < a < 4.0:
        # a ≥ 4 merges the saddle into θ = π (no second well); a ≤ 0 swaps or equalises the wells.
        raise ValueError(f"the double well needs 0 < a < 4, got a = {a}")


def double_well_energy_theta(theta: np.ndarray | float, a: float = 0.5) -> np.ndarray:
    """U(θ) = −cos 2θ − a·cos θ."""
    theta = np.asarray(theta, dtype=np.float64)
    return -np.cos(2.0 * theta) - a * np.cos(theta)


def double_well_energy(z: np.ndarray, a: float = 0.5) -> np.ndarray:
    """U at z ∈ S¹ (last axis of length 2); shape z.shape[:-1]. cos 2θ = x² − y² on the circle."""
    x, y = z[..., 0], z[..., 1]
    return -(x * x - y * y) - a * x


def double_well_grad(z: np.ndarray, a: float = 0.5) -> np.ndarray:
    """Euclidean gradient of the ambient extension U(x, y) = −(x² − y²) − a·x; its tangent
    projection is dU/dθ·(−sin θ, cos θ) = (2 sin 2θ + a sin θ)·(−y, x)."""
    x, y = z[..., 0], z[..., 1]
    return np.stack([-2.0 * x - a, 2.0 * y], axis=-1)


def double_well_loss_grad(z: np.ndarray, beta: float | np.ndarray, a: float = 0.5) -> np.ndarray:
    """``potential_grad`` for :func:`~infonce_lab.simulation.langevin.langevin`: ∇ of L = β·U."""
    return beta * double_well_grad(z, a)


@dataclass(frozen=True)
class DoubleWellBarrier:
    a: float
    theta_saddle: float  # saddles at ±theta_saddle; the trap basin is |θ| > theta_saddle
    u_global: float
    u_trap: float
    u_saddle: float
    delta_e: float  # escape cost out of the trap (the only non-global basin): ΔE_max of A5
    delta_e_global: float  # escape cost out of the global well (for the return rate)
    c_star: float  # 1/ΔE


def double_well_barrier(a: float = 0.5) -> DoubleWellBarrier:
    """Closed form: dU/dθ = sin θ·(4 cos θ + a) vanishes at θ ∈ {0, π} and cos θ = −a/4."""
    _check_a(a)
    u_global, u_trap, u_saddle = -1.0 - a, a - 1.0, 1.0 + a * a / 8.0
    delta_e = u_saddle - u_trap
    return DoubleWellBarrier(
        a=a,
        theta_saddle=float(np.arccos(-a / 4.0)),
        u_global=u_global,
        u_trap=u_trap,
        u_saddle=u_saddle,
        delta_e=delta_e,
        delta_e_global=u_saddle - u_global,
        c_star=1.0 / delta_e,
    )


def in_trap_basin(z: np.ndarray, a: float = 0.5) -> np.ndarray:
    """Basin label by quench, exact in 1-D: gradient descent from θ ends at θ = π iff θ lies
    between the saddles on the π side, i.e. cos θ < −a/4. Shape z.shape[:-1] (bool)."""
    return z[..., 0] < -a / 4.0


def double_well_trap_start(
    chains: int, angle_sd: float = 0.05, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Initial states (chains, 1, 2) at θ = π + N(0, angle_sd²) (SPECS D.8)."""
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    theta = np.pi + angle_sd * gen.standard_normal(chains)
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)[:, None, :]


def double_well_gibbs_bin_probs(
    edges: np.ndarray, beta_eff: float, a: float = 0.5
) -> np.ndarray:
    """Probabilities of the θ-bins [edges[i], edges[i+1]) under ∝ exp(−β_eff·U(θ)) dθ, with
    ``edges`` covering [−π, π]. β_eff = β for P2 and β² for P1 (module docstring). Quadrature per
    bin (not per chain); the energy is shifted by its minimum so that large β cannot overflow."""
    _check_a(a)
    edges = np.asarray(edges, dtype=np.float64)
    u_min = -1.0 - a

    def w(t: float) -> float:
        return float(np.exp(-beta_eff * (double_well_energy_theta(t, a) - u_min)))

    mass = np.array([integrate.quad(w, lo, hi)[0] for lo, hi in zip(edges[:-1], edges[1:], strict=True)])
    return mass / mass.sum()


def double_well_trap_mass(beta_eff: float, a: float = 0.5) -> float:
    """Gibbs mass of the trap basin (cos θ < −a/4) under ∝ exp(−β_eff·U): where P_trap(t) should
    sit at quasi-equilibrium, with β_eff = β(t) (P2) or β(t)² (P1)."""
    ts = double_well_barrier(a).theta_saddle
    probs = double_well_gibbs_bin_probs(np.array([-np.pi, -ts, ts, np.pi]), beta_eff, a)
    return float(probs[0] + probs[2])
