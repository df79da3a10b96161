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
import shutil
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def _binaries() -> tuple[str, str] | None:
    browser = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def browser():
    found = _binaries()
    if found is None:
        reason = ("chromium/chromedriver not installed: `make browser` installs Debian's "
                  "chromium and chromium-driver (apt-get, as root)")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--hide-scrollbars",
                # offline: every host name fails to resolve, so any fetch is a console error
                "--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit chromedriver: Selenium Manager would try to download one.
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(driver, html: Path, settle_s: float = 0.5) -> list[dict]:
    """Load a page, wait for it, return its browser log (read once: reading clears it)."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get(html.resolve().as_uri())
    deadline = time.monotonic() + 30
    while driver.execute_script("return document.readyState") != "complete":
        assert time.monotonic() < deadline, f"{html} did not finish loading"
        time.sleep(0.1)
    time.sleep(settle_s)  # vega renders asynchronously after load
    return driver.get_log("browser")


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
    log = _open(browser, html)
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

    log = _open(browser, REPO / "reports" / "index.html", settle_s=1.0)
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
    _open(browser, REPO / "reports" / "index.html")
    # the viewport itself at 1400 × 900 (a window of that size has less, under its own chrome)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False})
    try:
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
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


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
    log = _open(browser, offline)
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
    log = _open(browser, cdn, settle_s=1.0)
    assert any("jsdelivr" in m or "ERR_NAME_NOT_RESOLVED" in m for m in _severe(log)), log
    assert not any(_vega_views(browser).values())
