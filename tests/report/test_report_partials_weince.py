"""The WEINCE sections' templates (templates/sections/{accuracy,text,tails}.j2), each rendered as
both pages through the report's Jinja environments, on the tails and text section modules' context() output built from
the synthetic data of their own tests."""

from __future__ import annotations

import html
from typing import Any

import pytest
from jinja2 import StrictUndefined
from test_report_weince_tails import KINDS as TAIL_KINDS
from test_report_weince_tails import default_study
from test_report_weince_text import I4, KAPPA_AT_CONTROL, LOSSES, TAUS, W4, _df
from test_report_weince_text import KINDS as TEXT_KINDS

from infonce_lab.aggregate import summarise_text
from infonce_lab.report.render import environment
from infonce_lab.report.sections import weince_tails, weince_text

KINDS = ("html", "md")
SECTIONS = ("accuracy", "text", "tails")  # the WEINCE paper's section templates, in page order


def render_sections(kind: str, undefined: type | None = None, **ctx: Any) -> str:
    """The WEINCE sections' templates as one page of ``kind`` renders them."""
    env = environment(markdown=kind == "md")
    if undefined is not None:
        env.undefined = undefined
    ctx = {"primary": {"seeds": []}, "fmt": kind, "up": "", **ctx}
    # entities (the HTML page escapes, the Markdown one makes < and > inert) read as characters
    return html.unescape("".join(env.get_template(f"sections/{s}.j2").render(**ctx)
                                 for s in SECTIONS))


FIGURES = {name: f"PNG-{name}" for name in (
    "text", "lambda", "noise_floor", "tails_over_training", "repulsion", "gpd_fit",
    "link_ablations", "allocation")}
REPRESENTATIVE = {"run": "d-b-infonce-fixed-1", "group": "d-b-infonce-fixed", "epoch": 60,
                  "plots": {}, "seeds": {"d-b-infonce-fixed-1": {}, "d-b-infonce-fixed-2": {}}}
THEORY = {"table1": [], "mismatch": [],
          "noise": {"truth": 1.0, "theta_pseudo": 0.9, "softmax_floor": 0.01234, "c": 2.0,
                    "params": {"beta": 3.0, "scores": [0.1, 0.5], "replicates": 200}}}


@pytest.fixture(scope="module")
def page() -> dict[str, Any]:
    text = summarise_text(_df({"simcse_weince": W4, "simcse_infonce": I4}, KAPPA_AT_CONTROL))
    text_ctx = weince_text.context(text, TEXT_KINDS, losses=LOSSES, taus=TAUS,
                                   datasets={"d": "gensim"}, encoders={"e": "hf/minilm"})
    tails_ctx = weince_tails.context(default_study(), TAIL_KINDS, ["inside", "outside"])
    return {"text": text_ctx, "tails": {**tails_ctx, "representative": REPRESENTATIVE},
            "theory": THEORY, "figures": FIGURES, "up": ""}


@pytest.fixture(scope="module")
def rendered(page: dict[str, Any]) -> dict[str, str]:
    return {kind: render_sections(kind, **page) for kind in KINDS}


@pytest.mark.parametrize("name", KINDS)
def test_tails_table_has_a_row_per_configuration_and_the_papers_values(page, rendered, name):
    out = rendered[name]
    tails = page["tails"]
    assert [c["configuration"] for c in tails["configurations"]] == ["infonce · fixed",
                                                                      "directau · fixed"]
    for c in tails["configurations"]:
        # both per-configuration tables, plus every run of it in the per-run table
        assert out.count(c["configuration"]) == 2 + sum(
            r["configuration"] == c["configuration"] for r in tails["runs"])
        for key in ("xi", "endpoint_gap", "lambda_inside", "delta", "tv_gap",
                    "repulsion_low_tau"):
            assert c[key] in out
    for r in tails["runs"]:
        assert r["endpoint"] in out and r["lrt_p"] in out
    assert "-0.39" in out and "0.33–0.50" in out and "0.22–0.36" in out
    assert "(context)" in out  # the DirectAU configuration is shown, not counted
    assert "seeds shown: 1, 2" in out
    assert "0.0123" in out and "β = 3.0" in out  # noise floor from the theory context


@pytest.mark.parametrize("name", KINDS)
def test_text_table_and_paired_comparison(page, rendered, name):
    out = rendered[name]
    text = page["text"]
    for r in text["rows"]:
        assert r["group"] in out
    g = next(r for r in text["rows"] if r["group"] == "d-e-simcse_weince-s")
    assert f"{g['sts.test_spearman']['mean']:.2f}" in out  # 59.00 ± …
    (pair,) = text["paired"]
    assert pair["result"].startswith("+5.50")  # W4 − I4, paired over four seeds
    assert pair["result"] in out
    assert "1: +6.00" in out  # the first seed's difference, 58 − 52
    assert "71.74" in out and "+4.63" in out
    assert "gensim" in out and "hf/minilm" in out
    assert "Lee et al." in out  # text.note


@pytest.mark.parametrize("name", KINDS)
def test_figures_are_referenced(rendered, name):
    out = rendered[name]
    for fig in FIGURES:
        assert (f"PNG-{fig}" if name == "html" else f"figures/{fig}.png") in out


@pytest.mark.parametrize("name", KINDS)
def test_without_tails_or_text_only_the_accuracy_part_renders(name):
    out = render_sections(name, tails=None, text=None, figures={})
    assert "Downstream accuracy" in out
    assert "Tail diagnostics" not in out and "SimCSE" not in out


@pytest.mark.parametrize("name", KINDS)
def test_renders_with_only_the_section_variables_defined(page, name):
    """No variable beyond tails (with its representative run), text, theory, figures and the
    figures' folder is read; the optional ones (the representative run, theory) may be None."""
    ctx = {**page, "tails": {**page["tails"], "representative": None}, "theory": None,
           "figures": dict.fromkeys(FIGURES)}
    out = render_sections(name, StrictUndefined, **ctx)
    assert "One run up close" not in out and "Noise floor" not in out
