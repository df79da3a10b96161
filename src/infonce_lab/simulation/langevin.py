"""Annealed Langevin dynamics on products of unit spheres (SPECS D.2, D.4, D.7(i)).

State: ``z`` of shape ``(chains, particles, dim)``; every ``z[c, i]`` lies on S^{dim−1}. All chains
and particles advance together as array operations; the only Python loop is over time steps.

Numbers are numpy float64 by default (``dtype``): the trapping statistics look at probabilities
down to ~1e-3 and at stationary densities, and float32 round-off on the renormalisation would be
a needless extra error source. numpy rather than torch because S0/S1 are tiny per chain and numpy's
per-call overhead is lower on CPU.

Time: step ``k`` (counted from ``start_step``) integrates over [k·dt, (k+1)·dt] at β_k = 1/τ(k)
from ``schedule.tau(k)``; so the project's schedules must be built with ``time_per_step = dt`` for
their β(t) to be on the time axis t = k·dt (SPECS D.8; D.4 leaves the map open).

Dynamics (SPECS D.7(i)) — ``potential_grad(z, β)`` returns the *Euclidean* gradient of L(·, β)
with respect to z; it is projected onto the tangent space here, so any smooth ambient extension
of L works:

- ``"P1"`` (the paper's literal SDE): drift −grad L, noise √(2/β); stationary ∝ exp(−β·L).
- ``"P2"`` (normalised): drift −grad(L/β), noise √(2/β); stationary ∝ exp(−L).

Schemes:

- ``"projected"`` (SPECS D.4): ambient Euler–Maruyama, then per-sphere renormalisation,
  z ← Π[z − dt·drift + √(2dt/β)·ξ], ξ ~ N(0, I_dim). The normal part of the ambient noise only
  changes the norm, which Π removes, and Π supplies the Itô curvature term of spherical Brownian
  motion to first order in dt.
- ``"expmap"``: tangent Gaussian increment v = −dt·drift + √(2dt/β)·P_z ξ, then the exponential
  map z ← cos|v|·z + sin|v|·v/|v| (a geodesic random walk).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from infonce_lab.schedules import Schedule

Beta = float | np.ndarray
PotentialGrad = Callable[[np.ndarray, Beta], np.ndarray]
Dynamics = Literal["P1", "P2"]
Scheme = Literal["projected", "expmap"]


@dataclass(frozen=True)
class LangevinResult:
    """``z``: final states (chains, particles, dim). ``times``/``records``: the recorded times and,
    stacked on a leading axis, the states (or ``observe(states)``) at those times; None when
    nothing was recorded."""

    z: np.ndarray
    times: np.ndarray | None
    records: np.ndarray | None


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-sphere inner product over the trailing axis, kept as an axis of length 1."""
    return np.einsum("...i,...i->...", a, b)[..., None]


def normalize(z: np.ndarray) -> np.ndarray:
    """Project every ``z[..., :]`` onto its unit sphere (Π of SPECS D.4)."""
    return z / np.sqrt(_dot(z, z))


def tangent(z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """P_z v = v − (zᵀv)z: the Riemannian gradient of a function whose ambient gradient is v."""
    return v - _dot(v, z) * z


# The step works in a component-major layout (dim, …): per-sphere sums become a few contiguous
# vector operations, ~7× faster than an einsum over a trailing axis of length 2–3 on this CPU.
def _cm_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.shape[0] > 8:
        return np.einsum("i...,i...->...", a, b)
    out = a[0] * b[0]
    for i in range(1, a.shape[0]):  # over the few coordinates of one sphere, not over chains
        out += a[i] * b[i]
    return out


def schedule_betas(
    schedules: Schedule | Sequence[Schedule], steps: int, start_step: int = 0
) -> np.ndarray:
    """β = 1/τ at steps ``start_step … start_step + steps − 1``, shape (steps, n_schedules).

    Precomputed once per run: schedules are pure scalar functions, and looking them up here keeps
    the per-step work to array operations."""
    scheds = _as_list(schedules)
    out = np.empty((steps, len(scheds)), dtype=np.float64)
    for j, s in enumerate(scheds):
        out[:, j] = [1.0 / s.tau(start_step + k) for k in range(steps)]
    return out


def _as_list(schedules: Schedule | Sequence[Schedule]) -> list[Schedule]:
    return list(schedules) if isinstance(schedules, Sequence) else [schedules]


def _record_plan(steps: int, record_every: int | None, record_steps: Sequence[int] | None) -> set[int]:
    """Local step counts (0 = initial state, n = after n steps) at which to record."""
    if record_steps is not None:
        plan = {int(s) for s in record_steps}
        if any(s < 0 or s > steps for s in plan):
            raise ValueError(f"record_steps must lie in [0, {steps}]")
        return plan
    if record_every is not None:
        if record_every < 1:
            raise ValueError("record_every must be ≥ 1")
        return set(range(0, steps + 1, record_every))
    return set()


def langevin(
    potential_grad: PotentialGrad,
    z0: np.ndarray,
    schedule: Schedule | Sequence[Schedule],
    steps: int,
    dt: float,
    dynamics: Dynamics = "P2",
    scheme: Scheme = "projected",
    rng: np.random.Generator | int | None = None,
    record_every: int | None = None,
    dtype: type[np.floating] = np.float64,
    *,
    start_step: int = 0,
    record_steps: Sequence[int] | None = None,
    observe: Callable[[np.ndarray], np.ndarray] | None = None,
) -> LangevinResult:
    """Run ``steps`` Langevin steps from ``z0`` (chains, particles, dim); see the module docstring.

    ``potential_grad(z, beta)``: Euclidean gradient of L(z, β), same shape as ``z``. With one
    schedule it gets ``z`` of shape (chains, particles, dim) and a float β. With a sequence of G
    schedules (several settings in one vectorised run) the chains are split into G equal
    contiguous blocks, block g following schedule g, and it gets ``z`` of shape
    (G, chains/G, particles, dim) with β of shape (G, 1, 1, 1) — so it must broadcast over leading
    axes (gradients written with ``...`` indexing do).

    ``rng``: a Generator, or a seed for a fresh SFC64 Generator (about 30 % faster normals than
    PCG64 here, and the noise draw is the largest cost per step).

    Recording: the state after every ``record_every`` steps (and the initial one), or after the
    local step counts in ``record_steps``; ``observe`` maps a state to what is stored (e.g. basin
    labels) to save memory. ``start_step`` continues a run: the schedule and the recorded times
    start there.
    """
    if dynamics not in ("P1", "P2"):
        raise ValueError(f"dynamics must be 'P1' or 'P2', got {dynamics!r}")
    if scheme not in ("projected", "expmap"):
        raise ValueError(f"scheme must be 'projected' or 'expmap', got {scheme!r}")
    z_in = np.asarray(z0)
    if z_in.ndim != 3:
        raise ValueError(f"z0 must have shape (chains, particles, dim), got {z_in.shape}")
    if steps < 0 or dt <= 0:
        raise ValueError("need steps ≥ 0 and dt > 0")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.Generator(np.random.SFC64(rng))

    scheds = _as_list(schedule)
    n_groups = len(scheds)
    chains = z_in.shape[0]
    if chains % n_groups:
        raise ValueError(f"{chains} chains cannot be split evenly over {n_groups} schedules")
    single = not isinstance(schedule, Sequence)
    shape = z_in.shape
    # Component-major state (dim, G, chains/G, particles): see _cm_dot. `user(zc)` is the
    # (…, particles, dim) view that potential_grad and observe see; block g follows schedule g.
    zc = np.moveaxis(normalize(np.array(z_in, dtype=dtype)), -1, 0)
    zc = np.ascontiguousarray(zc).reshape(shape[-1], n_groups, chains // n_groups, shape[1])

    def user(a: np.ndarray) -> np.ndarray:
        v = np.moveaxis(a, 0, -1)
        return v[0] if single else v

    betas = schedule_betas(scheds, steps, start_step)
    if not np.all(betas > 0):
        raise ValueError("schedules must give τ > 0 (β = 1/τ > 0) at every step")

    plan = _record_plan(steps, record_every, record_steps)
    times: list[float] = []
    records: list[np.ndarray] = []

    def record(n: int) -> None:
        state = np.moveaxis(zc, 0, -1).reshape(shape)
        times.append((start_step + n) * dt)
        records.append(np.array(observe(state) if observe is not None else state, copy=True))

    if 0 in plan:
        record(0)
    xi = np.empty(zc.shape, dtype=dtype)  # reused buffers: the noise draw dominates a step
    for k in range(steps):
        b = betas[k]
        beta_user: Beta = float(b[0]) if single else b.reshape(n_groups, 1, 1, 1)
        beta = b.reshape(n_groups, 1, 1)  # broadcasts against (G, chains/G, particles)
        g = np.asarray(potential_grad(user(zc), beta_user), dtype=dtype)
        g = np.moveaxis(g[None] if single else g, -1, 0)
        # P2 divides the drift by β (drift −grad(L/β)); both use noise √(2/β).
        drift_coef = dt if dynamics == "P1" else dt / beta
        noise_coef = np.sqrt(2.0 * dt / beta)
        gen.standard_normal(out=xi, dtype=dtype)
        xi *= noise_coef
        step = (_cm_dot(g, zc) * zc - g) * drift_coef  # −dt·drift, projected on the tangent space
        if scheme == "projected":
            step += xi
            step += zc
            zc = step / np.sqrt(_cm_dot(step, step))
        else:
            step += xi - _cm_dot(xi, zc) * zc
            nv = np.sqrt(_cm_dot(step, step))
            cos = np.cos(nv)
            # sin|v|/|v| from cos (one transcendental instead of two; |v| ≪ π): Taylor below
            # 1e-3, where 1 − cos² loses digits. The renormalisation only removes round-off that
            # would otherwise accumulate over 10^5+ steps.
            with np.errstate(invalid="ignore", divide="ignore"):
                sinc = np.where(nv < 1e-3, 1.0 - nv * nv / 6.0,
                                np.sqrt(np.maximum(1.0 - cos * cos, 0.0)) / nv)
            if np.any(nv >= np.pi):  # the cos route takes sin ≥ 0; keep it exact if ever not
                sinc = np.where(nv >= np.pi, np.sin(nv) / nv, sinc)
            new = cos * zc + sinc * step
            zc = new / np.sqrt(_cm_dot(new, new))
        if k + 1 in plan:
            record(k + 1)

    return LangevinResult(
        z=np.moveaxis(zc, 0, -1).reshape(shape),
        times=np.asarray(times) if plan else None,
        records=np.stack(records) if plan else None,
    )
