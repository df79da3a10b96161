"""Text results through aggregate and the page's current text section (report/text.py, an
adapter over report/sections/weince_text.py), in both rendered formats; and the WEINCE accuracy
claims' orientation (report/claims.py)."""

from __future__ import annotations

import pandas as pd

from infonce_lab.aggregate import summarise_text, text_group_id
from infonce_lab.report.text import text_context, text_figure


def _rows(weince: list[float], infonce: list[float]) -> pd.DataFrame:
    rows = []
    for loss, values in (("simcse_weince", weince), ("simcse_infonce", infonce)):
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


KINDS = {"simcse_weince": "weince", "simcse_infonce": "info_nce"}
LOSSES = {"simcse_weince": {"kind": "weince", "candidates": "cross_view"},
          "simcse_infonce": {"kind": "info_nce", "candidates": "cross_view", "tau_scale": 1.0}}


def test_text_context_renders_the_section_rows_in_both_formats():
    from infonce_lab.report.render import render

    text = summarise_text(_rows([58.0, 60.0, 57.0, 61.0], [52.0, 55.0, 54.0, 53.0]))
    ctx = text_context(text, {"d": "gensim"}, {"e": "package:x"}, KINDS, losses=LOSSES,
                       taus={"s": 0.05})
    claims = {c["claim"]: c for c in ctx["claims"]}
    gain = next(c for k, c in claims.items() if "+4.63" in k)
    assert gain["verdict"] == "reproduced" and "not STS-B" in gain["ours"]
    assert "95% interval above 0" in gain["paper"]
    assert any(c["verdict"].startswith("not run") for c in ctx["claims"])
    png = text_figure(text, {})
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    html, md = render(_minimal_context(ctx, png))
    assert "Sentence embeddings: unsupervised SimCSE" in html
    assert "| d-e-simcse_weince-s | trained | 4 | 59.00 ± 2.91 |" in md


def test_text_context_reads_loss_params_from_params_yaml(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    text = summarise_text(_rows([58.0, 60.0, 57.0, 61.0], [52.0, 55.0, 54.0, 53.0]))
    ctx = text_context(text, {"d": "gensim"}, {"e": "package:x"}, KINDS)
    by = {r["group"]: r for r in ctx["rows"]}
    assert by["d-e-simcse_weince-s"]["candidates"].startswith("N cross-view")


def _minimal_context(text_ctx, png):
    import base64

    return {"title": "t", "summary": {}, "figures": {"text": base64.b64encode(png).decode()},
            "paired": {}, "selection": {}, "tails": None, "sims": None, "text": text_ctx,
            "verdicts": [], "comparison": [], "provenance": {"versions": {}, "timings": []},
            "study": {}, "runs": []}
