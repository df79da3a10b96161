"""The page is a loop over declared sections: a new paper's section costs its module (rows, rules,
its Paper), one template that writes both pages, and its test — nothing else is edited. Declared
here from outside the package, it must reach the contents, the first screen's counts, the summary,
both pages and its own Markdown page, with the same claims in the HTML and the Markdown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infonce_lab.report.render import render
from infonce_lab.report.sections import Paper, Section, declared, ordered
from infonce_lab.report.verdicts import (
    Above,
    Case,
    ClaimRow,
    Estimate,
    Evidence,
    claim,
    not_reproduced,
    reproduced,
)

PAPER = Paper("spectral", "Spectral contrastive loss", "Spectral contrastive loss (HaoChen 2021)",
              "Spectral", "arXiv 2106.04156", "https://arxiv.org/abs/2106.04156",
              "The spectral loss recovers the augmentation graph's eigenvectors.")
RULE = Above(0.0, what="eigengap")
TEMPLATE = """{% import "format.j2" as f with context %}
{{ f.heading(3, "The augmentation graph <spectrum>")|safe }}
{{ f.para("Eigengap " ~ spectral.gap ~ " on <b>" ~ spectral.nodes ~ "</b> nodes.")|safe }}
{{ f.table(["k", "eigenvalue"], spectral.eigen)|safe }}
"""


def _rows(_inputs: object) -> list[ClaimRow]:
    e = Estimate(0.4, 0.1, 0.7)
    return [claim("spectral", "Graph", "Thm 3.1: the eigengap is positive", "gap", RULE,
                  [Case("k = 4", str(e), reproduced(), estimate=e)]),
            claim("spectral", "Graph", "Fig. 2: the <gap> closes with noise", "gap", RULE,
                  [Case("σ = 1", "0.1", not_reproduced())])]


@pytest.fixture()
def extra(tmp_path: Path) -> Section:
    (tmp_path / "sections").mkdir()
    (tmp_path / "sections" / "spectral.j2").write_text(TEMPLATE, encoding="utf-8")
    return Section(id="spectral", paper="spectral", title="Spectral", evidence=Evidence.THEORY,
                   reads=(), rules={"gap": RULE}, rows=_rows, introduces=PAPER,
                   templates=tmp_path)


def _pages(extra: Section) -> tuple[str, str, dict[str, str]]:
    sections = ordered([*declared(), extra])
    rows = [r for s in sections if s is extra for r in s.claim_rows(None)]  # type: ignore[arg-type]
    context = {"title": "t", "study": {}, "primary": {}, "figures": {},
               "provenance": {"versions": {}, "timings": [], "commit": "c", "params_hash": "h"},
               "summary": {}, "comparison": [], "selection": {}, "paired_table": [],
               "schedule_comparisons": [], "claim_rows": rows,
               "spectral": {"gap": 0.4, "nodes": 12, "eigen": [[1, "0.0"], [2, "0.6"]]}}
    return render(context, sections)


def test_a_section_declared_outside_the_package_reaches_every_part_of_the_page(extra):
    html, md, pages = _pages(extra)
    assert '<h2 id="spectral">Spectral contrastive loss' in html
    assert '<a href="#spectral">' in html  # contents and the first screen's line
    assert "Spectral</a></td><td" in html  # its line of counts on the first screen
    # its template, escaped in HTML and made inert in Markdown
    assert "The augmentation graph &lt;spectrum&gt;" in html and "&lt;b&gt;12" in html
    assert "<td>0.6</td>" in html
    assert "## Spectral contrastive loss" in md and "(details/spectral.md)" in md
    detail = pages["spectral"]
    assert "### The augmentation graph &lt;spectrum&gt;" in detail
    assert "| 2 | 0.6 |" in detail
    # the summary words the contradiction by its evidence (a theorem's check)
    assert "Contradicts the theory as stated" in md and "Contradicts the theory as stated" in html


def test_the_html_and_the_markdown_carry_the_same_claims_and_verdicts(extra):
    html, md, pages = _pages(extra)
    everything = md + "".join(pages.values())
    for row in _rows(None):
        visible = row.claim.replace("<", "&lt;").replace(">", "&gt;")
        # the row itself carries the verdict, in the HTML table and in the Markdown one
        html_row = next(tr for tr in re.findall(r"<tr.*?</tr>", html, flags=re.S)
                        if visible in tr)
        assert f'class="{"verdict-reproduced" if row.verdict.outcome == "reproduced" else "verdict-not"}">{row.verdict.outcome}' in html_row
        md_row = next(ln for ln in everything.splitlines()
                      if ln.startswith("| ") and visible in ln)
        assert md_row.rstrip(" |").endswith(str(row.verdict.outcome))
    # every paper of the page has its part in both, under the same contents
    html_ids = re.findall(r'<h2 id="([a-z_-]+)"', html)
    md_heads = re.findall(r"^## (.+)$", md, flags=re.M)
    assert "spectral" in html_ids and "Spectral contrastive loss" in md_heads
    assert len([h for h in html_ids if h not in ("summary",)]) == len(md_heads) - 1


def test_a_section_naming_an_unknown_paper_is_refused(extra):
    from dataclasses import replace
    with pytest.raises(ValueError, match="neither in PAPERS nor introduced"):
        ordered([*declared(), replace(extra, introduces=None)])
