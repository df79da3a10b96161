"""An estimate survives summary.json: to_json → json → from_dict gives back the same estimate,
its t-inference (so the report's p-values at any null value) included."""

from __future__ import annotations

import json

import pytest

from infonce_lab.evaluation.estimate import Estimate
from infonce_lab.evaluation.stats import t_mean


@pytest.mark.parametrize("estimate", [
    Estimate.from_t(t_mean([0.1, 0.14, 0.09]), unit="nats", signed=True, note="3 seeds"),
    Estimate(0.2, 0.1, 0.35, n=1, note="one seed (3): image-cluster bootstrap"),
    Estimate.missing("seed 2: ξ̂ ≥ 0, no finite endpoint"),
    Estimate(0.9981, digits=4),
])
def test_round_trip_through_json(estimate: Estimate):
    back = Estimate.from_dict(json.loads(json.dumps(estimate.to_json(), allow_nan=False)))
    assert back == estimate and str(back) == str(estimate)
    if estimate.t is not None:
        assert back.p_greater(0.05) == pytest.approx(estimate.p_greater(0.05))


def test_a_missing_entry_says_why_and_formatting_can_be_overridden():
    assert Estimate.from_dict(None, why="re-run the aggregate stage").undefined == \
        "re-run the aggregate stage"
    e = Estimate.from_dict({"value": 1.5, "low": 1.0, "high": 2.0, "digits": 3}, digits=1)
    assert str(e) == "1.5 [1.0, 2.0]"
