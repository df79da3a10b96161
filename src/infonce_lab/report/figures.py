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


def _group_mean(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Mean over seeds of step-aligned curves (runs of one configuration share their steps)."""
    merged = pd.concat([f.set_index("step")[f.columns[-1]] for f in frames], axis=1)
    return merged.mean(axis=1).rename("value").reset_index()


def _by_group(curves: dict[str, dict[str, pd.DataFrame]], name: str) -> dict[str, pd.DataFrame]:
    groups: dict[str, list[pd.DataFrame]] = {}
    for run, frames in curves.items():
        if name in frames:
            groups.setdefault(run.rsplit("-", 1)[0], []).append(frames[name])
    return {g: _group_mean(fs) for g, fs in groups.items()}


Series = dict[str, pd.DataFrame]  # label -> DataFrame(step, value)


def _panels(panels: list[tuple[str, Series]]) -> bytes:
    """One axis per (title, {label: curve}); one shared legend below."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, (title, series) in zip(axes[0], panels, strict=True):
        for label, df in sorted(series.items()):
            (line,) = ax.plot(df["step"], df["value"], lw=1.2)
            handles.setdefault(label, line)
            line.set_color(handles[label].get_color())
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    rows = (len(handles) + 3) // 4
    fig.legend(list(handles.values()), list(handles), fontsize=7, loc="lower center",
               ncol=min(4, max(1, len(handles))))
    fig.tight_layout(rect=(0, 0.06 * rows + 0.02, 1, 1))
    return _png(fig)


def training_curves(curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """Per configuration (mean over seeds): loss, alignment, uniformity, top-1 of the positive."""
    names = [("loss", "training loss"), ("alignment", "alignment (lower = closer positives)"),
             ("uniformity", "uniformity (lower = more uniform)"),
             ("top1_acc", "positive ranked first among candidates")]
    return _panels([(title, _by_group(curves, name)) for name, title in names])


def temperature_curves(curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """τ(step) of each schedule as training used it (one line per schedule)."""
    per_schedule: Series = {}
    for run, frames in curves.items():
        schedule = run.split("-")[3]
        if "tau" in frames and schedule not in per_schedule:
            df = frames["tau"]
            per_schedule[schedule] = pd.DataFrame({"step": df["step"], "value": df[df.columns[-1]]})
    return _panels([("temperature τ(step)", per_schedule)])


def lambda_curves(curves: dict[str, dict[str, pd.DataFrame]]) -> bytes | None:
    """WEINCE's per-anchor mixing weight λ over training (mean over seeds of batch summaries)."""
    weince = {r: f for r, f in curves.items() if "lambda_mean" in f}
    if not weince:
        return None
    names = [("lambda_mean", "mean λ_i over anchors"),
             ("lambda_frac_gt_half", "share of anchors with λ_i > ½"),
             ("rho0", "batch pivot ρ0"), ("beta_hat_q50", "median per-anchor β̂_i")]
    return _panels([(title, _by_group(weince, name)) for name, title in names])


def alignment_uniformity_plane(encoders: pd.DataFrame) -> bytes:
    """Every encoder in Wang & Isola's plane (lower-left is better), coloured by linear test acc."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    df = encoders.dropna(subset=["geometry.alignment", "geometry.uniformity"])
    markers = {"trained": "o", "random_init": "s", "raw_pixels": "^"}
    sc = None
    for kind, part in df.groupby("encoder.kind"):
        sc = ax.scatter(part["geometry.alignment"], part["geometry.uniformity"],
                        c=part["linear.test_acc"], cmap="viridis", vmin=df["linear.test_acc"].min(),
                        vmax=df["linear.test_acc"].max(), marker=markers.get(kind, "x"),
                        s=46, edgecolor="k", linewidth=0.4, label=kind)
    for _, r in df[df["encoder.kind"] == "trained"].iterrows():
        ax.annotate(f"{r['encoder.loss']}/{r['encoder.schedule']}", (r["geometry.alignment"],
                    r["geometry.uniformity"]), fontsize=5, alpha=0.7, xytext=(3, 2),
                    textcoords="offset points")
    if sc is not None:
        fig.colorbar(sc, ax=ax, label="linear probe test accuracy")
    ax.set_xlabel("alignment of two augmented test views (lower = better)")
    ax.set_ylabel("uniformity of test features (lower = better)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)
