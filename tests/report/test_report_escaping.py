"""No string from params or data reaches the page unescaped: the report stage, run on the
committed results with a hostile title, prints it as text, not markup."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from infonce_lab.report.render import environment

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"'


@pytest.mark.parametrize("name", ["index.html.j2", "html/claims.html.j2", "html/summary.html.j2"])
def test_every_html_template_escapes(name) -> None:
    env = environment()
    assert env.autoescape(name) is True
    assert env.autoescape("REPORT.md.j2") is False


def test_markdown_prints_raw_html_inert_and_escapes_once() -> None:
    env = environment(markdown=True)
    assert env.autoescape("REPORT.md.j2") is False
    env.autoescape = False  # as for REPORT.md.j2 (a string template would be autoescaped)
    out = env.from_string("{% macro m() %}{{ t }}{% endmacro %}# {{ t }}\n{{ m() }}").render(
        t=HOSTILE)
    assert "<script" not in out and "<img" not in out
    # a macro's output is printed again: still one level of entities, and & stays as it is
    assert out.count("&lt;script&gt;") == 2 and "&amp;" not in out and "& \"quotes\"" in out


def test_a_value_cannot_make_a_markdown_link() -> None:
    markdown_it = pytest.importorskip("markdown_it")
    env = environment(markdown=True)
    env.autoescape = False
    template = env.from_string("{% macro m() %}{{ t }}{% endmacro %}{{ t }}\n\n{{ m() }}\n")
    md = markdown_it.MarkdownIt()
    md.validateLink = lambda url: True   # a renderer that does not sanitise (markdown-it does)
    for hostile in ("[click](javascript:alert(1))", "[click][r]\n\n[r]: javascript:alert(1)",
                    "[c](<javascript:alert(1)>)"):
        html = md.render(template.render(t=hostile))
        assert "<a " not in html and "javascript:alert(1)" in html, html   # shown, as text
        # the same Markdown without md_inert is a link: the check can fail
        assert "<a " in md.render(hostile)
    # a CI in brackets reads the same after rendering
    assert md.render(template.render(t="[0.1, 0.2]: ok")).count("[0.1, 0.2]: ok") == 2


def test_a_hostile_title_is_text_on_the_page(tmp_path, repo_root) -> None:
    if not (repo_root / "reports/summary.json").is_file():
        pytest.skip("needs the committed results")
    for rel in ("reports", ".dvc/plots"):
        shutil.copytree(repo_root / rel, tmp_path / rel)
    shutil.copy2(repo_root / "dvc.yaml", tmp_path / "dvc.yaml")
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["report"]["title"] = HOSTILE
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    proc = subprocess.run([sys.executable, str(repo_root / "stages/report.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")})
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports/index.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    # The only scripts are the vendored builds and the figure's embed call.
    assert page.count("<script") == 4
    md = (tmp_path / "reports/REPORT.md").read_text()
    assert "<script" not in md and "<img" not in md and "# &lt;script&gt;alert" in md


def test_a_claims_note_is_its_own_bullet_and_a_row_without_one_has_none() -> None:
    from infonce_lab.report.verdicts import ClaimRow, reproduced

    env = environment(markdown=True)
    table = env.get_template("md/claims.md.j2").module.claims_table
    rows = [ClaimRow("s", "t", "A claim (§1)", "q", "r", "res", reproduced(), note="A note."),
            ClaimRow("s", "t", "Another claim", "q", "r", "res", reproduced())]
    out = str(table(rows))
    assert "- **Claim**: A claim (§1)\n- **Note**: A note.\n" in out
    assert "- **Claim**: Another claim\n\n- **Measured**" in out
