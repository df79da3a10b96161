"""Langevin dynamics of one particle on the circle S¹, in its angle, for many chains at once.

On S¹ the exponential map is θ ↦ θ + v, so the geodesic random walk (our variant of the paper's
§4 update: tangent Gaussian increment, then the exponential map — ``langevin``'s "expmap" scheme)
is exactly Euler–Maruyama in the angle:

    θ_{k+1} = θ_k − h·κ_k·(U′(θ_k) + s·ζ_k) + √(2h/β_k)·ξ_k,     ξ_k, ζ_k ~ N(0, 1),

with κ = 1 for the normalised dynamics P2 (drift −grad(L/β), L = β·U) and κ = β for the paper's
literal SDE P1 (drift −grad L); s > 0 adds an unbiased Gaussian error to the gradient (the
stochastic gradient ∇̂L of the paper's §4 update). Brownian motion on the flat circle has no Itô
correction, so the scheme is weak order 1 in h like the ambient one, at a third of its work.

Why not :func:`~infonce_lab.simulation.langevin.langevin`: S0 needs ~10⁹ chain-steps (horizon 10⁴
time units, a rerun at half the step), and that general simulator (numpy float64, ambient
coordinates) runs ~2·10⁷ chain-steps/s here. This one keeps the state as float32 angles in torch
(~7·10⁷/s on one core; the normal draws are half the cost): round-off of 10⁻⁷ rad per step is
unbiased and 10⁻³ of the thermal step; angles are wrapped to [−π, π) at every check so they
never lose digits. A test holds its stationary law to the Gibbs law.

Chains come in G equal groups (block g follows β-table column g and its own dynamics), so a whole
grid of schedules is one vectorised run; the only Python loop is over steps. A group can be
*frozen* from a step on (its chains are no longer advanced): used once β·ΔE is so large that no
chain can cross a barrier within the horizon (see ``s0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

# β table for steps [k0, k1) and all groups: (k1 − k0, G) float64.
BetaTable = Callable[[int, int], np.ndarray]


@dataclass(frozen=True)
class CircleRun:
    """What one run keeps (states are not stored: S0 needs only basin labels).

    ``check_times``: t_j = j·check_every·h, j = 1 … J. ``window_frac``: (chains, W) — the fraction
    of a window's check times a chain spent in the trap basin. ``first_exit``: time of the first
    check at which a chain was outside the trap basin (inf if never), for chains that start inside
    it. ``curve_times``/``curve_counts``: (G, C) chains in the trap basin at the recorded checks.
    ``chain_steps``: steps actually taken, summed over chains (frozen chains take none)."""

    theta: np.ndarray
    check_times: np.ndarray
    window_frac: np.ndarray
    first_exit: np.ndarray
    curve_times: np.ndarray
    curve_counts: np.ndarray
    chain_steps: int


def run_circle(
    theta0: np.ndarray,
    groups: int,
    betas: BetaTable,
    dt: float,
    steps: int,
    *,
    a: float,
    p1: Sequence[bool] | None = None,
    grad_noise: float = 0.0,
    check_every: int = 1,
    windows: Sequence[tuple[float, float]] = (),
    curve_checks: Sequence[int] = (),
    freeze_step: Sequence[int] | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    scheme: str = "em",
) -> CircleRun:
    """Advance ``theta0`` (chains,) — ``groups`` equal contiguous blocks — by ``steps`` steps of
    ``dt`` on U(θ) = −cos 2θ − a·cos θ (module docstring).

    ``p1[g]``: group g follows P1 (else P2). ``windows``: time intervals [t0, t1] over whose check
    times the trap occupancy of every chain is averaged. ``curve_checks``: check indices (1-based)
    at which the trapped chains of each group are counted. ``freeze_step[g]``: from this step on
    (rounded up to a check) group g is held. ``seed``: torch's generator (bit-identical reruns)."""
    threads = torch.get_num_threads()
    # One thread: the per-step tensors are a few thousand floats, so intra-op threads only add
    # synchronisation — 14× slower with 2 threads than with 1 on this project's loaded 2 cores.
    torch.set_num_threads(1)
    try:
        return _run(theta0, groups, betas, dt, steps, a=a, p1=p1, grad_noise=grad_noise,
                    check_every=check_every, windows=windows, curve_checks=curve_checks,
                    freeze_step=freeze_step, seed=seed, dtype=dtype, scheme=scheme)
    finally:
        torch.set_num_threads(threads)


def _run(theta0: np.ndarray, groups: int, betas: BetaTable, dt: float, steps: int, *, a: float,
         p1: Sequence[bool] | None, grad_noise: float, check_every: int,
         windows: Sequence[tuple[float, float]], curve_checks: Sequence[int],
         freeze_step: Sequence[int] | None, seed: int, dtype: torch.dtype, scheme: str
         ) -> CircleRun:
    if scheme not in ("em", "lm"):
        raise ValueError(f"scheme must be 'em' or 'lm', got {scheme!r}")
    theta0 = np.asarray(theta0, dtype=np.float64)
    n = theta0.size
    if n % groups:
        raise ValueError(f"{n} chains cannot be split evenly over {groups} groups")
    if steps < 0 or dt <= 0 or check_every < 1:
        raise ValueError("need steps ≥ 0, dt > 0 and check_every ≥ 1")
    reps = n // groups
    p1_flags = np.zeros(groups, bool) if p1 is None else np.asarray(p1, bool)
    checks = steps // check_every
    check_times = np.arange(1, checks + 1) * check_every * dt
    # Groups that freeze later go first, so the chains still moving are always a prefix.
    fz = np.full(groups, steps) if freeze_step is None else np.minimum(np.asarray(freeze_step), steps)
    fz = -(-fz // check_every) * check_every
    order = np.argsort(-fz, kind="stable")
    inv = np.argsort(order)
    chain_perm = (order[:, None] * reps + np.arange(reps)[None, :]).ravel()

    gen = torch.Generator().manual_seed(int(seed))
    th = torch.tensor(theta0[chain_perm], dtype=dtype)
    thresh = -a / 4.0  # trap basin: cos θ < −a/4 (between the saddles, on the π side)
    inside = torch.cos(th) < thresh
    alive = inside.clone()
    exit_check = torch.full((n,), -1, dtype=torch.int64)
    w_lo, w_hi = np.array(windows, dtype=np.float64).reshape(-1, 2).T
    # Windows a check falls in (they may overlap); float32 counts are exact below 2²⁴ checks.
    w_of = [np.flatnonzero((w_lo <= t + 1e-9) & (t <= w_hi + 1e-9)) for t in check_times]
    w_sum = torch.zeros((len(windows), n), dtype=torch.float32)
    w_cnt = np.zeros(len(windows))
    rec = {int(c): i for i, c in enumerate(curve_checks)}
    counts = np.zeros((groups, len(rec)), dtype=np.int64)
    chain_steps = 0
    buf: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    carry: torch.Tensor | None = None  # LM: the normal shared with the next block's first step

    chunk = max(1, 4096 // check_every)  # β tables are fetched for many checks at once
    table = np.empty((0, groups))
    for j in range(1, checks + 1):
        k0 = (j - 1) * check_every
        if (j - 1) % chunk == 0:
            table = betas(k0, min(k0 + chunk * check_every, steps))[:, order]
        g_act = int((fz[order] > k0).sum())
        if g_act:
            act = g_act * reps
            r0 = k0 - ((j - 1) // chunk) * chunk * check_every
            b = table[r0:r0 + check_every, :g_act]  # (m, g_act)
            sig = torch.from_numpy(np.sqrt(2.0 * dt / b)).to(dtype)[:, :, None]
            if scheme == "lm":
                # Leimkuhler–Matthews: the increment σ_k·(ξ_k + ξ_{k+1})/2 reuses the next step's
                # normal, so each step still draws one; the stationary law's error is O(h²).
                fresh = torch.randn((check_every, groups, reps), generator=gen, dtype=dtype)
                seq = torch.cat([carry[None], fresh]) if carry is not None else torch.cat(
                    [torch.randn((1, groups, reps), generator=gen, dtype=dtype), fresh])
                carry = seq[-1]
                xi = (seq[:-1, :g_act] + seq[1:, :g_act]).mul_(0.5).mul_(sig)
            else:
                xi = torch.randn((check_every, g_act, reps), generator=gen, dtype=dtype).mul_(sig)
            kappa = np.where(p1_flags[order[:g_act]], b, 1.0)  # (m, g_act): β for P1, 1 for P2
            uniform = bool(np.all(kappa == kappa[0, 0]))
            h = dt * float(kappa[0, 0])
            coef = None if uniform else torch.from_numpy(dt * kappa).to(dtype)[:, :, None]
            zeta = (torch.randn((check_every, g_act, reps), generator=gen, dtype=dtype)
                    .mul_(grad_noise) if grad_noise > 0 else None)
            if g_act not in buf:
                buf[g_act] = (torch.empty((g_act, reps), dtype=dtype),
                              torch.empty((g_act, reps), dtype=dtype))
            s, c = buf[g_act]
            v = th[:act].view(g_act, reps)
            for k, x in enumerate(xi.unbind(0)):
                torch.sin(v, out=s)
                torch.cos(v, out=c)
                # U′(θ) = 2 sin 2θ + a sin θ = sin θ·(4 cos θ + a); the drift step is h·κ·U′.
                if zeta is None and coef is None:  # the common case in as few calls as it takes
                    v.addcmul_(s, c, value=-4.0 * h)
                    v.add_(s, alpha=-a * h)
                    v.add_(x)
                else:
                    v.add_(x)
                    c.mul_(4.0).add_(a).mul_(s)
                    if zeta is not None:
                        c.add_(zeta[k])
                    if coef is None:
                        v.sub_(c, alpha=h)
                    else:
                        v.sub_(c.mul_(coef[k]))
            chain_steps += act * check_every
            if j % 64 == 0:
                # Wrap to [−π, π): float32 angles keep their 10⁻⁷ resolution (64 checks of
                # diffusion move an angle by far less than the 10³ rad where it would matter).
                th[:act] = torch.remainder(th[:act] + math.pi, 2.0 * math.pi) - math.pi
        inside = torch.cos(th) < thresh
        exit_check.masked_fill_(alive & ~inside, j)
        alive &= inside
        for w in w_of[j - 1]:
            w_sum[w].add_(inside)
            w_cnt[w] += 1
        if j in rec:
            counts[:, rec[j]] = inside.view(groups, reps).sum(1).numpy()[inv]

    unperm = np.argsort(chain_perm)
    frac = (w_sum.double().numpy().T / np.maximum(w_cnt, 1))[unperm]
    frac[:, w_cnt == 0] = np.nan
    ex = exit_check.numpy()[unperm]
    first_exit = np.where(ex > 0, ex * check_every * dt, np.inf)
    first_exit[~(np.cos(theta0) < thresh)] = 0.0  # started outside: "exited" at t = 0
    curve_times = np.array([c * check_every * dt for c in rec], dtype=np.float64)
    theta = torch.remainder(th.double() + math.pi, 2.0 * math.pi) - math.pi
    return CircleRun(theta.numpy()[unperm], check_times, frac, first_exit, curve_times, counts,
                     chain_steps)
