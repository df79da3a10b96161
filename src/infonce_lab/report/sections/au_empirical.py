"""Wang & Isola (2020, §5 and the essay's reading of it), measured on the study's encoders:
accuracy falls with alignment *and* uniformity (a least-squares fit over the trained encoders,
errors clustered by configuration; the random initialisations are a labelled reference), and
optimising the two directly (DirectAU) is competitive with InfoNCE (non-inferiority, paired over
seeds, pooled over schedules, Holm within the claim)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from infonce_lab.evaluation import metrics
from infonce_lab.report.plotting import dress, plt, png
from infonce_lab.report.sections import Section
from infonce_lab.report.sections._paired import decide_pooled_and_per_schedule, oriented_pairs
from infonce_lab.report.verdicts import (
    Below,
    Case,
    ClaimRow,
    Estimate,
    Evidence,
    NonInferior,
    all_cases,
    claim,
    not_run_row,
)

PAPER = "au"
METRICS = metrics.labels(headline=True)
# "Competitive": DirectAU at most one accuracy point below InfoNCE — the resolution at which the
# paper's own tables separate methods (its CIs are ±0.2–0.3 points over 4 seeds; one point is
# several times that, and well below the gains the contrastive papers report).
NONINFERIORITY_POINTS = 1.0

RULES = {
    "plane_slope": Below(0.0, what="slope of accuracy on the coordinate"),
    "direct_au": NonInferior(NONINFERIORITY_POINTS, unit="points", what="DirectAU − InfoNCE"),
}

PLANE_CLAIM = ("Accuracy falls with alignment and uniformity together: the best encoders sit "
               "lowest-left in the plane (§5; the essay's 'both properties matter')")
PLANE_QUANTITY = ("least squares of test accuracy on (alignment, uniformity) of the projector's "
                  "output z — where the losses act and where the paper measures them — over the "
                  "trained encoders (every seed), errors clustered by configuration (t with "
                  "configurations − 1 df); both slopes must be negative. The same fit on the "
                  "backbone's h (what the probes read) is shown beside each case")


def _slope(block: dict[str, Any], name: str) -> Estimate:
    b = block[name]
    rho = b["spearman"]  # None where a coordinate or the accuracy is constant over encoders
    return Estimate(b["coef"], b["ci_low"], b["ci_high"], signed=True,
                    note="Spearman ρ alone " + ("undefined (a constant)" if rho is None
                                                else f"{rho:+.2f}"))


def _r2(value: float | None) -> str:
    # None where the accuracy is constant over the encoders (0/0: nothing to explain)
    return "R² undefined (a constant accuracy)" if value is None else f"R² {value:.2f}"


def plane_rows(au: dict[str, Any] | None) -> list[ClaimRow]:
    rule = RULES["plane_slope"]
    cases: list[Case] = []
    for dataset, by_embedding in (au or {}).items():
        entry, on_h = by_embedding.get("z") or {}, by_embedding.get("h") or {}
        for metric, label in METRICS.items():
            block = entry.get(metric)
            if block is None:
                continue
            ref = entry.get(f"{metric}.with_random_init")
            ref_text = "" if ref is None else (
                f"; with the {entry['n_random_init']} random inits (reference, not the claim's "
                f"data): {ref['alignment']['coef']:+.3f} and {ref['uniformity']['coef']:+.3f}, "
                f"{_r2(ref['r2'])}")
            for coord in ("alignment", "uniformity"):
                e = _slope(block, coord)
                h_text = (f"; on h: {_slope(on_h[metric], coord)}, {_r2(on_h[metric]['r2'])}"
                          if metric in on_h else "")
                cases.append(Case(
                    f"{dataset}, {label}: {coord} slope", f"{e}; {_r2(block['r2'])}, "
                    f"{entry['n_encoders']} encoders in {block['clusters']} configurations"
                    + h_text + (ref_text if coord == "uniformity" else ""), rule.decide(e)))
    if not cases:
        return [not_run_row(PAPER, "Trained encoders", PLANE_CLAIM, PLANE_QUANTITY, rule,
                            "≥ 4 trained configurations with alignment and uniformity of z")]
    return [claim(PAPER, "Trained encoders", PLANE_CLAIM, PLANE_QUANTITY, rule, cases,
                  combine=all_cases)]


def direct_au_rows(paired: dict[str, Any], pooled: dict[str, Any], loss_kinds: dict[str, str],
                   ) -> list[ClaimRow]:
    rule = RULES["direct_au"]
    text = ("Optimising alignment + uniformity directly is competitive with the contrastive loss "
            "(§5, Table 1; DirectAU here)")
    quantity = ("DirectAU − InfoNCE on the test split, paired over seeds: pooled over the "
                "schedules (each seed's mean difference) and per schedule (Holm within the claim)")
    pairs = oriented_pairs(paired, loss_kinds, "direct_au", "info_nce", METRICS)
    if not pairs:
        return [not_run_row(PAPER, "Paired over seeds", text, quantity, rule,
                            "list an InfoNCE-kind and a direct_au-kind loss in study.losses")]
    pooled_cases, per, verdict = decide_pooled_and_per_schedule(
        rule, oriented_pairs(pooled, loss_kinds, "direct_au", "info_nce", METRICS), pairs,
        lambda p: f"{p.setting} {METRICS[p.metric]}, pooled over schedules",
        lambda p: f"{p.setting} {METRICS[p.metric]} @ {p.shared}")
    return [claim(PAPER, "Paired over seeds", text, quantity, rule, pooled_cases + per,
                  verdict=verdict, result="pooled: " + "; ".join(c.result for c in pooled_cases))]


def claim_rows(au: dict[str, Any] | None, paired: dict[str, Any], pooled: dict[str, Any],
               loss_kinds: dict[str, str]) -> list[ClaimRow]:
    return plane_rows(au) + direct_au_rows(paired, pooled, loss_kinds)


# ---------------------------------------------------------------------------- figures
def alignment_uniformity_plane(encoders: pd.DataFrame) -> bytes:
    """Every encoder in Wang & Isola's plane (lower-left is better), coloured by linear test acc."""
    fig, ax = plt.subplots(figsize=(7.6, 5.0))
    df = encoders.dropna(subset=["geometry.alignment", "geometry.uniformity"])
    # The marker says what an encoder is (its loss, or a baseline), the colour its accuracy:
    # a text label per encoder piled up unreadably where seeds cluster.
    shapes = iter("oDv<>phH*Xd")
    baseline_markers = {"random_init": "s", "raw_pixels": "^"}
    trained = df["encoder.kind"] == "trained"
    kinds = [*sorted(df.loc[trained, "encoder.loss"].dropna().unique()),
             *sorted(df.loc[~trained, "encoder.kind"].unique())]
    sc = None
    for kind in kinds:
        part = df[df["encoder.loss"].eq(kind) & trained] if kind not in baseline_markers \
            and kind in set(df.loc[trained, "encoder.loss"]) else df[df["encoder.kind"].eq(kind)]
        sc = ax.scatter(part["geometry.alignment"], part["geometry.uniformity"],
                        c=part["linear.test_acc"], cmap="viridis", vmin=df["linear.test_acc"].min(),
                        vmax=df["linear.test_acc"].max(),
                        marker=baseline_markers.get(kind) or next(shapes, "x"),
                        s=52, edgecolor="k", linewidth=0.5, label=kind.replace("_", " "))
    if sc is not None:
        fig.colorbar(sc, ax=ax, label="linear probe test accuracy")
    dress(ax, x="alignment of two augmented test views, backbone h (lower = better)",
          y="uniformity of test features, backbone h (lower = better)")
    legend = ax.legend(fontsize=9, title="marker: loss or baseline", title_fontsize=9)
    for handle in legend.legend_handles:
        handle.set_facecolor("#cccccc")
    ax.grid(alpha=0.3)
    return png(fig)


SECTION = Section(
    id="au_empirical", paper="au", title="Trained encoders", evidence=Evidence.SETTING,
    reads=("summary.alignment_uniformity", "summary.paired", "summary.pooled", "encoders table"),
    rules=RULES,
    rows=lambda i: claim_rows(i.summary.get("alignment_uniformity"), dict(i.paired),
                              dict(i.pooled), dict(i.loss_kinds)),
    figures=lambda i: {"au_plane": alignment_uniformity_plane(i.encoders)})
