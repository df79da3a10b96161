"""The annealing paper's claims (2603.12552) that the S0 double well decides — reports/sims/s0.json.

S0 is U(θ) = −cos 2θ − a·cos θ on S¹: one trap (θ = π) with the escape cost ΔE = 2 − a + a²/8,
so c* = 1/ΔE is known exactly. The file holds every quantity at the step dt and at dt/2; each
case is decided at both and must agree (:func:`~infonce_lab.report.verdicts.converged`).

The quantities (see ``simulation/s0.py``), all with 95% intervals from a bootstrap over chains:

- φ — the share of the Gibbs trap mass's log-decline over the last decade (T/10 → T) that the
  trap occupancy P_trap follows. A population that tracks the annealed equilibrium (which → 0)
  has φ = 1, a frozen one φ = 0; the regimes c < c* and c > c* sit at these two ends.
- X = ln(P_trap(T)/π_β(T)(trap)) — the excess over the Gibbs mass at the final β.
- g = γ̂/(1 − c/c*) — the occupancy's measured stretching exponent over the last two decades
  relative to the paper's D.3(4) exponent (a stretched exponential has g = 1, a power law g = 0).
- The escape rate's slope against β at fixed β, relative to −ΔE, and the annealed escape hazard's
  log–log slope over the Kramers regime, relative to −c/c*.
- Ergodicity and SGD: time-averaged trap occupancies minus the Gibbs mass (t over chains).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from infonce_lab.report.plotting import Line, Panel, Ref, figure, interval, plt, trap_curve
from infonce_lab.report.sections import Section
from infonce_lab.report.verdicts import (
    Above,
    Below,
    Case,
    ClaimRow,
    Equivalent,
    Estimate,
    Evidence,
    Outcome,
    Rule,
    Verdict,
    all_cases,
    claims,
    converged,
    inconclusive,
    reproduced,
)

PAPER = "annealing"
TOPIC = "S0 annealing (double well on S¹)"

# φ: a population tracking its equilibrium follows the whole decline (φ = 1, which is also the
# limit at c = c*, where the occupancy settles to a fixed multiple of π); a frozen one none of it
# (φ = 0). The boundary is the midpoint between the two regimes' values, not a fitted number.
FOLLOW_MIDPOINT = 0.5
# X for c < c*: quasi-equilibrium lags π_β(t) by δ/π ≈ 2a·c/(A·(t+K)^{1−c/c*}) (linear response
# with Kramers' rates, A ≈ 1.18), under 0.05 at T = 10⁴ for c ≤ 0.75c*; at c = c* the excess stays
# at ln(A/(A − 2a·c*)) ≈ 0.8. A margin of ln 2 lies between: tracking must be within a factor 2.
TRACK_MARGIN = math.log(2.0)
# X for "traps": an occupancy more than ten times the Gibbs mass at β(T) — beyond the bounded
# excess (≈ 0.8) that even the critical log schedule keeps — is not tracking an equilibrium.
TRAP_EXCESS = math.log(10.0)
# ...and "risk getting trapped" is a share of runs one would meet: at least one in twenty chains
# trapped at T. Against a cold β(T) the excess alone passes on a single trapped chain of 400.
TRAP_SHARE = 0.05
# g: midpoint between a polynomial decay (0) and the bound's stretched exponential (1).
STRETCH_MIDPOINT = 0.5
# d̂ at c = c*: the bound C′(t+K)^(−d) holds for any d > 0, so "polynomial" is a decay whose
# exponent is above 0; one below 0.05 — under a tenth of the Gibbs trap mass's own exponent
# c*·(U_trap − U_global) ≈ 0.65 at a = 0.5, a 12% fall per decade — is no decay at any horizon
# a study runs, and fails it.
CRITICAL_MIN_DECAY = 0.05
# Hazard slope / (−c/c*) or /(−ΔE): beyond Kramers' asymptotics the exact escape rate (the
# generator's spectral gap, tests/simulation/test_sim_s0.py) bends the slope by ≈ 2% where β·ΔE ∈ [3, 6]
# and ≈ 1% beyond; ±15% is coarser than that and finer than the c/c* grid, whose neighbours at
# c ≥ c* differ by ≥ 33%.
HAZARD_MARGIN = 0.15
# Trap mass vs Gibbs (ergodicity, SGD limit): two percentage points — above the Euler–Maruyama
# bias of the stationary mass at the default steps (≤ 0.01 absolute, from the step kernel's
# invariant vector) and far below the gap between the P1 and P2 laws at the tested β (≈ 0.1), so
# the test tells the two stationary laws apart.
GIBBS_MARGIN = 0.02
# The numerical barrier (Brent root of U′, bounded minimisation) against 2 − a + a²/8: both are
# exact to round-off.
BARRIER_TOL = 1e-9

PHI = "φ (share of the Gibbs trap mass's log-decline over T/10 → T that P_trap follows)"
EXCESS = "X = ln(P_trap(T) / π_β(T)(trap))"
RULES: dict[str, Rule] = {
    "log_slow_converges": Above(FOLLOW_MIDPOINT, what=PHI),
    "log_fast_traps": Below(FOLLOW_MIDPOINT, what=PHI),
    "tracks_gibbs": Equivalent(TRACK_MARGIN, what=EXCESS),
    "fast_schedules_trap": Above(TRAP_EXCESS, what=EXCESS),
    "fast_schedules_share": Above(TRAP_SHARE, what="P_trap(T), the share of chains trapped"),
    "hazard_exponent": Equivalent(HAZARD_MARGIN, center=1.0,
                                  what="escape-hazard slope vs log(t+K), divided by −c/c*"),
    "finite_time_rate": Above(STRETCH_MIDPOINT, what="g = γ̂/(1 − c/c*), the occupancy's "
                              "stretching exponent over the last two decades relative to the bound's"),
    "critical_polynomial": Above(0.0, min_effect=CRITICAL_MIN_DECAY,
                                 what="d̂ = ln(P_trap(T/100)/P_trap(T)) / Δ ln(t+K) at c = c*"),
    "ergodic_gibbs": Equivalent(GIBBS_MARGIN, what="time-averaged trap occupancy − Gibbs trap mass "
                                "of the dynamics' stationary law"),
    "sgd_limit": Equivalent(GIBBS_MARGIN,
                            what="η → 0 (Richardson) SGD trap mass − Gibbs trap mass of exp(−β²U)"),
    "barrier_closed_form": Equivalent(BARRIER_TOL, what="numerical ΔE − closed form 2 − a + a²/8"),
}

# Each row appends the run's windows and steps to the quantity declared here.
CLAIMS = claims(PAPER, TOPIC, RULES, {
    "log_slow_converges": ("Log schedule β = c·ln(t+K), c ≤ c*: P(Z_t ∈ 𝒩(U*, ε)) → 1, i.e. the "
                           "trap occupancy → 0 (§3.2, D.3(2))", "φ over the last decade"),
    "tracks_gibbs": ("c ≤ c* is slow enough for the process to track its converging target "
                     "distribution, the quasi-stationary Gibbs law π_β(t) (App. B.2, part 2)",
                     "X over the last decade"),
    "log_fast_traps": ("liminf β(t)/ln t = c′ > c*: the process stays in a suboptimal basin with "
                       "positive probability, limsup P(Z_t ∉ 𝒩(U*, ε)) > 0 (§3.2, D.3(3))",
                       "φ over the last decade"),
    "fast_schedules_trap": ("Faster schedules (square-root, linear; also geometric and cosine-τ) "
                            "lack the guarantee and risk getting trapped in suboptimal states "
                            "(App. A.2 A6, §6; D.5)", "X at T"),
    "hazard_exponent": ("The escape rate out of the deepest basin is r(s) ≈ A·exp(−β(s)·ΔE_max) "
                        "= A·(s+K)^(−c/c*) (App. B.4, D.3(4))", "slope of the log escape rate"),
    "finite_time_rate": ("Finite-time rate: P(Z_t ∉ 𝒩(U*, ε)) ≤ exp(−C·(t+K)^(1−c/c*)) for "
                         "c < c* — stretched-exponential convergence (§3.3, D.3(4))",
                         "g from the occupancy's decay exponents over the last two decades"),
    "critical_polynomial": ("At the critical schedule c = c* the error decays polynomially, "
                            "P(Z_t ∉ 𝒩(U*, ε)) ≤ C′·(t+K)^(−d) (§3.3, D.3(4))",
                            "d̂, the occupancy's power-law exponent over the last two decades"),
    "ergodic_gibbs": ("At fixed β the SDE is ergodic with stationary law π_β ∝ exp(−β·L(Z, β)) "
                      "(§3.1, App. C.1, D.3(1))", "time average of 1[trap]"),
    "sgd_limit": ("The update Z_{k+1} = Π[Z_k − η∇̂L + √(2η/β)ξ] with a stochastic, unbiased "
                  "gradient approximates the SDE as η → 0 (§4, D.4)",
                  "2·m(η/2) − m(η) − π, m = time-averaged trap mass of the SGD recursion"),
    "barrier_closed_form": ("S0 barrier: ΔE = 2 − a + a²/8 out of the trap, c* = 1/ΔE (our "
                            "derivation, D.8 S0)", "ΔE from Brent's root of U′ and a bounded "
                            "minimisation, minus 2 − a + a²/8"),
}, self_checks=("barrier_closed_form",), limits=("log_slow_converges", "log_fast_traps"))

# A case decided at both steps: its name, the file's {"step": …, "half_step": …} estimate, and
# what else its result shows.
CaseSpec = tuple[str, dict[str, Any] | None, str]


def _converged_case(rule: Rule, name: str, pair: dict[str, Any] | None, extra: str = "",
                    digits: int = 2, signed: bool = False) -> Case:
    if pair is None:
        e = Estimate.missing("not in the results file")
        return Case(name, str(e), rule.decide(e))
    step, half = (Estimate.from_dict(pair.get(k), digits=digits, signed=signed)
                  for k in ("step", "half_step"))
    verdict, text = converged(step, half, rule)
    if not step.defined and not half.defined:  # nothing measured at either step: say why once
        verdict = inconclusive(f"undefined: {step.undefined or half.undefined}")
    return Case(name, text + (f"; {extra}" if extra else ""), verdict)


def _where_testable(verdicts: Sequence[Verdict]) -> Verdict:
    """A claim tested wherever the measurement resolves it: cases with no estimate at either
    step (``undefined``: no chain survives into the regime, no exit to count) are shown but set
    aside; every other case must hold, and at least two must be left."""
    tested = [v for v in verdicts if not (v.outcome is Outcome.INCONCLUSIVE
                                           and v.why.startswith("undefined"))]
    if len(tested) < 2:
        return inconclusive(f"testable in {len(tested)} of {len(verdicts)} cases")
    v = all_cases(tested)
    left = len(verdicts) - len(tested)
    if left and v.outcome is Outcome.REPRODUCED:
        return reproduced(f"in the {len(tested)} testable cases; {left} not testable")
    return v


def _log_name(entry: dict[str, Any]) -> str:
    return f"log, c/c* = {entry['c_ratio']:g}"


def _gibbs_text(entry: dict[str, Any], t: str) -> str:
    occ = Estimate.from_dict(entry["occupancy"]["step"].get(t), digits=3)
    return f"P_trap(T) = {occ}, π_β(T) = {entry['gibbs'][t]:.3g}"


def _hazard_case(e: dict[str, Any]) -> CaseSpec:
    h = e.get("hazard") or {}
    pair = {k: (h.get(k) or {}).get("ratio") for k in ("step", "half_step")} if h else None
    d = h.get("step") or {}
    return _log_name(e), pair, (f"slope {d['slope']:+.2f} (predicted {d['predicted_slope']:+.2f}), "
                                f"{d['events']} exits in {d['n_bins']} bins, t ≥ {d['t_min']:.3g}"
                                if "slope" in d else "")


def claim_rows(sims: dict[str, dict[str, Any]]) -> list[ClaimRow]:
    """The S0 rows, in the order the page lists them (the self-check last)."""
    s0 = sims.get("s0")
    if s0 is None:  # the quantities' windows and steps are the file's: none to show without it
        return [replace(c.not_run("add s0 to simulation.experiments and run simulate@s0"),
                        quantity="—") for c in CLAIMS.values()]
    ends = [float(e) for e in s0["window_ends"]]
    T = f"{ends[-1]:g}"
    log = [e for e in s0["schedules"].values() if e["kind"] == "log"]
    fast = {n: e for n, e in s0["schedules"].items() if e["kind"] == "fast"}
    decade = f" (T/10 → T = {ends[-2]:g} → {T})" if len(ends) > 1 else " (—)"
    at = f", at dt = {s0['convergence']['dt']:g} and dt/2 = {s0['convergence']['dt_half']:g}"
    rows: list[ClaimRow] = []

    def row(key: str, quantity: str, cases: Sequence[CaseSpec], digits: int = 2,
            signed: bool = False, **kw: Any) -> None:
        c = CLAIMS[key]
        rows.append(c.with_quantity(quantity).row(
            [_converged_case(c.rule, *case, digits=digits, signed=signed) for case in cases], **kw))

    def by_c(key: str, keep: Callable[[float], bool]) -> list[CaseSpec]:
        return [(_log_name(e), e.get(key), _gibbs_text(e, T)) for e in log if keep(e["c_ratio"])]

    row("log_slow_converges", decade + at, by_c("follow", lambda c: c <= 1.0),
        note="P_trap → 0 cannot be seen at finite T; what separates the regimes is whether the "
        "occupancy keeps falling with the equilibrium mass (φ → 1, which → 0 in closed form) or "
        "stops while it falls (φ → 0). The rule is the mirror of the c > c* one.")
    row("tracks_gibbs", f" (occupancy and Gibbs mass averaged over [T/10, T], T = {T}){at}",
        by_c("excess", lambda c: c < 1.0),
        note="c = c* is left out: there the occupancy settles to a fixed multiple of π (≈ 2.2 by "
        "linear response with Kramers' rates), falling with it but not equal to it.")
    row("log_fast_traps", decade + at, by_c("follow", lambda c: c > 1.0),
        note="A plateau is a population that no longer follows the equilibrium's decline; the "
        "c/c* = 0.25 data (φ ≈ 1) fail this rule and the c/c* = 1.5 data fail the c ≤ c* one.")
    trap, share = CLAIMS["fast_schedules_trap"], RULES["fast_schedules_share"]
    cases = [_converged_case(trap.rule, f"{n}: X", e.get("excess"), _gibbs_text(e, T) + (
        f"; held from t = {e['frozen_at']:g} (fewer than "
        f"{s0['freeze']['expected_crossings_after']:g} crossings expected after)"
        if e["frozen_at"] else "")) for n, e in fast.items()]
    cases += [_converged_case(share, f"{n}: P_trap(T)", {k: (e["occupancy"][k] or {}).get(T)
                                                        for k in ("step", "half_step")}, digits=3)
              for n, e in fast.items()]
    rows.append(replace(trap.with_quantity(f" = {T}, and P_trap(T){at}").row(
        cases, note="A fast schedule ends cold (β(T) = " + ", ".join(
            f"{n}: {e['beta_T']:.3g}" for n, e in fast.items()) + "), so its Gibbs trap mass is "
        "tiny; an occupancy above ten times it is frozen out of equilibrium. φ is not used: the "
        "capped and held schedules have a constant Gibbs mass over the last decade; the share "
        "of chains trapped is what makes it a risk."), rule=f"{trap.rule.text}; and {share.text}"))

    arr, cut = s0["arrhenius"], s0["hazard_min_barrier"]
    rates = arr["rates"]["step"]
    fixed_beta = ("fixed β ∈ {" + ", ".join(rates) + "}: d log r/dβ over −ΔE", arr["ratio"],
                  "rates " + ", ".join(
                      f"β = {b}: {r['rate']:.3g} (Kramers {r['kramers']:.3g}, {r['exits']} exits)"
                      if r["rate"] is not None else f"β = {b}: no exit" for b, r in rates.items()))
    row("hazard_exponent",
        f" — against β at fixed β (exits per time alive, {arr['chains']} chains per β), and "
        f"against log(t+K) under each log schedule where β(t)·ΔE ≥ {cut:g} — over its prediction "
        f"(−ΔE, −c/c*){at}", [fixed_beta, *map(_hazard_case, log)], combine=_where_testable,
        note="The hazard is that of first exits (chains that never left the trap). Kramers' law "
        "A·e^{−βΔE} is asymptotic in β·ΔE, so each annealed run is fitted only past β·ΔE = "
        f"{cut:g}; a schedule with no chain left there (c < c*: hot until every chain has "
        "escaped) or no exit after it (large c) is shown as undefined and set aside; every other "
        "case must hold.")

    row("finite_time_rate", at, [
        (_log_name(e), e.get("stretch"), "" if e.get("stretch_gibbs") is None
         else f"the Gibbs mass itself gives g = {e['stretch_gibbs']:.2f}")
        for e in log if e["c_ratio"] < 1.0],
        note="The rule decides the decay's shape, both ways: with C free no finite curve breaks "
        "the bound itself, so a failure contradicts the stretched-exponential rate, not a "
        "number. P_trap is at most P(Z_t ∉ 𝒩(U*, ε)) for every ε below the distance "
        f"{s0['barrier']['closed_form']['theta_saddle']:.3f} from θ = 0 to the trap basin, so the "
        "bound caps P_trap too. A bound exp(−C(t+K)^γ) forces the log-decline to accelerate by "
        "(t+K)^γ whatever C and any prefactor (g = 1), while the occupancy tracks the Gibbs trap "
        "mass (row above), which decays as (t+K)^(−c·(U_trap − U_global)) by Laplace's method — "
        "a power law (g ≈ 0). A power law cannot stay below a stretched exponential at large t. "
        "The stretched exponential describes survival (never having left the trap, −log S = ∫r); "
        "occupancy returns to the trap at the equilibrium rate.")

    critical = [e for e in log if e["c_ratio"] == 1.0]
    if critical and "decay" in critical[0]:
        e = critical[0]
        gib = e.get("decay_gibbs")
        row("critical_polynomial", f" (T/100 → T = {ends[-3]:g} → {T}){at}" if len(ends) > 2
            else at, [(_log_name(e), e["decay"], "" if gib is None else
                       f"the Gibbs trap mass's own exponent {gib:.2f}")],
            note="The bound is on P(Z_t ∉ 𝒩(U*, ε)), which caps P_trap for every ε below the "
            "distance to the trap basin; with C′ and d free, what the data can decide is whether "
            "the error decays as a power of t at all (d̂ > 0) or not at a visible rate.")
    else:
        rows.append(CLAIMS["critical_polynomial"].not_run(
            "list 1 in simulation.s0.c_ratios and re-run simulate@s0"))

    erg = s0["ergodicity"]
    row("ergodic_gibbs", f" over [{erg['burn_in']:g}, {erg['horizon']:g}] per chain "
        f"({erg['chains']} chains per case) minus the Gibbs mass{at}",
        [(f"{c['dynamics']}, β = {c['beta']:g}, from the {c['start']} well", c["difference"],
          f"Gibbs mass {c['gibbs']:.4f} (β_eff = {c['beta_eff']:g}); against the other law's "
          f"{c['gibbs_other_law']:.4f}: {c['difference_other_law']['step']['value']:+.3f}")
         for c in erg["cases"].values()], digits=3, signed=True,
        note="The paper's SDE (P1: drift −grad L, L = β·U) has stationary law exp(−β·L) = "
        "exp(−β²U); the normalised P2 (drift −grad(L/β)) has exp(−L) = exp(−βU). P1 at "
        f"β = {erg['p1_beta']:g} and P2 at β = {erg['p2_beta']:g} share one law; each case is "
        "also shown against the other dynamics' law at the same β, which it must miss.")

    sgd = s0["sgd"]
    errors = "; ".join(f"error at η = {r['eta']:g}: "
                       f"{Estimate.from_dict(r['error'], digits=3, signed=True)}"
                       for k, r in sgd["runs"].items() if "half-step" not in k)
    row("sgd_limit", f" (β = {sgd['beta']:g}, gradient error {sgd['grad_noise_sd']:g}·N(0, 1)), "
        f"at η = {sgd['convergence']['eta']:g} and η/2",
        [("Richardson limit η → 0", sgd["limit"], errors)], digits=3, signed=True,
        note="The update is the Euler–Maruyama step of P1 with an unbiased noisy gradient, so its "
        "law must reach exp(−β²U) as η → 0; the gradient noise adds η²β²s² of variance to the "
        "injected 2η/β per step, an O(η) heating the errors show.")

    bar = s0["barrier"]
    num, closed = bar["numerical"]["delta_e"], bar["closed_form"]["delta_e"]
    e = Estimate(num - closed, num - closed, num - closed, digits=12, signed=True)
    rows.append(CLAIMS["barrier_closed_form"].checked(
        [(f"a = {s0['a']:g}", e, f"numerical {num:.12f}, closed form {closed:.12f} ({e}); "
          f"c* = {s0['c_star']:.6f}")]))
    return rows


SCHEMES = {"lm": "Leimkuhler–Matthews", "em": "Euler–Maruyama"}


def context(sims: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Numbers for the section's narrative table (one row per schedule), the ergodicity and SGD
    tables, and the cost; None without the S0 file."""
    s0 = sims.get("s0")
    if s0 is None:
        return None

    def val(pair: dict[str, Any] | None, which: str) -> float | None:
        return None if pair is None else (pair.get(which) or {}).get("value")

    table = []
    for name, e in s0["schedules"].items():
        r = {"name": name, **{k: e[k] for k in ("c_ratio", "beta_T", "frozen_at", "gibbs")}}
        for which in ("step", "half_step"):
            r[which] = {"occupancy": {k: v.get("value") for k, v in e["occupancy"][which].items()},
                        **{k: val(e.get(k), which) for k in ("excess", "follow", "stretch")},
                        "hazard_ratio": val(e.get("hazard", {}).get(which), "ratio")}
        table.append(r)
    return {**{k: s0[k] for k in ("a", "delta_e", "c_star", "chains", "horizon", "K", "dynamics",
                                  "convergence", "window_ends", "freeze", "ergodicity", "sgd",
                                  "chain_steps")},
            "scheme": SCHEMES.get(s0.get("scheme"), s0.get("scheme")), "schedules": table,
            "seconds": s0.get("seconds")}


# ---------------------------------------------------------------------------- figures
STEPS = (("step", "C0"), ("half_step", "C1"))  # the run at dt (blue) and at dt/2 (orange)
BAND = (Ref((-GIBBS_MARGIN, GIBBS_MARGIN), style={"color": "#cccccc", "alpha": 0.4}),
        Ref(0.0, style={"lw": 0.8}))


def s0_annealing(s0: dict[str, Any]) -> bytes:
    """S0 under annealing: P_trap(t) per schedule (Wilson 95% band) at dt (solid) and dt/2
    (dashed), beside the Gibbs trap mass at β(t) (dotted): log schedules on log–log axes — a
    decay that follows the Gibbs mass is a straight line there — and the fast schedules."""
    scheds, conv = s0["schedules"], s0["convergence"]

    def lines(kind: str) -> list[Line]:
        chosen = {n: e for n, e in scheds.items() if e["kind"] == kind}
        out = []
        for i, (name, e) in enumerate(chosen.items()):
            colour = plt.get_cmap("viridis")(i / max(len(chosen) - 1, 1)) if kind == "log" else f"C{i}"
            t, p, lo, hi = trap_curve(e["curve"]["step"])
            out += [Line(t, p, "-", f"c/c* = {e['c_ratio']:g}" if kind == "log" else name,
                         band=(lo, hi), style={"color": colour, "lw": 1.2}),
                    Line(*trap_curve(e["curve"]["half_step"])[:2], "--",
                         style={"color": colour, "lw": 0.9}),
                    Line(t, e["gibbs_curve"][-len(t):], ":", style={"color": colour, "lw": 0.9})]
        return [*out, Line([], [], "k--", f"half step (dt = {conv['dt_half']:g})", style={"lw": 0.9}),
                Line([], [], "k:", "Gibbs trap mass at β(t)", style={"lw": 0.9})]

    return figure(
        [Panel(lines("log"), title=f"log schedules β = c·ln(t+K), c* = {s0['c_star']:.3f}",
               x="time t", y=f"P_trap(t) (Wilson 95% band, dt = {conv['dt']:g})", xscale="log",
               yscale="log", ylim=(1e-3, 1.05), legend_cols=2),
         Panel(lines("fast"), title="fast schedules (held once no crossing is expected)",
               x="time t", xscale="log", ylim=(-0.02, 1.02))],
        (12, 4.4), title=f"S0, {s0['chains']} chains per schedule, {s0['dynamics']} dynamics")


def s0_rates(s0: dict[str, Any]) -> bytes:
    """S0 escape rates: at fixed β against Kramers' A·e^{−βΔE}; and the regime statistics per
    log schedule — φ (share of the Gibbs mass's decline followed), the hazard slope over −c/c* —
    at dt and dt/2 with 95% intervals, against their rules' boundaries."""
    arr = s0["arrhenius"]["rates"]
    rates = []
    for which, marker in (("step", "o"), ("half_step", "s")):
        measured = {float(b): r["rate"] for b, r in arr[which].items() if r["rate"]}
        rates.append(Line(list(measured), list(measured.values()), marker,
                          f"measured ({which.replace('_', ' ')})", style={"mfc": "none"}))
    rates.append(Line([float(b) for b in arr["step"]], [r["kramers"] for r in arr["step"].values()],
                      "k:", "Kramers A·exp(−β·ΔE)"))
    logs = [e for e in s0["schedules"].values() if e["kind"] == "log"]
    ratios = [e["c_ratio"] for e in logs]

    def regime(key: str) -> list[Line]:
        def est(e: dict[str, Any], which: str) -> dict[str, Any] | None:
            x = (e.get(key) or {}).get(which)
            return (x or {}).get("ratio") if key == "hazard" else x
        return [Line([r * (1 + dx) for r in ratios], **interval([est(e, which) for e in logs]),
                     fmt="o", label=which.replace("_", " "), style={"color": colour, "ms": 4})
                for (which, colour), dx in zip(STEPS, (-0.03, 0.03), strict=True)]

    def ticks(ax: plt.Axes) -> None:
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
        ax.minorticks_off()

    critical = Ref(1.0, vertical=True, style={"color": "#999999", "ls": "-", "lw": 0.8})
    axis = {"x": "c/c*", "xscale": "log", "extra": ticks}
    return figure(
        [Panel(rates, x="β (fixed)", y="escape rate out of the trap", yscale="log"),
         Panel(regime("follow"), [Ref(FOLLOW_MIDPOINT, style={"lw": 0.8}), critical],
               title="φ: share of the Gibbs decline followed", **axis),
         Panel(regime("hazard"), [Ref((1 - HAZARD_MARGIN, 1 + HAZARD_MARGIN), style=BAND[0].style),
                                  Ref(1.0, style={"lw": 0.8}), critical],
               title="hazard slope / (−c/c*)", **axis)], (14, 4.0))


def s0_fixed_beta(s0: dict[str, Any]) -> bytes:
    """S0 at fixed β: time-averaged trap occupancy minus the Gibbs mass of each dynamics' law
    (both starts, dt and dt/2, with the ±margin band); and SGD's error against η with the
    Richardson limits at η → 0."""
    cases = list(s0["ergodicity"]["cases"].values())
    ergodicity = [Line([i + dx for i in range(len(cases))],
                       **interval([c["difference"][which] for c in cases]), fmt="o",
                       style={"color": colour, "ms": 4})
                  for (which, colour), dx in zip(STEPS, (-0.1, 0.1), strict=True)]

    def labels(ax: plt.Axes) -> None:
        ax.set_xticks(range(len(cases)), [f"{c['dynamics']} β={c['beta']:g}\nfrom {c['start']}"
                                          for c in cases], fontsize=7)

    sgd = s0["sgd"]
    runs = [(("half-step" in k), r) for k, r in sgd["runs"].items()]
    etas = sorted({r["eta"] for _, r in runs})
    lines = [Line([r["eta"] for h, r in runs if h == half], **interval([r["error"] for h, r in runs
                                                                         if h == half]),
                  fmt="o", style={"color": "C1" if half else "C0", "ms": 4}) for half in (False, True)]
    lines.append(Line(etas, [next(r for _, r in runs if r["eta"] == e)["predicted_error_gradient_noise"]
                             for e in etas], "k:", "gradient-noise heating alone"))
    lines += [Line([x], **interval([sgd["limit"][which]]), fmt="D", style={"color": colour, "ms": 5})
              for (which, colour), x in zip(STEPS, (-0.002, 0.002), strict=True)]
    return figure(
        [Panel(ergodicity, BAND, title="fixed-β ergodicity (blue: dt, orange: dt/2)",
               y="time average − Gibbs trap mass", extra=labels, grid="major"),
         Panel(lines, BAND, title=f"SGD with injected noise, β = {sgd['beta']:g}",
               x="η (diamonds at 0: Richardson limits)", grid="major",
               y="SGD trap mass − Gibbs mass of exp(−β²U)")], (12, 4.0))


# the simulate stage's experiment → {figure name: drawer}
SIM_FIGURES = {"s0": {"sim_s0_trap": s0_annealing, "sim_s0_hazard": s0_rates,
                      "sim_s0_fixed_beta": s0_fixed_beta}}


SECTION = Section(
    id="s0", paper="annealing", title="S0: a double well on the circle", evidence=Evidence.THEORY,
    reads=("sims.s0",), rules=RULES, rows=lambda i: claim_rows(dict(i.sims)),
    context=lambda i: context(dict(i.sims)), sim_figures=SIM_FIGURES)
