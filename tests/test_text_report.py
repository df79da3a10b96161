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
    assert "Sentence embeddings: unsupervised SimCSE" in html
    assert "| d-e-weince-s | trained | 2 | 59.00 ± 12.71 |" in md


def _minimal_context(text_ctx, png):
    import base64

    return {"title": "t", "summary": {}, "figures": {"text": base64.b64encode(png).decode()},
            "paired": {}, "selection": {}, "tails": None, "sims": None, "text": text_ctx,
            "verdicts": [], "comparison": [], "provenance": {"versions": {}, "timings": []},
            "study": {}, "runs": []}
