"""How much work each stage's params ask for, estimated before the stage starts.

Every count a stage's work grows with is marked in the schema (``WORK``: epochs, chains, steps,
replicates, draws, seeds). A stage records its counts beside its wall time
(``reports/timings/<stage>.json``, ``work``); a later run's estimate for that stage is the time
it took, scaled by how far each count moved: ``seconds × Π (count now / count then)``. A stage
never timed (a new run id, a dataset not run here) is scaled from the slowest timed stage of its
kind, per unit of their counts: the committed timings of the default study time every kind,
so every stage of every study has an estimate from a fresh clone on, except where the basis
counted something unset now (text ``max_steps: null``: a run to the corpus's end, no count). The
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


def kind(stage: str) -> str:
    """What a stage's timing stands for: its kind (``pretrain``: every run's counts are the same
    sections'), or a simulate instance itself (each experiment counts its own section)."""
    head = stage.split("@")[0]
    return stage if head == "simulate" else head


@dataclass(frozen=True)
class Estimate:
    stage: str
    basis: str           # the timed stage it is scaled from: itself, or one of its kind
    timed_seconds: float
    seconds: float
    key: str | None      # the count that grew the most since the basis was timed
    ratio: float         # its growth


def scaled(p: Params, stage: str, record: dict[str, Any]) -> Estimate | None:
    """The stage's time at ``p``'s counts from a timing record of it or of its kind (None: the
    record holds no counts)."""
    then = record.get("work")
    if not isinstance(then, dict) or not isinstance(record.get("seconds"), int | float):
        return None
    now = stage_counts(p, stage)
    if any(k not in now for k in then):
        # A count the basis had is unset now (text max_steps: null, a run to the corpus's end):
        # what it becomes is not a count, so the record cannot scale to it.
        return None
    # A count now 0 (no replicates, no bootstrap) leaves the rest of the stage's work: × 1.
    ratios = {k: max(now[k], 1) / then[k] for k in now
              if isinstance(then.get(k), int) and then[k] > 0}
    factor = 1.0
    for r in ratios.values():
        factor *= r
    key = max(ratios, key=lambda k: ratios[k]) if ratios else None
    seconds = float(record["seconds"])
    return Estimate(stage, str(record.get("stage", stage)), seconds, seconds * factor, key,
                    ratios.get(key, 1.0) if key else 1.0)


def records(timings: Path) -> dict[str, dict[str, Any]]:
    """Every readable timing record under ``timings``, by stage (a record is advice: one that
    does not parse is skipped, never an error)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(timings.glob("*.json")) if timings.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("stage"), str):
            out[record["stage"]] = record
    return out


def estimate(p: Params, stage: str, timed: dict[str, dict[str, Any]]) -> Estimate | None:
    """The stage's estimate: from its own last run when it has one; otherwise the largest of
    its kind's timed runs, scaled per unit of their counts to this stage's (a run id, a dataset
    never run here). The committed timings of the default study give every kind a basis, so a
    count mistyped in a configuration that never ran is still seen."""
    own = scaled(p, stage, timed[stage]) if stage in timed else None
    if own is not None:
        return own
    peers = (scaled(p, stage, r) for name, r in timed.items() if kind(name) == kind(stage))
    return max((e for e in peers if e is not None), key=lambda e: e.seconds, default=None)


def estimates(p: Params, timings: Path) -> list[Estimate]:
    """Every stage of the study that has a basis under ``timings``."""
    timed = records(timings)
    return [e for stage in p.stage_names() if (e := estimate(p, stage, timed))]


def max_seconds() -> float:
    raw = os.environ.get("INFONCE_LAB_MAX_STAGE_HOURS", str(DEFAULT_MAX_HOURS))
    try:
        hours = float(raw)
    except ValueError:
        raise ConfigError(f"INFONCE_LAB_MAX_STAGE_HOURS = {raw!r}: expected a number of hours"
                          ) from None
    return hours * 3600.0


def check_work(p: Params, timings: Path, stage: str | None = None) -> list[Estimate]:
    """Refuse a stage (``stage``: an instance or a kind; None: every stage of the study) whose
    estimate is beyond the limit, naming the count that grew the most; returns the estimates."""
    found = [e for e in estimates(p, timings)
             if stage is None or e.stage == stage or e.stage.split("@")[0] == stage]
    limit = max_seconds()
    for e in found:
        if e.seconds > limit and e.key is not None:
            basis = "its last run's" if e.basis == e.stage else f"{e.basis}'s"
            raise ConfigError(
                f"{e.key} = {stage_counts(p, e.stage)[e.key]:,}: the {e.stage} stage would run "
                f"≈ {fmt_duration(e.seconds)} ({e.ratio:,.0f}× this count, and the others, "
                f"against {basis} {fmt_duration(e.timed_seconds)}), beyond "
                f"{fmt_duration(limit)} (INFONCE_LAB_MAX_STAGE_HOURS). Lower it, or raise the "
                "limit if you mean it.")
    return found


def fmt_duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.1f} s"

