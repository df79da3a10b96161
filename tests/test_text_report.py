"""Text results through aggregate and report: paired comparisons with the one-sided p the paper
uses, the verdict rules, and both rendered formats."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from infonce_lab.aggregate import summarise_text, text_group_id
from infonce_lab.report.text import gain_verdict, text_context, text_figure


def _rows(weince: list[float], infonce: list[float]) -> pd.DataFrame:
    rows = []
    for loss, values in (("weince", weince), ("infonce", infonce)):
        for seed, v in enumerate(values, start=1):
            rows.append({"encoder.kind": "trained", "encoder.dataset": "d", "encoder.encoder": "e",
                         "encoder.loss": loss, "encoder.schedule": "s", "encoder.seed": seed,
                         "encoder.step": 16, "sts.test_spearman": v, "linear.test_acc": 0.7})
    rows.append({"encoder.kind": "untuned", "encoder.dataset": "d", "encoder.encoder": "e",
                 "sts.test_spearman": 50.0, "linear.test_acc": 0.7})
    rows.append({"encoder.kind": "tfidf", "encoder.dataset": "d", "sts.test_spearman": 25.0,
                 "linear.test_acc": 0.6})
    df = pd.DataFrame(rows)
    df["group"] = [text_group_id({k.removeprefix("encoder."): r[k] for k in df.columns
                                  if k.startswith("encoder.") and pd.notna(r[k])})
                   for _, r in df.iterrows()]
    return df


def test_summarise_text_pairs_losses_with_the_one_sided_test():
    w, i = [58.0, 60.0, 57.0, 61.0], [52.0, 55.0, 54.0, 53.0]
    text = summarise_text(_rows(w, i))
    assert set(text["groups"]) == {"d-e-weince-s", "d-e-infonce-s", "d-e-untuned", "d-tfidf"}
    g = text["groups"]["d-e-weince-s"]
    assert g["n_encoders"] == 4 and g["sts.test_spearman"]["mean"] == pytest.approx(59.0)
    (pair,) = text["paired"].values()
    assert pair["a"] == "d-e-weince-s" and pair["b"] == "d-e-infonce-s"
    ref = stats.ttest_rel(w, i, alternative="greater").pvalue
    assert pair["p_one_sided"] == pytest.approx(ref)
    assert pair["diff"]["mean"] == pytest.approx(5.5)


def test_the_claim_is_oriented_weince_first_whatever_the_study_order():
    from infonce_lab.report.text import oriented

    df = _rows([58.0, 60.0, 57.0, 61.0], [52.0, 55.0, 54.0, 53.0])
    df = pd.concat([df[df["encoder.loss"] == "infonce"], df[df["encoder.loss"] != "infonce"]])
    text = summarise_text(df)
    (pair,) = text["paired"].values()
    assert pair["a"] == "d-e-infonce-s" and pair["diff"]["mean"] == pytest.approx(-5.5)
    la, lb, o = oriented(pair, {"weince": "weince", "infonce": "info_nce"}, text["groups"])
    assert (la, lb) == ("weince", "infonce") and o["diff"]["mean"] == pytest.approx(5.5)
    ref = stats.ttest_rel([58.0, 60.0, 57.0, 61.0], [52.0, 55.0, 54.0, 53.0],
                          alternative="greater").pvalue
    assert o["p_one_sided"] == pytest.approx(ref)
    assert gain_verdict(o)[1] == "reproduced"


@pytest.mark.parametrize("w,i,verdict", [
    ([58.0, 60.0, 57.0, 61.0], [52.0, 55.0, 54.0, 53.0], "reproduced"),
    ([50.0, 49.0, 51.0, 48.0], [58.0, 57.0, 59.0, 60.0], "not reproduced"),
    ([55.0, 50.0, 56.0, 49.0], [52.0, 53.0, 54.0, 51.0], "inconclusive (CI overlaps 0)"),
    ([58.0], [52.0], "inconclusive (one seed: no paired test; list more text.study.seeds)"),
])
def test_gain_verdicts(w, i, verdict):
    (pair,) = summarise_text(_rows(w, i))["paired"].values()
    assert gain_verdict(pair)[1] == verdict


def test_text_context_renders_in_both_formats():
    from infonce_lab.report.render import (
        render,
    )

    text = summarise_text(_rows([58.0, 60.0], [52.0, 55.0]))
    ctx = text_context(text, {"d": "gensim"}, {"e": "package:x"},
                       {"weince": "weince", "infonce": "info_nce"})
    claims = [c["claim"] for c in ctx["claims"]]
    assert any("weince beats infonce" in c for c in claims)
    assert "+4.63" in ctx["claims"][0]["paper"]
    assert any("untuned" in c for c in claims)
    assert ctx["claims"][-1]["verdict"].startswith("not run: needs")
    png = text_figure(text, {})
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    html, md = render(_minimal_context(ctx, png))
    assert "Sentence embeddings: unsupervised SimCSE" in html and "76.36" in html
    assert "| d-e-weince-s | trained | 2 | 59.00 ± 12.71 |" in md


def _minimal_context(text_ctx, png):
    import base64

    return {"title": "t", "summary": {}, "figures": {"text": base64.b64encode(png).decode()},
            "paired": {}, "selection": {}, "tails": None, "sims": None, "text": text_ctx,
            "verdicts": [], "comparison": [], "provenance": {"versions": {}, "timings": []},
            "study": {}, "runs": []}


def test_accuracy_claims_orient_weince_first_and_list_the_papers_settings():
    from infonce_lab.report.claims import NOT_RUN, accuracy_claims

    diff = {"mean": -0.02, "std": 0.001, "n": 2, "ci95": 0.005}  # infonce − weince = −2 points
    paired = {"digits-r/infonce_vs_weince@t/linear.test_acc":
              {"a": "digits-r-infonce-t", "b": "digits-r-weince-t", "metric": "linear.test_acc",
               "diff": diff, "p_value": 0.01},
              "digits-r/infonce_vs_directau@t/linear.test_acc":
              {"a": "x", "b": "y", "metric": "linear.test_acc", "diff": diff, "p_value": 0.01}}
    rows = accuracy_claims(paired, {"infonce": "info_nce", "weince": "weince",
                                    "directau": "direct_au"},
                           {"digits": "digits"}, {"r": {"kind": "resnet_cifar"}})
    ours = [r for r in rows if r["setting"].startswith("digits")]
    assert len(ours) == 1 and ours[0]["ours"].startswith("+2.00 points ± 0.50")
    assert ours[0]["verdict"] == "reproduced"
    paper = [r for r in rows if r["setting"].endswith("(paper)")]
    assert len(paper) == 7 and all(r["verdict"] == NOT_RUN for r in paper)
    assert "+3.27 points (50.01 → 53.28)" in paper[0]["paper"]
    # The paper's setting, once run, is compared with the paper's number instead.
    paired = {"c100-r18/weince_vs_infonce@t/linear.test_acc":
              {"a": "c", "b": "d", "metric": "linear.test_acc",
               "diff": {"mean": -0.01, "std": 0.0, "n": 4, "ci95": 0.004}, "p_value": 0.01}}
    rows = accuracy_claims(paired, {"infonce": "info_nce", "weince": "weince"},
                           {"c100": "cifar100"}, {"r18": {"kind": "resnet", "depth": 18}})
    assert rows[0]["paper"].startswith("+3.27") and rows[0]["verdict"] == "not reproduced"
    assert len(rows) == 7
