"""The page's opening summary, generated from the verdicts (no sentence is written by hand, so it
cannot drift from the rows below it). Its rules, stated before the data:

- counts are kept apart by what a verdict rests on (:data:`~infonce_lab.report.verdicts.GROUPS`):
  empirical claims in this setting, mathematical and simulation checks, paper-scale claims; a row
  that is not a claim of the paper (``Evidence.CONTEXT``) and our self-checks are never counted;
- every primary case and every pooled estimate is stated with its sign, size and interval, and
  where its interval lies against each threshold of its rule (0, the smallest effect of interest);
- every counted claim whose deciding p-value sits near its threshold
  (:func:`~infonce_lab.report.verdicts.near_threshold`) is named (a primary or pooled one where it
  is stated; a claim decided on intervals alone has no p, and is never named);
- a contradiction is worded by what it contradicts: the theory, the paper's published experiment
  re-run, or (an empirical claim) the paper's claim carried into this study's setting; a claim
  about a limit (N → ∞, t → ∞) that fails at the largest size run is worded as not reached
  there, never as a contradiction of the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from infonce_lab.report.sections import Paper
from infonce_lab.report.verdicts import (
    GROUPS,
    Case,
    ClaimRow,
    Evidence,
    Outcome,
    near_threshold,
)

LISTED = 4  # contradicted claims named per kind before "and N more"
LISTED_REPRODUCED = 2
QUALIFIER_LIMIT = 240  # a qualifying self-check is stated whole: its point is the qualification

# How the summary words a claim our data do not reproduce, by what the verdict rests on.
CONTRADICTS = {
    Evidence.THEORY: "Contradicts the theory as stated",
    Evidence.EXPERIMENT: "The paper's published experiment, re-run, does not come out as stated",
    Evidence.SETTING: "Not reproduced in this study's setting (the paper's own setting is not run "
                      "here)",
    Evidence.PAPER_SCALE: "Contradicts the paper's published experiment at its scale",
}
NOT_REACHED = ("Not reached within the range simulated (a limit, which finite data cannot "
               "contradict: the rate or the distance at the largest size fails its rule)")


@dataclass(frozen=True)
class Stated:
    """One estimate as the summary states it."""

    claim: str
    case: str
    text: str  # sign, size, interval, unit
    direction: str  # where the interval lies against each threshold: "spans 0, below +1"
    verdict: str
    mde: float | None
    near: float | None


@dataclass(frozen=True)
class Near:
    claim: str
    p: float
    verdict: str


@dataclass(frozen=True)
class Finding:
    section: str
    paper: str
    short: str
    link: str
    groups: dict[str, dict[str, int]]  # group label → counts (n, reproduced, …), non-empty only
    primary: list[Stated]
    pooled: list[Stated]
    near: list[Near]
    contradicted: dict[str, list[str]]  # wording → short claims (at most LISTED each)
    more_contradicted: dict[str, int]  # wording → how many more were left out
    reproduced: list[str]
    more_reproduced: int
    context: list[tuple[str, str, str]]  # (claim, result, verdict): shown, not counted
    qualifiers: list[tuple[str, str, str]] = field(default_factory=list)  # our checks, likewise

    @property
    def n(self) -> int:
        return sum(g["n"] for g in self.groups.values())


def short(claim: str, limit: int = 90) -> str:
    """A claim's first clause (before its ' — ' qualification), cut at a word."""
    head = claim.split(" — ")[0].split(" (pre-registered")[0].strip()
    if len(head) <= limit:
        return head
    return head[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def counts(rows: Sequence[ClaimRow]) -> dict[str, int]:
    outcomes = [r.verdict.outcome for r in rows]
    return {"n": len(rows), **{o.name.lower(): outcomes.count(o) for o in Outcome
                               if o is not Outcome.NOT_TESTABLE}}  # never counted: see counted()


def counted(row: ClaimRow) -> bool:
    """A claim of the paper that this study can decide: not our self-check, not our context,
    not declared untestable here."""
    return (not row.self_check and row.evidence is not Evidence.CONTEXT
            and row.verdict.outcome is not Outcome.NOT_TESTABLE)


def deciding(row: ClaimRow) -> list[Case]:
    """The cases a row's verdict rests on: its pooled cases where it has them, else all."""
    pooled = [c for c in row.cases if c.pooled]
    return pooled or list(row.cases)


def where(low: float, high: float, bounds: Sequence[float]) -> str:
    """Where an interval lies against each threshold of its rule ("spans 0, below +1")."""
    def side(b: float) -> str:
        return "above" if low > b else "below" if high < b else "spans"
    return ", ".join(f"{side(b)} {b:+g}" if b else f"{side(b)} 0" for b in (bounds or (0.0,)))


def _stated(row: ClaimRow, case: Case) -> Stated | None:
    e = case.estimate
    if e is None or not e.defined:
        return None
    direction = where(e.low, e.high, case.bounds) if e.has_interval else "no interval"
    return Stated(short(row.claim), case.name, str(e), direction, str(case.verdict.outcome),
                  case.mde, near_threshold(case))


def finding(p: Paper, rows: Sequence[ClaimRow]) -> Finding | None:
    paper = p.id
    mine = [r for r in rows if r.section == paper and counted(r)]
    context_rows = [r for r in rows if r.section == paper and r.evidence is Evidence.CONTEXT
                    and not r.self_check]
    if not mine and not context_rows:
        return None
    groups = {label: counts(kept) for label, kinds in GROUPS.items()
              if (kept := [r for r in mine if r.evidence in kinds])}
    primary = [s for r in mine if r.primary for c in r.cases if (s := _stated(r, c))]
    pooled = [s for r in mine if not r.primary for c in r.cases if c.pooled
              if (s := _stated(r, c))]
    near = []
    for r in mine:
        if r.primary or any(c.pooled for c in r.cases):
            continue  # stated above with its p
        ps = [p_ for c in deciding(r) if (p_ := near_threshold(c)) is not None]
        if ps:
            near.append(Near(short(r.claim), min(ps), str(r.verdict.outcome)))
    contradicted: dict[str, list[str]] = {}
    more: dict[str, int] = {}
    for r in mine:
        if r.verdict.outcome is Outcome.NOT_REPRODUCED and r.evidence is not None:
            wording = NOT_REACHED if r.limit else CONTRADICTS[r.evidence]
            listed = contradicted.setdefault(wording, [])
            if len(listed) < LISTED:
                listed.append(short(r.claim))
            else:
                more[wording] = more.get(wording, 0) + 1
    good = [short(r.claim) for r in mine
            if r.verdict.outcome is Outcome.REPRODUCED and not r.primary]
    return Finding(paper, p.name, p.short, p.link, groups, primary, pooled, near, contradicted, more,
                   good[:LISTED_REPRODUCED], max(0, len(good) - LISTED_REPRODUCED),
                   [(short(r.claim), r.result, str(r.verdict)) for r in context_rows],
                   [(short(r.claim, QUALIFIER_LIMIT), r.result, str(r.verdict)) for r in rows
                    if r.section == paper and r.qualifies])


def findings(rows: Sequence[ClaimRow], papers: Sequence[Paper]) -> list[Finding]:
    """One :class:`Finding` per paper with claims, in page order."""
    return [f for p in papers if (f := finding(p, rows)) is not None]
