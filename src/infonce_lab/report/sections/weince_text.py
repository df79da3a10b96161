"""WEINCE's sentence-embedding claim (§4.2): unsupervised SimCSE with only the logits changed.

Input: the aggregate stage's ``summary.json["text"]`` — per configuration the STS Spearman (and
probe, kNN, geometry, the loss's training statistics) over seeds, and every pair of losses at one
dataset × encoder × schedule as a paired comparison over seeds (``t``: its t-inference,
``per_seed``: every seed's difference). Nothing is refitted here.

The rows, all on the STS Spearman × 100 and decided by the vision study's rule — the two-sided
95% interval of the paired difference over seeds, Holm-adjusted within the family of the text
comparisons (not the paper's one-sided p < 0.05, which is shown beside as context):

- WEINCE − InfoNCE (the paper's claim);
- WEINCE − InfoNCE at the temperature control τ_c (its own row): WEINCE's logit
  (1 − λ)s/τ + λ(−log(1 − s)) is a softmax at an anchor-dependent, softer temperature, so a gain
  over InfoNCE at τ could be "a softer temperature" rather than "WEINCE's correction"; τ_c is
  InfoNCE's temperature with WEINCE's mean logit slope, set before any run (params.yaml);
- a self-check that τ_c is where WEINCE's effective temperature sits during training;
- the paper's absolute STS-B level (not run offline: what it takes is stated).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from infonce_lab.evaluation.stats import TInference
from infonce_lab.report.plotting import by_group, dot_interval, dress, plt, png, zoomed
from infonce_lab.report.sections import Inputs, Section
from infonce_lab.report.verdicts import (
    Above,
    Case,
    Check,
    Claim,
    ClaimRow,
    Equivalent,
    Estimate,
    Evidence,
    InRange,
    Outcome,
    Rule,
    claims,
    decide_family,
    fmt_p,
    not_reproduced,
)

PAPER_ID = "weince"
TOPIC = "Sentence embeddings (SimCSE)"
METRIC = "sts.test_spearman"

# WEINCE §4.2: STS-B Spearman × 100, BERT-base, Wikipedia-1M; the meaning of ± is not stated.
PAPER = {"infonce": 71.74, "infonce_pm": 4.23, "weince": 76.36, "weince_pm": 3.17, "gain": 4.63,
         "test": "paired one-sided t-test, p < 0.05"}

# The control's premise, as a position r = (κ̄ − 1/τ_c)/(1/τ − 1/τ_c) of WEINCE's mean effective
# inverse temperature during training between the control (r = 0) and InfoNCE's own τ (r = 1).
# ±0.5 is the midpoint: inside it WEINCE trains nearer the control's temperature than InfoNCE's
# (the control controls for it); wholly outside it, it does not. A geometric margin, not a
# tolerance fitted to the measurement.
CONTROL_MARGIN = 0.5

RULES: dict[str, Rule] = {
    "weince_beats_infonce": Above(
        0.0, unit="points", what="WEINCE − InfoNCE, STS Spearman × 100, paired over seeds (Holm "
                                 "within the text family)"),
    "weince_beats_temperature_control": Above(
        0.0, unit="points", what="WEINCE − InfoNCE at the control temperature τ_c, STS Spearman "
                                 "× 100, paired over seeds (Holm within the text family)"),
    "control_at_weince_temperature": Equivalent(
        CONTROL_MARGIN, what="r = (κ̄ − 1/τ_c)/(1/τ − 1/τ_c), WEINCE's mean effective inverse "
                             "temperature over training"),
    "paper_level_infonce": InRange(PAPER["infonce"] - PAPER["infonce_pm"],
                                   PAPER["infonce"] + PAPER["infonce_pm"],
                                   what="InfoNCE's STS-B Spearman × 100 (mean over seeds)"),
    "paper_level_weince": InRange(PAPER["weince"] - PAPER["weince_pm"],
                                  PAPER["weince"] + PAPER["weince_pm"],
                                  what="WEINCE's STS-B Spearman × 100 (mean over seeds)"),
}

PAPER_SETTING = ("`infonce-lab profiles apply paper_simcse` (text.study.datasets: "
                 "[wiki1m_stsb], encoders: [bert_base], one full epoch, STS-B dev every 250 steps "
                 "with best_val selection, four seeds): the internet once for the data and "
                 "weights, and a GPU (≈ 15.6k steps of batch 64 per run)")
CONTROL_SETTING = ("an InfoNCE-kind loss with tau_scale ≠ 1 and the WEINCE loss's candidates in "
                   "text.study.losses (the default lists simcse_infonce_tc); for another encoder, "
                   "re-derive tau_scale first (python -m infonce_lab.devtools.tau_scale)")
LEE_NOT_STSB = (
    "Scored on the Lee et al. (2005) document-similarity set shipped with gensim — 50 news "
    "documents, all 1,225 pairs rated 1–5 by people — which is not STS-B (1,379 sentence pairs "
    "rated 0–5): whole documents instead of sentence pairs, and MiniLM (already trained "
    "contrastively) tuned for a few SimCSE steps instead of BERT-base for an epoch of "
    "Wikipedia-1M. Only the direction of the paper's claim transfers, not its +4.63. The paper's "
    "setting: " + PAPER_SETTING + ".")

CANDIDATE_LABELS = {"cross_view": "N cross-view candidates (SimCSE)",
                    "all_views": "2N − 1 candidates (SimCLR)"}


# ------------------------------------------------------------------------------------ reading
def _loss_info(name: str, loss_kinds: dict[str, str], losses: dict[str, dict[str, Any]] | None
               ) -> dict[str, Any]:
    cfg = (losses or {}).get(name, {})
    return {"kind": loss_kinds.get(name, cfg.get("kind", "")),
            "candidates": cfg.get("candidates", "all_views"),
            "tau_scale": float(cfg.get("tau_scale", 1.0))}


def _trained(text: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The configurations trained with a loss (not the untuned encoder or the TF-IDF baseline)."""
    return {n: g for n, g in text.get("groups", {}).items() if g.get("kind") == "trained"}


def _settings(text: dict[str, Any]) -> dict[tuple[str, str, str], list[str]]:
    """(dataset, encoder, schedule) → the trained losses there, in study order."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for g in _trained(text).values():
        out.setdefault((g["dataset"], g["encoder"], g["schedule"]), []).append(g["loss"])
    return out


def _over_seeds(m: dict[str, Any], **fmt: Any) -> Estimate:
    """A mean over seeds (a ``mean_ci`` block) with its t-interval."""
    if m.get("std") is None:
        return Estimate.missing("one seed: no interval")
    n = int(m["n"])
    return Estimate.from_t(TInference(m["mean"], m["std"] / math.sqrt(n), n - 1, n), **fmt)


def _difference(p: dict[str, Any], sign: float = 1.0) -> Estimate:
    """A paired comparison's a − b (``sign`` −1: b − a) with its t-interval over seeds."""
    kw: dict[str, Any] = {"unit": "points", "digits": 2, "signed": True}
    if not p.get("t"):
        n = p.get("diff", {}).get("n", 1)
        return Estimate(None, undefined=f"{n} seed(s): no paired interval", **kw)
    t = TInference.from_json(p["t"])
    return Estimate.from_t(TInference(sign * t.mean, t.se, t.df, t.n), **kw)


def _pair(paired: dict[str, Any], setting: tuple[str, str, str], x: str, y: str
          ) -> Estimate:
    """x − y on the STS Spearman, from whichever orientation the aggregate stored."""
    d, e, sc = setting
    for a, b, sign in ((x, y, 1.0), (y, x, -1.0)):
        p = paired.get(f"{d}-{e}/{a}_vs_{b}@{sc}/{METRIC}")
        if p is not None:
            return _difference(p, sign)
    return Estimate.missing(f"no paired comparison of {x} and {y} in the summary")


def _comparisons(text: dict[str, Any], loss_kinds: dict[str, str],
                 losses: dict[str, dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Every WEINCE-kind loss against every InfoNCE-kind loss with its candidate set at the same
    setting: ``control`` when the InfoNCE runs at a scaled temperature."""
    out = []
    for setting, names in _settings(text).items():
        info = {n: _loss_info(n, loss_kinds, losses) for n in names}
        for w in (n for n in names if info[n]["kind"] == "weince"):
            for i in (n for n in names if info[n]["kind"] == "info_nce"
                      and info[n]["candidates"] == info[w]["candidates"]):
                out.append({"setting": setting, "weince": w, "infonce": i,
                            "candidates": info[w]["candidates"],
                            "control": info[i]["tau_scale"] != 1.0,
                            "tau_scale": info[i]["tau_scale"],
                            "estimate": _pair(text.get("paired", {}), setting, w, i)})
    return out


def _case_name(c: dict[str, Any]) -> str:
    d, e, sc = c["setting"]
    return (f"{d}-{e} @ {sc}: {c['weince']} − {c['infonce']}, "
            f"{CANDIDATE_LABELS.get(c['candidates'], c['candidates'])}")


def _one_sided(e: Estimate) -> str:
    """The paper's own test on our data: paired one-sided t, H1: WEINCE > InfoNCE."""
    if e.t is None:
        return ""
    return (f"paired one-sided t (the paper's test): p = {fmt_p(e.p_greater(0.0))} with "
            f"{e.t.df} degree(s) of freedom")


def _headline(cases: list[Case]) -> str | None:
    """A single case's result with its p-values (raw and Holm), which the row must show."""
    if len(cases) != 1:
        return None
    return f"{cases[0].result}; {cases[0].p}" if cases[0].p else cases[0].result


def _contradicted(cases: list[Case], why: str) -> list[Case]:
    return [Case(c.name, c.result, not_reproduced(f"contradicted: {why}"), c.p)
            if c.verdict.outcome is Outcome.NOT_REPRODUCED else c for c in cases]


def _on_paper_data(g: dict[str, Any], dataset_kinds: dict[str, str] | None) -> bool:
    return (dataset_kinds or {}).get(g.get("dataset", ""), "gensim") == "simcse_wiki1m"


def _dataset_note(text: dict[str, Any], dataset_kinds: dict[str, str] | None) -> str:
    if all(_on_paper_data(g, dataset_kinds) for g in _trained(text).values()):
        return "Scored on STS-B test, the paper's set."
    return LEE_NOT_STSB


# ------------------------------------------------------------------------------------- claims
CLAIMS = claims(PAPER_ID, TOPIC, RULES, {
    "weince_beats_infonce": (
        "§4.2: \"On STS-B, InfoNCE achieves a Spearman score of 71.74 ± 4.23 …, while WEINCE "
        "achieves 76.36 ± 3.17, a gain of +4.63 points (p < 0.05, paired one-sided t-test)\" — "
        "unsupervised SimCSE, only the logit computation replaced",
        "WEINCE − InfoNCE on the STS Spearman × 100 (mean over seeds of the paired difference)"),
    "weince_beats_temperature_control": (
        "§4.2: the gain is \"the bounded-endpoint correction\" — so it must hold against InfoNCE "
        "at WEINCE's own effective temperature, not only at τ = 0.05 (our control; the paper "
        "runs InfoNCE at τ = 0.05 only)",
        "WEINCE − InfoNCE at τ_c on the STS Spearman × 100 (paired over seeds)"),
    "control_at_weince_temperature": (
        "Self-check of the control: τ_c (set before any run from WEINCE's logit slope on the "
        "untuned encoder) is where WEINCE's effective temperature sits while it trains",
        "r: WEINCE's mean effective inverse temperature κ̄ over every training step (anchor mean "
        "of κ_i, mean over seeds), placed between the control (0) and InfoNCE's τ (1)"),
}, self_checks=("control_at_weince_temperature",))
LEVELS = {"info_nce": RULES["paper_level_infonce"], "weince": RULES["paper_level_weince"]}
# Each loss against the paper's level for it: the rule's input is (the loss's kind, its estimate).
LEVEL = Claim(
    PAPER_ID, TOPIC, "§4.2: the absolute level — STS-B test, BERT-base-uncased, 1M Wikipedia "
    "sentences: InfoNCE 71.74 ± 4.23, WEINCE 76.36 ± 3.17", "STS-B test Spearman × 100 per loss",
    Check("; ".join(r.text for r in LEVELS.values()), lambda x: LEVELS[x[0]].decide(x[1])))


def claim_rows(text_summary: dict[str, Any] | None, loss_kinds: dict[str, str], *,
               losses: dict[str, dict[str, Any]] | None = None,
               taus: dict[str, float] | None = None,
               dataset_kinds: dict[str, str] | None = None) -> list[ClaimRow]:
    """The section's rows. ``loss_kinds``: loss name → kind; ``losses``: loss name → its params
    (``candidates``, ``tau_scale``); ``taus``: fixed schedule name → τ; ``dataset_kinds``: text
    dataset name → kind (``gensim`` or ``simcse_wiki1m``)."""
    text = text_summary or {}
    comps = _comparisons(text, loss_kinds, losses)
    # One family: every WEINCE − InfoNCE comparison of the section, the controls included.
    family = decide_family(RULES["weince_beats_infonce"], [c["estimate"] for c in comps],
                           [_case_name(c) for c in comps])
    main = [(c, k) for c, k in zip(comps, family, strict=True) if not c["control"]]
    ctrl = [(c, k) for c, k in zip(comps, family, strict=True) if c["control"]]
    note_data = _dataset_note(text, dataset_kinds)
    context = "; ".join(f"{_case_name(c)}: {_one_sided(c['estimate'])}" for c, _ in main
                        if c["estimate"].t is not None)
    taus_text = ", ".join(f"{c['infonce']}: τ_c = {c['tau_scale']:g} × τ" for c, _ in ctrl)
    gain_note = f"{note_data} Context: {context}." if context else note_data
    control_note = (f"{taus_text}; 1/τ_c is WEINCE's mean logit slope between each anchor's "
                    f"hardest negative and its positive (params.yaml). {note_data}")
    no_pair = ("a WEINCE-kind and an InfoNCE-kind loss with the same candidates in "
               "text.study.losses" if text.get("groups") else
               "no text results: list losses in text.study and run the text stages")
    rows = []
    for key, pairs, why, note, what_it_takes in (
            ("weince_beats_infonce", main, "WEINCE scores below InfoNCE", gain_note, no_pair),
            ("weince_beats_temperature_control", ctrl, "InfoNCE at WEINCE's effective temperature "
             "does better — a softer temperature accounts for the gain", control_note,
             CONTROL_SETTING)):
        if not pairs:
            rows.append(CLAIMS[key].not_run(what_it_takes))
            continue
        cases = _contradicted([k for _, k in pairs], why)
        rows.append(CLAIMS[key].row(cases, result=_headline(cases), note=note))
    if ctrl:
        rows.append(_control_at_row(text, [c for c, _ in ctrl], taus or {}))
    rows.append(_level_row(text, loss_kinds, losses, dataset_kinds))
    return rows


def _kappa(group: dict[str, Any]) -> Estimate:
    k = group.get("train.inv_tau_eff_mean")
    if not k:
        return Estimate.missing("no effective temperature in the run's training statistics")
    return _over_seeds(k)


def control_position(kappa: Estimate, tau: float, tau_scale: float) -> Estimate:
    """r = (κ̄ − 1/τ_c)/(1/τ − 1/τ_c): 0 at the control's inverse temperature, 1 at InfoNCE's."""
    if not kappa.defined or kappa.t is None:
        return Estimate.missing(kappa.undefined or "no estimate")
    lo, hi = 1.0 / (tau * tau_scale), 1.0 / tau
    span = hi - lo
    t = kappa.t
    pos = TInference((t.mean - lo) / span, t.se / abs(span), t.df, t.n)
    return Estimate.from_t(pos, digits=2, signed=True,
                           note=f"κ̄ = {t.mean:.2f} against 1/τ_c = {lo:.2f} and 1/τ = {hi:.2f}")


def _control_at_row(text: dict[str, Any], ctrl: list[dict[str, Any]], taus: dict[str, float]
                    ) -> ClaimRow:
    groups = text.get("groups", {})
    estimates, names = [], []
    for c in ctrl:
        d, e, sc = c["setting"]
        names.append(f"{d}-{e} @ {sc}: {c['weince']} against {c['infonce']}")
        g = groups.get(f"{d}-{e}-{c['weince']}-{sc}", {})
        estimates.append(control_position(_kappa(g), taus[sc], c["tau_scale"]) if sc in taus
                         else Estimate.missing(f"schedule {sc} has no fixed τ"))
    return CLAIMS["control_at_weince_temperature"].family(
        estimates, names,
        note="κ_i = the slope of anchor i's WEINCE logit between its hardest negative and its "
             "positive (losses.weince.effective_inverse_temperature).")


def _level_row(text: dict[str, Any], loss_kinds: dict[str, str],
               losses: dict[str, dict[str, Any]] | None,
               dataset_kinds: dict[str, str] | None) -> ClaimRow:
    on_paper = {n: g for n, g in _trained(text).items() if _on_paper_data(g, dataset_kinds)}
    if not on_paper:
        return LEVEL.not_run(PAPER_SETTING, evidence=Evidence.PAPER_SCALE)
    cases = []
    for gname, g in on_paper.items():
        info = _loss_info(g["loss"], loss_kinds, losses)
        if info["tau_scale"] == 1.0 and info["kind"] in LEVELS:
            e = _over_seeds(g.get(METRIC, {}), digits=2)
            cases.append((gname, (info["kind"], e), str(e)))
    row = LEVEL.with_quantity(" (mean over seeds, t-interval)").checked(
        cases, note="The paper does not say what its ± is (§4.2); taken here as a range.")
    row.evidence = Evidence.PAPER_SCALE
    return row


# ------------------------------------------------------------------------------------ context
COLUMNS = [(METRIC, "STS Spearman×100", 2), ("linear.test_acc", "probe test", 3),
           ("knn.test_acc", "kNN test", 3), ("geometry.alignment", "alignment", 3),
           ("geometry.uniformity", "uniformity", 3)]


def context(text_summary: dict[str, Any] | None, loss_kinds: dict[str, str], *,
            losses: dict[str, dict[str, Any]] | None = None,
            taus: dict[str, float] | None = None,
            datasets: dict[str, str] | None = None,
            encoders: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The table of configurations (loss, candidate set, the temperature each run trains at —
    WEINCE's effective one measured — and the metrics) and every paired STS comparison.
    ``datasets`` (name → kind) and ``encoders`` (name → source) are passed through for the
    narrative, as ``datasets`` and ``encoders``."""
    text = text_summary or {}
    groups = text.get("groups", {})
    if not groups:
        return None
    taus = taus or {}
    rows = []
    for gname, g in groups.items():
        row: dict[str, Any] = {"group": gname, "kind": g["kind"], "n": g["n_encoders"],
                               **{m: g.get(m) for m, _, _ in COLUMNS}}
        if g["kind"] == "trained":
            info = _loss_info(g["loss"], loss_kinds, losses)
            tau = taus.get(g["schedule"])
            row.update(loss=g["loss"], loss_kind=info["kind"],
                       candidates=CANDIDATE_LABELS.get(info["candidates"], info["candidates"]))
            if tau is not None:
                row["tau"] = tau * info["tau_scale"] if info["kind"] == "info_nce" else tau
            k = g.get("train.inv_tau_eff_mean")
            if k:
                row["tau_effective"] = 1.0 / k["mean"]
            lam = g.get("train.lambda_mean")
            if lam:
                row["lambda_mean"] = lam["mean"]
        rows.append(row)
    pairs = [{"comparison": name, "a": p["a"], "b": p["b"], "result": str(_difference(p)),
              "per_seed": p.get("per_seed", {})} for name, p in text.get("paired", {}).items()]
    return {"rows": rows, "columns": COLUMNS, "paired": pairs, "paper": PAPER,
            "note": LEE_NOT_STSB, "datasets": dict(datasets or {}), "encoders": dict(encoders or {})}


# ---------------------------------------------------------------------------- figures
def text_figure(text: dict[str, Any], curves: dict[str, dict[str, pd.DataFrame]]) -> bytes:
    """Left: STS Spearman per configuration, a dot with its 95% t-interval over seeds (the axis on
    the data: configurations a point apart must look apart); right: training loss."""
    groups = text["groups"]
    names = list(groups)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 0.5 * len(names) + 2.2))
    colors = {"trained": "#1f77b4", "untuned": "#ff7f0e", "tfidf": "#7f7f7f"}
    xs: list[float] = []
    for i, g in enumerate(names):
        m = groups[g]["sts.test_spearman"]
        half = m["ci95"]
        lo, hi = (m["mean"] - half, m["mean"] + half) if half is not None else (None, None)
        dot_interval(ax, m["mean"], i, lo, hi, colors.get(groups[g]["kind"], "#333"))
        ax.annotate(f"{m['mean']:.1f}", (m["mean"], i), textcoords="offset points",
                    xytext=(0, 5), ha="center", fontsize=7)
        xs += [m["mean"], *((lo, hi) if half is not None else ())]
    ax.set_xlim(*zoomed(xs))
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    dress(ax, title="STS test Spearman", x="Spearman × 100 (cosine vs gold)")
    ax.grid(axis="x", alpha=0.3)
    for label, series in by_group(curves, "loss").items():
        ax2.plot(series["step"], series["value"], label=label.split("-", 1)[-1])
    dress(ax2, title="Unsupervised SimCSE: loss per step (mean over seeds)", x="step",
          y="training loss")
    if curves:  # InfoNCE at τ = 0.05 sits orders of magnitude below WEINCE
        dress(ax2, yscale="log")
        ax2.legend(fontsize=7)
    ax2.grid(alpha=0.3)
    return png(fig)


def _text_args(i: Inputs) -> dict[str, Any]:
    return {"losses": i.settings["losses"], "taus": i.settings["fixed_taus"]}


def _text_figures(i: Inputs) -> dict[str, bytes]:
    if not (i.text and i.text.get("groups")):
        return {}
    return {"text": text_figure(dict(i.text), {k: dict(v) for k, v in i.text_curves.items()})}


SECTION = Section(
    id="text", paper="weince", title="Sentence embeddings", evidence=Evidence.SETTING,
    reads=("summary.text", "text curves"), rules=RULES,
    rows=lambda i: claim_rows(i.text, dict(i.loss_kinds), **_text_args(i),
                              dataset_kinds=i.settings["text_dataset_kinds"]),
    context=lambda i: context(i.text, dict(i.loss_kinds), **_text_args(i),
                              datasets=i.settings["text_datasets"],
                              encoders=i.settings["text_encoders"]),
    figures=_text_figures)
