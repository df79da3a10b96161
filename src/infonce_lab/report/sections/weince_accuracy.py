"""WEINCE's downstream claims (arXiv 2606.00262, §4.1, Tables 2–3 and 6): WEINCE beats InfoNCE on
linear-probe accuracy and kNN metrics, and the gain survives the paper's validation selection of
one of 27 WEINCE configurations.

The pre-registered primary comparison (params.yaml ``primary:``, written before its runs) comes
first: its own runs at the paper's τ = 0.5 over its own seeds, one row per contrast, every
contrast × metric in one Holm family, the minimal detectable effect beside every case. A contrast
against a label oracle (an InfoNCE with ``mask_same_class``: Chuang et al. 2020, §5) is our
false-negative control, shown beside the claims and never counted as one.

The grid's rows are decided on the aggregate stage's paired comparisons (WEINCE − InfoNCE at the same dataset,
backbone, schedule and seeds): a pooled row per setting (each seed's mean difference over the
schedules, a t-test over seeds) decides the claim, the per-schedule rows are Holm-adjusted
within the claim. The paper's own settings (CIFAR-100, Tiny-ImageNet; ResNet-18/50, ViT-S) are
rows that say what it takes to run them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from infonce_lab.evaluation.metrics import BY_NAME
from infonce_lab.evaluation.stats import TInference
from infonce_lab.params import PrimaryConfig
from infonce_lab.report.paired import comparisons
from infonce_lab.report.sections import Section
from infonce_lab.report.sections._paired import (
    POINTS,
    OrientedPair,
    decide_pooled_and_per_schedule,
    oriented_pairs,
    points,
)
from infonce_lab.report.verdicts import (
    Above,
    Below,
    Case,
    ClaimRow,
    Estimate,
    Evidence,
    Rule,
    claim,
    decide_family,
    not_run_row,
)

PAPER, TOPIC = "weince", "Downstream accuracy (Tables 2–3)"
# The smallest gain the claim is about, a chosen threshold: below every gain the paper's tables
# report (the smallest, +1.35 points, is Tiny-ImageNet/ResNet-18 R@2, §4.1; +1.55 at R@1,
# Table 3), so an interval that excludes +1 point excludes every reported gain.
MIN_GAIN_POINTS = 1.0
# (metrics, what they measure, what the paper reports): its Tables 2, 3, 6 and 7. A claim over
# several metrics (recall at k = 2…50) holds when every pooled case holds (Holm over them).
RECALL_KS = (2, 5, 10, 20, 50)
CLAIMS: dict[tuple[str, ...], tuple[str, str]] = {
    ("linear.test_acc",): ("linear-probe accuracy",
                           "Table 2: +3.27 points on CIFAR-100/ResNet-18 (50.01 → 53.28), +4.82 "
                           "on CIFAR-100/ResNet-50, +3.41 on Tiny-ImageNet/ViT-S"),
    ("knn.test_recall_at_1",): ("kNN recall@1",
                                "Table 3: +5.96 points on CIFAR-100/ResNet-18 (36.98 → 42.94), "
                                "+1.55 Tiny-ImageNet/ResNet-18, +4.23 Tiny-ImageNet/ViT-S"),
    tuple(f"knn.test_recall_at_{k}" for k in RECALL_KS): (
        "kNN recall@k at each k = 2–50",
        "Table 3 on CIFAR-100/ResNet-18: +5.87 at R@2, +4.47 R@5, +3.93 R@10, +2.96 R@20, "
        "+2.06 R@50 (Table 7: R@50); +1.35 R@2 Tiny-ImageNet/ResNet-18, +4.34 R@20 ViT-S"),
    ("knn.test_acc",): ("kNN accuracy (k = 50)",
                        "Table 6: +6.65 points on CIFAR-100/ResNet-18 (40.73 → 47.38)"),
}
PAPER_SETTINGS = ("`infonce-lab profiles apply paper_vision` (CIFAR-10/100, STL-10 × "
                  "ResNet-18/50; Tiny-ImageNet and ViT-S as params entries), the internet once "
                  "for the data, a GPU")


def primary_rule(min_effect_points: float) -> Rule:
    """The primary comparison's rule: a gain above 0, not reproduced when the interval excludes
    every gain of at least ``min_effect_points`` (params.yaml primary.min_effect_points)."""
    return Above(0.0, min_effect=min_effect_points, unit="points", what="treatment − reference")


RULES = {
    "gain": Above(0.0, min_effect=MIN_GAIN_POINTS, unit="points", what="WEINCE − InfoNCE"),
    "primary": primary_rule(MIN_GAIN_POINTS),
    # WEINCE's reported configuration is the best of 27 on validation (m × κ_ρ × κ_AIC, §4 and
    # the released sweep), InfoNCE's is untuned: the expected test-score inflation of such a
    # selection among equally good configurations must stay below the paper's smallest gain.
    "selection": Below(MIN_GAIN_POINTS, unit="points",
                       what="expected test inflation of a 1-of-27 validation selection"),
}


# The paper's settings (§4.1, App. F): its datasets and backbones, by kind, so a study that
# names them otherwise (cifar100_mirror, r18) still counts; ResNet-18/50 are torchvision's.
PAPER_DATASET_KINDS = frozenset({"cifar10", "cifar100", "stl10", "tiny_imagenet"})
PAPER_BACKBONES = frozenset({"resnet18", "resnet50", "vit_small"})
SYNTHETIC_NOTE = ("The data were synthetic (report.synthetic_data): a rehearsal of the code "
                  "path, whose numbers say nothing about the paper's claim.")


def at_paper_settings(settings: Mapping[str, Any]) -> frozenset[str]:
    """The study's "<dataset>-<backbone>" settings that are the paper's: a dataset of a paper
    kind and a backbone of the paper's (``settings``: the report's ``dataset_kinds`` and
    ``backbone_archs``)."""
    datasets = [n for n, k in (settings.get("dataset_kinds") or {}).items()
                if k in PAPER_DATASET_KINDS]
    backbones = [n for n, a in (settings.get("backbone_archs") or {}).items()
                 if a in PAPER_BACKBONES]
    return frozenset(f"{d}-{b}" for d in datasets for b in backbones)


def _paper_row(label: str, paper: str, metrics: tuple[str, ...], paired: dict[str, Any],
               pooled: dict[str, Any], loss_kinds: dict[str, str],
               paper_settings: frozenset[str], synthetic: bool) -> ClaimRow:
    """The claim at the paper's settings: decided as the setting's row, on the pairs whose
    dataset and backbone are the paper's; not run when the study has none."""
    text = f"WEINCE beats InfoNCE on {label}, at the paper's settings ({paper})"
    quantity = "WEINCE − InfoNCE on the paper's datasets/backbones"
    pairs = [p for p in _weince_pairs(paired, loss_kinds, metrics) if p.setting in paper_settings]
    if not pairs:
        return not_run_row(PAPER, TOPIC, text, quantity, RULES["gain"], PAPER_SETTINGS,
                           Evidence.PAPER_SCALE)
    by_setting = [p for p in _weince_pairs(pooled, loss_kinds, metrics)
                  if p.setting in paper_settings]
    row = _decided_row(text, f"{quantity}, {GAIN_QUANTITY}", metrics, pairs, by_setting)
    row.evidence = Evidence.PAPER_SCALE
    if synthetic:
        row.note = f"{SYNTHETIC_NOTE} {row.note}"
    return row


def _weince_pairs(source: dict[str, Any], loss_kinds: dict[str, str],
                  metrics: tuple[str, ...]) -> list[OrientedPair]:
    """WEINCE − InfoNCE on ``metrics``, in the claim's metric order (R@2 before R@10)."""
    found = oriented_pairs(source, loss_kinds, "weince", "info_nce", metrics)
    return sorted(found, key=lambda p: metrics.index(p.metric))


def _case_name(p: OrientedPair, several: bool, where: str) -> str:
    """A case's name; the metric is named only where the claim spans several."""
    at = f" {BY_NAME[p.metric].column}" if several else ""
    return f"{p.setting} {p.first} − {p.second}{at}{where}"


def gain_rows(paired: dict[str, Any], pooled: dict[str, Any], loss_kinds: dict[str, str],
              paper_settings: frozenset[str] = frozenset(), synthetic: bool = False,
              ) -> list[ClaimRow]:
    """One claim per metric (or set of metrics): the pooled rows decide, per-schedule rows are
    the Holm family. Each is followed by its claim at the paper's settings, decided on the pairs
    of ``paper_settings`` ("<dataset>-<backbone>", :func:`at_paper_settings`) and not run
    without any; ``synthetic``: the data were synthetic, which those rows say."""
    rows: list[ClaimRow] = []
    for metrics, (label, paper) in CLAIMS.items():
        pairs = _weince_pairs(paired, loss_kinds, metrics)
        text = f"WEINCE beats InfoNCE on {label} ({paper})"
        if not pairs:
            rows.append(not_run_row(PAPER, TOPIC, text, GAIN_QUANTITY, RULES["gain"],
                                    "list an InfoNCE-kind and a WEINCE-kind loss in study.losses"))
        else:
            rows.append(_decided_row(text, GAIN_QUANTITY, metrics, pairs,
                                     _weince_pairs(pooled, loss_kinds, metrics)))
        rows.append(_paper_row(label, paper, metrics, paired, pooled, loss_kinds,
                               paper_settings, synthetic))
    return rows


GAIN_QUANTITY = ("WEINCE − InfoNCE on the test split, paired over encoder seeds: pooled over the "
                 "schedules (each seed's mean difference, t over seeds), and per schedule")


def _decided_row(text: str, quantity: str, metrics: tuple[str, ...], pairs: list[OrientedPair],
                 by_setting: list[OrientedPair]) -> ClaimRow:
    """A gain claim decided on ``by_setting`` (pooled over schedules: one Holm family), with
    the per-schedule ``pairs`` as the second family."""
    rule = RULES["gain"]
    several = len(metrics) > 1
    pooled_cases, per, verdict = decide_pooled_and_per_schedule(
        rule, by_setting, pairs,
        lambda p, s=several: _case_name(p, s, ", pooled over schedules"),
        lambda p, s=several: _case_name(p, s, f" @ {p.shared}"))
    result = "; ".join(f"{BY_NAME[p.metric].column} {c.result}" if several else c.result
                       for p, c in zip(by_setting, pooled_cases, strict=True))
    losses = sorted({p.first for p in pairs} | {p.second for p in pairs})
    n_seeds = max((len(p.per_seed) for p in pairs), default=0)
    return claim(PAPER, TOPIC, text, quantity, rule, pooled_cases + per,
                 verdict=verdict, result=f"pooled: {result}",
                 note=f"The variant and setting decided: losses {', '.join(losses)} as "
                      f"params.yaml defines them, the study's schedules, {n_seeds} "
                      f"seeds (the grid; the paper's τ = 0.5 and its recipe are "
                      f"the primary comparison's).")


def _oracles(losses: Mapping[str, Mapping[str, Any]] | None) -> frozenset[str]:
    """The losses that read the training labels: InfoNCE with ``mask_same_class`` (the label
    oracle of Chuang et al. 2020, §5)."""
    return frozenset(n for n, c in (losses or {}).items() if c.get("mask_same_class"))


def _oracle_text(t: str, r: str, oracles: frozenset[str]) -> str | None:
    """The claim sentence of a contrast against the label oracle, None for any other contrast.
    Such a contrast asks whether false negatives (negatives of the anchor's own class) cost
    InfoNCE accuracy here: no claim of the WEINCE paper, the control its premise needs — WEINCE
    down-weights the negatives nearest the anchor, and same-class negatives are the nearest
    that do harm (the "sampling bias" of Chuang et al. 2020, §1)."""
    if t in oracles and r not in oracles:
        return (f"{t} beats {r}: removing the anchor's same-class negatives from the denominator "
                "(the label oracle of Chuang et al. 2020, §5) helps InfoNCE here")
    if r in oracles and t not in oracles:
        return (f"{t} beats {r}, the label oracle of Chuang et al. 2020 (§5: same-class "
                "negatives removed from the denominator)")
    return None


ORACLE_NOTE = ("The false-negative control, not a WEINCE claim: the oracle reads the training "
               "labels (self-supervised training has none), so it bounds what removing false "
               "negatives can gain. If it does not beat InfoNCE, false negatives cost little "
               "here and WEINCE's down-weighting of the nearest negatives has nothing to gain "
               "from them; if it does, WEINCE leaves that gain on the table. Pre-registered in "
               "params.yaml (primary:) before its runs; shown, never counted among the paper's "
               "claims.")


def trained_on_note(machines: Mapping[str, int] | None) -> str:
    """Where the primary's runs were trained, and so where its verdict is known to hold: results
    are bit-identical for a fixed thread count on one CPU model, and may differ on another
    (the order of its floating-point kernels)."""
    if not machines:
        return ""
    known = {m: n for m, n in machines.items() if m != "unrecorded"}
    where = "; ".join(f"{m} ({n} runs)" for m, n in sorted(known.items()))
    if len(known) == 1:
        text = (f" Its runs were all trained on one CPU model, {where}: the verdict is known to "
                f"hold there; on another model the numbers can differ in their last digits and "
                f"a verdict near its threshold could move.")
    elif known:
        text = f" Its runs were trained on {len(known)} CPU models: {where}."
    else:
        text = ""
    if unknown := machines.get("unrecorded"):
        text += f" {unknown} runs predate the record of their machine."
    return text


def primary_rows(primary: dict[str, Any], design: dict[str, Any],
                 losses: Mapping[str, Mapping[str, Any]] | None = None,
                 machines: Mapping[str, int] | None = None) -> list[ClaimRow]:
    """One row per pre-registered contrast (``design``: params.yaml's primary block); its cases
    are the primary metrics, each family's contrasts × metrics one Holm family (the secondary
    family, on its own seeds, never weakens the primary's level). A contrast holds when it holds
    on every metric; each case shows the effect 80% power would detect at the observed paired
    SD, so an inconclusive row says what it could have seen. ``losses``: params.yaml's loss
    sections, which tell a label-oracle contrast (our control, worded and counted as one)."""
    rule = primary_rule(design["min_effect_points"])
    setting = f"{design['dataset']}/{design['backbone']} at {design['schedule']}"
    if not design["seeds"]:
        return []
    oracles = _oracles(losses)
    by_key = {(c.a, c.b, c.metric): c.pair for c in comparisons(primary)}
    rows = []
    # the families as the params schema derives them (the same the aggregate stage paired)
    for family, seeds, contrasts in PrimaryConfig.model_validate(design).families():
        pairs = [(c.treatment, c.reference) for c in contrasts]
        if not by_key:
            rows += [_as_control(not_run_row(
                PAPER, TOPIC, f"{_oracle_text(t, r, oracles) or f'{t} beats {r}'} "
                f"(pre-registered {family})", f"{t} − {r} at {setting}", rule,
                "run the pretrain_primary stages"), _oracle_text(t, r, oracles))
                for t, r in pairs]
            continue
        rows += _family_rows(family, seeds, pairs, by_key, design, rule, setting, oracles,
                             trained_on_note(machines))
    return [replace(row, primary=True) for row in rows]


def _as_control(row: ClaimRow, oracle_text: str | None) -> ClaimRow:
    """A label-oracle contrast's row is context (our control), never one of the paper's claims."""
    if oracle_text is None:
        return row
    return replace(row, evidence=Evidence.CONTEXT, note=ORACLE_NOTE)


def _family_rows(family: str, seeds: list[int], contrasts: list[tuple[str, str]],
                 by_key: dict[tuple[str, str, str], dict[str, Any]], design: dict[str, Any],
                 rule: Rule, setting: str, oracles: frozenset[str] = frozenset(),
                 where: str = "") -> list[ClaimRow]:
    keys = [(t, r, m) for t, r in contrasts for m in design["metrics"]]
    ts = [TInference.from_json(by_key[k]["t"]) if k in by_key and by_key[k].get("t") else None
          for k in keys]
    # The MDE at the rule's own level: one-sided at α/2 after Holm's strictest step over the
    # family's m cases, i.e. two-sided at 0.05/m (the aggregate stage's mde_80 is unadjusted).
    mdes = [POINTS * t.minimal_detectable_effect(alpha=0.05 / len(keys)) if t is not None
            else None for t in ts]
    results = [f"{points(t)}; MDE {mde:.2f}" if mde is not None else str(points(t))
               for t, mde in zip(ts, mdes, strict=True)]
    cases = [replace(c, mde=mde) for c, mde in zip(decide_family(
        rule, [points(t) for t in ts],
        [f"{t} − {r}: {BY_NAME[m].label}{'' if family == 'primary' else f' ({family})'}"
         for t, r, m in keys],
        results), mdes, strict=True)]
    n_metrics = len(design["metrics"])
    which = ("primary comparison" if family == "primary" else
             f"{family} comparison, its own Holm family on its own seeds")
    rows = []
    for i, (t, r) in enumerate(contrasts):
        oracle = _oracle_text(t, r, oracles)
        if oracle is None:
            text = (f"{t} beats {r} (pre-registered {which}; decided in this study's setting, "
                    f"{setting}, not the paper's)")
        else:
            text = (f"{oracle} (pre-registered {which}; the false-negative control, not a "
                    f"WEINCE claim; {setting})")
        rows.append(_as_control(claim(
            PAPER, TOPIC, text,
            f"{t} − {r} on {', '.join(BY_NAME[m].label for m in design['metrics'])} (test "
            f"split), paired over seeds {seeds}, {setting}; Holm over the family's {len(keys)} "
            f"contrast × metric cases, every metric must hold; MDE: the true difference "
            f"detected with 80% power at the rule's level (Holm's strictest step) and the "
            f"observed paired SD (points)",
            rule, cases[i * n_metrics:(i + 1) * n_metrics],
            note="Pre-registered in params.yaml (primary:) before its runs; decided on its own "
                 "runs only: the grid's comparisons and selection never include them." + where),
            oracle))
    return rows


def selection_row(selection: dict[str, Any] | None) -> ClaimRow:
    """The paper's tuning asymmetry, measured on this study's noise (aggregate: validation/test
    spread of encoders around their configuration's mean and their correlation)."""
    text = ("WEINCE's gain is not an artefact of its tuning: it picks 1 of 27 configurations on "
            "validation, InfoNCE none (§4, the released sweep)")
    quantity = ("expected test-score gain of the validation-best of 27 equally good "
                "configurations at 4 seeds each (the paper's design), from this study's encoder "
                "noise: ρ(val, test) · σ_test/√4 · E[max of 27 N(0, 1)]")
    if not selection:
        return not_run_row(PAPER, TOPIC, text, quantity, RULES["selection"],
                           "≥ 2 seeds in ≥ 2 trained configurations")
    e = Estimate.from_dict(selection["inflation_points"], unit="points", digits=2)
    note = (f"ρ = {selection['rho']:.2f}, σ_test = {100 * selection['sd_test']:.2f} points per "
            f"encoder ({selection['encoders']} encoders in {selection['configurations']} "
            f"configurations)")
    case = Case("linear probe", f"{e}; {note}", RULES["selection"].decide(e), estimate=e)
    row = claim(PAPER, TOPIC, text, quantity, RULES["selection"], [case])
    row.evidence = Evidence.CONTEXT  # our control of the paper's tuning, not its claim
    return row


def claim_rows(paired: dict[str, Any], pooled: dict[str, Any], loss_kinds: dict[str, str],
               selection: dict[str, Any] | None = None, primary: dict[str, Any] | None = None,
               design: dict[str, Any] | None = None,
               losses: Mapping[str, Mapping[str, Any]] | None = None,
               machines: Mapping[str, int] | None = None,
               paper_settings: frozenset[str] = frozenset(),
               synthetic: bool = False) -> list[ClaimRow]:
    first = primary_rows(primary or {}, design, losses, machines) if design else []
    return (first + gain_rows(paired, pooled, loss_kinds, paper_settings, synthetic)
            + [selection_row(selection)])


SECTION = Section(
    id="accuracy", paper="weince", title="Downstream accuracy", evidence=Evidence.SETTING,
    reads=("summary.paired", "summary.pooled", "summary.primary", "summary.selection_inflation",
           "design"),
    rules=RULES,
    rows=lambda i: claim_rows(dict(i.paired), dict(i.pooled), dict(i.loss_kinds),
                              i.summary.get("selection_inflation"), i.summary.get("primary"),
                              dict(i.design), i.settings.get("losses"),
                              i.settings.get("primary_machines"), at_paper_settings(i.settings),
                              bool(i.settings.get("synthetic_data"))))
