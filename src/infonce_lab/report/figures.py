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


# ------------------------------------------------------------------------ WEINCE tail diagnostics
def _floats(rows: list[dict[str, Any]], key: str) -> list[float]:
    """Column of plot rows as floats; a fit that failed (None) becomes a gap (NaN)."""
    return [float("nan") if r.get(key) is None else float(r[key]) for r in rows]


def _short_label(group: str, groups: list[str]) -> str:
    """Drop the dataset-backbone prefix when every group shares it: legends stay short."""
    if len({g.rsplit("-", 2)[0] for g in groups}) == 1:
        return "/".join(group.split("-")[-2:])
    return group


def _group_styles(groups: list[str]) -> dict[str, dict[str, Any]]:
    """Colour by loss, line style by schedule: nine lines stay tellable apart."""
    losses = sorted({g.split("-")[-2] for g in groups})
    schedules = sorted({g.split("-")[-1] for g in groups})
    colours = plt.get_cmap("tab10").colors
    dashes = ["-", "--", ":", "-."]
    return {g: {"color": colours[losses.index(g.split("-")[-2]) % len(colours)],
                "linestyle": dashes[schedules.index(g.split("-")[-1]) % len(dashes)]}
            for g in groups}


def _epoch_series(group: dict[str, Any], key: str) -> tuple[list[int], list[float], list[float]]:
    """(epochs, means, ci95 half-widths or 0) of one metric over a group's diagnosed epochs."""
    xs, means, halves = [], [], []
    for epoch in sorted(int(e) for e in group["by_epoch"]):
        m = group["by_epoch"][str(epoch)].get(key)
        if m is not None:
            xs.append(epoch)
            means.append(m["mean"])
            halves.append(m["ci95"] or 0.0)
    return xs, means, halves


def tails_over_training(tails: dict[str, Any], placement: str) -> bytes:
    """ξ̂, λ̂ and held-out Δ̄ per configuration over training, ±95% t-interval over seeds, against
    the paper's values (a line for ξ, bands for λ and Δ̄)."""
    from infonce_lab.report.render import PAPER_DELTA, PAPER_LAMBDA, PAPER_XI

    groups = list(tails)
    styles = _group_styles(groups)
    panels = [("pot.xi", "GPD shape ξ̂ of negative cosines", PAPER_XI),
              (f"link.{placement}.lambda_hat", f"λ̂, H1 blend (1/τ {placement})", PAPER_LAMBDA),
              (f"link.{placement}.delta_mean", r"held-out $\bar{\Delta}$ (nats/anchor)", PAPER_DELTA)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, (key, title, paper) in zip(axes, panels, strict=True):
        for g in groups:
            xs, means, halves = _epoch_series(tails[g], key)
            ax.plot(xs, means, marker="o", ms=3, lw=1.3, label=_short_label(g, groups), **styles[g])
            lo = [m - h for m, h in zip(means, halves, strict=True)]
            hi = [m + h for m, h in zip(means, halves, strict=True)]
            ax.fill_between(xs, lo, hi, color=styles[g]["color"], alpha=0.08, lw=0)
        if isinstance(paper, tuple):
            ax.axhspan(*paper, color="#999999", alpha=0.2, label="paper's range")
        else:
            ax.axhline(paper, color="k", ls=":", lw=1.2, label="paper's value")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    # the groups and the paper's line from the first panel, the paper's band once from the second
    handles, labels = axes[0].get_legend_handles_labels()
    band_h, band_l = axes[1].get_legend_handles_labels()
    handles, labels = handles + band_h[-1:], labels + band_l[-1:]
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=min(6, len(labels)))
    fig.tight_layout(rect=(0, 0.06 * ((len(labels) + 5) // 6) + 0.02, 1, 1))
    return _png(fig)


def gpd_fit(pot: dict[str, Any], title: str) -> bytes:
    """One run's POT fit: exceedance density against the GPD and the ξ = 0 (exponential) fit,
    the QQ plot, and ξ̂ across threshold quantiles."""
    from infonce_lab.report.render import PAPER_XI

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    d = pot["density"]
    ax = axes[0]
    empirical = [v if v > 0 else float("nan") for v in d["empirical"]]  # log axis: no zeros
    ax.plot(d["x"], empirical, "o", ms=3, color="#333333", label="empirical")
    ax.plot(d["x"], d["gpd"], lw=1.5, color="#1f77b4", label="GPD fit")
    ax.plot(d["x"], d["exponential"], lw=1.2, ls="--", color="#d62728", label="exponential (ξ = 0)")
    ax.set_yscale("log")
    ax.set_xlabel(f"exceedance s − u  (u = {pot['u']:.3f})")
    ax.set_title("exceedance density", fontsize=10)
    ax.legend(fontsize=7)
    ax = axes[1]
    qq = pot["qq"]
    ax.plot(qq["gpd"], qq["empirical"], "o", ms=3, color="#1f77b4")
    top = max(max(qq["gpd"]), max(qq["empirical"]))
    ax.plot([0, top], [0, top], color="k", lw=0.8, ls=":")
    ax.set_xlabel("GPD quantile")
    ax.set_ylabel("empirical quantile")
    ax.set_title("QQ plot of exceedances", fontsize=10)
    ax = axes[2]
    stab = pot["stability"]
    ax.plot(_floats(stab, "q"), _floats(stab, "xi"), marker="o", color="#1f77b4", label="ξ̂")
    for r in stab:
        ax.annotate(f"n={r['n']}", (r["q"], r["xi"]), fontsize=6, xytext=(2, 4),
                    textcoords="offset points")
    ax.axhline(PAPER_XI, color="k", ls=":", lw=1.2, label="paper's ξ̂")
    ax.axhline(0.0, color="#999999", lw=0.8)
    ax.set_xlabel("threshold quantile q")
    ax.set_title("ξ̂ stability across thresholds", fontsize=10)
    ax.legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return _png(fig)


def link_ablations(seeds: dict[str, dict[str, Any]]) -> bytes:
    """λ̂ and held-out Δ̄ against the hardness k (easier negatives added) and the mining pool size,
    one line per seed (``seeds``: run id -> final-epoch plot data)."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4), sharex="col")
    specs = [("hardness", "k", "choice set: positive + k hardest negatives"),
             ("pool_size", "pool", "hard set mined from a pool of this size")]
    for col, (section, x, xlabel) in enumerate(specs):
        for run, block in seeds.items():
            rows = block.get(section, [])
            label = f"seed {run.rsplit('-', 1)[-1]}"
            axes[0, col].plot(_floats(rows, x), _floats(rows, "lambda_hat"), marker="o", label=label)
            axes[1, col].plot(_floats(rows, x), _floats(rows, "delta_mean"), marker="o", label=label)
        for row, ylabel in enumerate(("λ̂", r"held-out $\bar{\Delta}$ (nats/anchor)")):
            ax = axes[row, col]
            ax.set_xscale("log", base=2)
            if row == 1:
                ax.set_xlabel(xlabel, fontsize=8)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
    axes[0, 0].set_title(r"hardness ablation (paper: λ̂, $\bar{\Delta}$ fall with k)", fontsize=10)
    axes[0, 1].set_title("pool-size ablation (paper: λ̂ rises with pool)", fontsize=10)
    placement = next(iter(seeds.values())).get("ablation_placement", "?")
    axes[0, 0].legend(fontsize=7, title=f"1/τ {placement}", title_fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _active_bins(edges: list[float], *masses: list[float], floor: float = 1e-3) -> tuple[float, float]:
    """x-range from one bin below the first bin holding ``floor`` of any mass to the top edge."""
    first = min((i for m in masses for i, v in enumerate(m) if v >= floor), default=0)
    return edges[max(first - 1, 0)], edges[-1]


def allocation_shares(alloc: dict[str, Any], title: str) -> bytes:
    """Share of failures (risk) and of softmax / Weibit gradient mass per negative-score bin."""
    edges = alloc["bin_edges"]
    centres = [0.5 * (a + b) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    for key, label, style in (("risk", "risk: where the failures' culprits sit", "k-"),
                              ("softmax_grad", "softmax gradient mass", "C3--"),
                              ("weibit_grad", "Weibit gradient mass", "C0-")):
        ax.plot(centres, alloc[key], style, marker="o", ms=3, lw=1.3, label=label)
    ax.set_xlim(*_active_bins(edges, alloc["risk"], alloc["softmax_grad"], alloc["weibit_grad"]))
    ax.set_xlabel("negative score s (bin centre)")
    ax.set_ylabel("share per bin")
    ax.set_title(f"{title} · failure rate {alloc['failure_rate']:.2f}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _png(fig)


def noise_floor_curves(noise: dict[str, Any]) -> bytes:
    """Synthetic MSE of the log-odds estimate vs sample size: Weibit on c/n, softmax at a floor."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.loglog(noise["n"], noise["mse_weibit"], "o-", color="C0", label="Weibit MLE")
    # drawn on top in black: the Weibit points sit on it and would hide it
    ax.loglog(noise["n"], noise["theory_weibit"], ":", color="k", lw=1.5, zorder=3,
              label="Weibit theory c/n")
    ax.loglog(noise["n"], noise["mse_softmax"], "s-", color="C3", label="softmax MLE")
    ax.axhline(noise["softmax_floor"], color="C3", ls="--", lw=1, label="softmax floor")
    ax.set_xlabel("n observed winners")
    ax.set_ylabel("MSE of the log-odds")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    return _png(fig)


def tail_figures(tails: dict[str, Any], placement: str, representative: dict[str, Any] | None,
                 noise: dict[str, Any] | None) -> dict[str, bytes]:
    """Every tail-diagnostics figure whose inputs exist, keyed by figure name."""
    figures = {"tails_over_training": tails_over_training(tails, placement)}
    if representative is not None:
        title = f"{representative['run']}, epoch {representative['epoch']}"
        plots = representative["plots"]
        figures["gpd_fit"] = gpd_fit(plots["pot"], title)
        figures["link_ablations"] = link_ablations(representative["seeds"])
        figures["allocation"] = allocation_shares(plots["allocation"], title)
    if noise is not None:
        figures["noise_floor"] = noise_floor_curves(noise)
    return figures
