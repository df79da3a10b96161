"""What every report figure shares. A figure is a declaration: a list of :class:`Panel`, each a
list of :class:`Line` (points or curves, with error bars or a band) and :class:`Ref` (a reference
line or band), with its title, labels and scales; :func:`figure` draws it. The figures themselves
live beside the claims they illustrate, in :mod:`infonce_lab.report.sections`; a one-off (a
histogram, tick labels, an annotation) goes in a panel's ``extra``."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from infonce_lab.params import Configuration, RunId  # noqa: E402

__all__ = ["plt"]

def png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def dress(ax: plt.Axes, title: str | None = None, x: str | None = None, y: str | None = None,
          xscale: str | None = None, yscale: str | None = None, size: float = 10) -> plt.Axes:
    """An axis's title (``size`` points), axis labels and scales in one call; a scale "log2" is a
    log scale of base 2."""
    if title is not None:
        ax.set_title(title, fontsize=size)
    if x is not None:
        ax.set_xlabel(x)
    if y is not None:
        ax.set_ylabel(y)
    for scale, setter in ((xscale, ax.set_xscale), (yscale, ax.set_yscale)):
        if scale == "log2":
            setter("log", base=2)
        elif scale is not None:
            setter(scale)
    return ax


def group_mean(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Mean over seeds of step-aligned curves (runs of one configuration share their steps)."""
    merged = pd.concat([f.set_index("step")[f.columns[-1]] for f in frames], axis=1)
    return merged.mean(axis=1).rename("value").reset_index()


def by_group(curves: dict[str, dict[str, pd.DataFrame]], name: str) -> dict[str, pd.DataFrame]:
    groups: dict[str, list[pd.DataFrame]] = {}
    for run, frames in curves.items():
        if name in frames:
            groups.setdefault(RunId.parse(run).config.to_str(), []).append(frames[name])
    return {g: group_mean(fs) for g, fs in groups.items()}


Curves = dict[str, pd.DataFrame]  # label -> DataFrame(step, value)


def short_labels(labels: list[str]) -> dict[str, str]:
    """Drop the dash-separated prefix every label shares (e.g. ``digits-resnet_digits-``)."""
    parts = [lab.split("-") for lab in labels]
    k = 0
    while parts and all(len(p) > k + 1 and p[k] == parts[0][k] for p in parts):
        k += 1
    return {lab: "-".join(p[k:]) for lab, p in zip(labels, parts, strict=True)}


def panels(panels: list[tuple[str, Curves]], columns: int = 2) -> bytes:
    """One axis per (title, {label: curve}) on a grid of ``columns``; one shared legend below,
    its labels without the prefix they all share."""
    n_rows = -(-len(panels) // columns)
    n_cols = min(columns, len(panels))
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(5.2 * n_cols, 3.4 * n_rows), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, (title, series) in zip(axes.flat, panels, strict=False):
        for label, df in sorted(series.items()):
            (line,) = ax.plot(df["step"], df["value"], lw=1.2)
            handles.setdefault(label, line)
            line.set_color(handles[label].get_color())
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    short = short_labels(list(handles))
    ncol = min(3, max(1, len(handles)))
    rows = -(-len(handles) // ncol)
    fig.legend(list(handles.values()), [short[h] for h in handles], fontsize=8,
               loc="lower center", ncol=ncol)
    fig.tight_layout(rect=(0, min(0.45, (0.035 * rows + 0.02) / n_rows * 1.6), 1, 1))
    return png(fig)


def floats(rows: list[dict[str, Any]], key: str) -> list[float]:
    """Column of plot rows as floats; a fit that failed (None) becomes a gap (NaN)."""
    return [float("nan") if r.get(key) is None else float(r[key]) for r in rows]


def short_label(group: str, groups: list[str]) -> str:
    """Drop the dataset-backbone prefix when every group shares it: legends stay short."""
    configs = [Configuration.parse(g) for g in groups]
    if len({(c.dataset, c.model) for c in configs}) == 1:
        c = Configuration.parse(group)
        return f"{c.loss}/{c.schedule}"
    return group


def group_styles(groups: list[str]) -> dict[str, dict[str, Any]]:
    """Colour by loss, line style by schedule: nine lines stay tellable apart."""
    configs = {g: Configuration.parse(g) for g in groups}
    losses = sorted({c.loss for c in configs.values()})
    schedules = sorted({c.schedule for c in configs.values()})
    colours = plt.get_cmap("tab10").colors
    dashes = ["-", "--", ":", "-."]
    return {g: {"color": colours[losses.index(c.loss) % len(colours)],
                "linestyle": dashes[schedules.index(c.schedule) % len(dashes)]}
            for g, c in configs.items()}


def epoch_series(group: dict[str, Any], key: str) -> tuple[list[int], list[float], list[float]]:
    """(epochs, means, ci95 half-widths or 0) of one metric over a group's diagnosed epochs."""
    xs, means, halves = [], [], []
    for epoch in sorted(int(e) for e in group["by_epoch"]):
        m = group["by_epoch"][str(epoch)].get(key)
        if m is not None:
            xs.append(epoch)
            means.append(m["mean"])
            halves.append(m["ci95"] or 0.0)
    return xs, means, halves


def trap_curve(curve: dict[str, Any], log_t: bool = True,
               ) -> tuple[list[float], list[float], list[float], list[float]]:
    """(t, P_trap, Wilson low, Wilson high) of a simulated trap curve; for a log time axis
    (``log_t``) only t > 0, as it has no t = 0."""
    keep = [i for i, t in enumerate(curve["t"]) if t > 0 or not log_t]
    lo, hi = curve["trap_ci"]
    t, p, lo, hi = ([seq[i] for i in keep] for seq in (curve["t"], curve["p_trap"], lo, hi))
    return t, p, lo, hi


def sim_figures(sims: Mapping[str, dict[str, Any]],
                drawers: Mapping[str, Mapping[str, Callable[[dict[str, Any]], bytes | None]]],
                ) -> dict[str, bytes]:
    """Every simulation figure whose experiment has a file, keyed by figure name. A file written
    by an older simulate stage lacks keys a figure reads: that figure is left out with a note
    (the section's rows say to re-run the experiment)."""
    out: dict[str, bytes] = {}
    for exp, figs in drawers.items():
        if exp not in sims:
            continue
        for name, draw in figs.items():
            try:
                image = draw(sims[exp])
            except KeyError as e:
                plt.close("all")
                print(f"note: reports/sims/{exp}.json has no {e}; figure {name} omitted "
                      f"(re-run simulate@{exp})")
                continue
            if image is not None:
                out[name] = image
    return out


# ------------------------------------------------------------------ the panels' shared vocabulary
# Every figure colours a loss the same way, draws an estimate as a dot with its 95% interval (never
# a bar from 0: accuracies of 0.94 and 0.97 must look different) and a baseline as a labelled line.
BASELINE_STYLES: dict[str, dict[str, Any]] = {
    "raw_pixels": {"color": "#555555", "linestyle": "--", "label": "raw pixels"},
    "random_init": {"color": "#d95f02", "linestyle": ":", "label": "random init"},
}
VERDICT_COLOURS = {"reproduced": "#0a7d22", "not reproduced": "#b00020",
                   "inconclusive": "#a36b00", "not run": "#777777", "not testable here": "#777777"}


def loss_colours(losses: Iterable[str]) -> dict[str, Any]:
    """One colour per loss, in the order given (the study's), the same in every figure."""
    colours = plt.get_cmap("tab10").colors
    return {loss: colours[i % len(colours)] for i, loss in enumerate(dict.fromkeys(losses))}


def dot_interval(ax: plt.Axes, x: float, y: float, low: float | None, high: float | None,
                 colour: Any, marker: str = "o", size: float = 5) -> None:
    """An estimate as a dot and its interval as a horizontal whisker (no whisker: no interval)."""
    if low is not None and high is not None:
        ax.hlines(y, low, high, color=colour, lw=1.6)
    ax.plot([x], [y], marker=marker, color=colour, ms=size, ls="none")


def zoomed(values: Iterable[float], pad: float = 0.08, bounds: tuple[float, float] | None = None
           ) -> tuple[float, float]:
    """Axis limits around the data (``pad`` of its span each side), clipped to ``bounds``."""
    vals = [v for v in values if v == v]
    lo, hi = min(vals), max(vals)
    span = (hi - lo) or abs(hi) or 1.0
    lo, hi = lo - pad * span, hi + pad * span
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return lo, hi


def reference_line(ax: plt.Axes, x: float, kind: str, limits: tuple[float, float]) -> None:
    """A baseline as a vertical line; outside the zoomed ``limits``, an arrow at the edge with
    its value, so the axis stays on the data and the baseline stays on the figure."""
    style = BASELINE_STYLES[kind]
    if limits[0] <= x <= limits[1]:
        ax.axvline(x, color=style["color"], ls=style["linestyle"], lw=1.2)
        return
    left = x < limits[0]
    ax.annotate(f"{'← ' if left else ''}{style['label']} {x:.2f}{'' if left else ' →'}",
                xy=(0.01 if left else 0.99, 0.01), xycoords="axes fraction",
                ha="left" if left else "right", va="bottom", fontsize=7, color=style["color"],
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})


# ------------------------------------------------------------------------ figures as declarations
@dataclass(frozen=True)
class Line:
    """Points or a curve: ``fmt`` as matplotlib's; ``yerr`` (half-widths, or [below, above])
    draws error bars; ``band`` (low, high) a shaded interval in the line's colour; ``style``:
    further matplotlib keywords (color, ms, lw, mfc …)."""

    x: Sequence[float]
    y: Sequence[float]
    fmt: str = "o-"
    label: str | None = None
    yerr: Any = None
    band: tuple[Sequence[float], Sequence[float]] | None = None
    style: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Ref:
    """A reference: a horizontal line at ``at`` or a band over (low, high); vertical with
    ``vertical``. Its default look is a thin dotted black line (a band: light grey)."""

    at: float | tuple[float, float]
    label: str | None = None
    vertical: bool = False
    style: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One axis: what it draws, its title, axis labels and scales ("log2": base 2), limits, a
    legend of ``legend`` points (None: no legend) in ``legend_cols`` columns, its grid (``which``
    ticks; None: no grid) and ``extra``, a function of the axis for what has no declaration."""

    lines: Sequence[Line] = ()
    refs: Sequence[Ref] = ()
    title: str | None = None
    x: str | None = None
    y: str | None = None
    xscale: str | None = None
    yscale: str | None = None
    xlim: tuple[float | None, float | None] | None = None
    ylim: tuple[float | None, float | None] | None = None
    legend: float | None = 7
    legend_cols: int = 1
    grid: str | None = "both"
    title_size: float = 10
    extra: Callable[[plt.Axes], None] | None = None


def draw(ax: plt.Axes, panel: Panel) -> None:
    """One panel on ``ax``."""
    for line in panel.lines:
        if line.yerr is not None:
            drawn = ax.errorbar(line.x, line.y, yerr=line.yerr, fmt=line.fmt, capsize=2,
                                label=line.label, **line.style)
            colour = drawn.lines[0].get_color()
        else:
            (drawn,) = ax.plot(line.x, line.y, line.fmt, label=line.label, **line.style)
            colour = drawn.get_color()
        if line.band is not None:
            ax.fill_between(line.x, *line.band, color=colour, alpha=0.15, lw=0)
    for ref in panel.refs:
        if isinstance(ref.at, tuple):
            span = ax.axvspan if ref.vertical else ax.axhspan
            span(*ref.at, label=ref.label, **{"color": "#999999", "alpha": 0.2, "lw": 0,
                                              **ref.style})
        else:
            rule = ax.axvline if ref.vertical else ax.axhline
            rule(ref.at, label=ref.label, **{"color": "k", "ls": ":", "lw": 1, **ref.style})
    dress(ax, panel.title, panel.x, panel.y, panel.xscale, panel.yscale, panel.title_size)
    if panel.xlim is not None:
        ax.set_xlim(*panel.xlim)
    if panel.ylim is not None:
        ax.set_ylim(*panel.ylim)
    if panel.extra is not None:
        panel.extra(ax)
    if panel.grid is not None:
        ax.grid(alpha=0.3, which=panel.grid)
    if panel.legend is not None and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=panel.legend, ncol=panel.legend_cols)


def figure(panels: Sequence[Panel], size: tuple[float, float], *, rows: int = 1,
           title: str | None = None, shared_legend: bool = False, tight: bool = True,
           **subplots: Any) -> bytes:
    """The PNG of ``panels`` on a grid of ``rows`` (filled row by row). ``shared_legend``: every
    label once, below the panels (the panels' own legends off); ``subplots``: matplotlib's
    (sharex, sharey …)."""
    cols = -(-len(panels) // rows)
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False, **subplots)
    for ax, panel in zip(axes.flat, panels, strict=True):
        draw(ax, panel)
    if title is not None:
        fig.suptitle(title, fontsize=9)
    bottom = 0.0
    if shared_legend:  # in declared order: the lines, then the references
        handles: dict[str, Any] = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
            if ax.get_legend() is not None:
                ax.get_legend().remove()
        labels = list(dict.fromkeys(
            [m.label for p in panels for m in p.lines if m.label in handles]
            + [m.label for p in panels for m in p.refs if m.label in handles]))
        ncol = min(4, len(labels)) or 1
        fig.legend([handles[k] for k in labels], labels, fontsize=9, loc="lower center",
                   ncol=ncol, frameon=False)
        bottom = 0.075 * (-(-len(labels) // ncol)) + 0.02
    if tight:
        fig.tight_layout(rect=(0, bottom, 1, 1))
    return png(fig)


def interval(ests: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """``y`` and ``yerr`` of results-file estimates, for a :class:`Line` (nan where undefined):
    values and asymmetric error bars."""
    nan = float("nan")
    y = [nan if not e or e.get("value") is None else e["value"] for e in ests]
    lo = [nan if not e or e.get("low") is None else v - e["low"] for v, e in zip(y, ests, strict=True)]
    hi = [nan if not e or e.get("high") is None else e["high"] - v for v, e in zip(y, ests, strict=True)]
    return {"y": y, "yerr": [lo, hi]}
