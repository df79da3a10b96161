"""How much work each stage's params ask for, estimated before the stage starts.

Every count a stage's work grows with is marked in the schema (``WORK``: epochs, chains, steps,
replicates, draws, seeds). A stage records its counts beside its wall time
(``reports/timings/<stage>.json``, ``work``); a later run's estimate for that stage is the time
it took, scaled by how far each count moved: ``seconds × Π (count now / count then)``. The
product is an upper bound (a stage whose counts drive separate parts grows by less), and it
knows nothing of what no count says (another dataset, another machine): it is a guard against
a count mistyped by orders of magnitude — ``probe.epochs: 100000000``, ``trials: 10**12`` —
which would run until killed, not a schedule. A stage whose estimate is beyond
``INFONCE_LAB_MAX_STAGE_HOURS`` (default 720, thirty days) is refused, naming the count that
grew the most; ``infonce-lab check`` shows every estimate.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from infonce_lab.params.base import ConfigError, MultipliesWork
from infonce_lab.params.study import Params

# Stage kind → the sections whose counts its work grows with (a simulate instance: its own).
STAGE_SECTIONS: dict[str, tuple[str, ...]] = {
    "pretrain": ("training", "study"),
    "pretrain_primary": ("training", "primary"),
    "evaluate": ("evaluation",),
    "diagnose": ("tails",),
    "text_pretrain": ("text.training", "text.study"),
}
DEFAULT_MAX_HOURS = 720.0


def _section(p: Params, dotted: str) -> Any:
    node: Any = p
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def counts(model: BaseModel, prefix: str) -> dict[str, int]:
    """Every marked count under ``model``, by dotted key (a list counts its items)."""
    out: dict[str, int] = {}
    for name, field in type(model).model_fields.items():
        value, key = getattr(model, name), f"{prefix}.{name}"
        if any(isinstance(m, MultipliesWork) for m in field.metadata):
            if isinstance(value, list | tuple):
                out[key] = len(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                out[key] = value
        elif isinstance(value, BaseModel):
            out |= counts(value, key)
    return out


def stage_counts(p: Params, stage: str) -> dict[str, int]:
    """The counts of a stage instance (DVC's name: ``simulate@s1``, ``pretrain@…``)."""
    kind, _, instance = stage.partition("@")
    if kind == "simulate" and instance in type(p.simulation).model_fields:
        return counts(getattr(p.simulation, instance), f"simulation.{instance}")
    out: dict[str, int] = {}
    for dotted in STAGE_SECTIONS.get(kind, ()):
        out |= counts(_section(p, dotted), dotted)
    return out


@dataclass(frozen=True)
class Estimate:
    stage: str
    timed_seconds: float
    seconds: float
    key: str | None      # the count that grew the most since the stage was timed
    ratio: float         # its growth


def estimate(p: Params, stage: str, record: dict[str, Any]) -> Estimate | None:
    """The stage's time at ``p``'s counts from a timing record (None: no counts recorded)."""
    then = record.get("work")
    if not isinstance(then, dict) or "seconds" not in record:
        return None
    now = stage_counts(p, stage)
    ratios = {k: now[k] / then[k] for k in now if isinstance(then.get(k), int) and then[k] > 0}
    factor = 1.0
    for r in ratios.values():
        factor *= r
    key = max(ratios, key=lambda k: ratios[k]) if ratios else None
    return Estimate(stage, float(record["seconds"]), float(record["seconds"]) * factor, key,
                    ratios.get(key, 1.0) if key else 1.0)


def estimates(p: Params, timings: Path) -> list[Estimate]:
    """Every stage with a timing record under ``timings``."""
    out = []
    for path in sorted(timings.glob("*.json")) if timings.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and (e := estimate(p, str(record.get("stage", "")), record)):
            out.append(e)
    return out


def max_seconds() -> float:
    raw = os.environ.get("INFONCE_LAB_MAX_STAGE_HOURS", str(DEFAULT_MAX_HOURS))
    try:
        hours = float(raw)
    except ValueError:
        raise ConfigError(f"INFONCE_LAB_MAX_STAGE_HOURS = {raw!r}: expected a number of hours"
                          ) from None
    return hours * 3600.0


def check_work(p: Params, timings: Path, stage: str | None = None) -> list[Estimate]:
    """Refuse a stage (``stage``; None: every timed stage) whose estimate is beyond the limit,
    naming the count that grew the most; returns the estimates."""
    found = [e for e in estimates(p, timings)
             if stage is None or e.stage == stage or e.stage.split("@")[0] == stage]
    limit = max_seconds()
    for e in found:
        if e.seconds > limit and e.key is not None:
            raise ConfigError(
                f"{e.key} = {stage_counts(p, e.stage)[e.key]:,}: the {e.stage} stage would run "
                f"≈ {fmt_duration(e.seconds)} ({e.ratio:,.0f}× this count, and the others, "
                f"against its last run's {fmt_duration(e.timed_seconds)}), beyond "
                f"{fmt_duration(limit)} (INFONCE_LAB_MAX_STAGE_HOURS). Lower it, or raise the "
                "limit if you mean it.")
    return found


def fmt_duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.1f} s"

