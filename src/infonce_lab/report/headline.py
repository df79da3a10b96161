"""The headline metrics: a flat file of at most :data:`LIMIT` numbers, the one file dvc.yaml
declares as ``metrics:``, so ``dvc exp show`` and ``dvc metrics diff`` fit a screen (every
per-run and per-configuration file beside it stays a plain output: `dvc metrics show <file>`
still reads any of them by name).

What goes in, in this order, until the limit: the claims' verdict counts; the pre-registered
primary comparisons (difference and its 95% interval); the primary
configurations' and the raw-pixel baseline's values on the primary metrics; every grid
configuration's value on the first primary metric (``grid.<loss>-<schedule>.<metric>``: so a
changed schedule or loss shows in ``dvc exp show`` and ``infonce-lab exps``); the text study's
STS Spearman per encoder. Every number is in ``summary.json``'s unit (accuracies as fractions,
the STS Spearman ×100 as SentEval reports it), so the two files diff alike. Whatever the limit
cuts is named in ``left_out`` (a count, and printed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

LIMIT = 48


def _mean(v: Any) -> float:
    """A group's value: the mean over seeds, or the one value of a single encoder (baselines)."""
    return float(v["mean"] if isinstance(v, Mapping) else v)


def _primary_name(key: str) -> tuple[str, str]:
    """``<dataset>-<backbone>/<treatment>_vs_<reference>@<schedule>/<metric>`` → (contrast, metric)."""
    _, contrast, metric = key.split("/")
    return contrast.split("@")[0], metric


def headline(counts: Mapping[str, int], primary: Mapping[str, Any],
             groups: Mapping[str, Any], primary_groups: Sequence[str], baseline: str | None,
             primary_metrics: Sequence[str], text_groups: Mapping[str, Any],
             grid_groups: Sequence[str] = ()) -> tuple[dict[str, float | int], list[str]]:
    """(the flat headline, the keys the limit left out).

    ``counts``: the papers' claims by verdict (reproduced, not_reproduced, inconclusive, not_run);
    ``primary``: the summary's primary block; ``groups``: its per-configuration block;
    ``primary_groups``: the primary configurations' ids; ``baseline``: the raw-pixel group id
    of the primary dataset (None: not in the study); ``text_groups``: the text summary's groups;
    ``grid_groups``: the grid configurations' ids (``<dataset>-<backbone>-<loss>-<schedule>``).
    """
    items: list[tuple[str, float | int]] = [
        (f"verdicts.{k}", int(counts[k]))
        for k in ("reproduced", "not_reproduced", "inconclusive", "not_run")]
    for key, comp in sorted(primary.items()):
        contrast, metric = _primary_name(key)
        t = comp["t"]
        items += [(f"primary.{contrast}.{metric}.diff", comp["diff"]["mean"]),
                  (f"primary.{contrast}.{metric}.ci_low", t["ci_low"]),
                  (f"primary.{contrast}.{metric}.ci_high", t["ci_high"])]
    for gid in [*primary_groups, *([baseline] if baseline else [])]:
        g = groups.get(gid, {})
        name = g.get("loss") or gid.rsplit("-", 1)[-1]
        items += [(f"{name}.{m}", _mean(g[m])) for m in primary_metrics if m in g]
    settings = {gid.rsplit("-", 2)[0] for gid in grid_groups}
    first = primary_metrics[0] if primary_metrics else None
    for gid in grid_groups:
        g = groups.get(gid, {})
        name = "-".join(gid.rsplit("-", 2)[1:]) if len(settings) == 1 else gid
        if first is not None and first in g:
            items.append((f"grid.{name}.{first}", _mean(g[first])))
    items += [(f"text.{gid.split('-', 1)[1]}.sts_spearman", _mean(g["sts.test_spearman"]))
              for gid, g in sorted(text_groups.items()) if "sts.test_spearman" in g]
    kept = {k: v if isinstance(v, int) else round(v, 6) for k, v in items[:LIMIT]}
    return kept, [k for k, _ in items[LIMIT:]]
