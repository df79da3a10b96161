"""Build the report context from files and render both formats with Jinja2 templates."""

from __future__ import annotations

import base64
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from infonce_lab.config import Params, params_hash
from infonce_lab.io import read_json

PACKAGES = ("infonce-lab", "torch", "torchvision", "numpy", "scipy", "scikit-learn", "pandas",
            "dvc", "dvclive", "pydantic", "matplotlib")


def load_curves(train_dir: Path, run_ids: list[str]) -> dict[str, dict[str, pd.DataFrame]]:
    """DVCLive's step-wise TSVs: reports/train/<run>/plots/metrics/train/<name>.tsv."""
    curves: dict[str, dict[str, pd.DataFrame]] = {}
    for run in run_ids:
        folder = train_dir / run / "plots" / "metrics" / "train"
        if folder.is_dir():
            curves[run] = {p.stem: pd.read_csv(p, sep="\t") for p in sorted(folder.glob("*.tsv"))}
    return curves


def provenance(params: Params, train_dir: Path, run_ids: list[str]) -> dict[str, Any]:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "unknown", False
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    timings = []
    for run in run_ids:
        f = train_dir / run / "run.json"
        if f.is_file():
            r = read_json(f)
            timings.append({"run": run, "seconds": r["train_seconds"], "device": r["device"],
                            "samples_per_s": r["samples_per_s"], "steps": r["steps"]})
    return {
        "commit": commit + (" (uncommitted changes)" if dirty else ""),
        "params_hash": params_hash(params),
        "versions": versions,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.processor() or 'unknown CPU'}, "
                   f"{__import__('os').cpu_count()} logical CPUs",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "timings": timings,
    }


def verdicts(summary: dict[str, dict[str, Any]], margin: float) -> list[dict[str, Any]]:
    """Pipeline claim: pretraining improves each metric over the encoder's own random init.

    reproduced: the lower end of the paired 95% interval of the gain exceeds ``margin``;
    not reproduced: its upper end does not reach it; inconclusive otherwise (or with one seed).
    """
    out = []
    for group, s in summary.items():
        for metric, gain in s.get("gain_over_random_init", {}).items():
            lo = hi = None
            if gain["ci95"] is None:
                verdict = "inconclusive (one seed: no interval)"
            else:
                lo, hi = gain["mean"] - gain["ci95"], gain["mean"] + gain["ci95"]
                verdict = ("reproduced" if lo > margin else
                           "not reproduced" if hi <= margin else
                           "inconclusive (interval contains the margin)")
            out.append({"group": group, "metric": metric, "gain": gain, "lo": lo, "hi": hi,
                        "margin": margin, "verdict": verdict})
    return out


def comparison(params: Params, summary: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Loss × schedule grids of test accuracy, one per dataset × backbone."""
    grids = []
    st = params.study
    for d in st.datasets:
        for b in st.backbones:
            rows = []
            for lo in st.losses:
                cells = {sc: summary.get(f"{d}-{b}-{lo}-{sc}") for sc in st.schedules}
                rows.append({"loss": lo, "kind": params.losses[lo].kind, "cells": cells})
            base = summary.get(f"{d}-{b}-random_init")
            grids.append({"dataset": d, "backbone": b, "schedules": list(st.schedules),
                          "rows": rows, "random_init": base,
                          "raw_pixels": summary.get(f"{d}-raw_pixels")})
    return grids


def build_context(params: Params, summary: dict[str, dict[str, Any]], figures: dict[str, bytes],
                  train_dir: Path) -> dict[str, Any]:
    run_ids = [r.id for r in params.runs()]
    return {
        "title": params.report.title,
        "summary": summary,
        "study": params.study.model_dump(),
        "n_runs": len(run_ids),
        "verdicts": verdicts(summary, params.report.min_gain_over_random),
        "comparison": comparison(params, summary),
        "schedules": {n: params.schedules[n].model_dump() for n in params.study.schedules},
        "figures": {k: base64.b64encode(v).decode("ascii") for k, v in figures.items()},
        "provenance": provenance(params, train_dir, run_ids),
    }


def _fmt(m: dict[str, Any] | None, digits: int = 3) -> str:
    if m is None:
        return "—"
    if m.get("ci95") is None:
        return f"{m['mean']:.{digits}f}"
    return f"{m['mean']:.{digits}f} ± {m['ci95']:.{digits}f}"


METRIC_COLUMNS = [
    ("linear.test_acc", "linear"), ("knn.test_acc", "kNN acc."),
    ("knn.test_recall_at_1", "R@1"), ("knn.test_recall_at_5", "R@5"),
    ("knn.test_recall_at_50", "R@50"), ("geometry.alignment", "alignment"),
    ("geometry.uniformity", "uniformity"), ("geometry.effective_rank", "eff. rank"),
]


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def render(context: dict[str, Any]) -> tuple[str, str]:
    env = Environment(loader=PackageLoader("infonce_lab.report", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["ci"] = _fmt
    env.filters["p"] = _p
    env.globals["metric_columns"] = METRIC_COLUMNS
    return (env.get_template("index.html.j2").render(**context),
            env.get_template("REPORT.md.j2").render(**context))
