"""Matplotlib figures for the report, returned as PNG bytes (inlined in HTML, saved for Markdown)."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

PALETTE = {"trained": "#1f77b4", "random_init": "#ff7f0e", "raw_pixels": "#7f7f7f"}


def _png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def accuracy_bars(summary: dict[str, dict[str, Any]]) -> bytes:
    """Linear-probe and kNN test accuracy per configuration, mean with 95% t-interval over seeds."""
    groups = list(summary)
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.55 * len(groups) + 1.6), sharey=True)
    for ax, metric, title in zip(axes, ("linear.test_acc", "knn.test_acc"),
                                 ("Linear probe — test accuracy", "Weighted kNN — test accuracy"),
                                 strict=True):
        means = [summary[g][metric]["mean"] for g in groups]
        errs = [summary[g][metric]["ci95"] or 0.0 for g in groups]
        colors = [PALETTE.get(summary[g]["kind"], "#333333") for g in groups]
        ax.barh(range(len(groups)), means, xerr=errs, color=colors, capsize=3)
        for i, m in enumerate(means):
            ax.text(m, i, f" {m:.3f}", va="center", fontsize=8)
        ax.set_yticks(range(len(groups)), groups, fontsize=8)
        ax.set_xlim(0, 1.08)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.invert_yaxis()
    fig.suptitle("Error bars: 95% t-interval over encoder seeds (none when n = 1)", fontsize=8, y=0.0)
    return _png(fig)


def training_curves(curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """Per run: loss, τ, alignment and uniformity of the training batch against the step."""
    panels = [("loss", "InfoNCE loss"), ("tau", "temperature τ"),
              ("alignment", "alignment (lower = closer positives)"),
              ("uniformity", "uniformity (lower = more uniform)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.0))
    for ax, (name, title) in zip(axes, panels, strict=True):
        for run, frames in curves.items():
            if name in frames:
                df = frames[name]
                ax.plot(df["step"], df[df.columns[-1]], lw=1.2, label=run)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    return _png(fig)
