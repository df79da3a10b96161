"""``infonce-lab exps``: DVC's experiments as a table that fits a screen — one row per param that
differs between them and per headline metric that differs, one column per experiment.

``dvc exp show`` puts every param and every metric in a column: on the default study that is
hundreds of columns, and at any terminal width it prints an ellipsis. Turned on its side and
kept to what differs, the same data (``dvc exp show --json``) reads at 120 characters: the
baseline commit first, then its experiments, then the workspace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WIDTH = 120
KEY_WIDTH = 44
COLUMN = 11


@dataclass(frozen=True)
class Experiment:
    name: str
    params: dict[str, Any]
    metrics: dict[str, Any]
    error: str = ""


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys; lists stay values (printed compactly)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _files(data: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    """A revision's params or metrics, every file's flattened together (a second file's keys are
    prefixed with its name)."""
    files = (data or {}).get(kind) or {}
    out: dict[str, Any] = {}
    for i, (path, content) in enumerate(sorted(files.items())):
        prefix = "" if i == 0 else f"{path}:"
        out.update(flatten((content or {}).get("data") or {}, prefix))
    return out


def _entry(name: str, entry: Mapping[str, Any]) -> Experiment:
    error = (entry.get("error") or {}).get("msg", "")
    data = entry.get("data")
    return Experiment(name, _files(data, "params"), _files(data, "metrics"), error)


def experiments(show: Sequence[Mapping[str, Any]]) -> list[Experiment]:
    """From ``dvc exp show --json``: each baseline commit, its experiments, and the workspace
    last (it is where the next `dvc exp run` starts)."""
    out: list[Experiment] = []
    workspace = None
    for entry in show:
        if entry.get("rev") == "workspace":
            workspace = _entry("workspace", entry)
            continue
        out.append(_entry(entry.get("name") or str(entry.get("rev", ""))[:7], entry))
        for group in entry.get("experiments") or []:
            for rev in group.get("revs") or []:
                out.append(_entry(rev.get("name") or str(rev.get("rev", ""))[:7], rev))
    return [*out, *([workspace] if workspace is not None else [])]


def _differing(maps: Sequence[Mapping[str, Any]]) -> list[str]:
    keys = list(dict.fromkeys(k for m in maps for k in m))
    return [k for k in keys
            if len({json.dumps(m.get(k), sort_keys=True, default=str) for m in maps}) > 1]


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, list | dict) else str(value)
    elif isinstance(value, int):
        text = str(value)
    else:
        text = f"{value:.4g}"  # four digits: an accuracy as 0.8649, a difference as -0.005393
    return text if len(text) <= COLUMN else text[:COLUMN - 1] + "…"


def _key(key: str) -> str:
    return key if len(key) <= KEY_WIDTH else "…" + key[-(KEY_WIDTH - 1):]


def table(exps: Sequence[Experiment], all_metrics: bool = False, width: int = WIDTH) -> str:
    """The experiments side by side: the params that differ, then the headline metrics that
    differ (every metric with ``all_metrics``), at most ``width`` characters wide — experiments
    past the width are named below the table, not squeezed in."""
    shown = [e for e in exps if not e.error]
    columns = max(1, (width - KEY_WIDTH - 2) // (COLUMN + 2))
    cut, shown = shown[columns:], shown[:columns]
    params = _differing([e.params for e in shown])
    metric_maps = [e.metrics for e in shown]
    metrics = (list(dict.fromkeys(k for m in metric_maps for k in m)) if all_metrics
               else _differing(metric_maps))

    def line(key: str, cells: Iterator[str] | list[str]) -> str:
        return f"{_key(key):<{KEY_WIDTH}}  " + "  ".join(f"{c:>{COLUMN}}" for c in cells)

    out = [line("", [_cell(e.name) for e in shown])]
    for title, keys, part in (("params that differ", params, "params"),
                              ("headline metrics" + ("" if all_metrics else " that differ"),
                               metrics, "metrics")):
        out.append(f"── {title} " + "─" * max(0, min(width, len(out[0])) - len(title) - 4))
        out += [line(k, [_cell(getattr(e, part).get(k)) for e in shown]) for k in keys]
        if not keys:
            out.append("  (none)")
    for e in exps:
        if e.error:
            out.append(f"{e.name}: not shown, DVC could not read it ({e.error})")
    if cut:
        out.append(f"not shown (width): {', '.join(e.name for e in cut)}; "
                   "`dvc exp remove` or `dvc exp show --json` for the rest")
    return "\n".join(out)
