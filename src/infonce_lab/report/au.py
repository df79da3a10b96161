"""Wang & Isola (2020) beside our numbers (SPECS F): the alignment–uniformity section's claims.

Three sources, all computed upstream: the aggregate stage's OLS of accuracy on alignment and
uniformity over encoders (``summary.json["alignment_uniformity"]``), its paired comparisons
(DirectAU against InfoNCE on the same seeds), and the simulations' Theorem 1 checks (F.3), whose
rows the simulations module already judges. The thresholds below are reporting rules.
"""

from __future__ import annotations

from typing import Any

from infonce_lab.report._legacy import (
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Judgement,
    combined_verdict,
    inconclusive,
)
from infonce_lab.report.paired import loss_kind_differences

# "Competitive": DirectAU's accuracy is at most this far below InfoNCE's (a non-inferiority
# margin, in accuracy units: one point).
NONINFERIORITY_MARGIN = 0.01
METRIC_NAMES = {"linear.test_acc": "linear probe", "knn.test_acc": "kNN"}
PLANE_CLAIM = ("Accuracy falls with alignment and uniformity together: the best encoders sit "
               "lowest-left in the plane (§5; essay)")
PLANE_PREDICTION = "both OLS slopes of accuracy on (alignment, uniformity) below 0 (95% t-intervals)"
DIRECT_CLAIM = ("Optimising alignment + uniformity directly is competitive with the contrastive "
                "loss (§5, Table 1; DirectAU here)")
DIRECT_PREDICTION = (f"DirectAU − InfoNCE: 95% paired interval above −{100 * NONINFERIORITY_MARGIN:g} "
                     "point")


def plane_verdict(block: dict[str, Any], n: int, n_random: int) -> Judgement:
    """Reproduced when both joint slopes are negative with intervals below 0; not reproduced when
    either interval lies above 0. Each metric's own Spearman ρ is reported beside, since a joint
    effect can hide behind marginal ranks that say nothing."""
    a, u = block["alignment"], block["uniformity"]
    ours = (f"slopes: alignment {a['coef']:+.3f} [{a['ci_low']:+.3f}, {a['ci_high']:+.3f}], "
            f"uniformity {u['coef']:+.3f} [{u['ci_low']:+.3f}, {u['ci_high']:+.3f}]; "
            f"R² = {block['r2']:.2f}; n = {n} encoders ({n_random} random init). Alone: Spearman "
            f"ρ = {a['spearman']:+.2f} (p = {a['spearman_p']:.2g}) and {u['spearman']:+.2f} "
            f"(p = {u['spearman_p']:.2g})")
    if a["ci_high"] < 0 and u["ci_high"] < 0:
        return {"ours": ours, "verdict": REPRODUCED}
    if a["ci_low"] > 0 or u["ci_low"] > 0:
        return {"ours": ours, "verdict": NOT_REPRODUCED}
    return {"ours": ours, "verdict": inconclusive("a slope's interval contains 0")}


def noninferiority_verdict(diff: dict[str, Any]) -> Judgement:
    """DirectAU − InfoNCE over paired seeds against the margin."""
    ours = f"{100 * diff['mean']:+.2f} points"
    if diff["ci95"] is None:
        return {"ours": ours + " (one seed)", "verdict": inconclusive("one seed: no interval")}
    lo, hi = diff["mean"] - diff["ci95"], diff["mean"] + diff["ci95"]
    ours += f" [{100 * lo:+.2f}, {100 * hi:+.2f}] (n = {diff['n']} seeds)"
    if lo > -NONINFERIORITY_MARGIN:
        return {"ours": ours, "verdict": REPRODUCED}
    if hi < -NONINFERIORITY_MARGIN:
        return {"ours": ours, "verdict": NOT_REPRODUCED}
    return {"ours": ours, "verdict": inconclusive("CI straddles the margin")}


def _direct_vs_infonce(paired: dict[str, Any], loss_kinds: dict[str, str]
                       ) -> list[tuple[str, dict[str, Any]]]:
    """(case, DirectAU − InfoNCE difference) for every such pair at a shared schedule."""
    return [(f"{c.setting} @ {c.shared}, {METRIC_NAMES[c.metric]}", diff)
            for c, diff in loss_kind_differences(paired, loss_kinds, "direct_au", "info_nce",
                                                 METRIC_NAMES)]


def au_claims(au: dict[str, Any] | None, paired: dict[str, Any], loss_kinds: dict[str, str]
              ) -> list[dict[str, str]]:
    """Claim rows (``kind`` "claim", then its "case" rows when it has several), the same shape as
    the simulations' rows so one template macro renders both."""
    rows: list[dict[str, str]] = []

    def add(experiment: str, claim: str, prediction: str, cases: list[tuple[str, Judgement]],
            missing: str) -> None:
        if not cases:
            rows.append({"kind": "claim", "experiment": experiment, "claim": claim, "prediction": prediction, "case": "—",
                         "ours": "—", "verdict": f"{NOT_RUN} ({missing})"})
            return
        verdicts = [j["verdict"] for _, j in cases]
        if len(cases) == 1:
            rows.append({"kind": "claim", "experiment": experiment, "claim": claim,
                         "prediction": prediction, "case": cases[0][0], **cases[0][1]})
            return
        yes = sum(v == REPRODUCED for v in verdicts)
        no = sum(v == NOT_REPRODUCED for v in verdicts)
        rows.append({"kind": "claim", "experiment": experiment, "claim": claim,
                     "prediction": prediction, "case": "all",
                     "ours": f"{yes} reproduced · {no} not · {len(verdicts) - yes - no} "
                             f"inconclusive ({len(verdicts)} cases)",
                     "verdict": combined_verdict(verdicts)})
        rows.extend({"kind": "case", "experiment": experiment, "claim": claim,
                     "prediction": prediction, "case": c, **j}
                    for c, j in cases)

    plane = [(f"{dataset}, {METRIC_NAMES[m]}", plane_verdict(entry[m], entry["n_encoders"],
                                                             entry["n_random_init"]))
             for dataset, entry in (au or {}).items() for m in METRIC_NAMES if m in entry]
    add("Trained encoders (each seed) and random inits", PLANE_CLAIM, PLANE_PREDICTION, plane,
        "needs ≥ 4 encoders with alignment and uniformity on one dataset")
    direct = [(case, noninferiority_verdict(diff))
              for case, diff in _direct_vs_infonce(paired, loss_kinds)]
    add("Paired over seeds", DIRECT_CLAIM, DIRECT_PREDICTION, direct,
        "add an InfoNCE-kind and a direct_au-kind loss to study.losses")
    return rows
