"""Reading the aggregate stage's paired comparisons (``summary.json["paired"]``), whose keys are
``<dataset>-<backbone>/<a>_vs_<b>@<shared>/<metric>``: a, b two losses at one schedule, or two
schedules on one loss. The report's claims pick the pairs they test from here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple


class Comparison(NamedTuple):
    setting: str   # "<dataset>-<backbone>"
    a: str
    b: str
    shared: str    # the schedule (loss pairs) or the loss (schedule pairs)
    metric: str
    pair: dict[str, Any]  # {"a", "b", "metric", "diff": mean_ci of a − b, "p_value"}


def comparisons(paired: dict[str, Any]) -> Iterator[Comparison]:
    for key, pair in paired.items():
        setting, comp, metric = key.split("/")
        ab, _, shared = comp.partition("@")
        a, _, b = ab.partition("_vs_")
        yield Comparison(setting, a, b, shared, metric, pair)
