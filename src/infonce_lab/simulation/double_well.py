"""S0, our test of the annealing paper: a double well on the circle whose barrier is known in
closed form.

U(θ) = −cos 2θ − a·cos θ, 0 < a < 4, on S¹ ∋ z = (cos θ, sin θ). Global minimum θ = 0
(U = −1 − a), shallow ("trap") minimum θ = π (U = a − 1), saddles where cos θ = −a/4
(U = 1 + a²/8). The escape cost of the trap is ΔE = 2 − a + a²/8 (1.53125 at a = 0.5) and
c* = 1/ΔE (annealing paper §2.2, A5).

β-dependence. U has none, so we take L(z, β) = β·U(z), the analogue of L ≈ β·U_0 for InfoNCE
(annealing paper, Lemma B.1). Then P2 (drift −grad(L/β) = −grad U, noise √(2/β)) has stationary law
∝ exp(−β·U): the classical annealing setting in which the Hajek threshold is c* = 1/ΔE. P1 (drift
−β·grad U, noise √(2/β)) has stationary law ∝ exp(−β²·U), i.e. effective barrier β²·ΔE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize


def _check_a(a: float) -> None:
    if not 0.0 < a < 4.0:
        # a ≥ 4 merges the saddle into θ = π (no second well); a ≤ 0 swaps or equalises the wells.
        raise ValueError(f"the double well needs 0 < a < 4, got a = {a}")


def double_well_energy_theta(theta: np.ndarray | float, a: float = 0.5) -> np.ndarray:
    """U(θ) = −cos 2θ − a·cos θ."""
    theta = np.asarray(theta, dtype=np.float64)
    return -np.cos(2.0 * theta) - a * np.cos(theta)


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
        c_star=1.0 / delta_e,
    )


def double_well_trap_start(
    chains: int, angle_sd: float = 0.05, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Initial states (chains, 1, 2) at θ = π + N(0, angle_sd²) (our S0 protocol)."""
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


def double_well_curvatures(a: float = 0.5) -> tuple[float, float, float]:
    """U''(θ) = 4 cos 2θ + a cos θ at the global minimum (4 + a), the trap (4 − a) and the saddles
    (4 cos 2θ_s + a cos θ_s = a²/4 − 4, negative)."""
    _check_a(a)
    return 4.0 + a, 4.0 - a, a * a / 4.0 - 4.0


def kramers_prefactor(a: float = 0.5) -> float:
    """Kramers' escape rate r = A·exp(−β·ΔE) out of the trap of the P2 dynamics dθ = −U′dt +
    √(2/β)dW, over both saddles: A = 2·√(U″_trap·|U″_saddle|)/(2π). Exact as β·ΔE → ∞ (the
    relative correction is O(1/(β·ΔE)); tests hold it against the generator's spectral gap)."""
    _, u_trap, u_sad = double_well_curvatures(a)
    return 2.0 * math.sqrt(u_trap * abs(u_sad)) / (2.0 * math.pi)


def double_well_barrier_numerical(a: float = 0.5) -> dict[str, float]:
    """The barrier out of the trap found numerically from U alone — the saddle as the root of U′ on
    (π/2, π) by Brent's method, the trap minimum by bounded minimisation — independently of the
    closed form of :func:`double_well_barrier` (the self-check compares the two)."""
    _check_a(a)

    def du(t: float) -> float:
        return float(2.0 * np.sin(2.0 * t) + a * np.sin(t))

    # U′ = sin θ·(4 cos θ + a) is > 0 just above 0 and < 0 just below π (0 < a < 4): one root.
    theta_s = optimize.brentq(du, 1e-6, math.pi - 1e-6, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    res = optimize.minimize_scalar(lambda t: float(double_well_energy_theta(t, a)),
                                   bounds=(theta_s, 2 * math.pi - theta_s), method="bounded",
                                   options={"xatol": 1e-12})
    u_s = float(double_well_energy_theta(theta_s, a))
    return {"theta_saddle": float(theta_s), "theta_trap": float(res.x),
            "delta_e": u_s - float(res.fun)}


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(96)


def _log_well_integral(beta: np.ndarray, centre: float, half: float, curv: float, u_min: float,
                       a: float) -> np.ndarray:
    """log ∫ exp(−β(U − u_min)) over [centre − half, centre + half] for every β: Gauss–Legendre on
    a window around the minimum that shrinks as 1/√β (14 Gaussian widths; beyond it the integrand
    is below e^{-30} of its peak, since U − u_min ≥ 0.42·U″d²/2 inside a well), so the sharp peak at
    large β is resolved as well as the broad integrand at small β."""
    w = np.minimum(half, 14.0 / np.sqrt(np.maximum(beta, 1e-300) * curv))
    x = centre + w[:, None] * _GL_NODES[None, :]
    f = -beta[:, None] * (double_well_energy_theta(x, a) - u_min)
    peak = f.max(axis=1, keepdims=True)
    return (np.log(np.exp(f - peak) @ _GL_WEIGHTS) + peak[:, 0] + np.log(w))


def double_well_log_trap_mass(beta_eff: np.ndarray | float, a: float = 0.5) -> np.ndarray | float:
    """log of the Gibbs mass of the trap basin under ∝ exp(−β_eff·U), vectorised over β_eff and
    accurate from β_eff → 0 to β_eff in the thousands (log space: no underflow); the same quantity
    as :func:`double_well_trap_mass`, which integrates each β with adaptive quadrature."""
    bar = double_well_barrier(a)
    b = np.atleast_1d(np.asarray(beta_eff, dtype=np.float64))
    u_glob, u_trap, _ = double_well_curvatures(a)
    ts = bar.theta_saddle
    log_t = _log_well_integral(b, math.pi, math.pi - ts, u_trap, bar.u_trap, a) - b * (bar.u_trap - bar.u_global)
    log_g = _log_well_integral(b, 0.0, ts, u_glob, bar.u_global, a)
    out = (log_t - np.logaddexp(log_t, log_g)).reshape(np.shape(beta_eff))
    return out if np.ndim(beta_eff) else float(out)
