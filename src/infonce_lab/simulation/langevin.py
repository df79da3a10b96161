"""Annealed Langevin dynamics on products of unit spheres (annealing paper §2.2, §4; P2 is ours).

State: ``z`` of shape ``(chains, particles, dim)``; every ``z[c, i]`` lies on S^{dim−1}. All chains
and particles advance together as array operations; the only Python loop is over time steps.

Numbers are numpy float64 by default (``dtype``): the trapping statistics look at probabilities
down to ~1e-3 and at stationary densities, and float32 round-off on the renormalisation would be
a needless extra error source. numpy rather than torch because S0/S1 are tiny per chain and numpy's
per-call overhead is lower on CPU.

Time: step ``k`` (counted from ``start_step``) integrates over [k·dt, (k+1)·dt] at β_k = 1/τ(k)
from ``schedule.tau(k)``; so the project's schedules must be built with ``time_per_step = dt`` for
their β(t) to be on the time axis t = k·dt (our choice: the paper's §4 leaves the map open).

Dynamics (P1 is the paper's §2.2 SDE, P2 our normalised one) — ``potential_grad(z, β)`` returns the
*Euclidean* gradient of L(·, β) with respect to z; it is projected onto the tangent space here, so
any smooth ambient extension of L works:

- ``"P1"`` (the paper's literal SDE): drift −grad L, noise √(2/β); stationary ∝ exp(−β·L).
- ``"P2"`` (normalised): drift −grad(L/β), noise √(2/β); stationary ∝ exp(−L).

Schemes:

- ``"projected"`` (the paper's §4): ambient Euler–Maruyama, then per-sphere renormalisation,
  z ← Π[z − dt·drift + √(2dt/β)·ξ], ξ ~ N(0, I_dim). The normal part of the ambient noise only
  changes the norm, which Π removes, and Π supplies the Itô curvature term of spherical Brownian
  motion to first order in dt.
- ``"expmap"``: tangent Gaussian increment v = −dt·drift + √(2dt/β)·P_z ξ, then the exponential
  map z ← cos|v|·z + sin|v|·v/|v| (a geodesic random walk).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
    stacked on a leading axis, the states at those times; None when nothing was recorded."""

    z: np.ndarray
    times: np.ndarray | None
    records: np.ndarray | None


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-sphere inner product over the trailing axis, kept as an axis of length 1."""
    return np.einsum("...i,...i->...", a, b)[..., None]


def normalize(z: np.ndarray) -> np.ndarray:
    """Project every ``z[..., :]`` onto its unit sphere (Π of the annealing paper's §4)."""
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


def _sphere_step(zc: np.ndarray, g: np.ndarray, drift_coef: float | np.ndarray,
                 noise_coef: np.ndarray, xi: np.ndarray, gen: np.random.Generator,
                 scheme: Scheme) -> np.ndarray:
    """One step of either scheme in the component-major layout (dim, …); ``g`` is the ambient
    gradient, ``drift_coef``/``noise_coef`` broadcast against the trailing axes; ``xi`` is a
    buffer of the state's shape for the noise."""
    gen.standard_normal(out=xi, dtype=xi.dtype)
    xi *= noise_coef
    step = (_cm_dot(g, zc) * zc - g) * drift_coef  # −dt·drift, projected on the tangent space
    if scheme == "projected":
        step += xi
        step += zc
        return step / np.sqrt(_cm_dot(step, step))
    step += xi - _cm_dot(xi, zc) * zc
    nv = np.sqrt(_cm_dot(step, step))
    cos = np.cos(nv)
    # sin|v|/|v| from cos (one transcendental instead of two; |v| ≪ π): Taylor below 1e-3,
    # where 1 − cos² loses digits. The renormalisation only removes round-off that would
    # otherwise accumulate over 10^5+ steps.
    with np.errstate(invalid="ignore", divide="ignore"):
        sinc = np.where(nv < 1e-3, 1.0 - nv * nv / 6.0,
                        np.sqrt(np.maximum(1.0 - cos * cos, 0.0)) / nv)
    if np.any(nv >= np.pi):  # the cos route takes sin ≥ 0; keep it exact if ever not
        sinc = np.where(nv >= np.pi, np.sin(nv) / nv, sinc)
    new = cos * zc + sinc * step
    return new / np.sqrt(_cm_dot(new, new))


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

    Recording: the state after every ``record_every`` steps (and the initial one).
    ``start_step`` continues a run: the schedule and the recorded times start there.
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
    if record_every is not None and record_every < 1:
        raise ValueError("record_every must be ≥ 1")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.Generator(np.random.SFC64(rng))

    scheds = _as_list(schedule)
    n_groups = len(scheds)
    chains = z_in.shape[0]
    if chains % n_groups:
        raise ValueError(f"{chains} chains cannot be split evenly over {n_groups} schedules")
    single = not isinstance(schedule, Sequence)
    shape = z_in.shape
    # Component-major state (dim, G, chains/G, particles): see _cm_dot. `user(zc)` is the
    # (…, particles, dim) view that potential_grad sees; block g follows schedule g.
    zc = np.moveaxis(normalize(np.array(z_in, dtype=dtype)), -1, 0)
    zc = np.ascontiguousarray(zc).reshape(shape[-1], n_groups, chains // n_groups, shape[1])

    def user(a: np.ndarray) -> np.ndarray:
        v = np.moveaxis(a, 0, -1)
        return v[0] if single else v

    betas = schedule_betas(scheds, steps, start_step)
    if not np.all(betas > 0):
        raise ValueError("schedules must give τ > 0 (β = 1/τ > 0) at every step")

    # Local step counts (0 = initial state, n = after n steps) at which to record.
    plan = set() if record_every is None else set(range(0, steps + 1, record_every))
    times: list[float] = []
    records: list[np.ndarray] = []

    def record(n: int) -> None:
        times.append((start_step + n) * dt)
        records.append(np.moveaxis(zc, 0, -1).reshape(shape).copy())

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
        zc = _sphere_step(zc, g, drift_coef, np.sqrt(2.0 * dt / beta), xi, gen, scheme)
        if k + 1 in plan:
            record(k + 1)

    return LangevinResult(
        z=np.moveaxis(zc, 0, -1).reshape(shape),
        times=np.asarray(times) if plan else None,
        records=np.stack(records) if plan else None,
    )


# ------------------------------------------------------------------------------------------------
# Step size controlled by the drift's stiffness, each setting on its own clock


@dataclass(frozen=True)
class StepRule:
    """dt(β) = min(dt_max, h / (stiffness · β^power)).

    Euler–Maruyama is stable only while dt·λ_max < 2, with λ_max the largest curvature of the
    drift's potential, and its bias in the invariant law is O(dt·λ_max); so the step must shrink as
    the drift stiffens. For InfoNCE on spheres the curvature of L(·, β) grows like κ_s²·β² (the
    β²·Cov term of the Hessian, annealing paper §5, wherever an anchor's nearest candidates tie — at
    the interleaved trap λ_max = κ_s²·β² exactly), so the literal SDE P1 (drift −grad L) needs
    ``power = 2`` and the normalised P2 (drift −grad L/β) ``power = 1``, with ``stiffness = κ_s²``;
    ``h`` is then dt·λ_max at the trap. ``power = 0`` with h = inf is a fixed step.
    """

    dt_max: float
    h: float = math.inf
    power: float = 0.0
    stiffness: float = 1.0

    def __post_init__(self) -> None:
        if not (self.dt_max > 0 and self.h > 0 and self.stiffness > 0 and self.power >= 0):
            raise ValueError(f"StepRule needs dt_max, h, stiffness > 0 and power ≥ 0: {self}")

    def dt(self, beta: float) -> float:
        if math.isinf(self.h):
            return self.dt_max
        return min(self.dt_max, self.h / (self.stiffness * beta**self.power))

    def halved(self) -> StepRule:
        """The same rule at half the step everywhere (our convergence check)."""
        return replace(self, dt_max=self.dt_max / 2, h=self.h / 2)

    def steps(self, beta_of_t: Callable[[float], float], t0: float, t1: float) -> int:
        """How many steps the rule takes from t0 to t1 (the run's cost, before running it)."""
        t, n = t0, 0
        while t < t1:
            t += min(self.dt(beta_of_t(t)), t1 - t)
            n += 1
        return n


def stiffness_rule(dynamics: Dynamics, dt_max: float, h: float, kappa_s: float = 1.0) -> StepRule:
    """The :class:`StepRule` of InfoNCE with similarity scale κ_s under ``dynamics``."""
    return StepRule(dt_max, h, 2.0 if dynamics == "P1" else 1.0, kappa_s**2)


Space = Literal["sphere", "angles"]


@dataclass(frozen=True)
class ClockedResult:
    """``x``: final states (shape of the input); ``steps``: steps taken by each group."""

    x: np.ndarray
    steps: np.ndarray


def clocked_langevin(
    potential_grad: Callable[[np.ndarray, np.ndarray], np.ndarray],
    x0: np.ndarray,
    betas: Sequence[Callable[[float], float]] | Callable[[np.ndarray], np.ndarray],
    t0: float,
    t1: float,
    rules: Sequence[StepRule],
    dynamics: Sequence[Dynamics],
    *,
    space: Space = "sphere",
    scheme: Scheme = "projected",
    rng: np.random.Generator | int | None = None,
    dtype: type[np.floating] = np.float64,
) -> ClockedResult:
    """Advance G settings from time t0 to t1, each with its own β(t), step rule and dynamics.

    The chains of ``x0`` are split into G equal contiguous blocks (as in :func:`langevin`); block g
    follows ``betas[g]`` (β as a function of *time*, e.g. ``1/schedule.tau(t)`` of a schedule
    built with ``time_per_step = 1``) with steps dt_k = ``rules[g].dt(β_g(t_k))`` (the last one
    shortened to land on t1) under ``dynamics[g]``. Each block keeps its own clock, so a stiff
    setting takes many small steps while a soft one takes few; all blocks still advance in one
    vectorised step per iteration, and a block that reaches t1 leaves the working set. Each
    step uses β at its start, like :func:`langevin`. ``betas`` may also be one vectorised
    function mapping the G clocks to the G values of β (the per-step Python loop over groups
    is then gone).

    ``space="sphere"``: ``x0`` is (chains, particles, dim) on unit spheres, ``potential_grad(z,
    β)`` gets (G_active, chains/G, particles, dim) with β of shape (G_active, 1, 1, 1) and returns
    the Euclidean gradient; ``scheme`` as in :func:`langevin`.
    ``space="angles"``: ``x0`` is (chains, n) angles on (S¹)^n; ``potential_grad(θ, β)`` gets
    them particle-major, (n, G_active, chains/G), with β of shape (G_active, 1), and returns ∂L/∂θ
    in that layout (e.g. :meth:`~infonce_lab.simulation.circle.CircleInfoNCE.grad_cm`). The step is
    θ ← θ − dt·drift + √(2dt/β)·ξ, ξ ~ N(0, I_n): on (S¹)^n the exponential map is angle
    addition, so this *is* the ``expmap`` scheme, without renormalisation.

    Continue a run by calling again from its end (the checks of a trapping run are such calls).
    """
    vectorised = callable(betas) and not isinstance(betas, Sequence)
    if not rules or len(rules) != len(dynamics) or (not vectorised and len(betas) != len(rules)):
        raise ValueError("need one β(t), one step rule and one dynamics per group")
    if any(d not in ("P1", "P2") for d in dynamics):
        raise ValueError(f"dynamics must be 'P1' or 'P2', got {list(dynamics)}")
    if scheme not in ("projected", "expmap"):
        raise ValueError(f"scheme must be 'projected' or 'expmap', got {scheme!r}")
    if space not in ("sphere", "angles"):
        raise ValueError(f"space must be 'sphere' or 'angles', got {space!r}")
    if not t1 >= t0:
        raise ValueError("need t1 ≥ t0")
    x_in = np.asarray(x0)
    if x_in.ndim != (3 if space == "sphere" else 2):
        raise ValueError(f"x0 has shape {x_in.shape}, which is not a {space} state")
    n_groups = len(rules)
    chains = x_in.shape[0]
    if chains % n_groups:
        raise ValueError(f"{chains} chains cannot be split evenly over {n_groups} groups")
    reps = chains // n_groups
    if vectorised:
        beta_all = betas  # type: ignore[assignment]
    else:
        fns = list(betas)  # type: ignore[arg-type]

        def beta_all(clocks: np.ndarray) -> np.ndarray:
            return np.array([f(t) for f, t in zip(fns, clocks, strict=True)])
    # The rules as arrays: dt = min(dt_max, h/(stiffness·β^power)), h = inf for a fixed step.
    dt_max = np.array([r.dt_max for r in rules])
    h_over = np.array([r.h / r.stiffness for r in rules])
    power = np.array([r.power for r in rules])
    gen = rng if isinstance(rng, np.random.Generator) else np.random.Generator(np.random.SFC64(rng))
    p1 = np.array([d == "P1" for d in dynamics])
    if space == "sphere":
        # Component-major (dim, G, reps, particles), as in `langevin`.
        state = np.moveaxis(normalize(np.array(x_in, dtype=dtype)), -1, 0)
        state = np.ascontiguousarray(state).reshape(x_in.shape[-1], n_groups, reps, x_in.shape[1])
    else:  # particle-major (n, G, reps): see CircleInfoNCE.grad_cm
        state = np.ascontiguousarray(np.moveaxis(
            np.array(x_in, dtype=dtype).reshape(n_groups, reps, x_in.shape[1]), -1, 0))
    clock = np.full(n_groups, float(t0))
    steps = np.zeros(n_groups, dtype=np.int64)
    # Relative slack so that a clock that lands on t1 up to round-off counts as there.
    eps = 1e-12 * max(1.0, abs(t1))
    active = np.flatnonzero(clock < t1 - eps)
    while active.size:
        work = np.take(state, active, axis=1)
        xi = np.empty_like(work)
        coef_shape = (active.size, 1, 1) if space == "sphere" else (active.size, 1)
        a_dt_max, a_h_over, a_power, a_p1 = dt_max[active], h_over[active], power[active], p1[active]
        while True:
            beta = np.asarray(beta_all(clock), dtype=np.float64)[active]
            if not np.all(beta > 0):
                raise ValueError("β(t) must be positive")
            dt = np.minimum(np.minimum(a_dt_max, a_h_over / beta**a_power), t1 - clock[active])
            drift = np.where(a_p1, dt, dt / beta)  # P2: drift −grad(L/β)
            noise = np.sqrt(2.0 * dt / beta)
            if space == "sphere":
                g = np.moveaxis(np.asarray(potential_grad(np.moveaxis(work, 0, -1),
                                                          beta.reshape(-1, 1, 1, 1)),
                                           dtype=dtype), -1, 0)
                work = _sphere_step(work, g, drift.reshape(coef_shape).astype(dtype),
                                    noise.reshape(coef_shape).astype(dtype), xi, gen, scheme)
            else:
                g = np.asarray(potential_grad(work, beta.reshape(-1, 1)), dtype=dtype)
                gen.standard_normal(out=xi, dtype=xi.dtype)
                xi *= noise.reshape(coef_shape).astype(dtype)
                work -= drift.reshape(coef_shape).astype(dtype) * g
                work += xi
            clock[active] += dt
            steps[active] += 1
            done = clock[active] >= t1 - eps
            if done.any():
                break
        state[:, active] = work  # write the working set back; groups that reached t1 leave it
        clock[active[done]] = t1
        active = active[~done]
    return ClockedResult(np.moveaxis(state, 0, -1).reshape(x_in.shape), steps)
