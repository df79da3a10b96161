"""The SimCSE section (report/sections/weince_text.py): every rule against an input that must pass
it and one that must fail it (FIXTURES, checked by tests/test_rules.py), and claim_rows on small
synthetic results run through the aggregate stage's own summarise_text."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from infonce_lab.aggregate import summarise_text, text_group_id
from infonce_lab.report.sections import weince_text as wt
from infonce_lab.report.verdicts import Estimate, Outcome

FIXTURES = {
    # WEINCE − InfoNCE in points: interval above 0 passes; wholly below 0 fails.
    "weince_beats_infonce": (Estimate(4.0, 1.5, 6.5), Estimate(-4.0, -6.5, -1.5)),
    "weince_beats_temperature_control": (Estimate(2.0, 0.5, 3.5), Estimate(-2.0, -3.5, -0.5)),
    # r = 0 at the control's 1/τ_c, 1 at InfoNCE's 1/τ: inside ±0.5 passes; near 1 fails.
    "control_at_weince_temperature": (Estimate(0.05, -0.2, 0.3), Estimate(0.95, 0.8, 1.1)),
    # The paper's STS-B levels (71.74 ± 4.23, 76.36 ± 3.17): inside passes, disjoint fails.
    "paper_level_infonce": (Estimate(71.0, 69.0, 73.0), Estimate(50.0, 48.0, 52.0)),
    "paper_level_weince": (Estimate(76.0, 74.5, 77.5), Estimate(60.0, 58.0, 62.0)),
}

KINDS = {"simcse_infonce": "info_nce", "simcse_weince": "weince", "simcse_infonce_tc": "info_nce",
         "infonce": "info_nce", "weince": "weince"}
LOSSES = {"simcse_infonce": {"kind": "info_nce", "candidates": "cross_view", "tau_scale": 1.0},
          "simcse_weince": {"kind": "weince", "candidates": "cross_view"},
          "simcse_infonce_tc": {"kind": "info_nce", "candidates": "cross_view", "tau_scale": 1.36},
          "infonce": {"kind": "info_nce"}, "weince": {"kind": "weince"}}
TAUS = {"s": 0.05}
# the rows are keyed by their claim's sentence
GAIN_CLAIM, CONTROL_CLAIM, CONTROL_AT_CLAIM = (wt.CLAIMS[k].text for k in (
    "weince_beats_infonce", "weince_beats_temperature_control", "control_at_weince_temperature"))
LEVEL_CLAIM = wt.LEVEL.text
INV_TC = 1 / (0.05 * 1.36)  # 14.71


def _df(values: dict[str, list[float]], kappa: list[float] | None = None,
        dataset: str = "d") -> pd.DataFrame:
    rows = []
    for loss, vs in values.items():
        for seed, v in enumerate(vs, start=1):
            row = {"encoder.kind": "trained", "encoder.dataset": dataset, "encoder.encoder": "e",
                   "encoder.loss": loss, "encoder.schedule": "s", "encoder.seed": seed,
                   "encoder.step": 10, "sts.test_spearman": v, "linear.test_acc": 0.7}
            if KINDS[loss] == "weince" and kappa is not None:
                row["train.inv_tau_eff_mean"] = kappa[seed - 1]
                row["train.lambda_mean"] = 0.33
            rows.append(row)
    rows.append({"encoder.kind": "untuned", "encoder.dataset": dataset, "encoder.encoder": "e",
                 "sts.test_spearman": 50.0, "linear.test_acc": 0.7})
    rows.append({"encoder.kind": "tfidf", "encoder.dataset": dataset, "sts.test_spearman": 25.0,
                 "linear.test_acc": 0.5})
    df = pd.DataFrame(rows)
    df["group"] = [text_group_id({k.removeprefix("encoder."): r[k] for k in df.columns
                                  if k.startswith("encoder.") and pd.notna(r[k])})
                   for _, r in df.iterrows()]
    return df


def _rows(values, kappa=None, dataset_kinds=None, dataset="d"):
    text = summarise_text(_df(values, kappa, dataset))
    rows = wt.claim_rows(text, KINDS, losses=LOSSES, taus=TAUS,
                         dataset_kinds=dataset_kinds or {"d": "gensim"})
    return {r.claim: r for r in rows}, text


W4 = [58.0, 60.0, 57.0, 61.0]
I4 = [52.0, 55.0, 54.0, 53.0]
C4 = [53.0, 54.0, 52.0, 55.0]
KAPPA_AT_CONTROL = [14.5, 14.9, 14.6, 14.8]


def test_summarise_text_pairs_every_loss_with_its_t_inference():
    text = summarise_text(_df({"simcse_weince": W4, "simcse_infonce": I4}, KAPPA_AT_CONTROL))
    assert set(text["groups"]) == {"d-e-simcse_weince-s", "d-e-simcse_infonce-s", "d-e-untuned",
                                   "d-tfidf"}
    g = text["groups"]["d-e-simcse_weince-s"]
    assert g["train.inv_tau_eff_mean"]["mean"] == pytest.approx(14.7)
    (pair,) = text["paired"].values()
    assert "p_one_sided" not in pair
    assert pair["a"] == "d-e-simcse_weince-s" and pair["diff"]["mean"] == pytest.approx(5.5)
    ref = stats.ttest_rel(W4, I4)
    assert pair["p_value"] == pytest.approx(ref.pvalue)
    assert pair["t"]["df"] == 3 and pair["per_seed"] == {"1": 6.0, "2": 5.0, "3": 3.0, "4": 8.0}


def test_a_clear_gain_over_both_is_reproduced_with_holm_shown():
    rows, _ = _rows({"simcse_infonce": I4, "simcse_weince": W4, "simcse_infonce_tc": C4},
                    KAPPA_AT_CONTROL)
    gain, ctrl = rows[GAIN_CLAIM], rows[CONTROL_CLAIM]
    assert gain.verdict.outcome is Outcome.REPRODUCED and ctrl.verdict.outcome is Outcome.REPRODUCED
    assert "Holm" in gain.result and "+5.50" in gain.result
    assert "not STS-B" in gain.note and "paired one-sided t (the paper's test)" in gain.note
    assert "1.36 × τ" in ctrl.note
    check = rows[CONTROL_AT_CLAIM]
    assert check.self_check and check.verdict.outcome is Outcome.REPRODUCED
    assert rows[LEVEL_CLAIM].verdict.outcome is Outcome.NOT_RUN


def test_the_two_seed_result_that_passed_the_one_sided_test_is_inconclusive():
    """The committed study before this rule: +5.58 with two seeds, one-sided p = 0.041 — the
    paper's test passes it, the two-sided 95% interval (t with 1 df) does not."""
    w, i = [53.17, 50.53], [48.28, 44.24]
    rows, text = _rows({"simcse_infonce": i, "simcse_weince": w})
    (pair,) = text["paired"].values()
    one_sided = stats.ttest_rel(w, i, alternative="greater").pvalue
    assert one_sided < 0.05
    gain = rows[GAIN_CLAIM]
    assert gain.verdict.outcome is Outcome.INCONCLUSIVE
    assert f"p = {one_sided:.3f}" in gain.note


def test_weince_below_the_control_is_contradicted():
    rows, _ = _rows({"simcse_infonce": I4, "simcse_weince": W4,
                     "simcse_infonce_tc": [64.0, 66.5, 63.0, 67.0]}, KAPPA_AT_CONTROL)
    ctrl = rows[CONTROL_CLAIM]
    assert ctrl.verdict.outcome is Outcome.NOT_REPRODUCED
    assert "softer temperature" in ctrl.cases[0].verdict.why
    assert rows[GAIN_CLAIM].verdict.outcome is Outcome.REPRODUCED


def test_weince_below_infonce_is_contradicted():
    rows, _ = _rows({"simcse_infonce": W4, "simcse_weince": I4})
    gain = rows[GAIN_CLAIM]
    assert gain.verdict.outcome is Outcome.NOT_REPRODUCED
    assert "WEINCE scores below InfoNCE" in str(gain.cases[0].verdict)
    assert rows[CONTROL_CLAIM].verdict.outcome is Outcome.NOT_RUN
    assert "tau_scale" in rows[CONTROL_CLAIM].verdict.why


def test_holm_over_the_family_can_withhold_a_verdict():
    """A gain significant on its own (one-sided p < 0.025) but not after Holm with the control
    comparison in the same family stays inconclusive."""
    w = [60.0, 61.0, 59.5, 60.5, 60.0, 61.5]
    i = [58.4, 58.0, 60.4, 58.6, 58.1, 58.3]   # WEINCE − InfoNCE ≈ +1.8, one-sided p ≈ 0.015
    c = [60.0, 60.5, 60.0, 61.0, 59.5, 61.0]   # WEINCE − control ≈ 0
    text = summarise_text(_df({"simcse_infonce": i, "simcse_weince": w, "simcse_infonce_tc": c},
                              [14.7] * 6))
    est = wt._pair(text["paired"], ("d", "e", "s"), "simcse_weince", "simcse_infonce")
    p_alone = est.p_greater(0.0)
    assert 0.0125 < p_alone < 0.025, p_alone      # passes alone, not at Holm's first step α/4
    alone = wt.claim_rows(summarise_text(_df({"simcse_infonce": i, "simcse_weince": w})),
                          KINDS, losses=LOSSES, taus=TAUS, dataset_kinds={"d": "gensim"})
    assert alone[0].verdict.outcome is Outcome.REPRODUCED
    family = wt.claim_rows(text, KINDS, losses=LOSSES, taus=TAUS, dataset_kinds={"d": "gensim"})
    assert family[0].verdict.outcome is Outcome.INCONCLUSIVE
    assert "Holm" in family[0].result


def test_the_control_self_check_fails_when_weince_trains_at_infonces_temperature():
    rows, _ = _rows({"simcse_infonce": I4, "simcse_weince": W4, "simcse_infonce_tc": C4},
                    [19.9, 20.0, 19.8, 20.1])
    check = rows[CONTROL_AT_CLAIM]
    assert check.verdict.outcome is Outcome.NOT_REPRODUCED


def test_control_position_is_affine_between_the_two_temperatures():
    from infonce_lab.evaluation.stats import TInference

    k = Estimate.from_t(TInference(INV_TC, 0.1, 3, 4))
    assert wt.control_position(k, 0.05, 1.36).value == pytest.approx(0.0)
    k = Estimate.from_t(TInference(20.0, 0.1, 3, 4))
    assert wt.control_position(k, 0.05, 1.36).value == pytest.approx(1.0)
    assert not wt.control_position(Estimate.missing("x"), 0.05, 1.36).defined


def test_both_candidate_sets_join_one_family_and_are_named():
    rows, _ = _rows({"simcse_infonce": I4, "simcse_weince": W4, "infonce": I4, "weince": W4})
    gain = rows[GAIN_CLAIM]
    names = [c.name for c in gain.cases]
    assert len(names) == 2
    assert any("N cross-view candidates (SimCSE)" in n for n in names)
    assert any("2N − 1 candidates (SimCLR)" in n for n in names)
    assert gain.verdict.outcome is Outcome.REPRODUCED


def test_one_seed_is_inconclusive_not_a_number():
    rows, _ = _rows({"simcse_infonce": [52.0], "simcse_weince": [58.0]})
    gain = rows[GAIN_CLAIM]
    assert gain.verdict.outcome is Outcome.INCONCLUSIVE and "undefined" in gain.verdict.why


def test_paper_level_is_decided_on_the_papers_data():
    rows, _ = _rows({"simcse_infonce": [71.0, 72.5, 70.8, 72.0],
                     "simcse_weince": [60.0, 61.0, 59.0, 60.5]},
                    dataset_kinds={"w": "simcse_wiki1m"}, dataset="w")
    level = rows[LEVEL_CLAIM]
    outcomes = {c.name: c.verdict.outcome for c in level.cases}
    assert outcomes == {"w-e-simcse_infonce-s": Outcome.REPRODUCED,
                        "w-e-simcse_weince-s": Outcome.NOT_REPRODUCED}
    assert level.verdict.outcome is Outcome.NOT_REPRODUCED
    assert "STS-B test, the paper's set" in rows[GAIN_CLAIM].note


def test_no_text_results_give_not_run_rows():
    rows = wt.claim_rows(None, KINDS)
    assert rows and all(r.verdict.outcome is Outcome.NOT_RUN for r in rows)
    assert all(r.section == "weince" and r.topic == wt.TOPIC for r in rows)
    assert wt.context(None, KINDS) is None


def test_context_lists_candidates_temperatures_and_pairs():
    text = summarise_text(_df({"simcse_infonce": I4, "simcse_weince": W4,
                               "simcse_infonce_tc": C4}, KAPPA_AT_CONTROL))
    ctx = wt.context(text, KINDS, losses=LOSSES, taus=TAUS)
    by = {r["group"]: r for r in ctx["rows"]}
    assert by["d-e-simcse_infonce_tc-s"]["tau"] == pytest.approx(0.068)
    assert by["d-e-simcse_infonce-s"]["tau"] == pytest.approx(0.05)
    assert by["d-e-simcse_weince-s"]["tau_effective"] == pytest.approx(1 / 14.7)
    assert by["d-e-simcse_weince-s"]["candidates"].startswith("N cross-view")
    assert "loss" not in by["d-tfidf"]
    assert len(ctx["paired"]) == 3 and all(p["result"].startswith(("+", "-"))
                                           for p in ctx["paired"])
