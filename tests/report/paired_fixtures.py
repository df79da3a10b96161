"""Paired comparisons as the aggregate stage writes them, for the sections' tests: the pooled
rows of hand-made per-schedule rows, through the aggregate's own pooling."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from infonce_lab.aggregate import pooled_pair


def pooled(paired: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``summary.json["pooled"]`` of loss pairs ``paired`` (every row a loss pair)."""
    blocks: dict[tuple[str, str, str], dict[str, dict[str, float]]] = defaultdict(dict)
    for key, pair in paired.items():
        setting, comparison, metric = key.split("/")
        ab, _, schedule = comparison.partition("@")
        blocks[(setting, ab, metric)][schedule] = pair["per_seed"]
    return {f"{s}/{ab}@pooled/{m}": pooled_pair(*ab.split("_vs_"), m, b)
            for (s, ab, m), b in blocks.items()}
