"""The report's text section: unsupervised SimCSE runs beside the WEINCE paper's STS-B claim
(SPECS C.4), with the baselines, a computed verdict and two figures. Reads the aggregate stage's
``summary.json["text"]`` and the runs' DVCLive curves only."""

from __future__ import annotations

from typing import Any

import pandas as pd

from infonce_lab.report._legacy import NOT_REPRODUCED, REPRODUCED, inconclusive
from infonce_lab.report.figures import _by_group, _png, plt

# SPECS C.4: unsupervised SimCSE, BERT-base-uncased, 1M Wikipedia sentences, STS-B test.
PAPER = {"infonce": 71.74, "infonce_pm": 4.23, "weince": 76.36, "weince_pm": 3.17, "gain": 4.63,
         "test": "paired one-sided t-test, p < 0.05"}
ALPHA = 0.05
TEXT_COLUMNS = [("sts.test_spearman", "STS Spearman×100", 2), ("linear.test_acc", "probe test", 3),
                ("knn.test_acc", "kNN test", 3), ("geometry.alignment", "alignment", 3),
                ("geometry.uniformity", "uniformity", 3)]
PAPER_SETTING = ("text.study.datasets: [wiki1m_stsb] and text.study.encoders: [bert_base] with "
                 "text.training.max_steps: null, eval_every_steps: 250, selection: best_val and "
                 "four seeds — the internet once for the data and weights, and a GPU (≈ 15.6k "
                 "steps of batch 64 per run)")


def _loss_kind(group: dict[str, Any]) -> str:
    return str(group.get("loss", ""))


def gain_verdict(pair: dict[str, Any]) -> tuple[str, str]:
    """(ours, verdict) for "a beats b on STS Spearman" from the aggregate's paired comparison."""
    d = pair["diff"]
    ours = f"{d['mean']:+.2f}"
    if d["ci95"] is not None:
        ours += f" ± {d['ci95']:.2f} (n = {d['n']} seeds)"
    if d["n"] < 2 or pair.get("p_one_sided") is None:
        return (ours + ", one seed", inconclusive("one seed: no paired test; list more "
                                                   "text.study.seeds"))
    p = pair["p_one_sided"]
    ours += f", one-sided p = {p:.3g}"
    if d["mean"] > 0 and p < ALPHA:
        return ours, REPRODUCED
    if d["ci95"] is not None and d["mean"] + d["ci95"] < 0:
        return ours, NOT_REPRODUCED
    return ours, inconclusive("CI overlaps 0")


def oriented(pair: dict[str, Any], kinds: dict[str, str], groups: dict[str, Any]
             ) -> tuple[str, str, dict[str, Any]]:
    """(winner-claimed loss, other loss, comparison) with a WEINCE-kind loss first: the paper's
    claim is WEINCE over InfoNCE, so its one-sided p is for that direction."""
    la, lb = _loss_kind(groups[pair["a"]]), _loss_kind(groups[pair["b"]])
    if kinds.get(lb) == "weince" and kinds.get(la) != "weince":
        d = pair["diff"]
        flipped = {**pair, "a": pair["b"], "b": pair["a"], "diff": {**d, "mean": -d["mean"]},
                   "p_one_sided": None if pair.get("p_one_sided") is None
                   else 1.0 - pair["p_one_sided"]}
        return lb, la, flipped
    return la, lb, pair


def text_context(text: dict[str, Any] | None, datasets: dict[str, str],
                 encoders: dict[str, str], loss_kinds: dict[str, str] | None = None
                 ) -> dict[str, Any] | None:
    """Table rows and claims; ``datasets``/``encoders`` map study names to a short description,
    ``loss_kinds`` loss names to their kind (which one is WEINCE)."""
    if not text or not text.get("groups"):
        return None
    groups = text["groups"]
    rows = [{"group": g, "kind": s["kind"], "n": s["n_encoders"],
             **{m: s.get(m) for m, _, _ in TEXT_COLUMNS}} for g, s in groups.items()]
    claims = []
    for name, pair in text.get("paired", {}).items():
        la, lb, pair = oriented(pair, loss_kinds or {}, groups)
        ours, verdict = gain_verdict(pair)
        kinds = {(loss_kinds or {}).get(la), (loss_kinds or {}).get(lb)}
        claims.append({
            "claim": f"{la} beats {lb} on STS Spearman ({name.split('/')[0]})",
            "paper": (f"WEINCE − InfoNCE = +{PAPER['gain']} on STS-B "
                      f"({PAPER['infonce']} → {PAPER['weince']}; {PAPER['test']})"
                      if kinds == {"info_nce", "weince"} else "—"),
            "ours": f"{la} − {lb} = {ours}", "verdict": verdict,
        })
    for g, s in groups.items():
        if s["kind"] != "trained":
            continue
        base = groups.get(f"{s['dataset']}-{s['encoder']}-untuned")
        if base is None:
            continue
        delta = s["sts.test_spearman"]["mean"] - base["sts.test_spearman"]["mean"]
        claims.append({
            "claim": f"{g}: SimCSE fine-tuning changes the untuned encoder's STS Spearman",
            "paper": "context, not a claim of the paper (the paper starts from BERT-base)",
            "ours": f"{delta:+.2f} ({base['sts.test_spearman']['mean']:.2f} → "
                    f"{s['sts.test_spearman']['mean']:.2f})",
            "verdict": "context",
        })
    on_paper_data = any(s.get("dataset") == "wiki1m_stsb" for s in groups.values())
    claims.append({
        "claim": "The paper's absolute level: STS-B test, BERT-base, Wikipedia-1M",
        "paper": f"InfoNCE {PAPER['infonce']} ± {PAPER['infonce_pm']}, WEINCE "
                 f"{PAPER['weince']} ± {PAPER['weince_pm']}",
        "ours": "see the table" if on_paper_data else "not run",
        "verdict": "see the table" if on_paper_data else f"not run: needs {PAPER_SETTING}",
    })
    return {"rows": rows, "columns": TEXT_COLUMNS, "claims": claims, "paper": PAPER,
            "datasets": datasets, "encoders": encoders}


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
    ax2.set_title("Unsupervised SimCSE: loss per step (mean over seeds)", fontsize=10)
    if curves:
        ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    return _png(fig)
