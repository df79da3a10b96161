"""The committed report reads on a screen: REPORT.md fits GitHub's renderer (≤ 400 lines) and
links its detail, and no cell of a visible table — one not folded inside <details> — exceeds 300
characters, in the Markdown pages or in the HTML page."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPORTS = Path(__file__).resolve().parents[2] / "reports"
LIMIT = 300


def _visible_markdown_cells(text: str) -> list[str]:
    cells, folded = [], 0
    for line in text.splitlines():
        folded += line.count("<details") - line.count("</details>")
        if folded == 0 and line.startswith("|") and not set(line) <= set("|-: "):
            cells += [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    return cells


class _Cells(HTMLParser):
    """Text of every <td>/<th> that no <details> encloses."""

    def __init__(self) -> None:
        super().__init__()
        self.folded = 0
        self.cells: list[str] = []
        self.open: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "details":
            self.folded += 1
        elif tag in ("td", "th") and not self.folded:
            self.open.append([])

    def handle_endtag(self, tag: str) -> None:
        if tag == "details":
            self.folded -= 1
        elif tag in ("td", "th") and self.open and not self.folded:
            self.cells.append("".join(self.open.pop()).strip())

    def handle_data(self, data: str) -> None:
        if self.open and not self.folded:
            self.open[-1].append(data)


def _pages() -> list[Path]:
    return [REPORTS / "REPORT.md", *sorted((REPORTS / "details").glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_no_visible_markdown_cell_is_over_the_limit(page):
    assert page.is_file(), f"{page} missing: run `dvc repro report`"
    long = [c[:80] for c in _visible_markdown_cells(page.read_text(encoding="utf-8"))
            if len(c) > LIMIT]
    assert long == []


def test_no_visible_html_cell_is_over_the_limit():
    parser = _Cells()
    parser.feed((REPORTS / "index.html").read_text(encoding="utf-8"))
    long = [c[:80] for c in parser.cells if len(c) > LIMIT]
    assert parser.cells and long == []


def test_report_md_fits_a_rendered_page_and_links_every_paper():
    text = (REPORTS / "REPORT.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    for page in (REPORTS / "details").glob("*.md"):
        assert f"details/{page.name}" in text, page.name


def test_the_checks_can_fail():
    assert _visible_markdown_cells("| a | " + "x" * 301 + " |\n|---|---|") == ["a", "x" * 301]
    assert _visible_markdown_cells("<details>\n| a | " + "x" * 301 + " |\n</details>") == []
    parser = _Cells()
    parser.feed("<table><tr><td>" + "y" * 301 + "</td></tr></table><details><table><tr><td>"
                + "z" * 400 + "</td></tr></table></details>")
    assert parser.cells == ["y" * 301]
