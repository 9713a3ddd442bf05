"""Headless Debian Chromium under Selenium, the one way the report test and the screenshot tool start a browser.

Uses ``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` from Debian's ``chromium`` and ``chromium-driver``
packages (`.ci/run` installs them); nothing is downloaded. The flags keep Chromium off the network (no
background networking, component updates, sync or QUIC), which this machine's closed network would refuse
anyway, and a fresh profile directory per start keeps runs independent.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # Chromium refuses to run as root with its sandbox; CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def available() -> bool:
    """Whether Debian's Chromium and its driver are installed."""
    return Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()


@contextmanager
def chromium(width: int = 1400, height: int = 1000):
    """A Selenium WebDriver on headless Chromium with a window of ``width`` x ``height`` CSS pixels."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gpuweave-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot_element(driver, element, path: Path) -> Path:
    """PNG of one element, even when it is taller than the window (DevTools clip beyond the viewport)."""
    rect = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height};",
        element,
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**rect, "scale": 1}},
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
