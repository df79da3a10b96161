"""The report and the DVC plots page in headless Chromium, with the network cut off.

Fails on console errors (SEVERE entries of the browser log: failed loads, uncaught exceptions) and
on broken images, and saves a full-page screenshot of each page under pytest's tmp_path (the path
is printed; `pytest -s` shows it). Every host name resolves to nothing, so a page that needs the
internet fails here: the control test renders DVC's default CDN page and checks it does.

Needs Debian's `chromium` and `chromium-driver` (`make browser`, which `make test` runs first;
apt-get as root). Without them the tests skip, except under CI, where they fail.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from infonce_lab.devtools.browser import MISSING, binaries, chromium, open_page, viewport

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def browser():
    found = binaries()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    with chromium(found) as driver:
        yield driver


def _severe(log: list[dict]) -> list[str]:
    return [e["message"] for e in log if e["level"] == "SEVERE"]


def _broken_images(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.images)"
        ".filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => (i.alt || '') + ' ' + (i.src || '').slice(0, 80));")


def _screenshot(driver, path: Path) -> Path:
    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    driver.set_window_size(1400, min(int(height) + 40, 16000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    print(f"screenshot: {path}")
    return path


def test_report_index_renders(browser, tmp_path):
    html = REPO / "reports" / "index.html"
    assert html.is_file(), "reports/index.html missing: run `dvc repro`"
    log = open_page(browser, html)
    assert _severe(log) == []
    n_images = browser.execute_script("return document.images.length")
    assert n_images >= 5  # the report's figures, embedded as data: URIs
    assert _broken_images(browser) == []
    assert browser.execute_script(
        "return document.body.innerText.length") > 1000
    shot = _screenshot(browser, tmp_path / "report.png")
    assert shot.stat().st_size > 10_000


def test_the_interactive_plane_draws_every_encoder_offline(browser):
    """The alignment–uniformity plane is drawn by the inlined vega (no network): one mark per
    encoder of the table, and hovering is wired (a tooltip handler on the view)."""
    import csv

    log = open_page(browser, REPO / "reports" / "index.html", settle_s=1.0)
    assert _severe(log) == []
    rows = list(csv.DictReader((REPO / "reports/tables/encoders.csv").open()))
    n = sum(1 for r in rows if r["geometry.alignment"] and r["geometry.uniformity"])
    deadline = time.monotonic() + 20
    while True:
        marks = browser.execute_script(
            "return document.querySelectorAll('#au-plane-interactive svg .mark-symbol.role-mark path').length")
        if marks >= n or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert marks == n, (marks, n)


def test_the_first_screen_answers_with_pictures(browser, tmp_path):
    """At 1400 × 900, with no scrolling: the accuracy figure, the primary comparison's forest
    plot and every paper's line of verdict counts are whole on the first screen, the figures
    drawn; every contents link lands on a heading of the page. The screenshot is kept."""
    open_page(browser, REPO / "reports" / "index.html")
    with viewport(browser):
        boxes = browser.execute_script(
            "const box = s => { const e = document.querySelector(s); if (!e) return null;"
            " const r = e.getBoundingClientRect(); return [r.top, r.bottom, r.width]; };"
            "return {accuracy: box('#fig-accuracy'), primary: box('#fig-primary'),"
            " papers: box('#papers'), height: window.innerHeight,"
            " rows: document.querySelectorAll('#papers tr').length};")
        shot = tmp_path / "report_top_1400x900.png"
        browser.save_screenshot(str(shot))
        print(f"screenshot (first screen): {shot}")
        height = boxes["height"]
        for name in ("accuracy", "primary", "papers"):
            assert boxes[name] is not None, f"#{name} missing from the page"
            top, bottom, width = boxes[name]
            assert top >= 0 and bottom <= height, (name, boxes)
            assert width > 600, (name, boxes)
        # a header, one line per paper with claims, and the self-checks
        assert boxes["rows"] >= 4, boxes
        assert _broken_images(browser) == []
        missing = browser.execute_script(
            "return Array.from(document.querySelectorAll('#contents a'))"
            ".map(a => a.getAttribute('href').slice(1)).filter(id => !document.getElementById(id));")
        assert missing == []
        assert shot.stat().st_size > 10_000


def _vega_views(driver) -> dict[str, int]:
    """{plot div id: number of <svg>/<canvas> vega drew in it} for DVC's plot divs."""
    return driver.execute_script(
        "return Object.fromEntries(Array.from(document.querySelectorAll('body > div[id]'))"
        ".map(d => [d.id, d.querySelectorAll('svg.marks, canvas.marks').length]));")


def _wait_for_views(driver, n: int, timeout_s: float = 20) -> dict[str, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        views = _vega_views(driver)
        if len(views) >= n and all(views.values()) or time.monotonic() > deadline:
            return views
        time.sleep(0.2)


@pytest.fixture(scope="module")
def plots_pages(tmp_path_factory):
    """`dvc plots diff HEAD` with the offline template, and `dvc plots show` with DVC's own."""
    from test_dvc_plots import build_plots_repo

    repo = build_plots_repo(tmp_path_factory.mktemp("plots_browser"))
    repo.shift_one_curve()
    repo.dvc("plots", "diff", "HEAD", "--out", "offline")
    repo.dvc("config", "--unset", "plots.html_template")
    repo.dvc("plots", "show", "--out", "cdn")
    return repo.root / "offline" / "index.html", repo.root / "cdn" / "index.html"


def test_dvc_plots_render_offline(browser, plots_pages, tmp_path):
    offline, _ = plots_pages
    log = open_page(browser, offline)
    views = _wait_for_views(browser, 9)
    assert len(views) == 9 and all(views.values()), views
    assert browser.execute_script(
        "return [typeof vega, typeof vegaLite, typeof vegaEmbed]") == ["object"] * 2 + ["function"]
    assert _severe(log + browser.get_log("browser")) == []
    assert _broken_images(browser) == []
    # vega drew on each canvas (default renderer): count the non-blank pixels
    inked = browser.execute_script(
        "return Object.fromEntries(Array.from(document.querySelectorAll('body > div[id]'))"
        ".map(d => { const c = d.querySelector('canvas.marks'); if (!c) return [d.id, 0];"
        " const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
        " for (let i = 0; i < px.length; i += 4) if (px[i + 3] > 0 && px[i] + px[i + 1]"
        " + px[i + 2] < 600) n++; return [d.id, n]; }));")
    assert all(n > 1000 for n in inked.values()), inked
    _screenshot(browser, tmp_path / "dvc_plots.png")


def test_cdn_page_fails_offline(browser, plots_pages):
    """The control: DVC's default page needs its CDN, and this harness notices."""
    _, cdn = plots_pages
    log = open_page(browser, cdn, settle_s=1.0)
    assert any("jsdelivr" in m or "ERR_NAME_NOT_RESOLVED" in m for m in _severe(log)), log
    assert not any(_vega_views(browser).values())


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_make_screenshot_keeps_the_first_screen_the_readme_shows(browser, tmp_path):
    """`make screenshot` writes the report's first screen at 1400 × 900; the README's first
    picture is that file, committed."""
    from infonce_lab.devtools.browser import FIRST_SCREEN, main

    shot = tmp_path / "first.png"
    assert main([str(REPO / "reports" / "index.html"), str(shot)]) == 0
    assert _png_size(shot) == FIRST_SCREEN
    readme = (REPO / "README.md").read_text()
    first = readme[readme.index("!["):].split("(", 1)[1].split(")", 1)[0]
    assert first == "docs/first-screen.png"
    assert _png_size(REPO / first) == FIRST_SCREEN
