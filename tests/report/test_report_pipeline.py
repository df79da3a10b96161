"""The pipeline claim: trained beats its own random init by more than the margin."""

from __future__ import annotations

from infonce_lab.evaluation.stats import t_mean
from infonce_lab.report.sections.pipeline import claim_rows
from infonce_lab.report.verdicts import Estimate, Outcome

FIXTURES = {"gain_over_random": (Estimate(15.0, 12.0, 18.0), Estimate(4.0, 2.0, 6.0))}


def _summary(gains: list[float]) -> dict:
    t = t_mean(gains)
    return {"g": {"gain_over_random_init": {"linear.test_acc": {"t": t.to_json()}}}}


def test_margin_is_the_params_margin():
    big = _summary([0.15, 0.16, 0.14, 0.155])
    assert claim_rows(big, 0.10)[0].verdict.outcome is Outcome.REPRODUCED
    assert claim_rows(big, 0.20)[0].verdict.outcome is Outcome.NOT_REPRODUCED
    assert "20 points" in claim_rows(big, 0.20)[0].claim
    assert claim_rows({}, 0.1)[0].verdict.outcome is Outcome.NOT_RUN
