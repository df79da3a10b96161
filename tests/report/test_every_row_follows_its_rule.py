"""Every row of the committed study follows its rule both ways: with every rule forced to fail,
every row that has data reads *not reproduced*; forced to pass, *reproduced* — unless a case's
simulation is not converged (its step and half step disagree beyond their intervals), which no
rule can overrule. A row whose code rewrote a verdict after its rule, or decided without one,
would break this."""

from __future__ import annotations

from pathlib import Path

import pytest

from infonce_lab.params.load import load_params
from infonce_lab.pipeline.report import read_inputs
from infonce_lab.report import verdicts as v
from infonce_lab.report.sections import declared

ROOT = Path(__file__).resolve().parents[2]
UNDECIDED = (v.Outcome.NOT_RUN, v.Outcome.NOT_TESTABLE)


@pytest.fixture(scope="module")
def inputs():
    return read_inputs(load_params(ROOT / "params.yaml"), ROOT / "reports")


def _rows(inputs, monkeypatch, forced: v.Verdict) -> list[v.ClaimRow]:
    monkeypatch.setattr(v.Rule, "decide", lambda self, *a, **k: forced)
    monkeypatch.setattr(v.Check, "decide", lambda self, *a, **k: forced)
    return [r for s in declared() for r in s.claim_rows(inputs)]


def test_every_row_fails_when_its_rule_fails(inputs, monkeypatch):
    rows = _rows(inputs, monkeypatch, v.not_reproduced("forced"))
    decided = [r for r in rows if r.verdict.outcome not in UNDECIDED]
    assert len(decided) > 50
    assert [(r.claim[:60], str(r.verdict)) for r in decided
            if r.verdict.outcome is not v.Outcome.NOT_REPRODUCED] == []


def test_every_row_passes_when_its_rule_passes(inputs, monkeypatch):
    rows = _rows(inputs, monkeypatch, v.reproduced("forced"))
    stray = [(r.claim[:60], str(r.verdict)) for r in rows
             if r.verdict.outcome not in (v.Outcome.REPRODUCED, *UNDECIDED)
             and not any(c.verdict.why.startswith("not converged") for c in r.cases)]
    assert stray == []
