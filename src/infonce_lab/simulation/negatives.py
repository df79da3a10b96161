"""Does the escape barrier grow with the number of negatives? (arXiv 2603.12552, App. A.2: ΔE_max
"is theoretically expected to increase with the number of negative samples … as these factors
tend to make the optimization landscape more rugged").

The family: n positive pairs on S¹ (each anchor has 2n − 2 negatives), started in the interleaved
trap that generalises S1's (pair p antipodal at p·π/n, every anchor's nearest candidates two tied
negatives; :func:`~infonce_lab.simulation.circle.interleaved_trap`). For each n:

1. the trap's minimum of F_β̄ (a quench from the trap; if it descends into the global set the
   configuration is no trap for that n and its barrier is 0);
2. escape channels: chains run the normalised dynamics P2 at β̄/2 from that minimum, and the first
   ones whose quench lands in a lower basin give the far ends of candidate paths (the channels
   the dynamics actually uses, so the low saddles are found first);
3. a minimum-energy path to each end by the zero-temperature string method (E, Ren &
   Vanden-Eijnden 2007: images follow −∇F_β̄ and are re-spaced to equal arc length; on the
   angle torus the metric is flat), and the barrier max_path F_β̄ − F_β̄(trap), the lowest over
   the ends. Along the same path, max U_0 − U_0(trap) is the barrier of U_0 on that path — an
   upper bound of the trap's U_0 barrier (any path's maximum is), exact for S1 (κ_s/16, the
   watershed's value, which the tests check).

Every number is computed at β̄ and at 2β̄ (F_β̄ → U_0 uniformly, within log(2n − 1)/β̄): the
U_0 barrier along the path must not depend on β̄ beyond the string's resolution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from infonce_lab.simulation.circle import CircleInfoNCE, circle_pairs, interleaved_trap, quench
from infonce_lab.simulation.langevin import clocked_langevin, stiffness_rule


def string_paths(
    model: CircleInfoNCE,
    a: np.ndarray,
    ends: np.ndarray,
    beta_bar: float,
    *,
    images: int = 25,
    iters: int = 3000,
    tol: float = 1e-9,
) -> np.ndarray:
    """Zero-temperature strings from the angle vector ``a`` to each row of ``ends`` (E, n), all
    evolved together (the end images relax too, into their minima); returns (E, images, n).
    The step 0.5/(β̄κ_s²) keeps the descent monotone (F_β̄'s largest curvature is β̄κ_s²)."""
    step = 0.5 / (beta_bar * model.kappa**2)
    s = np.linspace(0.0, 1.0, images)[None, :, None]
    phi = (1.0 - s) * a[None, None] + s * ends[:, None, :]
    for _ in range(iters):
        new = respace(phi - step * model.free_energy_grad(phi, beta_bar))
        done = np.abs(new - phi).max() < tol
        phi = new
        if done:
            break
    return phi


def respace(phi: np.ndarray, points: int | None = None) -> np.ndarray:
    """Images at equal arc length along each piecewise-linear path of ``phi`` (..., images, n)."""
    seg = np.linalg.norm(np.diff(phi, axis=-2), axis=-1)  # (..., images − 1)
    d = np.concatenate([np.zeros(seg.shape[:-1] + (1,)), np.cumsum(seg, axis=-1)], axis=-1)
    m = phi.shape[-2] if points is None else points
    t = d[..., -1:] * np.linspace(0.0, 1.0, m)  # (..., m)
    # Segment of each target: the last image at or before it (both sequences are monotone).
    k = np.clip((d[..., None, :] <= t[..., :, None]).sum(-1) - 1, 0, phi.shape[-2] - 2)
    d0 = np.take_along_axis(d, k, axis=-1)
    d1 = np.take_along_axis(d, k + 1, axis=-1)
    w = np.where(d1 > d0, (t - d0) / np.where(d1 > d0, d1 - d0, 1.0), 0.0)[..., None]
    p0 = np.take_along_axis(phi, k[..., None], axis=-2)
    p1 = np.take_along_axis(phi, (k + 1)[..., None], axis=-2)
    return p0 + w * (p1 - p0)


def path_barriers(model: CircleInfoNCE, paths: np.ndarray, beta_bar: float,
                  points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Per path (..., images, n): max F_β̄ − F_β̄ at the start and max U_0 − U_0 at the start,
    along the finely re-sampled path."""
    fine = respace(paths, points)
    f = model.loss(fine, beta_bar) / beta_bar
    u = model.u0(fine)
    return f.max(-1) - f[..., 0], u.max(-1) - u[..., 0]


def trap_escape_barrier(
    model: CircleInfoNCE,
    trap: np.ndarray,
    beta_bar: float,
    rng: np.random.Generator,
    *,
    walkers: int = 32,
    ends: int = 4,
    chunk: float = 0.5,
    max_time: float = 20.0,
    images: int = 17,
    iters: int = 1500,
) -> dict[str, Any]:
    """The escape barrier of the basin of ``trap`` (see the module docstring)."""
    q_step = 0.5 / (beta_bar * model.kappa**2)
    # Is the configuration a trap at all? Quench four jittered copies (0.01 rad: a kink
    # minimum's basin is far wider, a symmetric saddle is left quickly from there); stopping in
    # the global set is safe (see barriers.quench) and spares the exponentially slow creep there.
    copies = trap[None] + 1e-2 * rng.standard_normal((4, model.n))
    for _ in range(40):  # in slices, so that the first copy to reach U* ends the test
        start = quench(model, copies, beta_bar, step=q_step, max_steps=1000)
        copies = start.theta
        if start.is_global.any() or start.converged.all():
            break
    a = start.theta[0]
    u_a = float(model.u0(a))
    f_a = float(model.loss(a, beta_bar)) / beta_bar
    out: dict[str, Any] = {"beta_bar": beta_bar, "trap_u0": float(model.u0(trap)),
                           "minimum_u0": u_a}
    no_path = {**out, "f_barrier": None, "u0_barrier": None, "ends": 0, "paths": []}
    if start.is_global.any():
        return {**no_path, "is_minimum": False, "f_barrier": 0.0, "u0_barrier": 0.0,
                "escaped_copies": int(start.is_global.sum())}
    if not start.converged.all():
        return {**no_path, "is_minimum": None, "undefined": "the quench from the trap did not settle"}
    # Escape channels: P2 at β̄/2 from the minimum; chains that reached a lower basin restart.
    x = np.tile(a, (walkers, 1))
    far: list[np.ndarray] = []
    t = 0.0
    rule = stiffness_rule("P2", 0.01, 0.4, model.kappa)
    while len(far) < ends and t < max_time:
        x = clocked_langevin(lambda th, b: model.grad_cm(th, b), x,
                             lambda c: np.full(c.shape, beta_bar / 2), t, t + chunk, [rule],
                             ["P2"], space="angles", rng=rng).x
        t += chunk
        # A short descent decides escapes: descent never raises F_β̄, and the trap's basin
        # holds no point below its minimum's F_β̄, so a walker that descends below it has left
        # the basin (one still on its way down is caught at a later chunk, or not at all).
        q = quench(model, x, beta_bar, step=q_step, max_steps=300)
        lower = np.flatnonzero(model.loss(q.theta, beta_bar) / beta_bar < f_a - 1e-6)
        far += list(q.theta[lower[: ends - len(far)]])
        x[lower] = a
    paths = []
    if far:
        # Deeper into the lower basins (the quench stopped on entering the global set), and
        # rotated so that particle 0 sits where it does in the trap.
        deep = quench(model, np.array(far), beta_bar, step=q_step, stop_at_global=False,
                      max_steps=2000).theta
        far = list(deep - (deep[:, :1] - a[0]))
        fb, ub = path_barriers(model, string_paths(model, a, np.array(far), beta_bar,
                                                   images=images, iters=iters), beta_bar)
        paths = [{"f_barrier": float(f), "u0_barrier": float(u)} for f, u in zip(fb, ub,
                                                                                   strict=True)]
    if not paths:
        return {**no_path, "is_minimum": True,
                "undefined": f"no escape within t = {max_time:g} at β = β̄/2"}
    best = min(paths, key=lambda p: p["f_barrier"])
    return {**out, "is_minimum": True, "f_barrier": best["f_barrier"],
            "u0_barrier": best["u0_barrier"], "ends": len(paths), "paths": paths,
            "escape_time": t}


def run_negatives(
    *,
    n_pairs: Sequence[int],
    beta_bar: float,
    kappa_s: float = 1.0,
    seed: int,
    **kwargs: Any,
) -> dict[str, Any]:
    """The interleaved trap's escape barrier for each number of pairs, at β̄ and at 2β̄."""
    rng = np.random.Generator(np.random.SFC64(seed))
    rows = []
    for n in n_pairs:
        model = CircleInfoNCE(2 * n, circle_pairs(n), kappa_s)
        trap = interleaved_trap(n)
        at = {res: trap_escape_barrier(model, trap, b, rng, **kwargs)
              for res, b in (("step", beta_bar), ("half_step", 2.0 * beta_bar))}
        rows.append({"n_pairs": n, "negatives": 2 * n - 2, "particles": 2 * n, **at})
    return {"beta_bar": beta_bar, "beta_bar_check": 2.0 * beta_bar, "kappa_s": kappa_s,
            "family": "n pairs on S¹, interleaved antipodal trap", "rows": rows}
