"""Reading the stage outputs the page is drawn from that are not in summary.json: the simulate
stage's files (reports/sims/) and the diagnose stage's per-run plot data (reports/tails/plots/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infonce_lab.io import read_json
from infonce_lab.params import RunId


def load_sims(sims_dir: Path, experiments: list[str]) -> dict[str, dict[str, Any]]:
    """The listed experiments' files that exist; a missing one is left out (its claims read
    "not run")."""
    files = {e: sims_dir / f"{e}.json" for e in experiments}
    return {e: read_json(f) for e, f in files.items() if f.is_file()}


def final_plot_epoch(record: dict[str, Any]) -> int:
    """The last ``epoch_<n>`` block of a diagnose plots file."""
    return max(int(k.removeprefix("epoch_")) for k in record if k.startswith("epoch_"))


def representative_plots(plots_dir: Path, run_ids: list[str]) -> dict[str, Any] | None:
    """The first run (``params.runs()`` order) with a plots file, its final epoch, and the
    final-epoch plot data of every seed of its configuration whose file exists (ablation figure).
    ``plots_dir`` holds the diagnose stage's files of one dataset (reports/tails/plots/<dataset>).
    """
    present = [r for r in run_ids if (plots_dir / f"{r}.json").is_file()]
    if not present:
        return None
    run = present[0]
    group = RunId.parse(run).config
    seeds: dict[str, dict[str, Any]] = {}
    epochs: dict[str, int] = {}
    for r in present:
        if RunId.parse(r).config == group:
            record = read_json(plots_dir / f"{r}.json")
            epochs[r] = final_plot_epoch(record)
            seeds[r] = record[f"epoch_{epochs[r]}"]
    return {"run": run, "group": group.to_str(), "epoch": epochs[run], "plots": seeds[run], "seeds": seeds}
