"""Shared by the sections that decide on paired comparisons over seeds: pick the pairs of two
loss kinds, first − second, from ``summary.json["paired"]`` (per schedule) and
``summary.json["pooled"]`` (over a setting's schedules, as the aggregate stage pools them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from infonce_lab.evaluation.stats import TInference
from infonce_lab.report.paired import comparisons
from infonce_lab.report.verdicts import Case, Estimate, Rule, Verdict, all_cases, decide_family

POINTS = 100.0  # accuracies are fractions in the files and points on the page


@dataclass(frozen=True)
class OrientedPair:
    setting: str          # "<dataset>-<backbone>"
    shared: str           # the schedule both losses ran at
    metric: str
    first: str            # the loss of the first kind (e.g. the WEINCE entry)
    second: str
    t: TInference | None  # first − second over seeds
    per_seed: dict[str, float]


def oriented_pairs(paired: dict[str, Any], loss_kinds: dict[str, str], first: str, second: str,
                   metrics: Iterable[str]) -> list[OrientedPair]:
    """Every comparison of a ``first``-kind loss with a ``second``-kind loss on ``metrics``,
    oriented first − second whichever order the study listed them in."""
    wanted = set(metrics)
    out = []
    for c in comparisons(paired):
        kinds = (loss_kinds.get(c.a), loss_kinds.get(c.b))
        if set(kinds) != {first, second} or first == second or c.metric not in wanted:
            continue
        sign = 1.0 if kinds[0] == first else -1.0
        t = TInference.from_json(c.pair["t"]) if c.pair.get("t") else None
        if t is not None and sign < 0:
            t = TInference(-t.mean, t.se, t.df, t.n)
        per_seed = {k: sign * v for k, v in (c.pair.get("per_seed") or {}).items()}
        a, b = (c.a, c.b) if sign > 0 else (c.b, c.a)
        out.append(OrientedPair(c.setting, c.shared, c.metric, a, b, t, per_seed))
    return out


def points(t: TInference | None, **kw: Any) -> Estimate:
    """A paired accuracy difference in points, signed, two decimals."""
    return Estimate.from_t(t, scale=POINTS, unit="points", digits=2, signed=True, **kw)


def decide_pooled_and_per_schedule(
    rule: Rule, pooled: list[OrientedPair], pairs: list[OrientedPair],
    pooled_name: Callable[[OrientedPair], str], pair_name: Callable[[OrientedPair], str],
) -> tuple[list[Case], list[Case], Verdict]:
    """A claim made across schedules: the pooled differences decide (one Holm family), the
    per-schedule ones are shown as a second family. Returns (pooled cases, per-schedule cases,
    the verdict: every pooled case must hold)."""
    pooled_cases = [replace(c, pooled=True) for c in decide_family(
        rule, [points(p.t) for p in pooled], [pooled_name(p) for p in pooled])]
    per = decide_family(rule, [points(p.t) for p in pairs], [pair_name(p) for p in pairs])
    return pooled_cases, per, all_cases([c.verdict for c in pooled_cases])
