"""Matplotlib figures for the report, returned as PNG bytes (inlined in HTML, saved for Markdown)."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from infonce_lab.evaluation import metrics
from infonce_lab.params import Configuration, RunId

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
    headline = [m for m in metrics.METRICS if m.headline]
    for ax, metric, title in zip(axes, (m.name for m in headline), (m.title for m in headline),
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
            groups.setdefault(RunId.parse(run).config.to_str(), []).append(frames[name])
    return {g: _group_mean(fs) for g, fs in groups.items()}


Series = dict[str, pd.DataFrame]  # label -> DataFrame(step, value)


def _short_labels(labels: list[str]) -> dict[str, str]:
    """Drop the dash-separated prefix every label shares (e.g. ``digits-resnet_digits-``)."""
    parts = [lab.split("-") for lab in labels]
    k = 0
    while parts and all(len(p) > k + 1 and p[k] == parts[0][k] for p in parts):
        k += 1
    return {lab: "-".join(p[k:]) for lab, p in zip(labels, parts, strict=True)}


def _panels(panels: list[tuple[str, Series]], columns: int = 2) -> bytes:
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
    short = _short_labels(list(handles))
    ncol = min(3, max(1, len(handles)))
    rows = -(-len(handles) // ncol)
    fig.legend(list(handles.values()), [short[h] for h in handles], fontsize=8,
               loc="lower center", ncol=ncol)
    fig.tight_layout(rect=(0, min(0.45, (0.035 * rows + 0.02) / n_rows * 1.6), 1, 1))
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
        schedule = RunId.parse(run).config.schedule
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
    configs = [Configuration.parse(g) for g in groups]
    if len({(c.dataset, c.model) for c in configs}) == 1:
        c = Configuration.parse(group)
        return f"{c.loss}/{c.schedule}"
    return group


def _group_styles(groups: list[str]) -> dict[str, dict[str, Any]]:
    """Colour by loss, line style by schedule: nine lines stay tellable apart."""
    configs = {g: Configuration.parse(g) for g in groups}
    losses = sorted({c.loss for c in configs.values()})
    schedules = sorted({c.schedule for c in configs.values()})
    colours = plt.get_cmap("tab10").colors
    dashes = ["-", "--", ":", "-."]
    return {g: {"color": colours[losses.index(c.loss) % len(colours)],
                "linestyle": dashes[schedules.index(c.schedule) % len(dashes)]}
            for g, c in configs.items()}


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
    from infonce_lab.report.sections.weince_tails import PAPER_DELTA, PAPER_LAMBDA, PAPER_XI

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
    from infonce_lab.report.sections.weince_tails import PAPER_XI

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


def repulsion_curves(tails: dict[str, Any]) -> bytes | None:
    """Wang–Isola essay §5: the share of InfoNCE's repulsive gradient on each anchor's hardest 1%
    of negatives against τ, per configuration at its final epoch (mean over seeds, ±95%
    t-interval over seeds), with the uniform share k/M and the majority line of the rule.
    None when the diagnose files carry no repulsion shares."""
    from infonce_lab.report.sections.weince_tails import REPULSION_MAJORITY

    groups = [g for g in tails if any(k.startswith("repulsion.share.")
                                      for k in tails[g]["by_epoch"][str(max(tails[g]["epochs"]))])]
    if not groups:
        return None
    styles = _group_styles(groups)
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    uniform = None
    for g in groups:
        m = tails[g]["by_epoch"][str(max(tails[g]["epochs"]))]
        keys = sorted((k for k in m if k.startswith("repulsion.share.")),
                      key=lambda k: float(k.rsplit("tau_", 1)[1]))
        taus = [float(k.rsplit("tau_", 1)[1]) for k in keys]
        means = [m[k]["mean"] for k in keys]
        halves = [m[k]["ci95"] or 0.0 for k in keys]
        ax.errorbar(taus, means, yerr=halves, marker="o", ms=3, lw=1.2, capsize=2,
                    label=_short_label(g, groups), **styles[g])
        uniform = (m.get("repulsion.uniform_share") or {}).get("mean", uniform)
    if uniform is not None:
        ax.axhline(uniform, color="#999999", ls="--", lw=1, label="uniform share k/M")
    ax.axhline(REPULSION_MAJORITY, color="k", ls=":", lw=1, label="majority (the rule's bound)")
    ax.set_xscale("log")
    ax.set_xlabel("τ")
    ax.set_ylabel("share on the hardest 1% of negatives")
    ax.set_title("InfoNCE repulsion concentrates as τ falls", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return _png(fig)


def tail_figures(tails: dict[str, Any], placement: str, representative: dict[str, Any] | None,
                 noise: dict[str, Any] | None) -> dict[str, bytes]:
    """Every tail-diagnostics figure whose inputs exist, keyed by figure name."""
    figures = {"tails_over_training": tails_over_training(tails, placement)}
    repulsion = repulsion_curves(tails)
    if repulsion is not None:
        figures["repulsion"] = repulsion
    if representative is not None:
        title = f"{representative['run']}, epoch {representative['epoch']}"
        plots = representative["plots"]
        figures["gpd_fit"] = gpd_fit(plots["pot"], title)
        figures["link_ablations"] = link_ablations(representative["seeds"])
        figures["allocation"] = allocation_shares(plots["allocation"], title)
    if noise is not None:
        figures["noise_floor"] = noise_floor_curves(noise)
    return figures


# ------------------------------------------------------------------------- sentence embeddings
def text_figure(text: dict[str, Any], curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """Left: STS Spearman per configuration (95% t-interval over seeds); right: training loss."""
    groups = text["groups"]
    names = list(groups)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 0.5 * len(names) + 2.2))
    colors = {"trained": "#1f77b4", "untuned": "#ff7f0e", "tfidf": "#7f7f7f"}
    means = [groups[g]["sts.test_spearman"]["mean"] for g in names]
    errs = [groups[g]["sts.test_spearman"]["ci95"] or 0.0 for g in names]
    ax.barh(range(len(names)), means, xerr=errs, capsize=3,
            color=[colors.get(groups[g]["kind"], "#333") for g in names])
    for i, m in enumerate(means):
        ax.text(m, i, f" {m:.1f}", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("Spearman × 100 (cosine vs gold)")
    ax.set_title("STS test Spearman", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    for label, series in _by_group(curves, "loss").items():
        ax2.plot(series["step"], series["value"], label=label.split("-", 1)[-1])
    ax2.set_xlabel("step")
    ax2.set_ylabel("training loss")
    if curves:  # InfoNCE at τ = 0.05 sits orders of magnitude below WEINCE
        ax2.set_yscale("log")
    ax2.set_title("Unsupervised SimCSE: loss per step (mean over seeds)", fontsize=10)
    if curves:
        ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    return _png(fig)


# ---------------------------------------------------------------------------------- simulations
def _positive_t(curve: dict[str, Any]) -> tuple[list[float], list[float], list[float], list[float]]:
    """(t, P_trap, Wilson low, Wilson high) at t > 0: the log time axis has no t = 0."""
    keep = [i for i, t in enumerate(curve["t"]) if t > 0]
    lo, hi = curve["trap_ci"]
    return ([curve["t"][i] for i in keep], [curve["p_trap"][i] for i in keep],
            [lo[i] for i in keep], [hi[i] for i in keep])


def _trap_band(ax: plt.Axes, curve: dict[str, Any], color: Any, label: str, **style: Any) -> None:
    t, p, lo, hi = _positive_t(curve)
    ax.plot(t, p, color=color, lw=1.2, label=label, **style)
    ax.fill_between(t, lo, hi, color=color, alpha=0.15, lw=0)


def _ci_bar(ax: plt.Axes, x: float, est: dict[str, Any] | None, **style: Any) -> None:
    """One estimate (results-file convention) as a point with its 95% interval; nothing if
    undefined."""
    if not est or est.get("value") is None:
        return
    lo, hi = est.get("low"), est.get("high")
    yerr = None if lo is None or hi is None else [[est["value"] - lo], [hi - est["value"]]]
    ax.errorbar([x], [est["value"]], yerr=yerr, capsize=3, **style)


def s0_annealing(s0: dict[str, Any]) -> bytes:
    """S0 under annealing: P_trap(t) per schedule (Wilson 95% band) at dt (solid) and dt/2
    (dashed), beside the Gibbs trap mass at β(t) (dotted): log schedules on log–log axes — a
    decay that follows the Gibbs mass is a straight line there — and the fast schedules."""
    scheds = s0["schedules"]
    conv = s0["convergence"]
    log_names = [n for n, e in scheds.items() if e["kind"] == "log"]
    fast_names = [n for n, e in scheds.items() if e["kind"] == "fast"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    cmap = plt.get_cmap("viridis")
    panels = ((axes[0], log_names, True), (axes[1], fast_names, False))
    for ax, names, loglog in panels:
        for i, name in enumerate(names):
            e = scheds[name]
            colour = cmap(i / max(len(names) - 1, 1)) if loglog else f"C{i}"
            label = f"c/c* = {e['c_ratio']:g}" if loglog else name
            _trap_band(ax, e["curve"]["step"], colour, label)
            half = e["curve"]["half_step"]
            ax.plot(*_positive_t(half)[:2], color=colour, lw=0.9, ls="--")
            t = [x for x in e["curve"]["step"]["t"] if x > 0]
            ax.plot(t, e["gibbs_curve"][-len(t):], color=colour, lw=0.9, ls=":")
        ax.plot([], [], "k--", lw=0.9, label=f"half step (dt = {conv['dt_half']:g})")
        ax.plot([], [], "k:", lw=0.9, label="Gibbs trap mass at β(t)")
        ax.set_xscale("log")
        ax.set_xlabel("time t")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, ncol=2 if loglog else 1)
    axes[0].set_yscale("log")
    axes[0].set_ylim(1e-3, 1.05)
    axes[1].set_ylim(-0.02, 1.02)
    axes[0].set_ylabel(f"P_trap(t) (Wilson 95% band, dt = {conv['dt']:g})")
    axes[0].set_title(f"log schedules β = c·ln(t+K), c* = {s0['c_star']:.3f}", fontsize=10)
    axes[1].set_title("fast schedules (held once no crossing is expected)", fontsize=10)
    fig.suptitle(f"S0, {s0['chains']} chains per schedule, {s0['dynamics']} dynamics", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def s0_rates(s0: dict[str, Any]) -> bytes:
    """S0 escape rates: at fixed β against Kramers' A·e^{−βΔE}; and the regime statistics per
    log schedule — φ (share of the Gibbs mass's decline followed), the hazard slope over −c/c* —
    at dt and dt/2 with 95% intervals, against their rules' boundaries."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.0))
    arr = s0["arrhenius"]
    ax = axes[0]
    for which, mk in (("step", "o"), ("half_step", "s")):
        rates = arr["rates"][which]
        bs = [float(b) for b, r in rates.items() if r["rate"]]
        ax.plot(bs, [rates[f"{b:g}"]["rate"] for b in bs], mk, mfc="none",
                label=f"measured ({which.replace('_', ' ')})")
    bs = [float(b) for b in arr["rates"]["step"]]
    ax.plot(bs, [arr["rates"]["step"][f"{b:g}"]["kramers"] for b in bs], "k:",
            label="Kramers A·exp(−β·ΔE)")
    ax.set_yscale("log")
    ax.set_xlabel("β (fixed)")
    ax.set_ylabel("escape rate out of the trap")
    ax.legend(fontsize=7)
    logs = [e for e in s0["schedules"].values() if e["kind"] == "log"]
    for ax, key, line, title in ((axes[1], "follow", 0.5, "φ: share of the Gibbs decline followed"),
                                 (axes[2], "hazard", 1.0, "hazard slope / (−c/c*)")):
        for which, dx, colour in (("step", -0.03, "C0"), ("half_step", 0.03, "C1")):
            for e in logs:
                pair = e.get(key) or {}
                est = pair.get(which)
                if key == "hazard":
                    est = (est or {}).get("ratio")
                _ci_bar(ax, e["c_ratio"] * (1 + dx), est, fmt="o", color=colour, ms=4)
            ax.plot([], [], "o", color=colour, label=which.replace("_", " "))
        ax.axhline(line, color="k", lw=0.8, ls=":")
        ax.axvline(1.0, color="#999999", lw=0.8)
        ax.set_xscale("log")
        ratios = [e["c_ratio"] for e in logs]
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
        ax.minorticks_off()
        ax.set_xlabel("c/c*")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    axes[2].axhspan(0.85, 1.15, color="#cccccc", alpha=0.4, lw=0)
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _png(fig)


def s0_fixed_beta(s0: dict[str, Any]) -> bytes:
    """S0 at fixed β: time-averaged trap occupancy minus the Gibbs mass of each dynamics' law
    (both starts, dt and dt/2, with the ±margin band); and SGD's error against η with the
    Richardson limits at η → 0."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.0))
    ax = axes[0]
    cases = s0["ergodicity"]["cases"]
    for i, c in enumerate(cases.values()):
        for which, dx, colour in (("step", -0.1, "C0"), ("half_step", 0.1, "C1")):
            _ci_bar(ax, i + dx, c["difference"][which], fmt="o", color=colour, ms=4)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{c['dynamics']} β={c['beta']:g}\nfrom {c['start']}"
                        for c in cases.values()], fontsize=7)
    ax.axhspan(-0.02, 0.02, color="#cccccc", alpha=0.4, lw=0)
    ax.axhline(0.0, color="k", lw=0.8, ls=":")
    ax.set_ylabel("time average − Gibbs trap mass")
    ax.set_title("fixed-β ergodicity (blue: dt, orange: dt/2)", fontsize=10)
    ax = axes[1]
    sgd = s0["sgd"]
    for k, r in sgd["runs"].items():
        colour = "C1" if "half-step" in k else "C0"
        _ci_bar(ax, r["eta"], r["error"], fmt="o", color=colour, ms=4)
    etas = sorted({r["eta"] for r in sgd["runs"].values()})
    ax.plot(etas, [next(r for r in sgd["runs"].values() if r["eta"] == e)
                   ["predicted_error_gradient_noise"] for e in etas], "k:",
            label="gradient-noise heating alone")
    for which, x, colour in (("step", -0.002, "C0"), ("half_step", 0.002, "C1")):
        _ci_bar(ax, x, sgd["limit"][which], fmt="D", color=colour, ms=5)
    ax.axhspan(-0.02, 0.02, color="#cccccc", alpha=0.4, lw=0)
    ax.axhline(0.0, color="k", lw=0.8, ls=":")
    ax.set_xlabel("η (diamonds at 0: Richardson limits)")
    ax.set_ylabel("SGD trap mass − Gibbs mass of exp(−β²U)")
    ax.set_title(f"SGD with injected noise, β = {sgd['beta']:g}", fontsize=10)
    ax.legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def s1_trap_curves(s1: dict[str, Any]) -> bytes:
    """S1: P_trap(t) under P1 (literal SDE) and P2 (normalised drift), one panel per schedule; the
    run at the step (solid, Wilson band) and at half the step (dashed); P1 ends at its own
    horizon. Log-time axis from the first check (the checks are log-spaced)."""
    runs = s1["dynamics"]
    half = s1.get("half_step") or {}
    names = [r["name"] for r in next(iter(runs.values()))]
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.4), sharey=True,
                             squeeze=False)
    log_t = "half_step" in s1  # the fixed-step files checked on a linear grid from t = 0
    for ax, name in zip(axes[0], names, strict=True):
        for i, (dyn, rows) in enumerate(runs.items()):
            curve = next(r for r in rows if r["name"] == name)
            keep = [k for k, t in enumerate(curve["t"]) if t > 0 or not log_t]
            t = [curve["t"][k] for k in keep]
            lo, hi = ([curve["trap_ci"][j][k] for k in keep] for j in (0, 1))
            ax.plot(t, [curve["p_trap"][k] for k in keep], "o-", ms=2.5, color=f"C{i}", lw=1.3,
                    label=f"{dyn}, step")
            ax.fill_between(t, lo, hi, color=f"C{i}", alpha=0.15, lw=0)
            hrow = next((r for r in half.get(dyn, []) if r["name"] == name), None)
            if hrow is not None:
                hk = [k for k, tt in enumerate(hrow["t"]) if tt > 0]
                ax.plot([hrow["t"][k] for k in hk], [hrow["p_trap"][k] for k in hk], "--",
                        color=f"C{i}", lw=1.1, label=f"{dyn}, half step")
        if log_t:
            ax.set_xscale("log")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("time t")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3, which="both")
    axes[0, 0].set_ylabel("P_trap(t) (Wilson 95% band)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"S1, {s1['chains']} chains per setting, c* = {s1['barrier']['c_star']:.2f}",
                 fontsize=9)
    fig.tight_layout()
    return _png(fig)


def negatives_barrier(h: dict[str, Any]) -> bytes:
    """App. A.2: the interleaved trap's escape barrier of U₀ (along minimum-energy paths of F_β̄,
    at β̄ and 2β̄) against the number of negatives per anchor; 0 where it is no trap."""
    neg = h["negatives"]
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for res, marker, label in (("step", "o", f"β̄ = {neg['beta_bar']:g}"),
                               ("half_step", "s", f"β̄ = {neg['beta_bar_check']:g}")):
        pts = [(r["negatives"], r[res]["u0_barrier"]) for r in neg["rows"]
               if r[res].get("u0_barrier") is not None]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker + "-", ms=5, mfc="none", label=label)
    for r in neg["rows"]:
        if r["step"].get("is_minimum") is False:
            ax.annotate("no trap", (r["negatives"], 0.0), textcoords="offset points",
                        xytext=(0, 8), ha="center", fontsize=7)
    ax.set_xlabel("negatives per anchor (2n − 2, n pairs on S¹)")
    ax.set_ylabel("escape barrier of U₀ (κ_s = 1)")
    ax.set_title("App. A.2: ΔE of the interleaved trap", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def hessian_scaling(h: dict[str, Any]) -> bytes:
    """‖H‖ against β: non-optimal configurations with β and β² guides; the random configurations'
    fitted slopes; global minimizers, where ‖H‖ → 0."""
    fixed = [c for c in h["configs"] if c["u0"] > 0]
    minima = [c for c in h["configs"] if c["u0"] <= 0]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    for i, c in enumerate(fixed):
        ax.loglog(c["betas"], c["norm_full"], "o-", ms=3, color=f"C{i}", label=c["name"])
    if fixed:
        # guides through the lowest and the highest curve's last point, so that neither hides one
        b = fixed[0]["betas"]
        ends = [c["norm_full"][-1] for c in fixed]
        ax.loglog(b, [min(ends) * x / b[-1] for x in b], "k:", lw=1, label="∝ β")
        ax.loglog(b, [max(ends) * (x / b[-1]) ** 2 for x in b], "k--", lw=0.8, label="∝ β²")
    ax.set_title("non-optimal configurations", fontsize=10)
    ax = axes[1]
    per = h["random"]["per_config"]
    top, whole = [r["slope_full_top"] for r in per], [r["slope_full"] for r in per]
    asym = (h.get("asymptotic") or {}).get("slopes", [])
    lo, hi = min(top + whole + asym), max(top + whole + asym)
    bins = [lo + (hi - lo) * k / 40 for k in range(41)]  # shared bins: the two overlay fairly
    ax.hist(top, bins=bins, alpha=0.7, label="β 100→200")
    ax.hist(whole, bins=bins, alpha=0.5, label="whole β range")
    if asym:
        ax.hist(asym, bins=bins, alpha=0.8, histtype="step", lw=1.5, color="k",
                label="β₁→2β₁ (β₁ = max(200, 30/margin))")
    ax.axvline(1.0, color="k", ls=":", lw=1.2)
    ax.set_xlabel("slope of log‖H‖ vs log β")
    ax.set_title(f"{h['random']['count']} random non-optimal configurations", fontsize=10)
    ax = axes[2]
    for i, c in enumerate(minima):  # ‖H‖ ≈ β²·e^{−β·margin}: near-straight on a log-linear plot
        ax.semilogy(c["betas"], c["norm_full"], "o-", ms=3, color=f"C{i + len(fixed)}",
                    label=f"{c['name']} (margin {c['min_margin']:.2f})")
    ax.set_title("global minimizers: ‖H‖ → 0", fontsize=10)
    for ax in (axes[0], axes[2]):
        ax.set_xlabel("β")
        ax.set_ylabel("‖H‖₂ of L(·, β)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def wang_isola_gaps(lb: dict[str, Any]) -> bytes:
    """Wang–Isola: the gap of E[L(M)] − log M to the limit (with its leading term c₁/M) and one
    anchor's spread around it (with an M^−1/2 guide), against M, per τ."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharex=True)
    for i, w in enumerate(lb["wang_isola"]):
        m = w["m"]
        axes[0].loglog(m, [abs(g) for g in w["gap_of_expectation"]], "o-", ms=3, color=f"C{i}",
                       label=f"τ = {w['tau']:g}")
        axes[0].loglog(m, w["gap_theory_leading"], ":", color=f"C{i}", lw=1.2,
                       label=f"c₁/M (τ = {w['tau']:g})")
        axes[1].loglog(m, w["sd_per_anchor"], "o-", ms=3, color=f"C{i}", label=f"τ = {w['tau']:g}")
        sd = w["sd_per_anchor"]
        axes[1].loglog(m, [sd[-1] * (x / m[-1]) ** -0.5 for x in m], ":", color=f"C{i}", lw=1.2)
    axes[1].plot([], [], "k:", label="∝ M^−1/2")
    axes[0].set_title("|E[L(M)] − log M − limit|", fontsize=10)
    axes[1].set_title("SD over anchors of L(M) − log M − limit", fontsize=10)
    for ax in axes:
        ax.set_xlabel("negatives M")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def large_batch_consistency(lb: dict[str, Any]) -> bytes:
    """Large batch: gradient cosine and relative error against the N_ref gradient (mean ± std over
    seeds), and the value gap |L_NCE(N) − log N − log V − Ĵ_τ|, against N, per critic."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for i, g in enumerate(lb["grad_consistency"]):
        label = f"{g['critic']} (τ = {g['tau']:g})"
        axes[0].errorbar(g["n"], g["cos_mean"], yerr=g["cos_std"], fmt="o-", ms=3, capsize=2,
                         color=f"C{i}", label=label)
        axes[1].errorbar(g["n"], g["rel_err_mean"], yerr=g["rel_err_std"], fmt="o-", ms=3,
                         capsize=2, color=f"C{i}", label=label)
    axes[0].axhline(1.0, color="k", ls=":", lw=1)
    axes[0].set_title("cos(g_N, g_ref)", fontsize=10)
    axes[1].set_title("‖g_N − g_ref‖ / ‖g_ref‖", fontsize=10)
    axes[1].set_yscale("log")
    styles = {"with_positive": "-", "decoupled": "--"}
    for i, v in enumerate(lb["value_gap"]):
        for variant, ls in styles.items():
            axes[2].loglog(v["n"], v[variant]["abs_gap_mean"], marker="o", ms=3, ls=ls,
                           color=f"C{i}", label=f"{v['critic']}, {variant.replace('_', ' ')}")
    if lb["value_gap"]:
        n = lb["value_gap"][0]["n"]
        ref = max(v["decoupled"]["abs_gap_mean"][0] for v in lb["value_gap"])
        axes[2].loglog(n, [ref * (x / n[0]) ** -0.5 for x in n], "k:", lw=1, label="∝ N^−1/2")
    axes[2].set_title("|value gap| (mean over seeds)", fontsize=10)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("negatives N")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def link_theory_panels(lt: dict[str, Any], margin: float = 0.02) -> bytes:
    """WEINCE link theory: (a) Table 1 — each index model's winners against its own link and the
    controls; (b) Thm 2.4 — distance from the tail-weight law against K; (c) Prop. C.3 — the
    worst-set TV against τ̃/τ (an affine T touches 0, the others bottom out above it)."""
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.9))
    ax = axes[0]
    pl = lt["plackett_luce"]
    names = list(pl)
    series = [("match", "own link", "C0")] + [
        (k, k.replace("_", " "), f"C{i + 1}") for i, k in enumerate(
            dict.fromkeys(c for b in pl.values() for c in b["controls"]))]
    width = 0.8 / len(series)
    for j, (key, label, color) in enumerate(series):
        xs, ys, errs = [], [], []
        for i, name in enumerate(names):
            e = pl[name]["match"] if key == "match" else pl[name]["controls"].get(key)
            if e is None or e.get("value") is None:
                continue
            xs.append(i + (j - (len(series) - 1) / 2) * width)
            ys.append(max(e["value"], 1e-4))
            errs.append([[max(e["value"], 1e-4) - max(e["low"], 1e-4)],
                         [e["high"] - max(e["value"], 1e-4)]])
        if xs:
            err = [[x[0][0] for x in errs], [x[1][0] for x in errs]]
            ax.bar(xs, ys, width, yerr=err, color=color, label=label, capsize=2)
    ax.axhline(margin, color="k", ls="--", lw=1, label=f"margin {margin:g}")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("worst-set Kolmogorov distance")
    ax.set_title("(a) Table 1: winners vs closed-form link", fontsize=9)
    ax.legend(fontsize=6, ncol=2, loc="lower right")
    ax.grid(alpha=0.3, axis="y")
    ax = axes[1]
    for i, (name, block) in enumerate(lt["large_k"].items()):
        ks = sorted(int(k) for k in block["distance"])
        d = [block["distance"][str(k)] for k in ks]
        v = [x["value"] for x in d]
        ax.errorbar(ks, v, yerr=[[a - x["low"] for a, x in zip(v, d, strict=True)],
                                 [x["high"] - a for a, x in zip(v, d, strict=True)]],
                    marker="o", ms=4, capsize=3, color=f"C{i}", label=name.replace("_", " "))
    ax.axhline(margin, color="k", ls="--", lw=1, label=f"margin {margin:g}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("candidates K")
    ax.set_ylabel("distance from the tail-weight law")
    ax.set_title("(b) Thm 2.4: large K → tail weights", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    ax = axes[2]
    for key, c in lt["coordinate_mismatch"].items():
        curve = c.get("curve")
        if not curve:
            continue
        line, = ax.plot(curve["tau_tilde_over_tau"], curve["worst_tv"],
                        ls="--" if c["control"] else "-", lw=1.2, label=key)
        if c.get("tau_tilde"):  # the certified minimum, which the coarse curve may straddle
            ax.plot(c["tau_tilde"] / c["tau"], c["min_worst_tv"]["value"], "o", ms=4,
                    color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("τ̃ / τ")
    ax.set_ylabel("worst-set TV to softmax(s/τ)")
    ax.set_ylim(bottom=0)
    ax.set_title("(c) Prop. C.3: no τ̃ undoes a non-affine T", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _png(fig)


# ------------------------------------------------- population geometry (the new results files)
def _value_and_yerr(ests: list[dict[str, Any] | None]) -> tuple[list[float], list[list[float]]]:
    """Values and asymmetric error bars of results-file estimates (nan where undefined)."""
    nan = float("nan")
    val = [nan if not e or e.get("value") is None else e["value"] for e in ests]
    lo = [nan if not e or e.get("low") is None else v - e["low"] for v, e in zip(val, ests, strict=True)]
    hi = [nan if not e or e.get("high") is None else e["high"] - v for v, e in zip(val, ests, strict=True)]
    return val, [lo, hi]


def gibbs_convergence(g: dict[str, Any]) -> bytes:
    """Mass within the wells' radius against τ: the Gibbs law (± 2 Monte-Carlo s.e.) and the
    trained particles — the published curve (circles) and the bandwidth test's run (squares) — at
    the steps (open) and at twice the steps (filled), each with its 95% interval over seeds; the
    seeds of the doubled run as dots."""
    conv = g["convergence"]
    fig, ax = plt.subplots(figsize=(7.2, 4.3))
    gib = g["gibbs"]
    ax.errorbar(gib["tau"], gib["mass"], yerr=[2 * s for s in gib["se"]], fmt="k-", lw=1.6,
                capsize=2, label="Gibbs law ρ* ∝ exp(−U/τ) (± 2 MC s.e.)", zorder=3)
    blocks = [(g["published"], g["published"]["particles"], "o")]
    if g.get("bandwidth_test"):
        blocks += [(b, g["bandwidth_test"]["particles"], "s")
                   for b in g["bandwidth_test"]["by_bandwidth"]]
    for i, (b, particles, marker) in enumerate(blocks):
        colour = f"C{i}"
        taus = [t["tau"] for t in b["taus"]]
        for key, mfc, ls, shift in (("step", "none", ":", 0.97), ("half_step", colour, "--", 1.03)):
            val, err = _value_and_yerr([t["mass"][key] for t in b["taus"]])
            steps = conv["steps"] if key == "step" else conv["steps_doubled"]
            ax.errorbar([t * shift for t in taus], val, yerr=err, fmt=marker, ls=ls, ms=4,
                        mfc=mfc, capsize=2, color=colour,
                        label=f"trained, h = {b['h']:g}, {particles} particles, {steps} steps")
        for t in b["taus"]:
            seeds = t["per_seed"]["half_step"]
            ax.plot([t["tau"] * 1.03] * len(seeds), seeds, ".", ms=3, color=colour, alpha=0.4)
    ax.axhline(g["uniform_mass"], color="#999999", lw=0.8, label="uniform law")
    ax.set_xscale("log")
    ax.invert_xaxis()  # colder to the right
    ax.set_xlabel("temperature τ")
    ax.set_ylabel(f"mass within geodesic radius {g['radius']:g} of a well")
    ax.legend(fontsize=6.5)
    ax.grid(alpha=0.3, which="both")
    return _png(fig)


def modality_gap_controls(mg: dict[str, Any]) -> bytes:
    """D_sym against σ_mis (log axis): the 25%-trimmed means (± 95% interval) of symmetric InfoNCE
    at the steps and twice the steps, of the one-directional control and of the identity encoders
    (the inputs' own gap); the published mean ± SEM; every seed of the symmetric runs as a dot,
    outliers circled by their diagnosis."""
    sig = mg["sigma_mis"]
    conv = mg["convergence"]
    fig, ax = plt.subplots(figsize=(7.4, 4.4))
    sym = mg["by_loss"]["symmetric"]
    for s, seeds in zip(sig, sym["half_step"]["d_sym_per_seed"], strict=True):
        ax.plot([s] * len(seeds), seeds, ".", ms=4, color="#777777", alpha=0.6)
    ax.plot([], [], ".", color="#777777", label=f"seeds, symmetric ({conv['steps_doubled']} steps)")
    for collapsed, marker, colour, label in ((True, "o", "C3", "outlier, collapsed encoder"),
                                             (False, "D", "C4", "outlier, not collapsed")):
        pts = [(o["sigma_mis"], o["d_sym"]) for o in mg["diagnosis"]["outliers"]["half_step"]
               if o["collapsed"] == collapsed]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker, ms=9, mfc="none", color=colour, label=label)
    curves = [(mg["identity"]["d_sym_trimmed"], "k", "s-", "identity encoders (inputs' own gap)", 0.0),
              (sym["step"]["d_sym_trimmed"], "C0", "o:", f"symmetric, {conv['steps']} steps", -0.008),
              (sym["half_step"]["d_sym_trimmed"], "C0", "o-", f"symmetric, {conv['steps_doubled']} steps", 0.004),
              (mg["by_loss"]["x_to_y"]["half_step"]["d_sym_trimmed"], "C2", "^-",
               f"one-directional x → y, {conv['steps_doubled']} steps", 0.012)]
    for ests, colour, fmt, label, dx in curves:
        val, err = _value_and_yerr(ests)
        ax.errorbar([s + dx for s in sig], val, yerr=err, fmt=fmt, ms=4, capsize=2, color=colour,
                    label=f"{label}, trimmed mean")
    pub = sym["half_step"]
    ax.errorbar([s - 0.016 for s in sig], pub["d_sym_mean"], yerr=pub["d_sym_sem"], fmt="x--",
                ms=4, capsize=2, color="C1", alpha=0.7, label="symmetric, mean ± SEM (as published)")
    ax.set_yscale("log")
    ax.set_xlabel("σ_mis (compatibility perturbation)")
    ax.set_ylabel("D_sym = KL(p‖q) + KL(q‖p)")
    ax.legend(fontsize=6.5)
    ax.grid(alpha=0.3, which="both")
    return _png(fig)


def lifted_energy_check(le: dict[str, Any]) -> bytes:
    """Left: Monte-Carlo symmetric InfoNCE − log(N·V) minus the lifted energy with the smoothed
    densities (± 95%), against N per τ, inside the check's margin; beside it, the same without the
    coupling term. Right: the lifting error F^Sym(ρ) − J^Sym (quadrature) against τ."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9))
    for i, m in enumerate(le["monte_carlo"]):
        n = [e["n"] for e in m["by_n"]]
        for key, fmt, label in (("minus_smoothed", "o-", "with −½[KL+KL]"),
                                ("minus_no_coupling", "x:", "without the coupling")):
            val, err = _value_and_yerr([e.get(key) for e in m["by_n"]])
            axes[0].errorbar(n, val, yerr=err, fmt=fmt, ms=4, capsize=2, color=f"C{i}",
                             label=f"τ = {m['tau']:g}, {label}")
    from infonce_lab.report.sections.geometry import FSYM_MARGIN

    axes[0].axhline(0.0, color="k", lw=0.8)
    axes[0].axhspan(-FSYM_MARGIN, FSYM_MARGIN, color="#999999", alpha=0.2,
                    label=f"the check's margin ± {FSYM_MARGIN:g}")
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("batch size N")
    axes[0].set_title("J_MC − energy by quadrature (nats)", fontsize=10)
    quad = le["quadrature"]
    axes[1].loglog([q["tau"] for q in quad], [abs(q["lifting_error"]) for q in quad], "o-", ms=4)
    axes[1].set_xlabel("τ")
    axes[1].set_title("|F^Sym(ρ) − J^Sym| (quadrature, nats)", fontsize=10)
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=6.5)
    fig.tight_layout()
    return _png(fig)


def lifted_energy_figure(mg: dict[str, Any]) -> bytes | None:
    """The F^Sym check's figure, where the modality-gap file has the lifted-energy block."""
    return lifted_energy_check(mg["lifted_energy"]) if "lifted_energy" in mg else None


SIM_FIGURES = {
    "s0": {"sim_s0_trap": s0_annealing, "sim_s0_hazard": s0_rates,
           "sim_s0_fixed_beta": s0_fixed_beta},
    "s1": {"sim_s1_trap": s1_trap_curves},
    "hessian": {"sim_hessian": hessian_scaling, "sim_negatives": negatives_barrier},
    "large_batch": {"sim_wang_isola": wang_isola_gaps, "sim_large_batch": large_batch_consistency},
    "gibbs": {"sim_gibbs": gibbs_convergence},
    "modality_gap": {"sim_modality_gap": modality_gap_controls, "sim_lifted_energy": lifted_energy_figure},
    "link_theory": {"sim_link_theory": link_theory_panels},
}


def sim_figures(sims: dict[str, dict[str, Any]]) -> dict[str, bytes]:
    """Every simulation figure whose experiment has a file, keyed by figure name. A file written
    by an older simulate stage lacks keys a figure reads: that figure is left out with a note
    (the section's rows say to re-run the experiment)."""
    out: dict[str, bytes] = {}
    for exp, figs in SIM_FIGURES.items():
        if exp not in sims:
            continue
        for name, draw in figs.items():
            try:
                png = draw(sims[exp])
            except KeyError as e:
                plt.close("all")
                print(f"note: reports/sims/{exp}.json has no {e}; figure {name} omitted "
                      f"(re-run simulate@{exp})")
                continue
            if png is not None:
                out[name] = png
    return out
