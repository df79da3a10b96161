"""Every rule the report decides with can fail: each section module's ``RULES`` has, in its test
module's ``FIXTURES``, an input that must pass it and one that must fail it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from infonce_lab.report import sections
from infonce_lab.report.verdicts import Outcome

TESTS = Path(__file__).resolve().parent / "report"  # where the section modules' tests live


def _fixtures(module_name: str) -> dict:
    short = module_name.rsplit(".", 1)[-1]
    path = TESTS / f"test_report_{short}.py"
    assert path.is_file(), f"{module_name} declares rules: {path.name} must hold their FIXTURES"
    spec = importlib.util.spec_from_file_location(f"_fixtures_{short}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert hasattr(mod, "FIXTURES"), f"{path.name} has no FIXTURES"
    return mod.FIXTURES


CASES = [(m.__name__, rid) for m in sections.modules() for rid in m.RULES]


def test_every_section_module_declares_itself_with_its_rules():
    for m in sections.modules():
        assert isinstance(getattr(m, "SECTION", None), sections.Section), m.__name__
        assert isinstance(getattr(m, "RULES", None), dict), m.__name__
        assert m.SECTION.rules is m.RULES, m.__name__
        # a section without rules decides nothing: it may show context, never a claim row
        if not m.RULES:
            assert m.SECTION.rows(None) == [], m.__name__


@pytest.mark.parametrize(("module", "rule_id"), CASES)
def test_rule_passes_its_passing_input_and_fails_its_failing_input(module, rule_id):
    rules = importlib.import_module(module).RULES
    fixtures = _fixtures(module)
    assert rule_id in fixtures, f"{module}: rule {rule_id!r} has no (pass, fail) fixture"
    good, bad = fixtures[rule_id]
    rule = rules[rule_id]
    assert rule.decide(good).outcome is Outcome.REPRODUCED, (rule_id, rule.text)
    assert rule.decide(bad).outcome is Outcome.NOT_REPRODUCED, (rule_id, rule.text)


@pytest.mark.parametrize("module", sorted({m for m, _ in CASES}))
def test_no_fixture_without_a_rule(module):
    extra = set(_fixtures(module)) - set(importlib.import_module(module).RULES)
    assert not extra, f"{module}: fixtures for rules that do not exist: {sorted(extra)}"
