"""WEINCE's link theory where no trained encoder is needed: Table 1 and the Plackett–Luce reading
of InfoNCE (§2.1–2.2), the large-K tail-weight law (Thm 2.4), coordinate mismatch (Prop. C.3) and
the noise floor (App. C.1, Fig. 5).

Inputs: ``reports/sims/link_theory.json`` (the simulate stage's ``link_theory`` experiment) and
``reports/tails/noise_floor.json`` (the ``noise_floor`` stage). Nothing is refitted here.

Every Monte-Carlo claim carries a control that must fail under the same rule (a wrong link, the
smallest K, an affine coordinate): a claim whose control passes too is *inconclusive*, since the
measurement could not have told the claim from its negation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from infonce_lab.report.plotting import Line, Panel, Ref, figure, interval, plt
from infonce_lab.report.sections import Section
from infonce_lab.report.verdicts import (
    Above,
    Below,
    Case,
    Check,
    Claim,
    ClaimRow,
    Equivalent,
    Estimate,
    Evidence,
    Outcome,
    Region,
    Rule,
    Verdict,
    claims,
    decide_family,
    inconclusive,
    not_reproduced,
    reproduced,
    tally,
)

PAPER = "weince"
TOPIC = "Link theory (synthetic)"

# Table 1 and Thm 2.4 claim an exact (or limiting) law; we measure the largest gap in cumulative
# win probability along the score order. 0.02 is the resolution we size the Monte Carlo for, not
# a tolerance for a wrong law: the default trials put the 95% DKW half-width at ≈ 0.008
# (Bonferroni over the sets), so an exact law's interval ends near 0.012 and clears 0.02 with
# room, while any law whose cumulative win probability is 2 points off somewhere is excluded.
MATCH_MARGIN = 0.02
# Prop. C.3: "no τ̃ undoes T" — the best τ̃ must leave a worst-set total-variation gap above
# 1 point of win probability: the size of effect a held-out link test on ~10⁴ winners resolves
# (binomial s.e. ≈ 0.005 per share). The affine control reaches ≈ 0 (the search's gap, 1e-4).
NO_TAU_TOL = 0.01
# Noise floor: "on its c/n line" — n·MSE/c within ±10%. An MLE's finite-n corrections are
# O(1/n) relative (a few per cent at n = 100 for four candidates), and 12,000 replicates resolve
# ≈ ±2.5% (squared errors: relative s.d. ≈ √2); ±10% is four times that resolution.
NF_MARGIN = 0.10
# "Stalls at its pseudo-true floor": at the largest n the softmax MSE within ±10% of
# (θ_pseudo·s_gap − truth)² — its variance part s_gap²·Var/n must have become small against the
# floor. Below the band the error has fallen through the floor (no floor: the claim fails); above
# it the largest n has not reached the floor yet (inconclusive, not a contradiction).
FLOOR_MARGIN = 0.10


def _with_controls(base: Rule, claims: Sequence[Estimate | Verdict],
                   controls: Sequence[Estimate]) -> Verdict:
    """Reproduced when every claimed case passes ``base`` and every control fails it; not
    reproduced when a claimed case fails; inconclusive when a control passes too (the test
    cannot tell the claim from a wrong answer) or a case reaches neither region. A claimed case
    may come already decided (a :class:`Verdict`, e.g. Holm-adjusted within its family)."""
    verdicts = [c if isinstance(c, Verdict) else base.decide(c) for c in claims]
    if not verdicts:
        return inconclusive("no cases")
    failed = sum(v.outcome is Outcome.NOT_REPRODUCED for v in verdicts)
    if failed:
        return not_reproduced(f"{failed} of {len(verdicts)} cases fail")
    unsure = [v for v in verdicts if v.outcome is not Outcome.REPRODUCED]
    if unsure:
        return inconclusive(unsure[0].why or "a case reaches neither region")
    if not controls:
        return inconclusive("no control")
    failing = [base.decide(e).outcome is Outcome.NOT_REPRODUCED for e in controls]
    if not all(failing):
        return inconclusive(f"{len(failing) - sum(failing)} of {len(failing)} controls pass too: "
                            "the test cannot tell the claim from a wrong answer")
    return reproduced()


LINK_MATCH = Below(MATCH_MARGIN, what="worst-set Kolmogorov distance of the winners' law from "
                                      "the link (cumulative win probability, score order)")
NO_TAU = Above(NO_TAU_TOL, what="min over τ̃ of the worst-set TV between softmax(T(s)/τ̃) and "
                                "softmax(s/τ)")
ON_C_OVER_N = Equivalent(NF_MARGIN, center=1.0,
                         what="n·MSE/c of the Weibit log-odds, at every n (Holm)")
AT_FLOOR = Rule(
    f"softmax MSE/floor at the largest n: 95% interval inside [{1 - FLOOR_MARGIN:g}, "
    f"{1 + FLOOR_MARGIN:g}] reproduces (stalled at the pseudo-true floor); below "
    f"{1 - FLOOR_MARGIN:g} does not (no floor); above or straddling the band is inconclusive "
    f"(not settled at the floor yet)",
    (Region(1 - FLOOR_MARGIN, True), Region(1 + FLOOR_MARGIN, False)),
    (Region(1 - FLOOR_MARGIN, False),),
    "not inside the floor band and not below it: not settled at the floor at the largest n")

RULES: dict[str, Rule | Check] = {
    "link_match": LINK_MATCH,
    "link_match_with_controls": Check(
        f"every claimed case: {LINK_MATCH.text}; and every control (a wrong link, or the "
        f"smallest K) must fail the same rule — a passing control makes it inconclusive",
        lambda x: _with_controls(LINK_MATCH, x[0], x[1])),
    "no_tau_undoes": NO_TAU,
    "no_tau_with_control": Check(
        f"every non-affine T: {NO_TAU.text}; and the affine control (undone by τ̃ = 2τ) must "
        f"fail it — if it passes too, inconclusive",
        lambda x: _with_controls(NO_TAU, x[0], x[1])),
    "weibit_on_c_over_n": ON_C_OVER_N,
    "weibit_with_control": Check(
        f"{ON_C_OVER_N.text}; and the softmax estimator's n·MSE/c at the largest n (a control "
        f"with a floor) must fail the same rule — if it passes too, inconclusive",
        lambda x: _with_controls(ON_C_OVER_N, x[0], x[1])),
    "softmax_at_floor": AT_FLOOR,
    "softmax_floor_with_control": Check(
        f"{AT_FLOOR.text}; and the Weibit estimator's MSE/floor at the largest n (a consistent "
        f"control) must fail the same rule — if it passes too, inconclusive",
        lambda x: _with_controls(AT_FLOOR, x[0], x[1])),
}

CONTROL_OK = "control: fails, as it must"


def _control_case(name: str, e: Estimate, base: Rule) -> Case:
    v = base.decide(e)
    if v.outcome is Outcome.NOT_REPRODUCED:
        v = not_reproduced(CONTROL_OK)
    elif v.outcome is Outcome.REPRODUCED:
        v = inconclusive("control passes: the test cannot tell this wrong answer apart")
    return Case(f"control: {name}", str(e), v)


def _controlled(c: Claim, base: Rule, cases: list[tuple[str, Estimate, bool]],
                result: str | None, note: str = "") -> ClaimRow:
    """A claim row from (name, estimate, is it a control) cases: each decided by ``base`` (a
    control as one that must fail it), the row by the claim's rule (:func:`_with_controls`);
    ``result`` None: the cases' tally."""
    return c.row([_control_case(n, e, base) if control else Case(n, str(e), base.decide(e))
                  for n, e, control in cases],
                 verdict=c.rule.decide(([e for _, e, k in cases if not k],
                                        [e for _, e, k in cases if k])),
                 result=result, note=note)


def _est(d: dict[str, Any] | None, digits: int = 3) -> Estimate:
    return Estimate.from_dict(d, digits=digits)


def _scaled(d: dict[str, Any] | None, factor: float) -> Estimate:
    """An estimate times a positive constant (its interval with it)."""
    e = _est(d)
    if not e.defined or not e.has_interval:
        return e
    return Estimate(e.value * factor, e.low * factor, e.high * factor, n=e.n)


# ----------------------------------------------------------------------------------- claims
def _claim(text: str, quantity: str, rule_id: str) -> Claim:
    return Claim(PAPER, TOPIC, text, quantity, RULES[rule_id])


# keyed by the block of link_theory.json that decides each (Table 1's rows: plackett_luce's)
LINK_CLAIMS = {
    "gumbel": _claim(
        "§2.1 (Eq. 2.3): InfoNCE's softmax is the top-1 law of additive Gumbel utilities "
        "(\"the softmax form is … tied to the Gumbel distributional choice [and] the "
        "additive-in-score structure in Equation 2.3\")",
        "U_j = s_j/τ + G_j, G i.i.d. Gumbel; winners against softmax(s/τ)",
        "link_match_with_controls"),
    "weibull": _claim(
        "Table 1, Weibull row (ξ < 0): with a common endpoint b and shortfall q(s), the top-1 "
        "law is q(s_j)^{−β}/Σ_k q(s_k)^{−β} — the bounded counterpart of the softmax",
        "X_j = 1 − (1 − s_j)·W_j, W i.i.d. Weibull(β); winners against (1 − s)^{−β}/Σ",
        "link_match_with_controls"),
    "frechet": _claim(
        "Table 1, Fréchet row (ξ > 0): a scaling model X_s = ρ(s)·Z has the top-1 law "
        "ρ(s_j)^α/Σ_k ρ(s_k)^α",
        "X_j = (1 + s_j)·Z_j, Z i.i.d. Fréchet(α); winners against (1 + s)^α/Σ",
        "link_match_with_controls"),
    "large_k": _claim(
        "Thm 2.4 (§2.2.3): \"for large candidate sets, the top-1 selection probabilities "
        "depend on P_{U|S} only through these tail probabilities\" F̄_{s_i}(b_n)",
        "worst-set distance of the winners' law from the tail-weight law at the largest K, for "
        "utilities outside Table 1's models (the smallest K as the control)",
        "link_match_with_controls"),
    "coordinate_mismatch": _claim(
        "Prop. C.3 (App. C.3): for any non-affine T \"there is no temperature τ > 0 such that "
        "the link p^(T,τ̃) can be represented as p^(T̃,τ) uniformly over all candidate sets\"",
        "min over τ̃ > 0 of the worst total variation over sampled candidate sets, T = −log(1 − s) "
        "and WEINCE's blends; certified bounds (the sampled sets make it a lower bound on the "
        "supremum over all sets)",
        "no_tau_with_control"),
}
# Table 1's controls as its rows name them ({e}: the wrong exponent's factor)
CONTROL_LABELS = {
    "gumbel": {"wrong_exponent": "1/τ × {e}", "rival_weibit": "the Weibit link (1 − s)^{{−1/τ}}"},
    "weibull": {"wrong_exponent": "β × {e}",
                "rival_softmax": "softmax with 1/τ = β (slope-matched)"},
    "frechet": {"wrong_exponent": "α × {e}",
                "rival_softmax": "softmax with 1/τ = α (slope-matched)"},
}
NOISE_SENTENCE = (
    "App. C.1 (Fig. 5): \"The correctly specified Weibit estimator has the expected O(1/n) "
    "error decay, while the misspecified one-parameter softmax estimator converges to its "
    "pseudo-true limit and retains a nonzero asymptotic error floor\"")
NOISE_CLAIMS = claims(PAPER, TOPIC, RULES, {
    "weibit_with_control": (NOISE_SENTENCE + " — the Weibit part",
                            "n·MSE/c of the Weibit log-odds"),
    "softmax_floor_with_control": (NOISE_SENTENCE + " — the softmax part",
                                   "softmax MSE/floor at the largest n")})


# ------------------------------------------------------------------------------ Table 1 rows
def _table1_row(lt: dict[str, Any], key: str) -> ClaimRow:
    block = lt["plackett_luce"][key]
    e = lt.get("params", {}).get("plackett_luce", {}).get("wrong_exponent", "?")
    match = _est(block["match"])
    controls = {k: _est(v) for k, v in block["controls"].items()}
    result = (f"own link: {match}; controls: "
              + ", ".join(f"{c.value:.3f}" if c.defined else "undefined"
                          for c in controls.values()))
    return _controlled(
        LINK_CLAIMS[key], LINK_MATCH,
        [("the model's own link", match, False)]
        + [(CONTROL_LABELS[key].get(k, k).format(e=e), c, True) for k, c in controls.items()],
        result, note=f"top candidate's share under the link: {block['top_share']:.2f} "
                     "(mean over sets); accuracy set by the trials per set")


# ---------------------------------------------------------------------------------- Thm 2.4
def _large_k_row(lt: dict[str, Any]) -> ClaimRow:
    lk = lt["large_k"]
    labels = {"weibull_domain": "uniform shortfall → Weibit (β = 1)",
              "gumbel_domain": "exponential noise → softmax"}
    cases: list[tuple[str, Estimate, bool]] = []
    trend = []
    for key, block in lk.items():
        label, d = labels.get(key, key), block["distance"]
        ks = sorted(int(k) for k in d)
        cases += [(f"{label}, K = {ks[-1]}", _est(d[str(ks[-1])]), False),
                  (f"{label}, K = {ks[0]}", _est(d[str(ks[0])]), True)]
        values = {k: d[str(k)]["value"] for k in ks}
        peak = max(values, key=lambda k: values[k])
        trend.append(f"{label}: " + ", ".join(
            f"K = {k}: {v:.3f}" for k, v in values.items()) + f" (largest at K = {peak})")
    return _controlled(
        LINK_CLAIMS["large_k"], LINK_MATCH, cases,
        "; ".join(str(e) for _, e, control in cases if not control) + " at the largest K",
        note="distance over K — " + "; ".join(trend))


# --------------------------------------------------------------------------------- Prop. C.3
def _coordinate_label(c: dict[str, Any]) -> str:
    name = {"weibit": "T = −log(1 − s)", "affine": "affine T = 2s + 0.3",
            "blend": f"WEINCE blend λ = {c.get('lambda')}"}.get(c["coordinate"], c["coordinate"])
    return f"{name}, τ = {c['tau']:g}"


def _mismatch_row(lt: dict[str, Any]) -> ClaimRow:
    cm = lt["coordinate_mismatch"]
    cases = []
    for key in sorted(cm, key=lambda k: (cm[k]["control"], k)):
        c = cm[key]
        tt = c.get("tau_tilde")
        cases.append((_coordinate_label(c) + (f" (best τ̃ = {tt:.3g})" if tt else ""),
                      _est(c["min_worst_tv"], digits=4), bool(c["control"])))
    smallest = min((e for _, e, control in cases if not control and e.defined),
                   key=lambda e: e.value, default=None)
    return _controlled(
        LINK_CLAIMS["coordinate_mismatch"], NO_TAU, cases,
        f"smallest over the non-affine cases: {smallest}" if smallest else None,
        note="an affine T = 2s + 0.3 is undone by τ̃ = 2τ: the control's bound reaches ≈ 0")


# ------------------------------------------------------------------------------ noise floor
def _noise_rows(nf: dict[str, Any] | None) -> list[ClaimRow]:
    est = (nf or {}).get("estimates")
    if not est:
        why = ("the noise_floor stage (`dvc repro noise_floor`, ≈ 2 s)" if nf is None else
               "the noise-floor file predates its intervals: re-run `dvc repro noise_floor`")
        return [c.not_run(why) for c in NOISE_CLAIMS.values()]
    ns = sorted(int(n) for n in est["weibit_n_mse_over_c"])
    top = str(ns[-1])
    w = [_est(est["weibit_n_mse_over_c"][str(n)]) for n in ns]
    s_all = est["softmax_mse_over_floor"]
    s = _est(s_all[top])
    # the controls: each estimator's MSE in the other's theory units at the largest n (an exact
    # rescaling of the MSE estimate, interval included)
    soft_on_line = _scaled(est["mse_softmax"][top], ns[-1] / nf["c"])
    weibit_at_floor = _scaled(est["mse_weibit"][top], 1.0 / nf["softmax_floor"])
    cases = decide_family(ON_C_OVER_N, w, [f"n = {n}" for n in ns])
    cases.append(_control_case(f"softmax estimator, n = {top}", soft_on_line, ON_C_OVER_N))
    on_line = NOISE_CLAIMS["weibit_with_control"].with_quantity(
        f" (c = {nf['c']:.3g} = x_gap²/Var(x), the inverse Fisher information times the squared "
        "gap), mean over replicates")
    weibit = on_line.row(
        cases, verdict=on_line.rule.decide(([c.verdict for c in cases[:-1]], [soft_on_line])),
        result=f"n = {top}: {w[-1]}; {tally(cases[:-1])}")
    trend = ", ".join(f"{s_all[str(n)]['value']:.2f}" if s_all[str(n)].get("value") is not None
                      else "undefined" for n in ns)
    mse_s, mse_w = _est(est["mse_softmax"][top]), _est(est["mse_weibit"][top])
    ratio = (f"; softmax/Weibit MSE at n = {top}: {mse_s.value / mse_w.value:.0f}×"
             if mse_s.defined and mse_w.defined and mse_w.value > 0 else "")
    softmax = _controlled(
        NOISE_CLAIMS["softmax_floor_with_control"].with_quantity(
            f", floor = (θ_pseudo·s_gap − truth)² = {nf['softmax_floor']:.4g} (θ_pseudo solves "
            "E_θ[s] = E_p*[s])"), AT_FLOOR,
        [(f"n = {top}", s, False), (f"Weibit estimator, n = {top}", weibit_at_floor, True)],
        str(s), note=f"MSE/floor over n = {ns[0]}…{ns[-1]}: {trend}{ratio}")
    return [weibit, softmax]


# ------------------------------------------------------------------------------------- rows
def claim_rows(link_theory: dict[str, Any] | None, noise_floor: dict[str, Any] | None
               ) -> list[ClaimRow]:
    """The section's rows from ``reports/sims/link_theory.json`` and
    ``reports/tails/noise_floor.json`` (either may be None: its claims read *not run*)."""
    if link_theory is None:
        rows = [c.not_run("the simulate stage's link_theory experiment (list it in "
                          "simulation.experiments; `dvc repro simulate@link_theory`, ≈ 3 s)")
                for c in LINK_CLAIMS.values()]
    else:
        rows = [_table1_row(link_theory, key) for key in CONTROL_LABELS]
        rows += [_large_k_row(link_theory), _mismatch_row(link_theory)]
    return rows + _noise_rows(noise_floor)


def context(link_theory: dict[str, Any] | None, noise_floor: dict[str, Any] | None
            ) -> dict[str, Any]:
    """Numbers for the section's tables: Table 1 (matched and control distances), the Prop. C.3
    bounds with the best τ̃, and the noise floor's theory constants."""
    out: dict[str, Any] = {"table1": [], "mismatch": [], "noise": None}
    if link_theory is not None:
        for key, block in link_theory["plackett_luce"].items():
            out["table1"].append({"model": key, "match": str(_est(block["match"])),
                                  **{k: str(_est(v)) for k, v in block["controls"].items()}})
        for key, c in link_theory["coordinate_mismatch"].items():
            out["mismatch"].append({"case": key, "control": c["control"],
                                    "min_worst_tv": str(_est(c["min_worst_tv"], digits=4)),
                                    "tau_tilde": c.get("tau_tilde"),
                                    "mean_tv_at_best": c.get("mean_tv_at_best")})
    if noise_floor is not None:
        out["noise"] = {k: noise_floor.get(k) for k in ("truth", "theta_pseudo", "softmax_floor",
                                                        "c", "params")}
    return out


# ---------------------------------------------------------------------------- figures
def link_theory_panels(lt: dict[str, Any], margin: float = MATCH_MARGIN) -> bytes:
    """WEINCE link theory: (a) Table 1 — each index model's winners against its own link and the
    controls; (b) Thm 2.4 — distance from the tail-weight law against K; (c) Prop. C.3 — the
    worst-set TV against τ̃/τ (an affine T touches 0, the others bottom out above it)."""
    pl = lt["plackett_luce"]
    names = list(pl)

    def bars(ax: plt.Axes) -> None:  # grouped bars on a log axis: values floored at 1e-4
        series = [("match", "own link", "C0")] + [
            (k, k.replace("_", " "), f"C{i + 1}") for i, k in enumerate(
                dict.fromkeys(c for b in pl.values() for c in b["controls"]))]
        width = 0.8 / len(series)
        for j, (key, label, color) in enumerate(series):
            found = [(i, e) for i, n in enumerate(names)
                     if (e := pl[n]["match"] if key == "match" else pl[n]["controls"].get(key))
                     and e.get("value") is not None]
            if found:
                ys = [max(e["value"], 1e-4) for _, e in found]
                err = [[y - max(e["low"], 1e-4) for y, (_, e) in zip(ys, found, strict=True)],
                       [e["high"] - y for y, (_, e) in zip(ys, found, strict=True)]]
                ax.bar([i + (j - (len(series) - 1) / 2) * width for i, _ in found], ys, width,
                       yerr=err, color=color, label=label, capsize=2)
        ax.set_xticks(range(len(names)), names)
        ax.legend(fontsize=6, ncol=2, loc="lower right")
        ax.grid(alpha=0.3, axis="y")

    large_k = [Line(ks := sorted(int(k) for k in b["distance"]),
                    **interval([b["distance"][str(k)] for k in ks]), fmt="o-",
                    label=name.replace("_", " "), style={"ms": 4, "color": f"C{i}"})
               for i, (name, b) in enumerate(lt["large_k"].items())]
    mismatch = []
    for i, (key, c) in enumerate((k, c) for k, c in lt["coordinate_mismatch"].items()
                                 if c.get("curve")):
        mismatch.append(Line(c["curve"]["tau_tilde_over_tau"], c["curve"]["worst_tv"],
                             "--" if c["control"] else "-", key, style={"lw": 1.2, "color": f"C{i}"}))
        if c.get("tau_tilde"):  # the certified minimum, which the coarse curve may straddle
            mismatch.append(Line([c["tau_tilde"] / c["tau"]], [c["min_worst_tv"]["value"]], "o",
                                 style={"ms": 4, "color": f"C{i}"}))
    margin_line = Ref(margin, f"margin {margin:g}", style={"ls": "--"})
    return figure(
        [Panel(refs=[margin_line], title="(a) Table 1: winners vs closed-form link", grid=None,
               y="worst-set Kolmogorov distance", yscale="log", title_size=9, legend=None,
               extra=bars),
         Panel(large_k, [margin_line], title="(b) Thm 2.4: large K → tail weights",
               x="candidates K", y="distance from the tail-weight law", xscale="log2",
               title_size=9),
         Panel(mismatch, title="(c) Prop. C.3: no τ̃ undoes a non-affine T", x="τ̃ / τ",
               y="worst-set TV to softmax(s/τ)", xscale="log", ylim=(0, None), title_size=9,
               legend=6, legend_cols=2)], (13.5, 3.9))


# the simulate stage's experiment → {figure name: drawer}
SIM_FIGURES = {"link_theory": {"sim_link_theory": link_theory_panels}}


SECTION = Section(
    id="theory", paper="weince", title="Link theory", evidence=Evidence.THEORY,
    reads=("sims.link_theory", "noise floor"), rules=RULES,
    rows=lambda i: claim_rows(i.sims.get("link_theory"), i.noise),
    context=lambda i: context(i.sims.get("link_theory"), i.noise), sim_figures=SIM_FIGURES)
