"""S1 (our test of the annealing paper): annealed Langevin dynamics of InfoNCE on (S¹)^4 with two
positive pairs, started in the interleaved trap, under the normalised (P2) and the literal (P1)
dynamics.

The threshold c* = 1/ΔE_max comes from the exact landscape (a watershed of U_0 on the
rotation-quotiented 3-torus, ``s1_barrier``); a chain is "trapped" when a quench of F_β̄ from its
state ends away from the global set (U_0 > 1e-6).

Integration (why it is not a fixed step). The curvature of L(·, β) at the trap is κ_s²·β² (the
β²·Cov term of the D.6 Hessian: each anchor's two nearest candidates tie there), so P1's drift
−grad L has stiffness κ_s²β² and P2's −grad(L/β) has κ_s²β. Euler–Maruyama at a fixed dt is unstable
once dt·λ > 2 — for P1 at dt = 0.01 from β ≈ 14 on, where chains are kicked out of the trap by the
integrator — and biased long before. Every setting therefore runs on its own clock with
dt_k = min(dt_max, h/(κ_s²·β_k^p)) (p = 2 for P1, 1 for P2; h = dt·λ at the trap), and every
setting runs twice, at that rule and at half of it (dt_max/2, h/2), with independent noise: every
number a verdict uses is stored at both (``{"step": …, "half_step": …}``) so that the report can
decide whether the step is converged. P1's stiffness makes its cost grow like ∫β(t)² dt
(≈ 3·10⁶ steps to t = 100 at c = 2c*), so a P1 setting is *held* — its chains stop moving, their
labels are kept — from the first check at or after ``hold_after`` at which (i) no chain changed
its label over the last decade of checks [t/10, t] and (ii) Kramers' law expects fewer than
``hold_crossings`` crossings of the trap's barrier over [t, ∞), summed over its chains
(:func:`p1_crossings_bound`) — so a held count is the trapped fraction's limit t → ∞ within that
bound; P1 otherwise runs to its own horizon (``horizon_p1``). (i) is needed because U₀ also has shallow
non-global basins (barriers down to 10⁻⁵ on the grid) that (ii) does not bound: chains in them
leave within a decade at P1's β². D.7(i) compares P1 and P2 at the shorter of the two horizons.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from infonce_lab.schedules import BetaGrowth, LogAnneal, Schedule
from infonce_lab.simulation import estimates as est
from infonce_lab.simulation.barriers import s1_barrier
from infonce_lab.simulation.circle import interleaved_trap, quench, s1_model
from infonce_lab.simulation.landscape import _s1_f_u0
from infonce_lab.simulation.langevin import StepRule, clocked_langevin, stiffness_rule
from infonce_lab.simulation.trapping import TrapCurve, wilson_interval

RESOLUTIONS = ("step", "half_step")


def _curve_json(c: TrapCurve) -> dict[str, Any]:
    return {"name": c.name, "t": c.times.tolist(), "n": c.n, "p_trap": c.p_trap.tolist(),
            "trap_ci": [c.trap_ci[0].tolist(), c.trap_ci[1].tolist()],
            "p_surv": c.p_surv.tolist(), "surv_ci": [c.surv_ci[0].tolist(), c.surv_ci[1].tolist()]}


def check_times(horizon: float, first: float, extra: Sequence[float] = ()) -> list[float]:
    """Times at which chains are labelled: the 1–2–5 series from ``first`` up to ``horizon``,
    plus ``horizon`` and ``extra`` (log-spaced, because escapes happen early and the claims
    compare decades)."""
    if not 0 < first <= horizon:
        raise ValueError("need 0 < first ≤ horizon")
    out = set()
    for k in range(math.floor(math.log10(first)) - 1, math.ceil(math.log10(horizon)) + 1):
        for m in (1.0, 2.0, 5.0):
            t = m * 10.0**k
            if first * (1 - 1e-9) <= t <= horizon * (1 + 1e-9):
                out.add(float(f"{t:.12g}"))
    out.update(float(x) for x in extra if 0 < x <= horizon)
    out.add(float(horizon))
    return sorted(out)


def proportion(k: int, n: int) -> dict[str, Any]:
    """A proportion as a results-file estimate with its Wilson 95% interval."""
    lo, hi = wilson_interval(k, n)
    p = k / n
    # At k = 0 or n an end equals p only up to round-off; keep p inside its interval.
    return {**est.interval(p, min(float(lo), p), max(float(hi), p), "wilson", n), "k": int(k)}


def proportion_difference(k1: int, n1: int, k2: int, n2: int) -> dict[str, Any]:
    """k1/n1 − k2/n2 with Newcombe's hybrid score interval (two independent Wilson intervals
    combined; well behaved at 0 and 1, where the Wald interval collapses)."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb")
    d = k1 / n1 - k2 / n2
    # At a difference of ±1 an end lands on ±1 only up to round-off (0.9999999999999998).
    return est.interval(d, min(float(lo), d), max(float(hi), d),
                        "newcombe hybrid score (two independent proportions)", n1 + n2)


def gibbs_trap_mass(beta: float, labels_trap: np.ndarray, kappa_s: float,
                    dynamics: str = "P2") -> float:
    """Mass of the non-global basins under the stationary law at fixed β on the
    rotation-quotiented torus, from its n³ grid (the quotient keeps the uniform measure): P2's
    π_β ∝ exp(−L(·, β)) = exp(−β·F_β) (annealing paper §3.1's law, for P2), P1's
    ∝ exp(−β·L(·, β)) = exp(−β²·F_β) (SDE (3): drift −grad L, noise √(2/β)).

    ``labels_trap``: the grid points whose basin (steepest descent of F_β̄) is not global. The
    trap's well is a kink of width ~1/(βκ_s), below the grid step at large β, so the value is a
    grid estimate, good to a factor of a few there; it is ~e^{−β·κ_s}, below 1e-10 at every β(T)
    of the default run, far under the margins any rule uses."""
    n = labels_trap.shape[0]
    theta = 2.0 * np.pi * np.arange(n) / n
    f, _ = _s1_f_u0(theta[:, None, None], theta[None, :, None], theta[None, None, :], beta,
                    kappa_s)
    if dynamics not in ("P1", "P2"):
        raise ValueError(f"dynamics must be 'P1' or 'P2', got {dynamics!r}")
    log_w = -(beta**2 if dynamics == "P1" else beta) * f  # L = β·F_β
    log_w -= log_w.max()
    w = np.exp(log_w)
    return float(w[labels_trap].sum() / w.sum())


# Each anchor of S1 scores three candidates (its positive and two negatives).
S1_CANDIDATES = 3


def p1_crossings_bound(beta: Callable[[np.ndarray], np.ndarray], t0: float, t1: float,
                       delta_e_u0: float, kappa_s: float, chains: int,
                       points: int = 4000) -> float:
    """An upper estimate of the barrier crossings that ``chains`` P1 chains still make over
    [t0, t1]: chains·∫ κ_s²β(t)²·exp(−β(t)²·ΔE(β(t))) dt (Kramers' law for P1, whose law at fixed
    β is ∝ exp(−β·L) = exp(−β²F_β)). ΔE(β) = ΔE_U₀ − ln(3)/β is a lower bound on every exit
    barrier of F_β = L/β: per anchor 0 ≤ β(F_β − U₀) ≤ ln 3 (a log-sum-exp of three terms over
    their largest), so a saddle of F_β is no lower than U₀'s and a minimum no more than ln(3)/β
    higher. The prefactor κ_s²β² is the drift's largest curvature at the trap: 2π times the
    one-dimensional Kramers prefactor √(λ_well·|λ_saddle|)/2π of a well and a saddle that stiff.
    ``delta_e_u0`` is the exit barrier of U₀ out of the trap's basin. ``beta`` maps a vector of
    times to β; ``t1`` may be ∞. Infinite when ΔE(β) ≤ 0 somewhere on [t0, t1]."""
    if t1 <= t0:
        return 0.0
    # To t = ∞: β grows like ln t, so the integrand falls like t^(−c²ΔE·ln t) and 10¹⁵ time
    # units past t0 carry nothing; log-spaced points follow its decay.
    t = (t0 + np.geomspace(1e-9, 1e15, points) if math.isinf(t1) else np.linspace(t0, t1, points))
    b = np.asarray(beta(t), dtype=np.float64)
    de = delta_e_u0 - math.log(S1_CANDIDATES) / b
    if np.any(de <= 0):
        return math.inf
    rate = kappa_s**2 * b**2 * np.exp(-(b**2) * de)
    return float(chains * np.trapezoid(rate, t))


def sqrt_outrunning(c: float, K: float, horizon: float) -> BetaGrowth:
    """The slowest β = β₀ + r·√t that starts at, and stays at or above, the log schedule
    c·ln(t + K) over [0, horizon]: β₀ = c·ln K, r = c·max_t (ln(t + K) − ln K)/√t.

    Prop. 3.3 (liminf β/ln t > c*) is about the regime past c*·ln t; a √t schedule that gets there
    only after the horizon (β₀ + √t with β₀ = c*, for S1's c* ≈ 16, crosses 2c*·ln t near
    t ≈ 10⁴) empties the trap first and cannot test it within T (App. A.6, §6)."""
    from scipy.optimize import minimize_scalar

    def gain(t: float) -> float:  # (ln(t + K) − ln K)/√t: 0 at t → 0, one interior maximum
        return (math.log(t + K) - math.log(K)) / math.sqrt(t) if t > 0 else 0.0

    inner = minimize_scalar(lambda t: -gain(t), bounds=(0.0, horizon), method="bounded",
                            options={"xatol": 1e-10 * max(1.0, horizon)})
    rate = c * max(gain(float(inner.x)), gain(horizon))
    return BetaGrowth(form="sqrt", beta0=c * math.log(K), rate=rate * (1 + 1e-9),
                      time_per_step=1.0, beta_max=1e6)


def _schedules(c_star: float, K: float, c_ratios: Sequence[float], sqrt_outruns: float,
               horizon: float) -> dict[str, Schedule]:
    """On the time axis (time_per_step = 1: ``tau(t)`` takes the time t itself)."""
    out: dict[str, Schedule] = {
        f"log c/c*={r:g}": LogAnneal(c=r * c_star, K=K, time_per_step=1.0, tau_max=1e6)
        for r in c_ratios}
    out["sqrt"] = sqrt_outrunning(sqrt_outruns * c_star, K, horizon)
    return out


def run_s1(
    *,
    kappa_s: float,
    grid: int,
    beta_bar: float,
    chains: int,
    dt_max: float,
    h_p1: float,
    h_p2: float,
    horizon: float,
    horizon_p1: float,
    hold_after: float,
    hold_crossings: float,
    first_check: float,
    K: float = math.e,
    c_ratios: Sequence[float],
    sqrt_outruns: float,
    dynamics: Sequence[str],
    angle_sd: float,
    seed: int,
) -> dict[str, Any]:
    """Barriers and c* of S1, then P_trap(t) (occupancy and survival, Wilson CIs) for the log
    schedule at each c/c* and a √t schedule that outruns c = ``sqrt_outruns``·c* over [0, T]
    (:func:`sqrt_outrunning`), under each dynamics, at the step rule and at half
    of it; the estimates the report decides with (see the module docstring)."""
    if hold_after > horizon_p1:
        raise ValueError("hold_after must not exceed horizon_p1")
    barrier = s1_barrier(grid, beta_bar, kappa_s)
    # The watershed's own convergence check: the same flooding on the grid with half the points
    # per angle (a quarter of the cost would not do: the trap must stay on the grid, n % 4 = 0).
    coarse_n = grid // 2 if (grid // 2) % 4 == 0 and grid // 2 >= 8 else None
    coarse = s1_barrier(coarse_n, beta_bar, kappa_s) if coarse_n else None
    c_star = barrier.c_star
    scheds = _schedules(c_star, K, c_ratios, sqrt_outruns, horizon)
    names = list(scheds)
    model = s1_model(kappa_s)
    h = {"P1": h_p1, "P2": h_p2}
    ends = {"P1": horizon_p1, "P2": horizon}

    # Groups: dynamics × schedule × resolution, each `chains` chains from the jittered trap.
    groups: list[tuple[str, str, str]] = [(d, s, r) for d in dynamics for s in names
                                          for r in RESOLUTIONS]
    rules: list[StepRule] = []
    for d, _, r in groups:
        base = stiffness_rule(d, dt_max, h[d], kappa_s)  # type: ignore[arg-type]
        rules.append(base if r == "step" else base.halved())
    betas = _vectorised_betas([scheds[s] for _, s, _ in groups])
    horizons = np.array([ends[d] for d, _, _ in groups])
    times = check_times(max(horizon, horizon_p1), first_check,
                        extra=[horizon, horizon_p1, hold_after])
    exit_u0 = float(barrier.trap_barrier_u0)  # P1's hold: the trap basin's exit barrier
    held_at = np.full(len(groups), np.nan)
    held_bound = np.full(len(groups), np.nan)

    rng = np.random.Generator(np.random.SFC64(seed))
    theta = interleaved_trap(2)[None, None, :] + angle_sd * rng.standard_normal(
        (len(groups), chains, 4))

    # The largest curvature of F_β̄ is β̄κ_s² (at the trap, where λ_max(L) = β²κ_s²); a descent
    # step of 0.8 over it is monotone along every direction, so the quench follows the
    # steepest-descent basins (4× fewer iterations than a fixed 1e-2 at β̄ = 20).
    q_step = 0.8 / (beta_bar * kappa_s**2)

    def trapped(th: np.ndarray) -> np.ndarray:
        return ~quench(model, th, beta_bar, step=q_step).is_global

    inside = trapped(theta)
    alive = inside.copy()
    k_trap, k_surv = [inside.sum(1)], [alive.sum(1)]
    steps = np.zeros(len(groups), dtype=np.int64)
    t_prev = 0.0
    for t in times:
        running = (horizons >= t - 1e-9) & np.isnan(held_at)
        sel = np.flatnonzero(running)
        if sel.size == 0:
            break
        res = clocked_langevin(
            lambda th, b: model.grad_cm(th, b, fast_trig=True),
            theta[sel].reshape(-1, 4), lambda clocks, sel=sel: betas(clocks, sel), t_prev, t,
            [rules[g] for g in sel], [groups[g][0] for g in sel],  # type: ignore[misc]
            space="angles", rng=rng)
        theta[sel] = res.x.reshape(sel.size, chains, 4) % (2.0 * np.pi)
        steps[sel] += res.steps
        now = np.zeros_like(inside)
        now[sel] = trapped(theta[sel])
        alive[sel] &= now[sel]
        # A group past its horizon keeps its last counts (never read after that time); a held
        # group keeps them as its labels at every later check.
        k_trap.append(np.where(running, now.sum(1), k_trap[-1]))
        k_surv.append(np.where(running, alive.sum(1), k_surv[-1]))
        done = np.asarray([0.0, *times[:len(k_trap) - 1]])  # the times of k_trap's entries
        decade = done >= t / 10.0 - 1e-9
        for g in sel:
            still = all(k[g] == k_trap[-1][g] for k in np.asarray(k_trap)[decade]) and all(
                k[g] == k_surv[-1][g] for k in np.asarray(k_surv)[decade])
            if (groups[g][0] == "P1" and still and t >= hold_after - 1e-9
                    and t < horizons[g] - 1e-9):
                # to t = ∞, not only to the horizon: a held count is then P_trap's limit
                # within the bound, which is what Thm. 3.2 and Prop. 3.3 are about
                bound = p1_crossings_bound(lambda tt, g=g: betas(tt, np.full(tt.shape, g)), t,
                                           math.inf, exit_u0, kappa_s, chains)
                if bound < hold_crossings:
                    held_at[g], held_bound[g] = t, bound
        t_prev = t
    while len(k_trap) < len(times) + 1:  # every group held or ended before the last check
        k_trap.append(k_trap[-1])
        k_surv.append(k_surv[-1])
    kt, ks = np.stack(k_trap, 1), np.stack(k_surv, 1)
    tt = np.asarray([0.0] + times)

    # Per group: the curve up to its horizon.
    curves: dict[tuple[str, str, str], TrapCurve] = {}
    for g, key in enumerate(groups):
        upto = tt <= horizons[g] + 1e-9
        curves[key] = TrapCurve(key[1], tt[upto], chains, kt[g, upto], ks[g, upto])

    def row(c: TrapCurve) -> dict[str, Any]:
        # No escape-hazard fit (the old "hazard_slope" key stays, empty): a dozen log-spaced
        # checks cannot resolve the hazard's exponent; S0 tests D.3(4).
        end = proportion(int(c.k_trap[-1]), c.n)
        return {**_curve_json(c), "p_trap_end": end["value"],
                "p_trap_end_ci": [end["low"], end["high"]], "hazard_slope": None}

    by_res = {r: {d: [row(curves[(d, s, r)]) for s in names] for d in dynamics}
              for r in RESOLUTIONS}

    def count_at(key: tuple[str, str, str], t: float) -> int:
        c = curves[key]
        return int(c.k_trap[c.at(t)])

    # D.7(i): P_trap(P1) − P_trap(P2) at the shorter horizon, per schedule.
    t_both = min(horizon, horizon_p1)
    p1_minus_p2: dict[str, Any] = {}
    if "P1" in dynamics and "P2" in dynamics:
        for s in names:
            p1_minus_p2[s] = {r: proportion_difference(
                count_at(("P1", s, r), t_both), chains, count_at(("P2", s, r), t_both),
                chains) for r in RESOLUTIONS}
            p1_minus_p2[s]["t"] = t_both

    # D.3(2)–(3) under each dynamics: P_trap(T) against the Gibbs trap mass of its law at β(T).
    vs_gibbs: dict[str, dict[str, Any]] = {d: {} for d in dynamics}
    labels = barrier.f_result.labels
    assert labels is not None
    # A basin of F_β̄ is a trap when its minimum is off the global set, as the quench says.
    ang = barrier.f_result.minima_index * (2.0 * math.pi / grid)
    non_global = model.u0(np.c_[np.zeros(len(ang)), ang]) > 1e-6
    trap_pts = non_global[labels]
    for d in dynamics:
        end = ends[d]
        for s in names:
            beta_t = 1.0 / scheds[s].tau(end)
            mass = gibbs_trap_mass(beta_t, trap_pts, kappa_s, dynamics=d)  # type: ignore[arg-type]
            entry: dict[str, Any] = {"t": end, "beta": beta_t, "gibbs_trap_mass": mass,
                                     "c_ratio": _ratio(s)}
            for r in RESOLUTIONS:
                k = count_at((d, s, r), end)
                p_trap = proportion(k, chains)
                entry[r] = {**p_trap, **{q: _shifted(p_trap[q], mass) for q in ("value", "low", "high")},
                            "method": "wilson, shifted by the Gibbs trap mass"}
                entry[f"p_trap_{r}"] = p_trap
                k10 = count_at((d, s, r), end / 10)
                entry[f"p_trap_tenth_{r}"] = proportion(k10, chains)
                g = groups.index((d, s, r))
                entry[f"held_at_{r}"] = None if np.isnan(held_at[g]) else float(held_at[g])
            vs_gibbs[d][s] = entry

    chain_steps = int(steps.sum()) * chains
    return {
        "barrier": {**{k: getattr(barrier, k) for k in (
                        "delta_e_max_u0", "delta_e_max_f", "c_star", "c_star_f", "trap_u0",
                        "trap_barrier_u0", "trap_barrier_f")},
                    "grid": grid, "beta_bar": beta_bar, "kappa_s": kappa_s,
                    "exact_u0": kappa_s / 16.0,
                    "grid_step": 2.0 * math.pi / grid,
                    "grid_coarse": coarse_n,
                    "delta_e_max_u0_coarse": None if coarse is None else coarse.delta_e_max_u0},
        "chains": chains, "horizon": horizon, "horizon_p1": horizon_p1, "c_ratios": list(c_ratios),
        "sqrt": {"outruns": sqrt_outruns, "beta0": scheds["sqrt"].beta0,  # type: ignore[union-attr]
                 "rate": scheds["sqrt"].rate},  # type: ignore[union-attr]
        "check_times": times, "K": K,
        "dt": dt_max,  # the largest step (the old key, kept for readers of the fixed-step files)
        "convergence": {
            "rule": "dt_k = min(dt_max, h/(κ_s²·β_k^p)), p = 2 (P1), 1 (P2)",
            "dt_max": dt_max, "dt_max_half": dt_max / 2,
            "h": {d: h[d] for d in dynamics}, "h_half": {d: h[d] / 2 for d in dynamics},
            "steps": {f"{d}|{s}|{r}": int(steps[g]) for g, (d, s, r) in enumerate(groups)},
            "chain_steps": chain_steps,
        },
        "dynamics": by_res["step"],
        "half_step": by_res["half_step"],
        "p1_minus_p2": p1_minus_p2,
        "p2_vs_gibbs": vs_gibbs.get("P2", {}),
        "p1_vs_gibbs": vs_gibbs.get("P1", {}),
        "hold": {"after": hold_after, "crossings": hold_crossings,
                 "exit_barrier_u0": exit_u0, "candidates": S1_CANDIDATES,
                 "rule": "P1 held from the first check ≥ 'after' at which no label changed "
                         "over [t/10, t] and chains·∫ κ_s²β²·exp(−β²(ΔE_trap − ln 3/β)) dt "
                         "over [t, ∞) < 'crossings'",
                 "held_at": {f"{d}|{s}|{r}": (None if np.isnan(held_at[g]) else float(held_at[g]))
                             for g, (d, s, r) in enumerate(groups)},
                 "bound_at_hold": {f"{d}|{s}|{r}": float(held_bound[g])
                                   for g, (d, s, r) in enumerate(groups)
                                   if not np.isnan(held_bound[g])}},
    }


def _vectorised_betas(
    scheds: Sequence[Schedule],
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """β(t) of each group's schedule, for a vector of clocks at once: (clocks, groups) ↦ β.
    Exactly ``1/schedule.tau(t)`` for the log and √t schedules used here (checked in the
    tests); the integrator calls it once per step instead of once per group and step."""
    is_log = np.array([isinstance(s, LogAnneal) for s in scheds])
    if not all(isinstance(s, LogAnneal) or (isinstance(s, BetaGrowth) and s.form == "sqrt")
               for s in scheds):
        raise ValueError("only log and √t schedules are vectorised")
    c = np.array([s.c if isinstance(s, LogAnneal) else 0.0 for s in scheds])
    k = np.array([s.K if isinstance(s, LogAnneal) else 1.0 for s in scheds])
    b0 = np.array([s.beta0 if isinstance(s, BetaGrowth) else 0.0 for s in scheds])
    rate = np.array([s.rate if isinstance(s, BetaGrowth) else 0.0 for s in scheds])
    bmax = np.array([s.beta_max if isinstance(s, BetaGrowth) else np.inf for s in scheds])
    bmin = np.array([1.0 / s.tau_max if isinstance(s, LogAnneal) else 0.0 for s in scheds])

    def beta(clocks: np.ndarray, groups: np.ndarray) -> np.ndarray:
        t = np.asarray(clocks, dtype=np.float64)
        g = np.asarray(groups)
        out = np.where(is_log[g], c[g] * np.log(t + k[g]),
                       np.minimum(b0[g] + rate[g] * np.sqrt(np.maximum(t, 0.0)), bmax[g]))
        return np.where(is_log[g], np.maximum(out, bmin[g]), out)

    return beta


def _shifted(v: float, mass: float) -> float:
    """v − mass; below 1e-9 (far under one chain in any run here) it is stored as 0, not −1e-14."""
    d = v - mass
    return 0.0 if abs(d) < 1e-9 else d


def _ratio(name: str) -> float | None:
    return float(name.split("=", 1)[1]) if name.startswith("log c/c*=") else None
