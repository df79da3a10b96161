"""The page's opening summary: what the study found, per paper, generated from the verdicts (no
sentence is written by hand, so it cannot drift from the rows below it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infonce_lab.report.verdicts import ClaimRow, Outcome, Verdict

# (section id, paper, link): the sources the claims come from.
PAPERS: dict[str, tuple[str, str]] = {
    "weince": ("WEINCE (Weibull-corrected InfoNCE)", "https://arxiv.org/abs/2606.00262"),
    "annealing": ("Langevin temperature annealing", "https://arxiv.org/abs/2603.12552"),
    "geometry": ("Geometric mechanics of contrastive learning", "https://arxiv.org/abs/2601.19597"),
    "au": ("Alignment and uniformity (Wang & Isola 2020)", "https://arxiv.org/abs/2005.10242"),
    "pipeline": ("The pipeline's own check", ""),
}
LISTED = 4  # contradicted claims named before "and N more": the page says those plainly
LISTED_REPRODUCED = 2


@dataclass(frozen=True)
class Finding:
    section: str
    paper: str
    link: str
    counts: dict[str, int]
    n: int
    primary: list[tuple[str, Verdict]]  # (the pre-registered contrast, its verdict)
    contradicted: list[str]  # the claims our data do not reproduce, shortened
    reproduced: list[str]
    more_contradicted: int
    more_reproduced: int


def short(claim: str, limit: int = 90) -> str:
    """A claim's first clause (before its ' — ' qualification), cut at a word."""
    head = claim.split(" — ")[0].split(" (pre-registered")[0].strip()
    if len(head) <= limit:
        return head
    return head[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def findings(rows: Sequence[ClaimRow]) -> list[Finding]:
    """One :class:`Finding` per paper section with claims, in page order; self-checks apart."""
    out = []
    for sid, (paper, link) in PAPERS.items():
        mine = [r for r in rows if r.section == sid and not r.self_check]
        if not mine:
            continue
        outcomes = [r.verdict.outcome for r in mine]
        counts = {o.name.lower(): outcomes.count(o) for o in Outcome}
        rest = [r for r in mine if not r.primary]
        bad = [short(r.claim) for r in rest if r.verdict.outcome is Outcome.NOT_REPRODUCED]
        good = [short(r.claim) for r in rest if r.verdict.outcome is Outcome.REPRODUCED]
        out.append(Finding(
            sid, paper, link, counts, len(mine),
            [(short(r.claim), r.verdict) for r in mine if r.primary],
            bad[:LISTED], good[:LISTED_REPRODUCED], max(0, len(bad) - LISTED),
            max(0, len(good) - LISTED_REPRODUCED)))
    return out
