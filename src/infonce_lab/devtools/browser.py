"""Headless Chromium with the network cut off: the report's browser tests open pages through it,
and ``make screenshot`` keeps the picture of the report's first screen that the README shows
(``docs/first-screen.png``, 1400 × 900, from the committed report).

Needs Debian's ``chromium`` and ``chromium-driver`` (``make browser``; apt-get as root) and
selenium (the ``test`` extra). Every host name resolves to nothing, so a page that needs the
internet shows it as a console error instead of loading it.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
FIRST_SCREEN = (1400, 900)
MISSING = ("chromium/chromedriver not installed: `make browser` installs Debian's chromium and "
           "chromium-driver (apt-get, as root)")


def binaries() -> tuple[str, str] | None:
    """(browser, driver) found on PATH, or None."""
    browser = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@contextmanager
def chromium(found: tuple[str, str]) -> Iterator[Any]:
    """A headless, offline Chromium driver (1400 px wide), quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--hide-scrollbars",
                "--host-resolver-rules=MAP * ~NOTFOUND", "--no-proxy-server"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit chromedriver: Selenium Manager would try to download one.
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, html: Path, settle_s: float = 0.5) -> list[dict[str, Any]]:
    """Load a page, wait for it, return its browser log (read once: reading clears it)."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get(html.resolve().as_uri())
    deadline = time.monotonic() + 30
    while driver.execute_script("return document.readyState") != "complete":
        if time.monotonic() > deadline:
            raise TimeoutError(f"{html} did not finish loading in 30 s")
        time.sleep(0.1)
    time.sleep(settle_s)  # vega renders asynchronously after load
    return driver.get_log("browser")


@contextmanager
def viewport(driver: Any, size: tuple[int, int] = FIRST_SCREEN) -> Iterator[None]:
    """The page's viewport itself at ``size`` (a window of that size has less, under its own
    chrome), restored on exit."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False})
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def main(argv: list[str] | None = None) -> int:
    """``python -m infonce_lab.devtools.browser [PAGE] [PNG]``: the first screen of PAGE
    (reports/index.html) saved as PNG (docs/first-screen.png)."""
    args = sys.argv[1:] if argv is None else argv
    page = Path(args[0] if args else "reports/index.html")
    out = Path(args[1] if len(args) > 1 else "docs/first-screen.png")
    if not page.is_file():
        print(f"error: {page}: missing; run `make repro` first", file=sys.stderr)
        return 2
    if (found := binaries()) is None:
        print(f"error: {MISSING}", file=sys.stderr)
        return 2
    with chromium(found) as driver:
        open_page(driver, page)
        with viewport(driver):
            tmp = out.with_name(f".{out.stem}.tmp.png")  # selenium wants a .png name
            driver.save_screenshot(str(tmp))
            tmp.replace(out)
    print(f"wrote {out} (the first {FIRST_SCREEN[0]} × {FIRST_SCREEN[1]} px of {page})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
