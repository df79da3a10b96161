"""The page's text section until the report is rewired onto the section modules: the table and
claims come from :mod:`infonce_lab.report.sections.weince_text` (the rules, Holm, the control),
shaped as the current templates read them; and the section's figure.

``stages/report.py`` passes only each loss's kind. The candidate set and ``tau_scale`` of each
loss and the schedules' τ are read from params.yaml here when not given (the rewired report
passes them to ``weince_text.claim_rows``/``context`` directly).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from infonce_lab.report.figures import _by_group, _png, plt
from infonce_lab.report.sections import weince_text
from infonce_lab.report.sections.weince_text import COLUMNS, PAPER, PAPER_SETTING

TEXT_COLUMNS = COLUMNS
__all__ = ["PAPER", "PAPER_SETTING", "TEXT_COLUMNS", "text_context", "text_figure"]


def _params_from_yaml() -> tuple[dict[str, dict[str, Any]], dict[str, float], dict[str, str]]:
    """(loss params, fixed schedule τ, text dataset kinds) from params.yaml, or empty."""
    try:
        from infonce_lab.config import load_params

        p = load_params()
    except Exception:  # noqa: BLE001 — no params.yaml here: the rows say what is missing
        return {}, {}, {}
    losses = {n: c.model_dump() for n, c in p.losses.items()}
    taus = {n: float(c.tau) for n, c in p.schedules.items() if c.kind == "fixed"}
    kinds = {n: c.kind for n, c in p.text.datasets.items()}
    return losses, taus, kinds


def text_context(text: dict[str, Any] | None, datasets: dict[str, str],
                 encoders: dict[str, str], loss_kinds: dict[str, str] | None = None, *,
                 losses: dict[str, dict[str, Any]] | None = None,
                 taus: dict[str, float] | None = None) -> dict[str, Any] | None:
    """Table rows and claims; ``datasets``/``encoders`` map study names to a short description
    (the dataset's kind, the encoder's source), ``loss_kinds`` loss names to their kind."""
    if not text or not text.get("groups"):
        return None
    if losses is None or taus is None:
        y_losses, y_taus, _ = _params_from_yaml()
        losses = y_losses if losses is None else losses
        taus = y_taus if taus is None else taus
    kinds = dict(loss_kinds or {})
    ctx = weince_text.context(text, kinds, losses=losses, taus=taus)
    rows = weince_text.claim_rows(text, kinds, losses=losses, taus=taus, dataset_kinds=datasets)
    claims = []
    for r in rows:
        ours = r.result
        if r.cases:
            ours += " — " + "; ".join(f"{c.name}: {c.result} → {c.verdict}" for c in r.cases)
        if r.note:
            ours += f" ({r.note})"
        claims.append({"claim": ("Self-check: " if r.self_check else "") + r.claim,
                       "paper": r.rule, "ours": ours, "verdict": str(r.verdict)})
    if ctx is None:
        return None
    return {**ctx, "claims": claims, "datasets": datasets, "encoders": encoders}


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
