"""Temperature annealing (arXiv 2603.12552), §4: mini-batch SGD's own gradient noise as the SDE's
noise, on S1's landscape (``reports/sims/sgd_noise.json``, :mod:`infonce_lab.simulation.sgd_noise`).

One claim row, decided at the step and at half the step: at the slow log schedule where the
annealed SDE escapes the interleaved trap, does SGD — its minibatch gradient's noise the only
noise — escape too? Beside it the noiseless full-gradient control (gradient descent, which must
stay) and the SDE reference (which must escape); the minibatch noise measured at the trap is the
row's note and the section's table.
"""

from __future__ import annotations

import math
from typing import Any

from infonce_lab.report.plotting import Line, Panel, Ref, figure, trap_curve
from infonce_lab.report.sections import Section
from infonce_lab.report.verdicts import (
    Below,
    Case,
    Check,
    ClaimRow,
    Estimate,
    Evidence,
    Outcome,
    Verdict,
    claims,
    converged,
    inconclusive,
)

PAPER = "annealing"
TOPIC = "SGD's own noise (§4, on S1)"

# Fixed before the data. A trapped share below 0.1 at the horizon is "escapes" (S1's SDE at
# c/c* = ½ keeps none of 200 chains by t = 20); SGD "plays the SDE's noise" when, besides, it
# keeps at most 0.05 more of its chains than the SDE does (S1's TRAP_MARGIN).
ESCAPED = 0.1
MARGIN = 0.05
VARIANT_NAMES = {"sgd": "SGD (own noise)", "gd": "GD (no noise)", "sde": "SDE (injected)"}


def _est(d: dict[str, Any] | None) -> Estimate:
    return Estimate.from_dict(d)


def _sgd_escapes(x: dict[str, Any]) -> Verdict:
    """x: the file's ``p_trap_end`` ({variant: {resolution: Wilson estimate}}) and
    ``sgd_minus_sde`` ({resolution: Newcombe estimate})."""
    ends, diff = x["p_trap_end"], x["sgd_minus_sde"]
    res = ("step", "half_step")
    sde = [_est(ends["sde"][r]) for r in res]
    if not all(e.defined and e.has_interval and e.high < ESCAPED for e in sde):
        return inconclusive(f"the SDE reference does not escape (its P_trap(T) not below "
                            f"{ESCAPED:g} at both steps): no reference to play")
    verdict, _ = converged(_est(ends["sgd"]["step"]), _est(ends["sgd"]["half_step"]),
                           Below(ESCAPED))
    if verdict.outcome is not Outcome.REPRODUCED:
        return verdict
    gap = [Estimate.from_dict(diff[r], signed=True) for r in res]
    if not all(g.defined and g.has_interval and g.high < MARGIN for g in gap):
        return inconclusive(f"SGD escapes, but SGD − SDE is not below +{MARGIN:g} at both steps")
    gd = [_est(ends["gd"][r]) for r in res]
    if not all(e.defined and e.has_interval and e.low > ESCAPED for e in gd):
        return inconclusive("the noiseless control leaves the trap too: the escape is not the "
                            "noise's")
    return verdict


RULES: dict[str, Check] = {
    "sgd_plays_sde_noise": Check(
        f"P_trap(T) of SGD with only its own minibatch noise (Wilson 95%), at the step and at half "
        f"the step: reproduced when it lies below {ESCAPED:g} at both and SGD − SDE (Newcombe) "
        f"lies below +{MARGIN:g} at both; not reproduced when it lies above {ESCAPED:g} at both; "
        f"inconclusive otherwise, and whatever SGD does when the SDE reference does not escape "
        f"(its interval not below {ESCAPED:g}), and for a pass when the noiseless gradient-descent "
        f"control leaves the trap too (its interval not above {ESCAPED:g}); not converged when "
        f"the two steps disagree in verdict or beyond their intervals", _sgd_escapes),
}

CLAIMS = claims(PAPER, TOPIC, RULES, {
    "sgd_plays_sde_noise": (
        "§4: \"standard mini-batch SGD can be viewed as an approximation of this SDE, where the "
        "stochasticity of the mini-batch gradient serves as the implicit noise source\" — so at "
        "a schedule where the annealed SDE escapes the trap, SGD without injected noise escapes "
        "too",
        "P_trap(T = {T:g}) of {chains} chains from S1's interleaved trap under SGD on a minibatch "
        "of {batch} of the {terms} anchor terms (drawn without replacement, rescaled: unbiased), "
        "no injected noise, drift −ĝ/β (P2) at β = c·ln(t + K), c/c* = {c_ratio:g}, S1's step "
        "rule; the same chains with the full gradient and no noise (GD, the control) and with "
        "the injected noise √(2η/β)·ξ (the SDE, the reference)"),
})


def _fmt(d: dict[str, Any]) -> str:
    return f"{d['value']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"


def _note(s: dict[str, Any]) -> str:
    noise = s["trap_noise"]
    first, last = noise["by_beta"][0], noise["by_beta"][-1]
    spread = s.get("breathing_rms") or {}
    parts = [
        f"At the exact trap the full gradient vanishes (‖g‖ = {last['full_grad_norm']:.0e}) but "
        f"no anchor term's does: ‖∇ℓ_a‖ = {first['anchor_grad_norms'][0]:.2f} at β = "
        f"{first['beta']:.1f} and {last['anchor_grad_norms'][0]:.2f} at β(T) = "
        f"{last['beta']:.1f} (each anchor pushes its two tied negatives apart; the four terms "
        f"cancel in pairs). The noise of ĝ/β (batch {noise['batch']} of {noise['terms']}, "
        f"without replacement) has trace {last['trace']:.3f}, eigenvalues "
        + ", ".join(f"{v:.3f}" for v in last["eigenvalues"])
        + f" on the tangent space less the common rotation: rank {last['rank']}, on the pairs' "
        f"two breathing modes (the escape direction), none on their stiff relative rotation.",
        f"SGD's temperature is η·β·λ_max/2 = {first['temperature_ratio']:.3f} to "
        f"{last['temperature_ratio']:.3f} of the SDE's over the run; it would match at "
        f"η* = 2/(β·λ_max) = {first['eta_matching']:.3f} to {last['eta_matching']:.3f}, "
        f"{first['eta_matching'] / first['eta_stability']:.1f}× the step at which the drift at "
        f"the trap turns unstable (2/λ_max of the P2 Hessian).",
    ]
    if (st := spread.get("step")) and st.get("sgd") is not None:
        half = spread.get("half_step") or {}
        parts.append(
            f"In-well spread of θ_j − θ_i at T (RMS): SGD {st['sgd']:.4f} (predicted from the "
            f"noise {st['sgd_predicted']:.4f}); at half the step {half.get('sgd', math.nan):.4f} "
            f"({half.get('sgd_predicted', math.nan):.4f}) — its noise shrinks with η — against "
            f"the SDE's {st['sde_in_well_predicted']:.4f} in the same well.")
    parts.append("The paper conditions the approximation on η chosen against β and the noise "
                 "covariance; the step here is S1's, set by the SDE's discretisation.")
    return " ".join(parts)


def sgd_rows(s: dict[str, Any] | None) -> list[ClaimRow]:
    c = CLAIMS["sgd_plays_sde_noise"]
    if s is None:
        return [c.not_run("simulation.experiments: sgd_noise (`dvc repro simulate@sgd_noise`)")]
    c = c.formatted(T=s["horizon"], chains=s["chains"], batch=s["batch"], terms=s["terms"],
                    c_ratio=s["c_ratio"])
    ends = s["p_trap_end"]
    result = "; ".join(
        f"{VARIANT_NAMES[v]}: {_fmt(ends[v]['step'])} (half step {_fmt(ends[v]['half_step'])})"
        for v in ("sgd", "sde", "gd"))
    verdict = c.rule.decide(s)
    return [c.row([Case("—", result, verdict)], note=_note(s))]


def claim_rows(sims: dict[str, dict[str, Any]]) -> list[ClaimRow]:
    return sgd_rows(sims.get("sgd_noise"))


def context(sims: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """P_trap(t) per variant and step, and the minibatch noise at the trap, for the template."""
    s = sims.get("sgd_noise")
    if s is None:
        return None
    table = []
    for res, label in (("step", "step"), ("half_step", "half step")):
        for v, name in VARIANT_NAMES.items():
            curve = s["curves"][res][v]
            table.append({"variant": name, "run": label,
                          "p_trap": [f"{p:.3f}" for p in curve["p_trap"]]})
    return {"s": s, "times": s["curves"]["step"]["sgd"]["t"], "table": table,
            "noise": s["trap_noise"]["by_beta"], "batch": s["batch"], "terms": s["terms"]}


def sgd_trap_curves(s: dict[str, Any]) -> bytes:
    """P_trap(t) of SGD, GD and the SDE from the trap, at the step (solid, Wilson band) and at half
    the step (dashed), on a log time axis."""
    lines = []
    # GD first: where SGD keeps every chain too, its hollow markers stay visible over GD's line
    for i, v in ((1, "gd"), (0, "sgd"), (2, "sde")):
        t, p, lo, hi = trap_curve(s["curves"]["step"][v])
        marker = {"ms": 6, "mfc": "none"} if v == "sgd" else {"ms": 2.5}
        lines.append(Line(t, p, "o-", f"{VARIANT_NAMES[v]}, step", band=(lo, hi),
                          style={"color": f"C{i}", "lw": 1.3, **marker}))
        lines.append(Line(*trap_curve(s["curves"]["half_step"][v])[:2], "--",
                          f"{VARIANT_NAMES[v]}, half step", style={"color": f"C{i}", "lw": 1.0}))
    return figure([Panel(lines, [Ref(ESCAPED, f"the rule's bound {ESCAPED:g}")],
                         title=f"c/c* = {s['c_ratio']:g}, minibatch {s['batch']} of {s['terms']}",
                         x="time t", xscale="log", y="P_trap(t) (Wilson 95% band)",
                         ylim=(-0.02, 1.02), legend=7)], (5.2, 3.6))


SECTION = Section(
    id="sgd", paper="annealing", title="SGD's own gradient noise as the SDE's noise (§4)",
    evidence=Evidence.THEORY, reads=("sims.sgd_noise",), rules=RULES,
    rows=lambda i: claim_rows(dict(i.sims)), context=lambda i: context(dict(i.sims)),
    sim_figures={"sgd_noise": {"sim_sgd_noise": sgd_trap_curves}})
