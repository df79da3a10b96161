"""Claims the default study cannot run: their rules still pass and fail as stated."""

from __future__ import annotations

from infonce_lab.report.sections.paper_scale import claim_rows
from infonce_lab.report.verdicts import Estimate, Outcome

FIXTURES = {
    "coco_gap_spread": (Estimate(0.2, 0.1, 0.3), Estimate(-0.2, -0.3, -0.1)),
    "coco_shuffle": (Estimate(0.01, -0.02, 0.03), Estimate(0.3, 0.2, 0.4)),
    "coco_corruption": (Estimate(0.2, 0.1, 0.3), Estimate(-0.2, -0.3, -0.1)),
    "negatives": (Estimate(0.2, 0.1, 0.3), Estimate(-0.2, -0.3, -0.1)),
    "stl10_au": (Estimate(83.0, 82.5, 83.6), Estimate(70.0, 68.0, 72.0)),
}


def test_every_row_is_not_run_and_says_what_it_takes():
    rows = claim_rows()
    assert all(r.verdict.outcome is Outcome.NOT_RUN and r.verdict.why for r in rows)
    assert {r.section for r in rows} == {"geometry", "au"}
