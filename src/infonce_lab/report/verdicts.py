"""The verdict contract: every claim row of the report is built from these pieces.

A row holds the paper's sentence (with its section or equation), the quantity measured, the
*rule* — stated with its tolerance or margin before any data is read, and printed on the page —,
the result with its interval, and the verdict: *reproduced*, *not reproduced*, *inconclusive
(why)*, *not run (what it takes)* or *not testable here (why)*. A rule always has a region that
fails it (tests feed each rule data that must fail and data that must pass). A claim whose
measurement here could decide it in neither direction is declared untestable with its claim,
before the data (:attr:`Claim.untestable`): its row shows the measurement and is never counted.

- An :class:`Estimate` is a number with its interval; with a :class:`TInference` behind it, it
  also gives one-sided p-values at any null value, so a family of cases can be Holm-adjusted.
  An estimate from a degenerate or boundary fit carries ``undefined`` (why) instead of a value.
- A :class:`Rule` is a hypothesis about the estimate with a passing and a failing region
  (:class:`Above`, :class:`Below`, :class:`Equivalent`, :class:`NonInferior`, :class:`InRange`).
  Each region is a one-sided test at level α/2 (for a two-sided 95% interval: the region is
  reached when the interval lies inside it), Holm-adjusted within the family when p-values exist.
- :func:`decide_family` decides every case of one claim (Holm within the family, both
  directions); :func:`all_cases` combines cases of a claim that must hold in every case.
- Simulations are decided at their step and at half the step (:func:`converged`): a disagreement
  beyond the intervals, or a different verdict, is *inconclusive (not converged)*.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from infonce_lab.evaluation.estimate import Estimate
from infonce_lab.evaluation.stats import holm

ALPHA = 0.05  # every rule: two-sided 95% intervals, one-sided tests at α/2 per direction


class Outcome(StrEnum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive"
    NOT_RUN = "not run"
    NOT_TESTABLE = "not testable here"


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    why: str = ""

    def __str__(self) -> str:
        if self.outcome in (Outcome.NOT_RUN, Outcome.NOT_TESTABLE):
            return f"{self.outcome}: {self.why}" if self.why else str(self.outcome)
        return f"{self.outcome} ({self.why})" if self.why else str(self.outcome)


def reproduced(why: str = "") -> Verdict:
    return Verdict(Outcome.REPRODUCED, why)


def not_reproduced(why: str = "") -> Verdict:
    return Verdict(Outcome.NOT_REPRODUCED, why)


def inconclusive(why: str) -> Verdict:
    return Verdict(Outcome.INCONCLUSIVE, why)


def not_run(what_it_takes: str) -> Verdict:
    return Verdict(Outcome.NOT_RUN, what_it_takes)


def not_testable(why: str) -> Verdict:
    return Verdict(Outcome.NOT_TESTABLE, why)


def fmt_p(p: float | None, floor: float | None = None) -> str:
    """A p-value; one at a bootstrap's floor 1/(B+1) is a bound, printed as one."""
    if p is None:
        return "—"
    if floor is not None and p <= floor * (1 + 1e-9):
        return f"≤ {floor:.3g} (bootstrap floor)"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


# ---------------------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class Region:
    """One side of a rule: the data show μ > θ (``above``) or μ < θ."""

    theta: float
    above: bool

    def reached_by_interval(self, e: Estimate) -> bool:
        return bool(e.low > self.theta) if self.above else bool(e.high < self.theta)

    def p(self, e: Estimate) -> float | None:
        return e.p_greater(self.theta) if self.above else e.p_less(self.theta)


def _shown(p: float | None, reached: bool) -> bool:
    """Whether the data show a direction: its (Holm-adjusted) p where there is one, else whether
    the interval reached its region."""
    return p < ALPHA / 2 if p is not None else reached


@dataclass(frozen=True)
class Rule:
    """A decision rule written before the data. ``passes``: regions that must *all* be reached to
    reproduce the claim; ``fails``: regions of which reaching *any* one fails it. ``text`` is
    what the page prints as the rule."""

    text: str
    passes: tuple[Region, ...]
    fails: tuple[Region, ...]
    inconclusive_why: str = "interval too wide to decide"

    def decide(self, e: Estimate, p_pass: float | None = None, p_fail: float | None = None
               ) -> Verdict:
        """The verdict on one estimate. ``p_pass``/``p_fail``: Holm-adjusted p-values of the
        two directions (from :func:`decide_family`); without them the interval decides."""
        if not e.defined:
            return inconclusive(f"undefined: {e.undefined}" if e.undefined else "no estimate")
        if not e.has_interval:
            return inconclusive("no interval")
        in_pass = all(r.reached_by_interval(e) for r in self.passes)
        in_fail = any(r.reached_by_interval(e) for r in self.fails)
        # The pass region is tested first: with a minimum effect δ (Above/Below) the regions
        # overlap, and an effect shown to exist but smaller than δ still has the claimed sign.
        if _shown(p_pass, in_pass):
            return reproduced()
        if _shown(p_fail, in_fail):
            return not_reproduced()
        # With Holm the adjusted p decides, not the unadjusted interval: say so where the
        # interval alone would have passed (or failed) the case.
        for p, reached, side in ((p_pass, in_pass, ""), (p_fail, in_fail, "against the claim ")):
            if p is not None and reached:
                return inconclusive(f"Holm-adjusted p = {fmt_p(p)} ≥ α/2 = {ALPHA / 2:g} "
                                    f"{side}within the family")
        return inconclusive(self.inconclusive_why)

    def p_pass(self, e: Estimate) -> float | None:
        """p of the pass direction: every pass region must be reached (intersection-union, so
        the largest p decides)."""
        ps = [r.p(e) for r in self.passes]
        return None if any(p is None for p in ps) else max(ps)  # type: ignore[type-var]

    def p_fail(self, e: Estimate) -> float | None:
        """p of the fail direction: any fail region suffices. The regions are disjoint (μ above
        one bound or below the other), so the smallest p decides, exactly as "the interval lies
        wholly outside" does."""
        ps = [r.p(e) for r in self.fails]
        return None if any(p is None for p in ps) else min(ps)  # type: ignore[type-var]


def fmt_num(x: float, unit: str = "") -> str:
    return f"{x:g}{(' ' + unit) if unit else ''}"


def Above(theta: float, *, min_effect: float | None = None, unit: str = "",
          what: str = "the estimate") -> Rule:
    """Claim μ > θ. Reproduced: the interval lies above θ. Not reproduced: it lies below θ, or —
    with ``min_effect`` δ — below θ + δ (the data exclude any effect of the claimed size)."""
    fail_at = theta + (min_effect or 0.0)
    text = f"{what}: reproduced when the 95% interval lies above {fmt_num(theta, unit)}"
    text += (f"; not reproduced when it lies below {fmt_num(fail_at, unit)} (every effect of "
             f"{fmt_num(min_effect, unit)} or more excluded) and not above "
             f"{fmt_num(theta, unit)}" if min_effect else
             f"; not reproduced when it lies below {fmt_num(theta, unit)}")
    return Rule(text, (Region(theta, True),), (Region(fail_at, False),))


def Below(theta: float, *, min_effect: float | None = None, unit: str = "",
          what: str = "the estimate") -> Rule:
    """Claim μ < θ (the mirror of :func:`Above`)."""
    fail_at = theta - (min_effect or 0.0)
    text = (f"{what}: reproduced when the 95% interval lies below {fmt_num(theta, unit)}; not "
            f"reproduced when it lies above {fmt_num(fail_at, unit)}"
            + (f" and not below {fmt_num(theta, unit)}" if min_effect else ""))
    return Rule(text, (Region(theta, False),), (Region(fail_at, True),))


def Equivalent(margin: float, *, center: float = 0.0, unit: str = "",
               what: str = "the difference") -> Rule:
    """A "no effect" / "they match" claim as an equivalence test (TOST): reproduced when the
    interval lies inside center ± margin, not reproduced when it lies wholly outside."""
    lo, hi = center - margin, center + margin
    text = (f"{what}: equivalence (TOST) — reproduced when the 95% interval lies inside "
            f"[{fmt_num(lo)}, {fmt_num(hi)}]{(' ' + unit) if unit else ''}; not reproduced when "
            f"it lies wholly outside")
    return Rule(text, (Region(lo, True), Region(hi, False)), (Region(hi, True), Region(lo, False)),
                "the interval straddles the margin")


def NonInferior(margin: float, *, unit: str = "", what: str = "the difference") -> Rule:
    """"Competitive": μ > −margin. Reproduced above −margin, not reproduced below it."""
    text = (f"{what}: non-inferiority — reproduced when the 95% interval lies above "
            f"−{fmt_num(margin, unit)}; not reproduced when it lies below −{fmt_num(margin, unit)}")
    return Rule(text, (Region(-margin, True),), (Region(-margin, False),),
                "the interval straddles the margin")


def InRange(low: float, high: float, *, unit: str = "", what: str = "the estimate") -> Rule:
    """A magnitude claim (the paper's range): reproduced when the interval lies inside
    [low, high], not reproduced when it misses the range altogether."""
    text = (f"{what}: reproduced when the 95% interval lies inside the paper's "
            f"[{fmt_num(low)}, {fmt_num(high)}]{(' ' + unit) if unit else ''}; not reproduced "
            f"when it misses that range")
    return Rule(text, (Region(low, True), Region(high, False)),
                (Region(high, True), Region(low, False)), "the interval overlaps the range")


@dataclass(frozen=True)
class Check:
    """A rule over an input that is not one estimate (a set of curves, counts, a table): the
    text the page prints, and the function that decides. Like a :class:`Rule` it must be able
    to fail: the rule tests feed it an input that must fail it."""

    text: str
    fn: Callable[[Any], Verdict]

    def decide(self, x: Any) -> Verdict:
        return self.fn(x)


# ----------------------------------------------------------------------------- cases and claims
@dataclass(frozen=True)
class Case:
    """One case of a claim (a configuration, a schedule, a σ_mis …). ``estimate`` and the
    one-sided p-values that decided it (Holm-adjusted where the family was) stay beside the
    printed text, so the summary and the figures read numbers, never the printed strings."""

    name: str
    result: str
    verdict: Verdict
    p: str = ""  # the test's p-values as printed (raw and Holm-adjusted)
    estimate: Estimate | None = None
    p_for: float | None = None  # for the claim (its passing region)
    p_against: float | None = None  # against it (its failing region)
    mde: float | None = None  # the effect 80% power detects at the rule's level, where known
    pooled: bool = False  # pooled over a claim's settings: the case its verdict rests on
    bounds: tuple[float, ...] = ()  # the rule's thresholds, for wording where the estimate lies


def decide_family(rule: Rule, estimates: Sequence[Estimate], names: Sequence[str],
                  results: Sequence[str] | None = None) -> list[Case]:
    """Decide every case of one claim under one rule, Holm-adjusting each direction's p-values
    within the family where every estimate has a t-inference (else the intervals decide)."""
    adjustable = all(e.t is not None for e in estimates if e.defined)
    p_pass = [rule.p_pass(e) if e.defined else None for e in estimates]
    p_fail = [rule.p_fail(e) if e.defined else None for e in estimates]
    adj_pass = holm(p_pass) if adjustable else [None] * len(estimates)
    adj_fail = holm(p_fail) if adjustable else [None] * len(estimates)
    holm_applies = adjustable and sum(e.defined for e in estimates) > 1
    cases = []
    for i, e in enumerate(estimates):
        verdict = rule.decide(e, adj_pass[i], adj_fail[i]) if adjustable else rule.decide(e)
        # Both one-sided p-values: a "not reproduced" is decided by the one against the claim.
        shown = []
        for side, raw_p, adj in (("for the claim", p_pass[i], adj_pass[i]),
                                 ("against it", p_fail[i], adj_fail[i])):
            if adjustable and raw_p is not None:
                holm_p = f" (Holm {fmt_p(adj)})" if holm_applies else ""
                shown.append(f"{side} {fmt_p(raw_p)}{holm_p}")
        p = f"one-sided p: {', '.join(shown)}" if shown else ""
        cases.append(Case(names[i], results[i] if results else str(e), verdict, p, e,
                          adj_pass[i] if holm_applies else p_pass[i],
                          adj_fail[i] if holm_applies else p_fail[i],
                          bounds=tuple(sorted({r.theta for r in (*rule.passes, *rule.fails)}))))
    return cases


def all_cases(verdicts: Sequence[Verdict]) -> Verdict:
    """A claim that must hold in every case: reproduced when all are; not reproduced when any case
    is (the claim as stated fails there); inconclusive otherwise, with the tally."""
    if not verdicts:
        return inconclusive("no cases")
    if len(verdicts) == 1:
        return verdicts[0]
    kinds = [v.outcome for v in verdicts]
    if all(k is Outcome.NOT_RUN for k in kinds):
        return verdicts[0]
    yes = kinds.count(Outcome.REPRODUCED)
    no = kinds.count(Outcome.NOT_REPRODUCED)
    if yes == len(kinds):
        return reproduced()
    if no:
        return not_reproduced(f"in {no} of {len(kinds)} cases")
    if len(set(verdicts)) == 1:
        return verdicts[0]
    return inconclusive(f"{yes} of {len(kinds)} reproduced, none contradicted")


def tally(cases: Sequence[Case]) -> str:
    kinds = [c.verdict.outcome for c in cases]
    yes, no = kinds.count(Outcome.REPRODUCED), kinds.count(Outcome.NOT_REPRODUCED)
    return (f"{yes} reproduced · {no} not · {len(kinds) - yes - no} inconclusive "
            f"({len(kinds)} cases)")


def converged(at_step: Estimate, at_half: Estimate, rule: Rule) -> tuple[Verdict, str]:
    """A simulation's verdict from its run at the step and at half the step (or twice the steps):
    both decided by ``rule``; they must agree in verdict and, beyond their combined 95%
    half-widths, in value — otherwise *inconclusive (not converged)*. Returns the verdict and
    the result text showing both runs."""
    text = f"step: {at_step}; half step: {at_half}"
    v1, v2 = rule.decide(at_step), rule.decide(at_half)
    if at_step.defined and at_half.defined and at_step.has_interval and at_half.has_interval:
        h1 = (at_step.high - at_step.low) / 2
        h2 = (at_half.high - at_half.low) / 2
        if abs(at_step.value - at_half.value) > math.hypot(h1, h2):
            return inconclusive("not converged: the half step moves the estimate beyond its "
                                "interval"), text
    if v1 != v2:
        return inconclusive(f"not converged: {v1} at the step, {v2} at half the step"), text
    return v1, text


class Evidence(StrEnum):
    """What a claim row's verdict rests on; the page counts each group apart (:data:`GROUPS`)
    and words a contradiction by it (:mod:`infonce_lab.report.findings`)."""

    SETTING = "setting"  # an empirical claim, decided on this study's encoders and data
    THEORY = "theory"  # a mathematical statement, checked exactly or by simulation
    EXPERIMENT = "experiment"  # the paper's own numerical experiment, re-run
    PAPER_SCALE = "paper_scale"  # needs the paper's datasets and compute: not run here
    CONTEXT = "context"  # not a claim of the paper (our control): shown, never counted


# The groups the page counts apart, in its order; CONTEXT rows are in none.
GROUPS: dict[str, tuple[Evidence, ...]] = {
    "empirical claims in this setting": (Evidence.SETTING,),
    "mathematical and simulation checks": (Evidence.THEORY, Evidence.EXPERIMENT),
    "paper-scale claims": (Evidence.PAPER_SCALE,),
}

# A case sits near its threshold when the one-sided p-value nearest to deciding it lies within a
# factor of 2 of α/2: [α/4, α). Stated before the data; the summary names every such case.
NEAR = (ALPHA / 4, ALPHA)


def deciding_p(case: Case) -> float | None:
    """The one-sided p-value that decides a case: for a reproduced one the p for the claim, for a
    not-reproduced one the p against it (the two regions of a rule with a minimum effect overlap,
    so the other p may be smaller), for an inconclusive one the smaller of the two; None for a
    case decided on an interval alone (no t-inference behind it)."""
    if case.verdict.outcome is Outcome.REPRODUCED:
        return case.p_for
    if case.verdict.outcome is Outcome.NOT_REPRODUCED:
        return case.p_against
    ps = [p for p in (case.p_for, case.p_against) if p is not None]
    return min(ps) if ps else None


def near_threshold(case: Case) -> float | None:
    """The deciding p-value (:func:`deciding_p`) of a case near its threshold (:data:`NEAR`)."""
    p = deciding_p(case)
    return p if p is not None and NEAR[0] <= p < NEAR[1] else None


@dataclass
class ClaimRow:
    """One claim of one paper (or one self-check), as the page shows it.

    ``section``: which part of the page (weince, annealing, geometry, au, pipeline); ``topic``:
    the experiment or table it belongs to; ``claim``: the paper's sentence with its section or
    equation; ``quantity``: what we measure; ``rule``: the rule as stated before the data;
    ``result``: the headline number(s) with interval; ``cases``: the per-case details.
    ``self_check``: a check of our own derivation, counted apart from the papers' claims.
    """

    section: str
    topic: str
    claim: str
    quantity: str
    rule: str
    result: str
    verdict: Verdict
    cases: list[Case] = field(default_factory=list)
    self_check: bool = False
    note: str = ""
    primary: bool = False  # a pre-registered primary comparison (the summary names it first)
    evidence: Evidence | None = None  # None: its section's default (sections.Section.evidence)
    qualifies: bool = False  # a self-check the summary states beside the paper's claims
    limit: bool = False  # a claim about N → ∞ or t → ∞, decided on a finite range

    @property
    def kind(self) -> str:  # templates: claims and self-checks render in separate blocks
        return "self_check" if self.self_check else "claim"


def claim(section: str, topic: str, claim_text: str, quantity: str, rule: Rule | str,
          cases: Sequence[Case], *, combine: Callable[[Sequence[Verdict]], Verdict] = all_cases,
          result: str | None = None, verdict: Verdict | None = None, self_check: bool = False,
          note: str = "") -> ClaimRow:
    """A claim row from its cases: one case is the row itself; several are tallied and combined
    (by default: must hold in every case). ``verdict``/``result`` override the combination
    (e.g. a pooled row decides a claim made across settings)."""
    rule_text = rule.text if isinstance(rule, Rule) else rule
    cases = list(cases)
    if verdict is None:
        verdict = combine([c.verdict for c in cases])
    if result is None:
        result = cases[0].result if len(cases) == 1 else tally(cases)
    shown = [] if len(cases) == 1 and result == cases[0].result else cases
    return ClaimRow(section, topic, claim_text, quantity, rule_text, result, verdict, shown,
                    self_check, note)


def not_run_row(section: str, topic: str, claim_text: str, quantity: str, rule: Rule | str,
                what_it_takes: str, evidence: Evidence | None = None,
                self_check: bool = False) -> ClaimRow:
    """``evidence``: PAPER_SCALE for a claim at the paper's settings; None for one this study
    could decide but did not run (its section's default). ``self_check``: a check of our own
    derivation stays one when it is not run."""
    row = claim(section, topic, claim_text, quantity, rule, [], result="—",
                verdict=not_run(what_it_takes), self_check=self_check)
    row.evidence = evidence
    return row


@dataclass(frozen=True)
class Claim:
    """A claim as registered before the data: its part of the page and topic, the paper's
    sentence (with its section or equation), the quantity we measure and the rule that decides
    it. A section module declares its claims once and builds every row, run or not, from them.
    ``self_check`` (a check of our own derivation) and ``evidence`` (PAPER_SCALE for a claim at
    the paper's settings) are declared here too, so a row keeps them whether it ran or not.
    ``untestable``: why this study's measurement cannot decide the claim either way, declared
    with it — every row it builds reads *not testable here*, whatever the data. ``qualifies``: a
    self-check that qualifies the paper's claims, so the summary states it (never counted).
    ``limit``: a claim about a limit (N → ∞, t → ∞) decided on a finite range through a rate or
    a distance at the largest size run — a failure there is not a contradiction of the limit."""

    section: str
    topic: str
    text: str
    quantity: str
    rule: Rule | Check
    self_check: bool = False
    evidence: Evidence | None = None
    untestable: str = ""
    qualifies: bool = False
    limit: bool = False

    def row(self, cases: Sequence[Case], **kw: Any) -> ClaimRow:
        """The row from its cases (:func:`claim`'s keywords: ``combine``, ``result``, …)."""
        kw.setdefault("self_check", self.self_check)
        if self.untestable:
            if "verdict" in kw:
                raise TypeError(f"{self.text[:40]!r} is declared untestable: no verdict to pass")
            kw["verdict"] = not_testable(self.untestable)
        row = claim(self.section, self.topic, self.text, self.quantity, self.rule.text, cases,
                    **kw)
        row.evidence, row.qualifies, row.limit = self.evidence, self.qualifies, self.limit
        return row

    def not_run(self, what_it_takes: str, **kw: Any) -> ClaimRow:
        """The row of a claim this run could not decide (:func:`not_run_row`'s keywords)."""
        kw.setdefault("self_check", self.self_check)
        kw.setdefault("evidence", self.evidence)
        row = not_run_row(self.section, self.topic, self.text, self.quantity, self.rule.text,
                          what_it_takes, **kw)
        row.qualifies, row.limit = self.qualifies, self.limit
        return row

    def family(self, estimates: Sequence[Estimate], names: Sequence[str], **kw: Any) -> ClaimRow:
        """Every case decided by the rule together (:func:`decide_family`, Holm)."""
        if not isinstance(self.rule, Rule):
            raise TypeError(f"{self.text[:40]!r}: a Check decides case by case, not as a family")
        return self.row(decide_family(self.rule, estimates, names), **kw)

    def checked(self, cases: Sequence[tuple[str, Any, str]], **kw: Any) -> ClaimRow:
        """Cases given as (name, the rule's input, the result shown), each decided alone."""
        return self.row([Case(name, result, self.rule.decide(x)) for name, x, result in cases],
                        **kw)

    def with_quantity(self, suffix: str) -> Claim:
        return replace(self, quantity=self.quantity + suffix)

    def formatted(self, **numbers: Any) -> Claim:
        """The claim with the run's numbers in the "{…}" fields of its quantity."""
        return replace(self, quantity=self.quantity.format(**numbers))


def claims(section: str, topic: str, rules: Mapping[str, Rule | Check],
           specs: Mapping[str, tuple[str, str]], self_checks: Sequence[str] = (),
           untestable: Mapping[str, str] | None = None,
           qualifying: Sequence[str] = (), limits: Sequence[str] = ()) -> dict[str, Claim]:
    """A topic's claims keyed by their rule's id: ``specs`` maps the id to (the paper's sentence,
    the quantity); an id without a rule is an error at import, not a row that silently lacks one.
    ``self_checks``: the ids that check our own derivation rather than a paper's claim;
    ``untestable``: id → why this study's measurement cannot decide it either way;
    ``qualifying``: the self-checks the summary states beside the paper's claims;
    ``limits``: the claims about a limit (N → ∞, t → ∞), decided on a finite range."""
    untestable = dict(untestable or {})
    if missing := [k for k in [*specs, *self_checks, *untestable, *qualifying, *limits]
                   if k not in rules]:
        raise KeyError(f"claims without a rule: {missing}")
    if stray := [k for k in qualifying if k not in self_checks]:
        raise ValueError(f"only a self-check qualifies the paper's claims: {stray}")
    return {k: Claim(section, topic, text, quantity, rules[k], self_check=k in self_checks,
                     untestable=untestable.get(k, ""), qualifies=k in qualifying,
                     limit=k in limits)
            for k, (text, quantity) in specs.items()}


def md_cell(text: Any) -> str:
    """A Markdown table cell: a literal "|" (as in |gap|) would split the cell."""
    return str(text).replace("|", "\\|")


_CSS = {Outcome.REPRODUCED: "verdict-reproduced", Outcome.NOT_REPRODUCED: "verdict-not",
        Outcome.INCONCLUSIVE: "verdict-inconclusive", Outcome.NOT_RUN: "verdict-notrun",
        Outcome.NOT_TESTABLE: "verdict-notrun"}


def verdict_class(verdict: Verdict) -> str:
    """CSS class of a verdict cell ("not run" is neither a success nor a failure)."""
    return _CSS[verdict.outcome]
