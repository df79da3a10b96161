"""WEINCE's accuracy claims: the gain rule, pooling over schedules, Holm within the claim, and
the selection-inflation row."""

from __future__ import annotations

import pytest
from paired_fixtures import pooled

from infonce_lab.evaluation.stats import t_mean
from infonce_lab.report.sections.weince_accuracy import (
    at_paper_settings,
    claim_rows,
    gain_rows,
    selection_row,
)
from infonce_lab.report.verdicts import Estimate, Evidence, Outcome


def _pts(lo: float, hi: float) -> Estimate:
    return Estimate((lo + hi) / 2, lo, hi, unit="points")


FIXTURES = {
    "gain": (_pts(0.5, 2.5), _pts(-1.5, 0.6)),        # above 0 / excludes a 1-point gain
    "selection": (_pts(0.1, 0.6), _pts(1.2, 2.0)),   # inflation below / above 1 point
    "primary": (_pts(0.4, 1.9), _pts(-0.8, 0.7)),     # above 0 / excludes a 1-point gain
}


def _pair(a: str, b: str, sched: str, diffs: dict[int, float], metric: str = "linear.test_acc"):
    t = t_mean(list(diffs.values()))
    return (f"digits-resnet_digits/{a}_vs_{b}@{sched}/{metric}",
            {"a": f"x-{a}-{sched}", "b": f"x-{b}-{sched}", "metric": metric,
             "diff": {"mean": t.mean}, "t": t.to_json(),
             "per_seed": {str(k): v for k, v in diffs.items()}})


KINDS = {"infonce": "info_nce", "weince": "weince", "directau": "direct_au"}


def test_a_consistent_gain_is_reproduced_whichever_order_the_losses_are_listed():
    gain = {1: 0.03, 2: 0.035, 3: 0.032, 4: 0.028}
    paired = dict([_pair("infonce", "weince", "fixed", {k: -v for k, v in gain.items()}),
                   _pair("weince", "infonce", "cosine", gain)])
    row = gain_rows(paired, pooled(paired), KINDS)[0]
    assert row.verdict.outcome is Outcome.REPRODUCED
    assert row.result.startswith("pooled: +3.")
    names = [c.name for c in row.cases]
    assert names[0].endswith("pooled over schedules") and any("@ fixed" in n for n in names)
    assert all(c.verdict.outcome is Outcome.REPRODUCED for c in row.cases)
    assert "Holm" in row.cases[1].p  # two per-schedule cases share the family


def test_no_gain_is_not_reproduced_and_the_paper_settings_are_not_run():
    paired = dict([_pair("weince", "infonce", s, {1: 0.001, 2: -0.002, 3: 0.0005, 4: -0.001})
                   for s in ("fixed", "cosine")])
    rows = gain_rows(paired, pooled(paired), KINDS)
    assert rows[0].verdict.outcome is Outcome.NOT_REPRODUCED
    assert rows[1].verdict.outcome is Outcome.NOT_RUN and "paper_vision" in rows[1].verdict.why


def test_two_seeds_that_disagree_are_inconclusive():
    paired = dict([_pair("weince", "infonce", "fixed", {1: 0.05, 2: -0.02})])
    assert gain_rows(paired, pooled(paired), KINDS)[0].verdict.outcome is Outcome.INCONCLUSIVE


def test_one_seed_has_no_interval_and_the_row_names_the_setting():
    # one seed: aggregate writes no t-inference
    pair = {"a": "x-weince-fixed", "b": "x-infonce-fixed", "metric": "linear.test_acc",
            "diff": {"mean": 0.05}, "t": None, "per_seed": {"1": 0.05}}
    paired = {"digits-resnet_digits/weince_vs_infonce@fixed/linear.test_acc": pair}
    row = gain_rows(paired, pooled(paired), KINDS)[0]
    assert row.verdict.outcome is Outcome.INCONCLUSIVE
    assert "weince" in row.note and "1 seeds" in row.note


def test_without_both_losses_every_claim_says_what_to_list():
    rows = claim_rows({}, {}, KINDS, None)
    assert rows[0].verdict.outcome is Outcome.NOT_RUN and "study.losses" in rows[0].verdict.why
    assert rows[-1].verdict.outcome is Outcome.NOT_RUN


@pytest.mark.parametrize(("value", "lo", "hi", "expected"), [
    (0.5, 0.1, 0.9, Outcome.REPRODUCED), (1.5, 1.2, 1.9, Outcome.NOT_REPRODUCED),
    (0.9, 0.2, 1.6, Outcome.INCONCLUSIVE)])
def test_selection_row(value, lo, hi, expected):
    sel = {"inflation_points": {"value": value, "low": lo, "high": hi}, "rho": 0.7,
           "sd_test": 0.008, "encoders": 18, "configurations": 9}
    row = selection_row(sel)
    assert row.verdict.outcome is expected and "ρ = 0.70" in row.result


DESIGN = {"dataset": "digits", "backbone": "r", "schedule": "fixed_t05", "seeds": [1, 2, 3, 4],
          "losses": ["weince", "infonce", "weince_recipe", "infonce_topm"],
          "comparisons": [{"treatment": "weince", "reference": "infonce"},
                          {"treatment": "weince_recipe", "reference": "infonce_topm"}],
          "metrics": ["few.probe_test_acc", "few.knn_test_acc"], "min_effect_points": 1.0}


def _primary(diffs: dict[tuple[str, str], dict[int, float]]) -> dict:
    out = {}
    for (a, b), d in diffs.items():
        for metric in DESIGN["metrics"]:
            key, pair = _pair(a, b, "fixed_t05", d, metric)
            pair["mde_80"] = 0.012
            out[key.replace("resnet_digits", "r")] = pair
    return out


def test_primary_rows_decide_each_contrast_on_every_metric_with_its_mde():
    gain = {1: 0.03, 2: 0.035, 3: 0.032, 4: 0.028}
    none = {1: 0.001, 2: -0.002, 3: 0.0005, 4: -0.001}
    rows = claim_rows({}, {}, KINDS, None, _primary({("weince", "infonce"): gain,
                                                ("weince_recipe", "infonce_topm"): none}), DESIGN)
    first, second = rows[0], rows[1]
    assert "pre-registered" in first.claim and first.verdict.outcome is Outcome.REPRODUCED
    assert second.verdict.outcome is Outcome.NOT_REPRODUCED
    assert [c.name for c in first.cases] == ["weince − infonce: few-label linear probe",
                                             "weince − infonce: few-label kNN"]
    # the MDE at the rule's level: two-sided 0.05/4 over the four cases, from the paired SD
    mde = 100 * t_mean(list(gain.values())).minimal_detectable_effect(alpha=0.05 / 4)
    assert f"MDE {mde:.2f}" in first.cases[0].result
    # both one-sided p-values: "not reproduced" is decided by the one against the claim
    assert all("for the claim" in c.p and "against it" in c.p and "Holm" in c.p
               for c in first.cases + second.cases)
    assert "not the paper's" in first.claim
    # the grid's rows follow, not run here
    assert rows[2].verdict.outcome is Outcome.NOT_RUN


def test_primary_rows_read_not_run_before_its_runs_and_vanish_without_seeds():
    rows = claim_rows({}, {}, KINDS, None, {}, DESIGN)
    assert rows[0].verdict.outcome is Outcome.NOT_RUN and "pretrain_primary" in rows[0].verdict.why
    assert len([r for r in claim_rows({}, {}, KINDS, None, {}, {**DESIGN, "seeds": []})
                if "pre-registered" in r.claim]) == 0


def test_a_secondary_family_is_its_own_holm_family_on_its_own_seeds():
    """Moving a contrast to the secondary family leaves the primary's cases adjusted over the
    primary's cases only: the primary's MDE is at 0.05/2, the same as with no other contrast."""
    gain = {1: 0.03, 2: 0.035, 3: 0.032, 4: 0.028}
    noisy = {1: 0.02, 2: -0.03, 3: 0.001}
    split = {**DESIGN, "comparisons": DESIGN["comparisons"][:1],
             "secondary": {"seeds": [1, 2, 3], "comparisons": DESIGN["comparisons"][1:]}}
    alone = {**split, "secondary": {"seeds": [], "comparisons": []},
             "losses": ["weince", "infonce"]}
    data = _primary({("weince", "infonce"): gain, ("weince_recipe", "infonce_topm"): noisy})
    rows = [r for r in claim_rows({}, {}, KINDS, None, data, split) if r.primary]
    only = [r for r in claim_rows({}, {}, KINDS, None, data, alone) if r.primary]
    assert len(rows) == 2 and len(only) == 1
    assert "secondary comparison" in rows[1].claim and "seeds [1, 2, 3]" in rows[1].quantity
    assert all(c.name.endswith("(secondary)") for c in rows[1].cases)
    assert not any("secondary" in c.name for c in rows[0].cases)
    assert [c.p for c in rows[0].cases] == [c.p for c in only[0].cases]
    mde = 100 * t_mean(list(gain.values())).minimal_detectable_effect(alpha=0.05 / 2)
    assert f"MDE {mde:.2f}" in rows[0].cases[0].result
    # in one family of four the same data are adjusted over four cases
    joint = claim_rows({}, {}, KINDS, None, data, DESIGN)[0]
    assert [c.p for c in joint.cases] != [c.p for c in rows[0].cases]


def test_the_label_oracle_contrast_is_worded_and_counted_as_our_control():
    """infonce_oracle − infonce (mask_same_class: Chuang et al. 2020, §5) is no claim of the
    WEINCE paper: its row says it is the false-negative control, is context (never counted among
    the paper's claims), and still sits in the secondary family's Holm adjustment."""
    from infonce_lab.report.findings import counted
    from infonce_lab.report.verdicts import Evidence

    oracle = {**DESIGN, "losses": [*DESIGN["losses"], "infonce_oracle"],
              "comparisons": DESIGN["comparisons"][:1],
              "secondary": {"seeds": [1, 2, 3, 4], "comparisons": [
                  *DESIGN["comparisons"][1:], {"treatment": "infonce_oracle",
                                               "reference": "infonce"}]}}
    losses = {"infonce": {"kind": "info_nce", "mask_same_class": False},
              "infonce_oracle": {"kind": "info_nce", "mask_same_class": True},
              "weince": {"kind": "weince"}}
    gain = {1: 0.03, 2: 0.035, 3: 0.032, 4: 0.028}
    data = _primary({("weince", "infonce"): gain, ("weince_recipe", "infonce_topm"): gain,
                     ("infonce_oracle", "infonce"): gain})
    rows = [r for r in claim_rows({}, {}, KINDS, None, data, oracle, losses) if r.primary]
    assert len(rows) == 3
    weince, recipe, control = rows
    assert "false-negative control, not a WEINCE claim" in control.claim
    assert "Chuang et al. 2020, §5" in control.claim and "secondary comparison" in control.claim
    assert control.evidence is Evidence.CONTEXT and not counted(control)
    assert "bounds what removing false negatives can gain" in control.note
    assert control.verdict.outcome is Outcome.REPRODUCED
    assert all(c.name.endswith("(secondary)") for c in control.cases)
    for row in (weince, recipe):  # the WEINCE contrasts keep their wording and their count
        assert "control" not in row.claim and row.evidence is None
    # Holm over the secondary family's four cases: the oracle's contrast is one of its questions
    assert "Holm" in control.cases[0].p
    # without the loss sections (an older caller) the row reads as a plain contrast
    plain = [r for r in claim_rows({}, {}, KINDS, None, data, oracle) if r.primary][2]
    assert plain.claim.startswith("infonce_oracle beats infonce (pre-registered")
    # before its runs: not run, already worded as the control
    not_yet = [r for r in claim_rows({}, {}, KINDS, None, {}, oracle, losses) if r.primary][2]
    assert not_yet.verdict.outcome is Outcome.NOT_RUN
    assert "label oracle" in not_yet.claim and not_yet.evidence is Evidence.CONTEXT


def _recall_row(rows):
    (row,) = [r for r in rows if "recall@k at each k" in r.claim and "paper's settings" not in r.claim]
    return row


def test_recall_at_every_k_holds_only_when_every_k_holds_in_k_order():
    """Table 3's R@2 … R@50: one Holm family over the ks, named by k in k order; one k that
    excludes a 1-point gain fails the claim whatever the others show; a k the runs lack (not in
    evaluation.recall_ks) is simply absent."""
    gain = {1: 0.03, 2: 0.035, 3: 0.032, 4: 0.028}
    ks = (50, 2, 10, 5)   # listed out of order, no R@20
    paired = dict(_pair("weince", "infonce", s, gain, f"knn.test_recall_at_{k}")
                  for s in ("fixed", "cosine") for k in ks)
    row = _recall_row(gain_rows(paired, pooled(paired), KINDS))
    assert row.verdict.outcome is Outcome.REPRODUCED
    pooled_names = [c.name for c in row.cases if c.pooled]
    assert [n.split()[-4].rstrip(",") for n in pooled_names] == ["R@2", "R@5", "R@10", "R@50"]
    assert row.result.startswith("pooled: R@2 +3.")
    paired.update(_pair("weince", "infonce", s, {1: 0.001, 2: -0.002, 3: 0.0005, 4: -0.001},
                        "knn.test_recall_at_50") for s in ("fixed", "cosine"))
    row = _recall_row(gain_rows(paired, pooled(paired), KINDS))
    assert row.verdict.outcome is Outcome.NOT_REPRODUCED
    assert [c.verdict.outcome for c in row.cases if c.pooled][-1] is Outcome.NOT_REPRODUCED


def test_the_primary_says_on_which_cpu_models_its_runs_were_trained(tmp_path):
    from infonce_lab.params import Run
    from infonce_lab.pipeline import paths
    from infonce_lab.pipeline.report import trained_on
    from infonce_lab.report.sections.weince_accuracy import trained_on_note

    runs = [Run(dataset="digits", backbone="b", loss="infonce", schedule="s", seed=k)
            for k in (1, 2, 3)]
    for run, machine in zip(runs, ("CPU A", "CPU A", None), strict=True):
        folder = tmp_path / "train" / paths.in_configuration(run.id)
        folder.mkdir(parents=True)
        record = {"steps": 1} if machine is None else {"steps": 1, "machine": machine}
        (folder / "run.json").write_text(__import__("json").dumps(record))
    machines = trained_on(tmp_path, runs)
    assert machines == {"CPU A": 2, "unrecorded": 1}
    note = trained_on_note(machines)
    assert "one CPU model, CPU A (2 runs)" in note and "1 runs predate" in note
    assert "2 CPU models" in trained_on_note({"CPU A": 8, "CPU B": 8})
    assert trained_on_note({}) == "" and trained_on_note(None) == ""


def _at(setting: str, key_value: tuple[str, dict]) -> tuple[str, dict]:
    """A pair of :func:`_pair` moved to ``setting`` ("<dataset>-<backbone>")."""
    key, value = key_value
    return f"{setting}/{key.split('/', 1)[1]}", value


PAPER_STUDY = {"dataset_kinds": {"digits": "digits", "c100": "cifar100"},
               "backbone_archs": {"resnet_digits": "resnet_cifar", "r18": "resnet18"}}


def test_the_paper_settings_are_the_paper_kinds_of_dataset_and_backbone():
    assert at_paper_settings(PAPER_STUDY) == {"c100-r18"}
    assert at_paper_settings({}) == frozenset()


@pytest.mark.parametrize(("gain", "outcome"), [(0.03, Outcome.REPRODUCED),
                                               (-0.001, Outcome.NOT_REPRODUCED)])
def test_the_paper_row_is_decided_on_the_paper_settings_alone(gain: float, outcome: Outcome):
    # digits shows a clear gain everywhere; the paper row must read only c100-r18
    noise = (0.0, 0.004, -0.003, 0.002)
    paired = dict([_pair("weince", "infonce", "fixed", {1: 0.05, 2: 0.06, 3: 0.055, 4: 0.05}),
                   _at("c100-r18", _pair("weince", "infonce", "fixed",
                                         {i + 1: gain + e for i, e in enumerate(noise)}))])
    rows = gain_rows(paired, pooled(paired), KINDS, at_paper_settings(PAPER_STUDY),
                     synthetic=True)
    setting_row, paper_row = rows[0], rows[1]
    # the study's row decides on both settings, the paper's on c100-r18 alone
    assert {c.name.split(" ", 1)[0] for c in setting_row.cases} == {"digits-resnet_digits",
                                                                     "c100-r18"}
    assert paper_row.verdict.outcome is outcome
    assert paper_row.evidence is Evidence.PAPER_SCALE
    assert {c.name.split(" ", 1)[0] for c in paper_row.cases} == {"c100-r18"}
    assert paper_row.note.startswith("The data were synthetic")
