"""WEINCE's computational-overhead rows: both rules pass data that must pass them and fail data
that must fail them (FIXTURES, checked by tests/test_rules.py), abstain on a straddling range,
and the rows built from a real (tiny) measurement through the stage's own arithmetic decide as
the numbers say — both ways."""

from __future__ import annotations

from typing import Any

from infonce_lab.report.render import environment
from infonce_lab.report.sections import weince_cost as sec
from infonce_lab.report.verdicts import Outcome
from infonce_lab.train.step_cost import loss_overhead, loss_share, ratio


def _range(value: float, half: float) -> dict[str, float]:
    return {"value": value, "low": value - half, "high": value + half}


FIXTURES = {
    "loss_stage_share": (_range(0.002, 0.001), _range(0.03, 0.005)),
    "end_to_end_overhead": (_range(0.001, 0.0005), _range(0.02, 0.005)),
}


def test_each_rule_decides_both_ways_and_abstains_on_a_straddle():
    for rid, (good, bad) in FIXTURES.items():
        rule = sec.RULES[rid]
        assert rule.decide(good).outcome is Outcome.REPRODUCED
        assert rule.decide(bad).outcome is Outcome.NOT_REPRODUCED
    share = sec.RULES["loss_stage_share"]
    v = share.decide(_range(0.01, 0.002))
    assert v.outcome is Outcome.INCONCLUSIVE and "straddles 1.0%" in v.why
    # at the bound exactly: the claim is "below", so a range that starts there fails it
    assert share.decide({"value": 0.011, "low": 0.01, "high": 0.012}).outcome \
        is Outcome.NOT_REPRODUCED


def _result(step_ms: dict[str, list[float]], loss_ms: dict[str, list[float]]) -> dict[str, Any]:
    """The stage's file for these timings (pipeline/step_cost.py's arithmetic)."""
    return {
        "params": {"backbone": "resnet18", "image_size": 64, "channels": 3, "batch": 256,
                   "reference": "infonce", "treatment": "weince", "tau": 0.5, "steps": 3,
                   "loss_repeats": 5, "seed": 0},
        "architecture": {"kind": "resnet", "depth": 18, "stem": "auto", "head_dim": 64},
        "machine": "a test CPU", "threads": 2, "kinds": {"infonce": "info_nce", "weince": "weince"},
        "views": 512, "dim": 64, "step_ms": step_ms, "loss_ms": loss_ms,
        "share": {n: loss_share(step_ms[n], loss_ms[n]) for n in step_ms},
        "step_ratio": ratio(step_ms["weince"], step_ms["infonce"]),
        "loss_ratio": ratio(loss_ms["weince"], loss_ms["infonce"]),
        "overhead": loss_overhead(step_ms["infonce"], loss_ms["weince"], loss_ms["infonce"]),
    }


def test_rows_follow_the_timings_both_ways():
    step = {"infonce": [3000.0, 3100.0, 2950.0], "weince": [3010.0, 3090.0, 2990.0]}
    cheap = _result(step, {"infonce": [1.0, 1.1, 0.9, 1.0, 1.2],
                           "weince": [3.0, 3.3, 2.9, 3.1, 3.2]})
    rows = sec.claim_rows(cheap)
    assert [r.verdict.outcome for r in rows] == [Outcome.REPRODUCED, Outcome.REPRODUCED]
    assert "a test CPU" in rows[0].quantity and "0.10%" in rows[0].result
    assert "resnet18, ResNet-18 (standard stem), on 512 views" in rows[0].quantity
    # a tail fit costing a tenth of the step fails both claims
    dear = _result(step, {"infonce": [1.0, 1.1, 0.9, 1.0, 1.2],
                          "weince": [300.0, 310.0, 305.0, 290.0, 301.0]})
    rows = sec.claim_rows(dear)
    assert [r.verdict.outcome for r in rows] == [Outcome.NOT_REPRODUCED, Outcome.NOT_REPRODUCED]


def test_without_the_file_both_rows_say_how_to_run_it():
    rows = sec.claim_rows(None)
    assert len(rows) == 2
    assert all(r.verdict.outcome is Outcome.NOT_RUN and "step_cost" in r.verdict.why
               for r in rows)


def test_the_template_prints_the_measured_table():
    step = {"infonce": [3000.0, 3100.0, 2950.0], "weince": [3010.0, 3090.0, 2990.0]}
    s = _result(step, {"infonce": [1.0] * 5, "weince": [3.0] * 5})
    ctx = sec.context(s)
    html = environment().get_template("sections/cost.j2").render(cost=ctx, page="html")
    assert "3000" in html and "3.00" in html and "253.3" in html and "a test CPU" in html
