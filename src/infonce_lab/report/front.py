"""The first screen's two figures: which loss and schedule learn the better representation here
(downstream accuracy per configuration with 95% intervals over seeds, baselines as reference
lines), and the pre-registered primary comparison as a forest plot beside its verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.ticker import MaxNLocator

from infonce_lab.evaluation import metrics
from infonce_lab.params import Configuration
from infonce_lab.report.plotting import (
    VERDICT_COLOURS,
    dot_interval,
    loss_colours,
    plt,
    png,
    reference_line,
    zoomed,
)
from infonce_lab.report.verdicts import ClaimRow, near_threshold

# The study's question is answered on these four: few- and full-label, linear probe and kNN.
FRONT_METRICS = ("few.probe_test_acc", "linear.test_acc", "few.knn_test_acc", "knn.test_acc")
PRIMARY_BLOCK_MARKER, GRID_MARKER = "s", "o"


def _trained(groups: Mapping[str, Any], setting: str, study: Mapping[str, Any]
             ) -> list[tuple[str, Configuration]]:
    """The setting's trained configurations, by the study's loss then schedule order (losses
    and schedules only in the primary block after them)."""
    found = [(g, Configuration.parse(g)) for g, v in groups.items()
             if v.get("kind") == "trained" and g.startswith(f"{setting}-")]
    losses = list(dict.fromkeys([*study["losses"], *(c.loss for _, c in found)]))
    schedules = list(dict.fromkeys([*study["schedules"], *(c.schedule for _, c in found)]))
    return sorted(found, key=lambda gc: (losses.index(gc[1].loss),
                                         schedules.index(gc[1].schedule)))


def accuracy_figure(groups: Mapping[str, Any], study: Mapping[str, Any]) -> bytes | None:
    """One row of panels per dataset × backbone, one panel per front metric; a dot per loss ×
    schedule (mean over seeds, 95% t-interval), squares for the primary block's configurations
    (more seeds); the x axis zoomed to the trained encoders and raw pixels."""
    settings = [f"{d}-{b}" for d in study["datasets"] for b in study["backbones"]]
    settings = [s for s in settings if _trained(groups, s, study)]
    shown = [m for m in FRONT_METRICS if any(m in v for v in groups.values())]
    if not settings or not shown:
        return None
    sizes = [len(_trained(groups, s, study)) for s in settings]
    fig, axes = plt.subplots(len(settings), len(shown), sharey="row", squeeze=False,
                             figsize=(10, 0.15 * sum(sizes) + 0.95 * len(settings)),
                             gridspec_kw={"height_ratios": sizes})
    colours = loss_colours([*study["losses"],
                            *(c.loss for s in settings for _, c in _trained(groups, s, study))])
    grid_seeds = len(study["seeds"])
    for row, setting in zip(axes, settings, strict=True):
        configs = _trained(groups, setting, study)
        baselines = {"raw_pixels": groups.get(f"{setting.split('-')[0]}-raw_pixels"),
                     "random_init": groups.get(f"{setting}-random_init")}
        for ax, metric in zip(row, shown, strict=True):
            xs: list[float] = []
            for y, (g, c) in enumerate(configs):
                m = groups[g].get(metric)
                if not m:
                    continue
                half = m.get("ci95")
                lo, hi = (m["mean"] - half, m["mean"] + half) if half is not None else (None, None)
                marker = GRID_MARKER if m.get("n", 0) <= grid_seeds else PRIMARY_BLOCK_MARKER
                dot_interval(ax, m["mean"], y, lo, hi, colours[c.loss], marker)
                xs += [m["mean"], *([lo, hi] if half is not None else [])]
            raw = (baselines["raw_pixels"] or {}).get(metric)
            if not xs:  # no trained encoder has this metric here: an empty panel, said so
                ax.text(0.5, 0.5, "no data", ha="center", transform=ax.transAxes, fontsize=8)
                continue
            limits = zoomed(xs + ([raw["mean"]] if raw else []), bounds=(0.0, 1.0))
            ax.set_xlim(*limits)
            for kind, base in baselines.items():
                if base and metric in base:
                    reference_line(ax, base[metric]["mean"], kind, limits)
            ax.set_title(f"{metrics.BY_NAME[metric].label}" if setting == settings[0] else "",
                         fontsize=9)
            ax.grid(axis="x", alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(4))
            ax.tick_params(labelsize=7)
        row[0].set_yticks(range(len(configs)),
                          [f"{c.loss} · {c.schedule}" for _, c in configs], fontsize=7)
        row[0].set_ylim(len(configs) - 0.5, -0.5)
        if len(settings) > 1:
            row[0].set_ylabel(setting, fontsize=8)
    fig.text(0.01, 0.0, f"test accuracy; dot: mean over seeds with its 95% t-interval (circles: "
             f"the grid, {grid_seeds} seed(s); squares: the primary block); dashed: raw pixels; "
             "dotted: random init (an arrow when off the zoomed axis)", fontsize=7, color="#444")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return png(fig)


def forest_figure(rows: Sequence[ClaimRow], margin_points: float) -> bytes | None:
    """Each pre-registered contrast × metric: the paired difference (points) with its 95%
    interval coloured by its verdict, the rule's 0 and its smallest effect of interest, the MDE
    (a hollow diamond), and the verdict with the deciding p beside it."""
    cases = [c for r in rows if r.primary for c in r.cases
             if c.estimate is not None and c.estimate.defined]
    if not cases:
        return None
    fig, ax = plt.subplots(figsize=(10, 0.26 * len(cases) + 0.85))
    xs: list[float] = [0.0, margin_points]
    for y, c in enumerate(cases):
        e = c.estimate
        assert e is not None
        dot_interval(ax, e.value, y, e.low, e.high, VERDICT_COLOURS[str(c.verdict.outcome)],
                     size=6)
        xs += [v for v in (e.low, e.high) if v is not None]
        if c.mde is not None:
            ax.plot([c.mde], [y], marker="D", mfc="none", mec="#555555", ms=5, ls="none")
            xs.append(c.mde)
        p = near_threshold(c)
        near = f", near its threshold (p = {p:.3f})" if p is not None else ""
        ax.annotate(f"{c.verdict.outcome}{near}", xy=(1.01, y), xycoords=("axes fraction", "data"),
                    va="center", fontsize=8, color=VERDICT_COLOURS[str(c.verdict.outcome)])
    ax.axvline(0.0, color="black", lw=1)
    ax.axvline(margin_points, color="#777777", ls="--", lw=1)
    ax.set_xlim(*zoomed(xs, pad=0.1))
    ax.set_yticks(range(len(cases)), [c.name for c in cases], fontsize=8)
    ax.set_ylim(len(cases) - 0.5, -0.5)
    ax.set_xlabel(f"accuracy points, paired over seeds (95% interval); dashed: the smallest gain "
                  f"of interest, +{margin_points:g}; ◇ MDE (80% power)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("The pre-registered primary comparison: treatment − reference", fontsize=9,
                 loc="left")
    height = fig.get_size_inches()[1]
    fig.subplots_adjust(left=0.34, right=0.68, top=1 - 0.3 / height, bottom=0.55 / height)
    return png(fig)


def figures(groups: Mapping[str, Any], rows: Sequence[ClaimRow], study: Mapping[str, Any],
            margin_points: float) -> dict[str, bytes]:
    """The first screen's figures that have data: ``accuracy`` and ``primary``."""
    drawn = {"accuracy": accuracy_figure(groups, study),
             "primary": forest_figure(rows, margin_points)}
    return {k: v for k, v in drawn.items() if v is not None}
