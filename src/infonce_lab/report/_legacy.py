"""LEGACY (being replaced by report/verdicts.py, the verdict contract; deleted once every section uses it). The verdict vocabulary every section of the report shares, and the rules that combine
verdicts: a claim is *reproduced*, *not reproduced*, *inconclusive (why)*, or *not run*."""

from __future__ import annotations

from typing import Any

Metric = dict[str, Any]  # mean_ci over seeds: {"mean", "std", "n", "ci95"}
Judgement = dict[str, str]  # {"ours": formatted numbers, "verdict": ...}

REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"


def inconclusive(why: str) -> str:
    return f"inconclusive ({why})"



def fmt_num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"



def overall_verdict(verdicts: list[str]) -> str:
    """A claim holds overall only when it holds in every configuration."""
    if verdicts and all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if verdicts and all(v == NOT_REPRODUCED for v in verdicts):
        return NOT_REPRODUCED
    yes = sum(v == REPRODUCED for v in verdicts)
    no = sum(v == NOT_REPRODUCED for v in verdicts)
    return inconclusive(f"{yes} of {len(verdicts)} reproduced, {no} not")



NOT_RUN = "not run"

def combined_verdict(verdicts: list[str]) -> str:
    """One verdict for a claim over its cases: a shared verdict (reasons included) stands as is,
    a mixture is inconclusive with the tally."""
    if verdicts and len(set(verdicts)) == 1:
        return verdicts[0]
    return overall_verdict(verdicts)



def md_cell(text: Any) -> str:
    """A Markdown table cell: a literal "|" (as in |gap|) would split the cell."""
    return str(text).replace("|", "\\|")


def verdict_class(verdict: str) -> str:
    """CSS class of a verdict cell ("not run" is neither a success nor a failure)."""
    if verdict == REPRODUCED:
        return "verdict-reproduced"
    if verdict.startswith(NOT_RUN):
        return "verdict-notrun"
    return "verdict-not" if verdict.startswith(NOT_REPRODUCED) else "verdict-inconclusive"

def fmt_ci(m: dict[str, Any] | None, digits: int = 3) -> str:
    if m is None:
        return "—"
    if m.get("ci95") is None:
        return f"{m['mean']:.{digits}f}"
    return f"{m['mean']:.{digits}f} ± {m['ci95']:.{digits}f}"


def fmt_p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"
