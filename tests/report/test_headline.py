"""The headline metrics file: the verdict counts first, the primary comparisons, in summary.json's
units, and never more than LIMIT numbers — what the limit cuts is named, not dropped silently."""

from __future__ import annotations

import pytest

from infonce_lab.report.headline import LIMIT, headline

COUNTS = {"reproduced": 3, "not_reproduced": 2, "inconclusive": 7, "not_run": 1}


def _comparison(mean: float, low: float, high: float) -> dict:
    return {"diff": {"mean": mean}, "t": {"ci_low": low, "ci_high": high}}


def test_known_values_and_order():
    primary = {"d-b/weince_vs_infonce@t05/few.probe_test_acc": _comparison(-0.0037, -0.0137, 0.0063)}
    groups = {"d-b-weince-t05": {"loss": "weince", "few.probe_test_acc": {"mean": 0.85}},
              "d-b-infonce-t05": {"loss": "infonce", "few.probe_test_acc": {"mean": 0.86}},
              "d-raw_pixels": {"kind": "raw_pixels", "few.probe_test_acc": 0.76}}
    text = {"lee-minilm-untuned": {"sts.test_spearman": {"mean": 50.8}}}
    out, left = headline(COUNTS, primary, groups, ["d-b-infonce-t05", "d-b-weince-t05"],
                         "d-raw_pixels", ["few.probe_test_acc"], text)
    assert left == []
    assert list(out) == [
        "verdicts.reproduced", "verdicts.not_reproduced", "verdicts.inconclusive",
        "verdicts.not_run", "primary.weince_vs_infonce.few.probe_test_acc.diff",
        "primary.weince_vs_infonce.few.probe_test_acc.ci_low",
        "primary.weince_vs_infonce.few.probe_test_acc.ci_high",
        "infonce.few.probe_test_acc", "weince.few.probe_test_acc",
        "raw_pixels.few.probe_test_acc", "text.minilm-untuned.sts_spearman"]
    assert out["verdicts.inconclusive"] == 7
    assert out["primary.weince_vs_infonce.few.probe_test_acc.diff"] == pytest.approx(-0.0037)
    assert out["primary.weince_vs_infonce.few.probe_test_acc.ci_high"] == pytest.approx(0.0063)
    assert out["raw_pixels.few.probe_test_acc"] == pytest.approx(0.76)
    assert out["text.minilm-untuned.sts_spearman"] == pytest.approx(50.8)


def test_a_large_study_is_cut_at_the_limit_and_says_what():
    primary = {f"d-b/l{i}_vs_ref@t/few.probe_test_acc": _comparison(0.01, 0.0, 0.02)
               for i in range(20)}
    out, left = headline(COUNTS, primary, {}, [], None, ["few.probe_test_acc"], {})
    assert len(out) == LIMIT == 48
    assert len(left) == 4 + 3 * 20 - LIMIT
    assert left[-1] == "primary.l9_vs_ref.few.probe_test_acc.ci_high"  # sorted: l19 before l9


def test_every_grid_configuration_has_its_figure_named_by_loss_and_schedule():
    groups = {f"d-b-{loss}-{sched}": {"loss": loss, "few.probe_test_acc": {"mean": 0.8 + i / 100}}
              for i, (loss, sched) in enumerate([("infonce", "fixed"), ("weince", "cosine")])}
    out, left = headline(COUNTS, {}, groups, [], None, ["few.probe_test_acc", "few.knn_test_acc"],
                         {}, list(groups))
    assert left == []
    assert out["grid.infonce-fixed.few.probe_test_acc"] == pytest.approx(0.80)
    assert out["grid.weince-cosine.few.probe_test_acc"] == pytest.approx(0.81)
    assert not any("knn" in k for k in out)  # one figure per configuration
    # two settings: the configuration's whole id keeps them apart
    two = {**groups, "e-b-infonce-fixed": {"few.probe_test_acc": {"mean": 0.5}}}
    out, _ = headline(COUNTS, {}, two, [], None, ["few.probe_test_acc"], {}, list(two))
    assert out["grid.e-b-infonce-fixed.few.probe_test_acc"] == pytest.approx(0.50)
