"""S0, our test of the annealing paper (it has no experiments): annealing a double well on S¹ whose
barrier is known in closed form, plus the two fixed-step claims the same landscape can decide —
ergodicity at fixed β (paper §3.1) and SGD with injected noise against the SDE (paper §4).

U(θ) = −cos 2θ − a·cos θ: global well at θ = 0, trap at θ = π, escape cost ΔE = 2 − a + a²/8,
c* = 1/ΔE (``double_well``). Every quantity a verdict uses is measured twice, at the step dt and
at dt/2 (independent chains), and stored as ``{"step": estimate, "half_step": estimate}``.

Annealing (D.3(2–4), D.5). R chains per schedule start at θ = π + N(0, angle_sd²) and follow
P2 (drift −U′, noise √(2/β(t))) to the horizon T. For each decade [T_w/10, T_w], T_w = T/1000 …
T, the occupancy P_w of the trap basin is averaged over the decade (every check time, every
chain: time averaging within a decade cuts the variance wherever chains still mix), beside
the Gibbs trap mass π_w of exp(−β(t)·U) averaged over the same times (exact quadrature). Per
schedule, with a bootstrap over chains (the same chains are followed through every window):

- excess  X = ln(P_T / π_T): 0 when the chains track the quasi-equilibrium (the mechanism of the
  paper's App. B.2, part 2), growing without bound when they stay trapped while π → 0;
- follow  φ = ln(P_{T/10}/P_T) / ln(π_{T/10}/π_T): the fraction of the equilibrium's log-decline
  over the last decade that the occupancy follows (1: tracking, so P → 0; 0: frozen);
- stretch g = γ̂/(1 − c/c*) (c < c*): γ̂ = Δ ln κ / Δ ln(t+K) from the occupancy's secant decay
  exponents κ over the last two decades; a decay exp(−C(t+K)^γ) — the paper's D.3(4) bound — has
  γ̂ = γ whatever C and any prefactor, a polynomial decay has γ̂ = 0;
- decay d̂ = ln(P_{T/100}/P_T) / Δ ln(t+K) (c = c*): the occupancy's power-law exponent over the
  last two decades, for the bound P(Z_t ∉ 𝒩(U*, ε)) ≤ C′(t+K)^(−d) at the critical schedule
  (D.3(4)); beside it the Gibbs trap mass's own exponent (``decay_gibbs``);
- the escape hazard of the never-exited chains against log(t+K) (D.3(4): slope −c/c*), fitted
  where β·ΔE ≥ ``hazard_min_barrier`` (Kramers' rate A·e^{−βΔE} is an asymptotic law).

A schedule is *frozen* (its chains held) from the first check after which Kramers' rate out of the
trap, A·e^{−β(t)·ΔE} — an upper bound for every chain, the global well's barrier being higher —
integrated over the rest of the horizon, expects fewer than ``freeze_crossings`` barrier crossings
among all of the schedule's chains: the held occupancy then differs from the simulated one by
less than a tenth of a chain in expectation, and the run saves the work.

Ergodicity (§3.1, D.3(1)): at fixed β the law converges to π_β; P1 (drift −grad L, L = β·U) has
stationary law ∝ exp(−β·L) = exp(−β²·U), P2 ∝ exp(−L) = exp(−β·U). Chains from both wells;
time averages of the trap indicator after a burn-in against the Gibbs mass of each dynamics' law.

SGD (§4, D.4): Z_{k+1} = Π[Z_k − η·∇̂L + √(2η/β)·ξ] with ∇̂L = β·(U′ + s·ζ), ζ ~ N(0, 1), an
unbiased gradient; it discretises P1, so as η → 0 its stationary trap mass should reach that of
exp(−β²U). The gradient noise adds η²β²s² of variance per step to the injected 2η/β, an O(η)
heating; the η → 0 limit is estimated by Richardson extrapolation from η and η/2 (step) and from
η/2 and η/4 (half step).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.interpolate import CubicSpline

from infonce_lab.evaluation.stats import TInference
from infonce_lab.schedules import BetaGrowth, Cosine, Fixed, LogAnneal, Schedule
from infonce_lab.simulation import estimates as est
from infonce_lab.simulation.angle_langevin import CircleRun, run_circle
from infonce_lab.simulation.double_well import (
    double_well_barrier,
    double_well_barrier_numerical,
    double_well_log_trap_mass,
    double_well_trap_mass,
    kramers_prefactor,
)
from infonce_lab.simulation.trapping import wilson_interval

# Reference cost of the first S0 implementation (12 schedules × 500 chains × 10⁵ steps of the
# ambient simulator): the denominator of the cost ratio the file reports.
REFERENCE_CHAIN_STEPS = 600_000_000


# ------------------------------------------------------------------------------------ schedules
@dataclass(frozen=True)
class Held:
    """A schedule held at its value at ``last_step`` afterwards (a cosine-τ run to its horizon
    T_c stays at τ_min instead of warming up again)."""

    inner: Schedule
    last_step: int

    def tau(self, step: int) -> float:
        return self.inner.tau(min(step, self.last_step))


def beta_at_steps(schedule: Schedule, steps: np.ndarray) -> np.ndarray:
    """β = 1/τ at integer ``steps``, vectorised for the project's schedule classes (a test holds it
    to ``schedule.tau``), by a loop for any other schedule."""
    k = np.asarray(steps, dtype=np.float64)
    if isinstance(schedule, Fixed):
        return np.full(k.shape, 1.0 / schedule.value)
    if isinstance(schedule, LogAnneal):
        b = schedule.c * np.log(k * schedule.time_per_step + schedule.K)
        return np.where(b <= 1.0 / schedule.tau_max, 1.0 / schedule.tau_max, b)
    if isinstance(schedule, BetaGrowth):
        t = k * schedule.time_per_step
        if schedule.form == "linear":
            b = schedule.beta0 + schedule.rate * t
        elif schedule.form == "sqrt":
            b = schedule.beta0 + schedule.rate * np.sqrt(t)
        else:
            b = np.exp(np.minimum(math.log(schedule.beta0) + t * math.log(schedule.rate),
                                  math.log(schedule.beta_max)))
        return np.minimum(b, schedule.beta_max)
    if isinstance(schedule, Cosine):
        phase = 2.0 * math.pi * k / schedule.period_steps
        return 1.0 / (schedule.tau_min + 0.5 * (schedule.tau_max - schedule.tau_min)
                      * (1.0 + np.cos(phase)))
    if isinstance(schedule, Held):
        return beta_at_steps(schedule.inner, np.minimum(k, schedule.last_step))
    return np.array([1.0 / schedule.tau(int(s)) for s in k.ravel()]).reshape(k.shape)


def s0_schedules(
    c_star: float,
    dt: float,
    *,
    c_ratios: Sequence[float],
    K: float,
    fast: bool,
    sqrt_rate: float,
    linear_rate: float,
    geometric_rate: float,
    beta_max: float,
    cosine_tau_min: float,
    cosine_horizons: Sequence[float],
) -> dict[str, Schedule]:
    """Our S0 grid on the time axis t = step·dt: log β = c·ln(t+K) for c/c* in
    ``c_ratios``; and, if ``fast``, β = β0 + r·√t, β0 + r·t, β0·r^t (capped at ``beta_max``) and
    cosine-τ from 1/β0 down to τ_min over each horizon T_c (held at τ_min after T_c).

    β0 is c* (the log schedule's β(0) at c = c*, K = e), so every fast schedule starts where
    the critical log one does and then outruns it."""
    b0 = c_star
    out: dict[str, Schedule] = {}
    for r in c_ratios:
        # τ_max only guards β ≤ 0 (K ≤ 1); it must not bind for K = e.
        out[f"log_c{r:g}"] = LogAnneal(c=r * c_star, K=K, time_per_step=dt, tau_max=1e6)
    if fast:
        out["sqrt"] = BetaGrowth("sqrt", b0, sqrt_rate, dt, beta_max)
        out["linear"] = BetaGrowth("linear", b0, linear_rate, dt, beta_max)
        out["geometric"] = BetaGrowth("geometric", b0, geometric_rate, dt, beta_max)
        for T in cosine_horizons:
            last = round(T / dt)
            cos = Cosine(tau_min=cosine_tau_min, tau_max=1.0 / b0, period_steps=2.0 * last)
            out[f"cosine_T{T:g}"] = Held(cos, last)
    return out


def _table(scheds: Sequence[Schedule]) -> Callable[[int, int], np.ndarray]:
    def betas(k0: int, k1: int) -> np.ndarray:
        ks = np.arange(k0, k1)
        return np.stack([beta_at_steps(s, ks) for s in scheds], axis=1)

    return betas


# ------------------------------------------------------------------------------------ estimates
def _undefined(n: int, why: str) -> dict[str, Any]:
    """A bootstrap estimate the chains do not define (``Estimate.from_dict`` reads ``undefined``)."""
    return {**est.missing(why, "bootstrap over chains"), "n": n}


def _percentile(value: float, draws: np.ndarray, n: int, why: str) -> dict[str, Any]:
    """Percentile interval of bootstrap ``draws``; undefined when the point estimate or more than
    (1 − level)/2 of the draws are not finite (the interval would depend on how they are
    treated)."""
    ok = np.isfinite(draws)
    if not math.isfinite(value) or ok.mean() < 1.0 - (1.0 - est.LEVEL) / 2:
        return _undefined(n, why)
    lo, hi = np.quantile(draws[ok], [(1 - est.LEVEL) / 2, (1 + est.LEVEL) / 2])
    return est.interval(value, lo, hi, "bootstrap over chains", n)


def _t_estimate(values: np.ndarray, centre: float = 0.0) -> dict[str, Any]:
    """Mean of independent per-chain values minus ``centre``, with its t-inference over chains."""
    return est.from_t(est.shifted(est.mean_t(values), centre), "t over chains")


def _welch(terms: Sequence[tuple[float, np.ndarray]], centre: float) -> dict[str, Any]:
    """Σ w_i·mean(x_i) − centre over independent samples, with a Welch–Satterthwaite t."""
    mean = sum(w * float(np.mean(x)) for w, x in terms) - centre
    parts = [(w * w * float(np.var(x, ddof=1)) / len(x), len(x)) for w, x in terms]
    var = sum(p for p, _ in parts)
    df = var * var / sum(p * p / (m - 1) for p, m in parts)
    ti = TInference(mean, math.sqrt(var), max(1, int(df)), sum(m for _, m in parts))
    return est.from_t(ti, "Welch t over chains")


# ------------------------------------------------------------------------------------ annealing
def _window_ends(horizon: float, check_dt: float) -> list[float]:
    """Decades ending at the horizon: T/1000, T/100, T/10, T (those whose window [T_w/10, T_w]
    holds at least 4 checks)."""
    ends = [horizon / 10.0**j for j in (3, 2, 1, 0)]
    return [e for e in ends if e * 0.9 >= 4 * check_dt]


def _freeze_checks(beta_eff: np.ndarray, check_dt: float, delta_e: float, prefactor: float,
                   chains: int, crossings: float) -> int | None:
    """Index (0-based) of the first check from which the expected number of barrier crossings of
    ``chains`` chains over the rest of the run, by Kramers' rate prefactor·e^{−β·ΔE} summed over
    the checks, is below ``crossings``; None if there is none before the end."""
    rate = prefactor * np.exp(-beta_eff * delta_e) * check_dt * chains
    remaining = np.cumsum(rate[::-1])[::-1]
    cold = remaining < crossings
    if not cold.any():
        return None
    return int(np.argmax(cold))


def _hazard_design(first_exit: np.ndarray, times: np.ndarray, K: float, t_min: float,
                   n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-chain contributions to the binned escape hazard of App. B.4 (log-spaced bins, snapped
    to check times, from ``t_min`` to the last check): ``alive`` (n, bins) — alive at the bin's
    start; ``events`` — exits inside the bin; ``exposure`` — time alive inside it (exits are seen
    at checks, so a chain that exits at t_m was alive up to t_m, as the left-end sum over checks
    counts it); and x = the bin's mean log(t+K). Sums over chains (or bootstrap counts of chains)
    give the fit's counts, so the bootstrap is a matrix product."""
    t = np.r_[0.0, times]
    cuts = np.unique(np.searchsorted(t, np.geomspace(t_min, t[-1], n_bins + 1)))
    cuts = cuts[cuts < t.size]
    lo, hi = t[cuts[:-1]], t[cuts[1:]]
    e = first_exit[:, None]
    alive = (e > lo).astype(np.float64)
    events = ((e > lo) & (e <= hi)).astype(np.float64)
    exposure = np.clip(np.minimum(e, hi) - lo, 0.0, None)
    x = 0.5 * (np.log(lo + K) + np.log(hi + K))
    return alive, events, exposure, x


def _wls_slopes(x: np.ndarray, events: np.ndarray, exposure: np.ndarray, alive: np.ndarray,
                min_events: int, min_alive: int) -> np.ndarray:
    """Weighted least-squares slope of log(events/exposure) on x, weights = events (the inverse
    Poisson variance of a log count), over the bins with ≥ min_events exits out of ≥ min_alive
    survivors — row by row (one row per bootstrap resample); NaN with fewer than 3 such bins."""
    ok = (events >= min_events) & (alive >= min_alive) & (exposure > 0)
    w = np.where(ok, events, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(ok, np.log(events / exposure), 0.0)
        sw = w.sum(-1, keepdims=True)
        xm = (w * x).sum(-1, keepdims=True) / sw
        ym = (w * y).sum(-1, keepdims=True) / sw
        slope = ((w * (x - xm) * (y - ym)).sum(-1) / (w * (x - xm) ** 2).sum(-1))
    return np.where(ok.sum(-1) >= 3, slope, np.nan)


def _hazard(first_exit: np.ndarray, times: np.ndarray, K: float, t_min: float, c_ratio: float,
            counts: np.ndarray, n_bins: int, min_events: int, min_alive: int) -> dict[str, Any]:
    """Escape-hazard slope against log(t+K) over the Kramers regime t ≥ t_min, divided by its
    prediction −c/c* (D.3(4)); percentile interval from the bootstrap resamples ``counts``
    (draws, chains)."""
    n = first_exit.size
    detail: dict[str, Any] = {"t_min": float(t_min), "predicted_slope": -c_ratio}
    if t_min >= times[-1]:
        return {"ratio": _undefined(n, "the Kramers regime (β·ΔE ≥ hazard_min_barrier) starts "
                                       "after the horizon"), **detail}
    alive, events, exposure, x = _hazard_design(first_exit, times, K, t_min, n_bins)
    detail["alive_at_t_min"] = int(alive[:, 0].sum()) if alive.shape[1] else 0
    slope = float(_wls_slopes(x, events.sum(0), exposure.sum(0), alive.sum(0), min_events,
                              min_alive))
    if not math.isfinite(slope):
        why = (f"{detail['alive_at_t_min']} of {n} chains had never left the trap by "
               f"t = {t_min:.3g}, where the Kramers regime starts: too few exits for 3 bins")
        return {"ratio": _undefined(n, why), **detail}
    boot = _wls_slopes(x, counts @ events, counts @ exposure, counts @ alive, min_events,
                       min_alive) / -c_ratio
    ok = (events.sum(0) >= min_events) & (alive.sum(0) >= min_alive)
    detail |= {"slope": slope, "events": int(events.sum(0)[ok].sum()), "n_bins": int(ok.sum()),
               "t_range": [float(t_min), float(times[-1])]}
    return {"ratio": _percentile(slope / -c_ratio, boot, n, "the hazard cannot be fitted in "
                                 "more than 2.5% of the bootstrap resamples"), **detail}


def _anneal_quantities(frac: np.ndarray, gibbs: np.ndarray, ell: np.ndarray, c_ratio: float | None,
                       counts: np.ndarray, ends: Sequence[float]) -> dict[str, Any]:
    """Window occupancies and the excess / follow / stretch statistics (module docstring) of one
    schedule's chains, with percentile intervals from one bootstrap over chains: ``counts``
    (draws, chains) are the multiplicities of each chain in each resample, so every statistic of
    one resample sees the same chains in every window."""
    n, w = frac.shape
    means = frac.mean(0)
    boot = counts @ frac / n  # (draws, W)

    def excess(p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(p[..., -1]) - math.log(gibbs[-1])

    def follow(p: np.ndarray) -> np.ndarray:
        den = math.log(gibbs[-2] / gibbs[-1])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(p[..., -2] / p[..., -1]) / den

    def stretch(p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            k1 = np.log(p[..., -3] / p[..., -2]) / (ell[-2] - ell[-3])
            k2 = np.log(p[..., -2] / p[..., -1]) / (ell[-1] - ell[-2])
            gam = np.log(k2 / k1) / ((ell[-1] - ell[-3]) / 2.0)
        return gam / (1.0 - c_ratio)

    def decay(p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(p[..., -3] / p[..., -1]) / (ell[-1] - ell[-3])

    out: dict[str, Any] = {"occupancy": {
        f"{ends[i]:g}": _percentile(float(means[i]), boot[:, i], n, "no chain")
        for i in range(w)}}
    out["excess"] = _percentile(float(excess(means)), excess(boot), n,
                                "no chain in the trap at T (the excess is −∞ or unresolved)")
    if w >= 2 and gibbs[-2] > gibbs[-1] * (1 + 1e-9):
        out["follow"] = _percentile(float(follow(means)), follow(boot), n,
                                    "no chain in the trap over the last window")
    else:
        out["follow"] = _undefined(n, "the Gibbs mass does not fall over the last decade (β "
                                      "held or the horizon too short)")
    if c_ratio is not None and c_ratio < 1.0:
        if w >= 3:
            out["stretch"] = _percentile(float(stretch(means)), stretch(boot), n,
                                         "the occupancy's decline is not resolved in both "
                                         "decades (a decay exponent ≤ 0 or no chain left)")
        else:
            out["stretch"] = _undefined(n, "fewer than three decades")
    if c_ratio == 1.0:
        out["decay"] = (_percentile(float(decay(means)), decay(boot), n,
                                    "no chain in the trap at T or at T/100")
                        if w >= 3 else _undefined(n, "fewer than three decades"))
        if w >= 3:
            out["decay_gibbs"] = float(decay(gibbs))
    return out


def _log_trap_mass_fast(beta_eff: np.ndarray, a: float) -> np.ndarray:
    """:func:`double_well_log_trap_mass` at many β (one per check time) by a cubic spline in
    log β through 2049 exact values: log π is analytic in log β, and a test holds the spline to
    the quadrature at 10⁻⁸."""
    b = np.asarray(beta_eff, dtype=np.float64)
    lo, hi = float(b.min()), float(b.max())
    if hi <= lo * (1 + 1e-12) or b.size <= 2049:
        return np.asarray(double_well_log_trap_mass(b, a))
    grid = np.geomspace(lo, hi, 2049)
    spline = CubicSpline(np.log(grid), double_well_log_trap_mass(grid, a))
    return spline(np.log(b))


def _stretch_of(gibbs: np.ndarray, ell: np.ndarray, c_ratio: float) -> float | None:
    """The stretch statistic of a noiseless curve (the Gibbs mass: how far from 0 a decay that
    tracks the equilibrium is at these times)."""
    if gibbs.size < 3:
        return None
    k1 = math.log(gibbs[-3] / gibbs[-2]) / (ell[-2] - ell[-3])
    k2 = math.log(gibbs[-2] / gibbs[-1]) / (ell[-1] - ell[-2])
    return math.log(k2 / k1) / ((ell[-1] - ell[-3]) / 2.0) / (1.0 - c_ratio)


def _anneal_run(cfg: dict[str, Any], dt: float, seed: int) -> dict[str, Any]:
    """All schedules at one step: the chains' run, then every per-schedule quantity."""
    a, K, T, R = cfg["a"], cfg["K"], cfg["horizon"], cfg["chains"]
    bar = double_well_barrier(a)
    scheds = s0_schedules(bar.c_star, dt, c_ratios=cfg["c_ratios"], K=K, fast=cfg["fast"],
                          **cfg["schedule"])
    names = list(scheds)
    check_every = max(1, round(cfg["check_dt"] / dt))
    steps = round(T / dt) // check_every * check_every
    check_steps = np.arange(1, steps // check_every + 1) * check_every
    check_t = check_steps * dt
    p1 = cfg["dynamics"] == "P1"
    beta_checks = np.stack([beta_at_steps(s, check_steps) for s in scheds.values()])  # (G, J)
    beta_eff = beta_checks**2 if p1 else beta_checks
    kramers = kramers_prefactor(a)
    fz = [_freeze_checks(beta_eff[g], check_every * dt, bar.delta_e, kramers, R,
                         cfg["freeze_crossings"]) for g in range(len(names))]
    freeze_step = [steps if f is None else int(check_steps[f]) for f in fz]
    ends = _window_ends(T, check_every * dt)
    windows = [(e / 10.0, e) for e in ends]  # every check from t = T/10⁴ on enters one decade
    n_curve = min(cfg["curve_points"], check_steps.size)
    curve_checks = np.unique(np.round(np.geomspace(1, check_steps.size, n_curve)).astype(int))

    rng = np.random.default_rng(seed)
    theta0 = np.tile(math.pi + cfg["angle_sd"] * rng.standard_normal(R), len(names))
    run: CircleRun = run_circle(theta0, len(names), _table(list(scheds.values())), dt, steps, a=a,
                                p1=[p1] * len(names), check_every=check_every, windows=windows,
                                curve_checks=curve_checks, freeze_step=freeze_step,
                                seed=int(rng.integers(2**62)), dtype=cfg["torch_dtype"],
                                scheme=cfg["scheme"])
    # One set of bootstrap resamples (multiplicities of each chain) serves every schedule: each
    # schedule's chains are independent of the others', so its bootstrap law is unaffected.
    counts = rng.multinomial(R, np.full(R, 1.0 / R), size=cfg["bootstrap"]).astype(np.float64)
    out: dict[str, Any] = {}
    for g, name in enumerate(names):
        sl = slice(g * R, (g + 1) * R)
        in_w = [(check_t >= lo - 1e-9) & (check_t <= hi + 1e-9) for lo, hi in windows]
        log_pi = _log_trap_mass_fast(beta_eff[g], a)
        gibbs = np.array([float(np.mean(np.exp(log_pi[m]))) for m in in_w])
        ell = np.array([float(np.mean(np.log(check_t[m] + K))) for m in in_w])
        r = cfg["c_ratios"][g] if name.startswith("log_c") else None
        entry: dict[str, Any] = _anneal_quantities(run.window_frac[sl], gibbs, ell, r, counts, ends)
        k = run.curve_counts[g]
        lo, hi = wilson_interval(k, R)
        exits = run.first_exit[sl]
        surv = (exits[None, :] > run.curve_times[:, None]).sum(1)
        entry["curve"] = {"t": run.curve_times.tolist(), "p_trap": (k / R).tolist(),
                          "trap_ci": [lo.tolist(), hi.tolist()], "p_surv": (surv / R).tolist()}
        entry["gibbs"] = {f"{e:g}": float(p) for e, p in zip(ends, gibbs, strict=True)}
        entry["gibbs_curve"] = np.exp(log_pi[curve_checks - 1]).tolist()
        entry["beta_T"] = float(beta_checks[g, -1])
        entry["frozen_at"] = None if fz[g] is None else float(check_t[fz[g]])
        if r is not None:
            t_min = max(math.exp(cfg["hazard_min_barrier"] / (r * bar.c_star * bar.delta_e)) - K,
                        check_every * dt)
            entry["hazard"] = _hazard(exits, check_t, K, t_min, r, counts, cfg["hazard_bins"],
                                      cfg["hazard_min_events"], 4 * cfg["hazard_min_events"])
            entry["stretch_gibbs"] = _stretch_of(gibbs, ell, r) if r < 1 else None
        out[name] = entry
    return {"schedules": out, "window_ends": ends, "chain_steps": run.chain_steps}


# ---------------------------------------------------------------------------------- fixed step
def _ergodicity(cfg: dict[str, Any], a: float, dt: float, seed: int, dtype: Any, scheme: str
                ) -> dict[str, Any]:
    """Time averages at fixed β from both wells, P2 and P1, against each law's Gibbs mass."""
    cases = [("P2", cfg["p2_beta"]), ("P1", cfg["p1_beta"])]
    R, T, burn = cfg["chains"], cfg["horizon"], cfg["burn_in"]
    groups = [(d, b, start) for d, b in cases for start in ("global", "trap")]
    theta0 = np.concatenate([np.full(R, 0.0 if s == "global" else math.pi) for _, _, s in groups])
    betas = np.array([b for _, b, _ in groups])
    check_every = max(1, round(cfg["check_dt"] / dt))
    steps = round(T / dt) // check_every * check_every
    run = run_circle(theta0, len(groups), lambda k0, k1: np.broadcast_to(betas, (k1 - k0, betas.size)),
                     dt, steps, a=a, p1=[d == "P1" for d, _, _ in groups], check_every=check_every,
                     windows=[(burn, T)], seed=seed, dtype=dtype, scheme=scheme)
    out = {}
    for g, (d, b, start) in enumerate(groups):
        law = b * b if d == "P1" else b
        other = b if d == "P1" else b * b
        pi = double_well_trap_mass(law, a)
        f = run.window_frac[g * R:(g + 1) * R, 0]
        out[f"{d}_beta{b:g}_from_{start}"] = {
            "dynamics": d, "beta": b, "beta_eff": law, "start": start, "gibbs": pi,
            "gibbs_other_law": double_well_trap_mass(other, a),
            "occupancy": _t_estimate(f), "difference": _t_estimate(f, pi),
            "difference_other_law": _t_estimate(f, double_well_trap_mass(other, a))}
    return {"cases": out, "chain_steps": run.chain_steps}


def _arrhenius(cfg: dict[str, Any], a: float, dt: float, seed: int, dtype: Any, scheme: str,
               counts: np.ndarray) -> dict[str, Any]:
    """Escape rates out of the trap at fixed β (chains started at its bottom): exits per unit of
    time alive after a transient (the quasi-stationary law in the well forms within a few
    relaxation times 1/U″ ≈ 0.3), and the slope of log rate against β over its prediction −ΔE
    (Kramers–Arrhenius, the law behind the paper's r(s) ≈ A·exp(−β(s)·ΔE_max))."""
    bar = double_well_barrier(a)
    betas = np.asarray(cfg["betas"], dtype=np.float64)
    R, T, t0 = cfg["chains"], cfg["horizon"], cfg["transient"]
    check_every = max(1, round(cfg["check_dt"] / dt))
    steps = round(T / dt) // check_every * check_every
    rng = np.random.default_rng(seed)
    theta0 = np.tile(math.pi + 0.05 * rng.standard_normal(R), betas.size)
    run = run_circle(theta0, betas.size, lambda k0, k1: np.broadcast_to(betas, (k1 - k0, betas.size)),
                     dt, steps, a=a, check_every=check_every, seed=int(rng.integers(2**62)),
                     dtype=dtype, scheme=scheme)
    horizon = steps * dt
    ex = run.first_exit.reshape(betas.size, R)
    events = ((ex > t0) & (ex <= horizon)).astype(np.float64)  # (β, chains)
    exposure = np.clip(np.minimum(ex, horizon) - t0, 0.0, None)
    kramers = kramers_prefactor(a)

    def slope(ev: np.ndarray, xp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.log(ev / xp)  # (..., β); −inf where a resample has no exit at some β
            xc = betas - betas.mean()
            return ((y - y.mean(-1, keepdims=True)) * xc).sum(-1) / (xc * xc).sum()

    ev, xp = events.sum(1), exposure.sum(1)
    boot = slope(counts @ events.T, counts @ exposure.T) / -bar.delta_e
    value = float(slope(ev, xp)) / -bar.delta_e
    rates = {f"{b:g}": {"rate": float(e / x) if x > 0 else None, "exits": int(e),
                        "kramers": kramers * math.exp(-b * bar.delta_e)}
             for b, e, x in zip(betas, ev, xp, strict=True)}
    ok = bool(np.all(ev >= 10))
    ratio = (_percentile(value, boot, R, "fewer than 10 exits at some β") if ok else
             _undefined(R, "fewer than 10 exits at some β"))
    return {"ratio": ratio, "rates": rates, "chain_steps": run.chain_steps}


def _sgd_mass(cfg: dict[str, Any], a: float, eta: float, seed: int, dtype: Any
              ) -> tuple[np.ndarray, int]:
    """Per-chain trap-time fractions of the SGD recursion at step η (P1 with gradient noise)."""
    R, T, burn, b = cfg["chains"], cfg["horizon"], cfg["burn_in"], cfg["beta"]
    theta0 = np.where(np.arange(R) % 2 == 0, 0.0, math.pi)  # half from each well
    check_every = max(1, round(cfg["check_dt"] / eta))
    steps = round(T / eta) // check_every * check_every
    run = run_circle(theta0, 1, lambda k0, k1: np.full((k1 - k0, 1), b), eta, steps, a=a, p1=[True],
                     grad_noise=cfg["grad_noise_sd"], check_every=check_every,
                     windows=[(burn, T)], seed=seed, dtype=dtype)
    return run.window_frac[:, 0], run.chain_steps


def _sgd(cfg: dict[str, Any], a: float, seeds: Sequence[int], dtype: Any) -> dict[str, Any]:
    """Stationary trap mass of SGD with injected noise at η, η/2 (step) and η/2, η/4 (half step,
    fresh chains), the errors against the P1 law exp(−β²U), and the Richardson limits η → 0."""
    b, eta, s = cfg["beta"], cfg["eta"], cfg["grad_noise_sd"]
    pi = double_well_trap_mass(b * b, a)
    steps_used = 0
    runs: dict[str, dict[str, Any]] = {}
    masses: dict[str, np.ndarray] = {}
    for key, e, sd in (("eta", eta, seeds[0]), ("eta/2", eta / 2, seeds[1]),
                       ("eta/2 (half-step run)", eta / 2, seeds[2]), ("eta/4", eta / 4, seeds[3])):
        f, cs = _sgd_mass(cfg, a, e, sd, dtype)
        steps_used += cs
        masses[key] = f
        # The O(η) heating of the gradient noise alone (β_eff = β²/(1 + ηβ³s²/2)): a reference
        # for the size of the error, not part of any rule.
        heated = b * b / (1.0 + e * b**3 * s * s / 2.0)
        runs[key] = {"eta": e, "mass": _t_estimate(f), "error": _t_estimate(f, pi),
                     "predicted_error_gradient_noise": double_well_trap_mass(heated, a) - pi}
    limit = {"step": _welch([(2.0, masses["eta/2"]), (-1.0, masses["eta"])], pi),
             "half_step": _welch([(2.0, masses["eta/4"]), (-1.0, masses["eta/2 (half-step run)"])], pi)}
    return {"beta": b, "beta_eff": b * b, "gibbs": pi, "eta": eta, "grad_noise_sd": s,
            "chains": cfg["chains"], "horizon": cfg["horizon"], "burn_in": cfg["burn_in"],
            "runs": runs, "limit": limit, "convergence": {"eta": eta, "eta_half": eta / 2},
            "chain_steps": steps_used}


# ----------------------------------------------------------------------------------------- run
def _timed_anneal_run(cfg: dict[str, Any], dt: float, seed: int) -> tuple[dict[str, Any], float]:
    """:func:`_anneal_run` and the CPU seconds it took (in whichever process runs it)."""
    import time

    t0 = time.process_time()
    out = _anneal_run(cfg, dt, seed)
    return out, time.process_time() - t0


def _merge_schedules(step: dict[str, Any], half: dict[str, Any]) -> dict[str, Any]:
    """Per schedule, every verdict quantity as {"step": …, "half_step": …}."""
    schedules: dict[str, Any] = {}
    for name, e1 in step["schedules"].items():
        e2 = half["schedules"][name]
        log = name.startswith("log_c")
        schedules[name] = {
            "kind": "log" if log else "fast",
            "c_ratio": float(name.removeprefix("log_c")) if log else None,
            **{k: e1[k] for k in ("beta_T", "frozen_at", "gibbs", "gibbs_curve", "stretch_gibbs",
                                  "decay_gibbs") if k in e1},
            **{q: est.step_pair(e1[q], e2[q]) for q in ("occupancy", "curve", "excess", "follow",
                                                        "stretch", "decay", "hazard") if q in e1}}
    return schedules


def run_s0(
    *,
    a: float,
    chains: int,
    dt: float,
    horizon: float,
    K: float,
    c_ratios: Sequence[float],
    fast: bool,
    schedule: dict[str, Any],
    dynamics: str,
    check_dt: float,
    freeze_crossings: float,
    hazard_min_barrier: float,
    hazard_min_events: int,
    hazard_bins: int,
    angle_sd: float,
    bootstrap: int,
    curve_points: int,
    precision: str,
    scheme: str,
    ergodicity: dict[str, Any],
    arrhenius: dict[str, Any],
    sgd: dict[str, Any],
    workers: int,
    seed: int,
) -> dict[str, Any]:
    """The S0 experiment (module docstring), JSON-ready: annealing at dt and dt/2, ergodicity at
    dt and dt/2, SGD at η, η/2 and η/2, η/4. Keys are names (schedules, cases), not list positions,
    so that ``dvc metrics diff`` names every number."""
    import time

    import torch

    clock: dict[str, float] = {}
    tick = time.process_time()

    def lap(name: str) -> None:
        nonlocal tick
        now = time.process_time()
        clock[name] = now - tick
        tick = now

    dtype = {"float32": torch.float32, "float64": torch.float64}[precision]
    bar = double_well_barrier(a)
    num = double_well_barrier_numerical(a)
    cfg = {"a": a, "K": K, "horizon": horizon, "chains": chains, "c_ratios": list(c_ratios),
           "fast": fast, "schedule": dict(schedule), "dynamics": dynamics,
           "check_dt": check_dt, "freeze_crossings": freeze_crossings,
           "hazard_min_barrier": hazard_min_barrier, "hazard_min_events": hazard_min_events,
           "hazard_bins": hazard_bins, "angle_sd": angle_sd, "bootstrap": bootstrap,
           "curve_points": curve_points, "torch_dtype": dtype, "scheme": scheme}
    ss = np.random.SeedSequence(seed).generate_state(12)
    # The half-step annealing run is the largest part (twice the steps of the step run); with
    # two workers it runs in a second process while this one does everything else. Every part
    # has its own seed, so the results are the same with one worker or two.
    pool = None
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        half_future = pool.submit(_timed_anneal_run, cfg, dt / 2, int(ss[1]))
    step = _anneal_run(cfg, dt, int(ss[0]))
    lap("annealing_step")
    if pool is None:
        half, clock["annealing_half_step"] = _timed_anneal_run(cfg, dt / 2, int(ss[1]))
        tick = time.process_time()
    erg_cfg = {**ergodicity, "check_dt": check_dt}
    erg_step = _ergodicity(erg_cfg, a, dt, int(ss[2]), dtype, scheme)
    erg_half = _ergodicity(erg_cfg, a, dt / 2, int(ss[3]), dtype, scheme)
    lap("ergodicity")
    arr_cfg = {**arrhenius, "check_dt": check_dt}
    counts = np.random.default_rng(int(ss[4])).multinomial(
        arr_cfg["chains"], np.full(arr_cfg["chains"], 1.0 / arr_cfg["chains"]),
        size=bootstrap).astype(np.float64)
    arr = {k: _arrhenius(arr_cfg, a, h, int(ss[5 + i]), dtype, scheme, counts)
           for i, (k, h) in enumerate((("step", dt), ("half_step", dt / 2)))}
    lap("arrhenius")
    erg_cases = {}
    for name, c1 in erg_step["cases"].items():
        c2 = erg_half["cases"][name]
        erg_cases[name] = {k: c1[k] for k in ("dynamics", "beta", "beta_eff", "start", "gibbs",
                                               "gibbs_other_law")} | {
            q: est.step_pair(c1[q], c2[q]) for q in ("occupancy", "difference", "difference_other_law")}
    sgd_cfg = {**sgd, "check_dt": check_dt}
    sgd_out = _sgd(sgd_cfg, a, [int(x) for x in ss[8:12]], dtype)
    lap("sgd")
    if pool is not None:
        half, clock["annealing_half_step"] = half_future.result()  # CPU time of the worker
        pool.shutdown()
    schedules = _merge_schedules(step, half)
    kramers = kramers_prefactor(a)
    cost = {"annealing_step": step["chain_steps"], "annealing_half_step": half["chain_steps"],
            "ergodicity": erg_step["chain_steps"] + erg_half["chain_steps"],
            "arrhenius": arr["step"].pop("chain_steps") + arr["half_step"].pop("chain_steps"),
            "sgd": sgd_out.pop("chain_steps")}
    cost["total"] = sum(cost.values())
    cost["reference_chain_steps"] = REFERENCE_CHAIN_STEPS
    cost["ratio_to_reference"] = cost["total"] / REFERENCE_CHAIN_STEPS
    return {
        "a": a, "delta_e": bar.delta_e, "c_star": bar.c_star, "K": K, "chains": chains,
        "horizon": horizon, "dynamics": dynamics, "precision": precision, "scheme": scheme,
        "barrier": {"closed_form": {"delta_e": bar.delta_e, "theta_saddle": bar.theta_saddle,
                                    "c_star": bar.c_star},
                    "numerical": num},
        "kramers_prefactor": kramers,
        "convergence": {"dt": dt, "dt_half": dt / 2},
        "window_ends": step["window_ends"],
        "freeze": {"expected_crossings_after": freeze_crossings,
                   "bound": "Kramers rate out of the trap, summed over the held checks and chains"},
        "hazard_min_barrier": hazard_min_barrier,
        "schedules": schedules,
        "ergodicity": {k: v for k, v in erg_cfg.items() if k != "check_dt"} | {"cases": erg_cases},
        "arrhenius": {k: v for k, v in arr_cfg.items() if k != "check_dt"} | {
            "ratio": {k: arr[k]["ratio"] for k in arr},
            "rates": {k: arr[k]["rates"] for k in arr}},
        "sgd": sgd_out,
        "chain_steps": cost,
        # CPU seconds per part (process time, one thread): the machine is shared, so compare
        # them with a reference run in the same conditions, not across machines.
        "cpu_seconds": clock | {"total": sum(clock.values())},
    }
