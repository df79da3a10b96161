"""References the tests measure the pipeline's code against, not used by the pipeline itself.

- Trapping estimators: occupancy and survival counts of chains run under several schedules at
  once, the exponent of −log P (annealing paper §3.3's bound), the escape hazard's decay
  (App. B.4); the S0 double well's energy and basin label.
- S1's quench from angles (the reference for ``circle.quench``).
- Robinson et al.'s hard-negative weights, formed (the reference for ``BatchedInfoNCE``).
- The link bank and POT pairs drawn and scored in one call (the pipeline draws once, scores per
  encoder)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy import optimize

from infonce_lab.schedules import Schedule
from infonce_lab.simulation.barriers import QuenchResult, quench
from infonce_lab.simulation.landscape import S1_PAIRS, free_energy_grad_fn, s1_angles_to_z, u0
from infonce_lab.simulation.langevin import Dynamics, PotentialGrad, Scheme, langevin
from infonce_lab.simulation.trapping import TrapCurve
from infonce_lab.tails.banks import (
    Augment,
    Embed,
    LinkBank,
    PotScores,
    link_bank_from,
    link_draws,
    pot_draws,
    pot_pairs_from,
)


def double_well_energy(z: np.ndarray, a: float = 0.5) -> np.ndarray:
    """U at z ∈ S¹ (last axis of length 2); shape z.shape[:-1]. cos 2θ = x² − y² on the circle."""
    x, y = z[..., 0], z[..., 1]
    return -(x * x - y * y) - a * x


def in_trap_basin(z: np.ndarray, a: float = 0.5) -> np.ndarray:
    """Basin label by quench, exact in 1-D: gradient descent from θ ends at θ = π iff θ lies
    between the saddles on the π side, i.e. cos θ < −a/4. Shape z.shape[:-1] (bool)."""
    return z[..., 0] < -a / 4.0


def trap_probabilities(
    potential_grad: PotentialGrad,
    z0: np.ndarray,
    in_trap: Callable[[np.ndarray], np.ndarray],
    schedules: Sequence[Schedule],
    steps: int,
    dt: float,
    *,
    names: Sequence[str] | None = None,
    check_every: int = 10,
    dynamics: Dynamics = "P2",
    scheme: Scheme = "projected",
    rng: np.random.Generator | int | None = None,
) -> list[TrapCurve]:
    """Run the R chains of ``z0`` (R, particles, dim) under each schedule — all G·R chains in one
    vectorised run — and count, every ``check_every`` steps, how many are in the trap basin
    (``in_trap(z) -> bool (chains,)``, e.g. a quench label) and how many never left it.

    The survival count only sees the checks, so an excursion shorter than check_every·dt that
    returns is not an exit; that changes the rate prefactor, not its exponent in t."""
    z0 = np.asarray(z0, dtype=np.float64)
    n_groups, reps = len(schedules), z0.shape[0]
    if n_groups == 0:
        raise ValueError("need at least one schedule")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.Generator(np.random.SFC64(rng))
    z = np.concatenate([z0] * n_groups)  # block g follows schedule g (langevin's grouping)
    alive = np.asarray(in_trap(z), dtype=bool)
    k_trap = [alive.reshape(n_groups, reps).sum(1)]
    k_surv = [k_trap[0]]
    times = [0.0]
    for start in range(0, steps, check_every):
        n = min(check_every, steps - start)
        z = langevin(potential_grad, z, list(schedules), n, dt, dynamics, scheme, gen,
                     start_step=start).z
        inside = np.asarray(in_trap(z), dtype=bool)
        alive &= inside
        k_trap.append(inside.reshape(n_groups, reps).sum(1))
        k_surv.append(alive.reshape(n_groups, reps).sum(1))
        times.append((start + n) * dt)
    kt, ks, tt = np.stack(k_trap, 1), np.stack(k_surv, 1), np.asarray(times)
    labels = list(names) if names is not None else [f"schedule{g}" for g in range(n_groups)]
    return [TrapCurve(labels[g], tt, reps, kt[g], ks[g]) for g in range(n_groups)]


def trap_probability(
    potential_grad: PotentialGrad,
    z0: np.ndarray,
    in_trap: Callable[[np.ndarray], np.ndarray],
    schedule: Schedule,
    steps: int,
    dt: float,
    **kwargs,
) -> TrapCurve:
    """One schedule of :func:`trap_probabilities`."""
    return trap_probabilities(potential_grad, z0, in_trap, [schedule], steps, dt, **kwargs)[0]


@dataclass(frozen=True)
class ExponentFit:
    """``exponent``: fitted γ in −log P ≈ A·(t+K)^γ; ``stderr`` is the regression's, which treats
    the times as independent although they share chains, so it understates the uncertainty."""

    exponent: float
    log_a: float
    stderr: float
    n_points: int
    t_range: tuple[float, float]
    method: str


def trap_exponent(
    times: np.ndarray,
    p_trap: np.ndarray,
    K: float,
    *,
    n: int | None = None,
    min_count: int = 10,
    t_min: float = 0.0,
    t_max: float = math.inf,
    method: Literal["loglog", "integrated"] = "loglog",
) -> ExponentFit | None:
    """Fit the exponent γ of P(t) ≈ exp(−A·(t+K)^γ) (annealing paper §3.3's bound: γ ≈ 1 − c/c*).

    Uses points with 0 < P < 1, t_min ≤ t ≤ t_max and — when ``n`` (chains) is given — at least
    ``min_count`` chains on each side (so that log(−log P) is not dominated by a handful of
    chains). Points are weighted by their spacing in log(t+K), so that dense late checks do not
    outvote the early decades.

    ``"loglog"``: the slope of log(−log P) against log(t+K) (the protocol's fit).
    ``"integrated"``: fits the integrated rate with its start included,
    −log P = A·((t+K)^γ − (t₀+K)^γ)/γ with t₀ = times[0]; the plain slope is biased upward where
    t is not ≫ K because of the subtracted start term.

    Returns None when fewer than 3 points qualify.
    """
    t = np.asarray(times, dtype=np.float64)
    p = np.asarray(p_trap, dtype=np.float64)
    ok = (p > 0) & (p < 1) & (t >= t_min) & (t <= t_max) & (t > t[0])
    if n is not None:
        ok &= (p * n >= min_count) & ((1.0 - p) * n >= min_count)
    if ok.sum() < 3:
        return None
    x = np.log(t[ok] + K)
    y = np.log(-np.log(p[ok]))
    w = np.gradient(x) if x.size > 1 else np.ones_like(x)
    sw = np.sqrt(np.maximum(w, 1e-300))
    if method == "loglog":
        coef, cov = np.polyfit(x, y, 1, w=sw, cov="unscaled")
        resid = (y - np.polyval(coef, x)) * sw
        dof = max(x.size - 2, 1)
        scale = float(resid @ resid) / dof / float(w.mean())
        slope, icpt, se = float(coef[0]), float(coef[1]), float(np.sqrt(cov[0, 0] * scale))
    elif method == "integrated":
        x0 = math.log(t[0] + K)

        def model(xx: np.ndarray, log_a: float, gamma: float) -> np.ndarray:
            span = xx - x0  # ln((t+K)/(t0+K)) > 0
            g = gamma if abs(gamma) > 1e-9 else 1e-9
            return log_a + gamma * x0 + np.log(np.expm1(g * span) / g)

        (icpt, slope), pcov = optimize.curve_fit(model, x, y, p0=(0.0, 0.5), sigma=1.0 / sw)
        slope, icpt, se = float(slope), float(icpt), float(np.sqrt(pcov[1, 1]))
    else:
        raise ValueError(f"unknown method {method!r}")
    return ExponentFit(slope, icpt, se, int(ok.sum()), (float(t[ok][0]), float(t[ok][-1])), method)


@dataclass(frozen=True)
class HazardFit:
    """``slope`` of log r(t) against log(t+K), with r the escape hazard (exits per surviving chain
    per time unit); App. B.4 predicts r ≈ A·(t+K)^{−c/c*}, i.e. slope −c/c* and trap exponent
    1 + slope. ``stderr`` treats the bins' exit counts as independent Poisson counts."""

    slope: float
    log_a: float
    stderr: float
    n_bins: int
    events: int
    t_range: tuple[float, float]


def escape_hazard_fit(
    times: np.ndarray,
    k_surv: np.ndarray,
    K: float,
    *,
    n_bins: int = 25,
    min_events: int = 5,
    min_alive: int = 20,
    t_min: float | None = None,
) -> HazardFit | None:
    """Fit the decay of the escape hazard from survival counts at the check times.

    Unlike the exponent of −log S, the hazard is local in time, so the start of the schedule does
    not bias it (no subtracted (t₀+K)^γ term). Bins are log-spaced in t from ``t_min`` (default:
    the first check after 0) to the last time; a bin is kept with ≥ ``min_events`` exits out of
    ≥ ``min_alive`` survivors. Exposure = Σ survivors × check interval (left end). Weighted least
    squares of log(exits/exposure) against log of the bin's geometric-mean (t+K), weights = exits
    (the inverse Poisson variance of a log count). None with fewer than 3 bins."""
    t = np.asarray(times, dtype=np.float64)
    ks = np.asarray(k_surv, dtype=np.float64)
    start = t[1] if t_min is None else t_min
    cuts = np.unique(np.searchsorted(t, np.geomspace(start, t[-1], n_bins + 1)))
    cuts = cuts[cuts < t.size]
    alive_time = ks[:-1] * np.diff(t)  # exposure of each check interval
    i0, i1 = cuts[:-1], cuts[1:]
    events = ks[i0] - ks[i1]
    cum = np.concatenate([[0.0], np.cumsum(alive_time)])
    exposure = cum[i1] - cum[i0]
    ok = (events >= min_events) & (ks[i0] >= min_alive) & (exposure > 0)
    if ok.sum() < 3:
        return None
    x = 0.5 * (np.log(t[i0] + K) + np.log(t[i1] + K))[ok]
    y = np.log(events[ok] / exposure[ok])
    coef, cov = np.polyfit(x, y, 1, w=np.sqrt(events[ok]), cov="unscaled")
    return HazardFit(float(coef[0]), float(coef[1]), float(np.sqrt(cov[0, 0])), int(ok.sum()),
                     int(events[ok].sum()), (float(t[i0][ok][0]), float(t[i1][ok][-1])))


def s1_quench(
    angles: ArrayLike,
    beta_bar: float = 20.0,
    kappa_s: float = 1.0,
    step: float = 1e-2,
    max_steps: int = 20_000,
    tol: float = 1e-7,
    stop_at_global: bool = True,
) -> QuenchResult:
    """Quench S1 configurations given as angles (..., 4) along −∇F_β̄ and label them by U_0."""
    return quench(
        s1_angles_to_z(angles),
        free_energy_grad_fn(S1_PAIRS, beta_bar, kappa_s),
        u0_fn=lambda zz: u0(zz, S1_PAIRS, kappa_s),
        step=step,
        max_steps=max_steps,
        tol=tol,
        stop_at_global=stop_at_global,
    )


def hard_negative_weights(logits: torch.Tensor, beta: float) -> torch.Tensor:
    """The hard-negative weights of Robinson et al. (2021), "Contrastive learning with hard
    negative samples", for the rows of logits ℓ (…, B, B) (ℓ_ij = s_ij/τ, the positive on the
    diagonal): w_ij ∝ exp(β·ℓ_ij) over each anchor's B − 1 negatives j ≠ i, normalised to mean 1
    over them; the positive keeps weight 1. A constant (no gradient), as in their importance-
    weighted estimator; β = 0 gives every weight 1, i.e. InfoNCE. The columns' weights are
    those of ℓᵀ. The reference for :class:`BatchedInfoNCE`, which computes the same sums without
    forming w."""
    with torch.no_grad():
        n = logits.shape[-1]
        eye = torch.eye(n, dtype=torch.bool)
        w = torch.softmax((beta * logits).masked_fill(eye, -math.inf), dim=-1) * (n - 1)
        return w.masked_fill(eye, 1.0)


def link_bank(embed: Embed, images: torch.Tensor, augment: Augment, batches: int,
              batch_images: int, gen: torch.Generator) -> LinkBank:
    """The link bank of WEINCE §2.3.2 at any size, drawn and scored at once."""
    return link_bank_from(*link_draws(embed, images, augment, batches, batch_images, gen))


def pot_pairs(embed: Embed, images: torch.Tensor, augment: Augment, repeats: int,
              batch_images: int, gen: torch.Generator) -> PotScores:
    """:func:`pot_pairs_from` on a fresh draw."""
    return pot_pairs_from(*pot_draws(embed, images, augment, repeats, batch_images, gen))
