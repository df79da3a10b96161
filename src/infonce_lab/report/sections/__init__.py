"""The report's claims, one module per paper topic. Each module declares

- ``RULES: dict[str, Rule | Check]`` — every rule it decides with, keyed by a stable id; the rule
  is stated (``.text``) before any data is read and printed on the page;
- ``claim_rows(...) -> list[ClaimRow]`` — the rows of its claims (and self-checks), built from the
  results files through :mod:`infonce_lab.report.verdicts`;
- the figures that illustrate those claims, beside them (PNG bytes, drawn with
  :mod:`infonce_lab.report.plotting`); a module whose figures read a simulate stage's file declares
  ``SIM_FIGURES: dict[experiment, dict[figure name, drawer]]``.

``tests/report/test_report_<module>.py`` holds ``FIXTURES: dict[str, tuple[input, input]]``: for every
rule id, an input that must pass the rule and one that must fail it. ``tests/test_rules.py``
checks that every module's every rule has both, and that they decide as they must.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import Any


def modules() -> list[ModuleType]:
    """Every section module of this package (derived from the files, never listed by hand)."""
    return [importlib.import_module(f"{__name__}.{m.name}")
            for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]


def sim_drawers() -> dict[str, dict[str, Callable[[dict[str, Any]], bytes | None]]]:
    """Every module's ``SIM_FIGURES`` in one table: experiment → {figure name: drawer}."""
    table: dict[str, dict[str, Callable[[dict[str, Any]], bytes | None]]] = {}
    for module in modules():
        for experiment, drawers in getattr(module, "SIM_FIGURES", {}).items():
            if experiment in table:
                raise ValueError(f"{module.__name__}: experiment {experiment!r} already has figures")
            table[experiment] = drawers
    return table
