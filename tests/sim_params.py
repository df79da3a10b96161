"""The keywords the simulate stage passes an experiment's runner (``**section.model_dump()``): the
schema's section at its defaults (params.simulation.<name>), with a test's overrides merged over
them — a mapping merged into its sub-section. Runners take required keywords; their defaults
live in the schema only."""

from __future__ import annotations

from typing import Any

from infonce_lab.params import SimulationConfig


def section(name: str, **overrides: Any) -> dict[str, Any]:
    out = getattr(SimulationConfig(), name).model_dump()
    for key, value in overrides.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = out[key] | value if nested else value
    return out
