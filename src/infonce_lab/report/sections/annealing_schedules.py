"""The schedules as the training study used them: τ(t) of each schedule over the study's steps,
and every pair of schedules compared on one loss (paired over seeds, Holm over the table). The
annealing paper makes no claim about downstream accuracy, so the section has no rules and no rows:
it is context beside the paper's claims."""

from __future__ import annotations

from typing import Any

from infonce_lab.report.paired import comparisons
from infonce_lab.report.render import EXPLORED_METRICS, with_holm
from infonce_lab.report.sections import Section
from infonce_lab.report.sections.pipeline import temperature_curves
from infonce_lab.report.verdicts import ClaimRow, Evidence

RULES: dict[str, Any] = {}


def claim_rows() -> list[ClaimRow]:
    return []


def schedule_comparisons(schedules: set[str], paired: dict[str, Any]) -> list[dict[str, Any]]:
    """The paired comparisons between two schedules on one loss (the headline metrics)."""
    return with_holm([{"name": f"{c.setting}: {c.a} − {c.b} ({c.shared})", "metric": c.metric,
                       **c.pair}
                      for c in comparisons(paired)
                      if {c.a, c.b} <= schedules and c.metric in EXPLORED_METRICS])


SECTION = Section(
    id="schedules", paper="annealing", title="Schedules in the training study",
    evidence=Evidence.SETTING, reads=("summary.paired", "curves"), rules=RULES,
    rows=lambda i: claim_rows(),
    context=lambda i: schedule_comparisons(set(i.settings["schedules"]), dict(i.paired)),
    figures=lambda i: {"temperature": temperature_curves(
        {k: dict(v) for k, v in i.curves.items()})})
