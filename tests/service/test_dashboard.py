"""The dashboard in a real browser: Debian's headless Chromium driven by Selenium through chromium-driver.

The page loads with no console errors, shows submitted jobs (queue, per-user table, GPU map) and updates when a
waiting job starts. ``GPUWEAVE_DASHBOARD_PNG=PATH`` keeps the final screenshot (docs/service-dashboard.png was
made so).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.service.helpers import auth, job_spec, start_service_process, token, wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = pytest.mark.browser


@pytest.fixture
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.skip("headless Chromium is not installed (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gpuweave-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # As root Chromium needs --no-sandbox; the background services would reach for the network, which is closed.
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1100",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not try to download a driver
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _texts(driver, selector: str) -> list[str]:
    """Texts of the matching elements, read in one script call (the page redraws every second)."""
    script = "return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent.trim())"
    return driver.execute_script(script, selector)


def _rows(driver, table: str) -> list[str]:
    script = "return [...document.querySelectorAll(arguments[0])].map((r) => [...r.cells].map((c) => c.textContent))"
    return [" ".join(cells) for cells in driver.execute_script(script, f"#{table} tbody tr")]


def test_dashboard_shows_jobs_and_updates_when_one_starts(browser, tmp_path):
    from selenium.webdriver.common.by import By

    db = f"sqlite:///{tmp_path / 'svc.db'}"
    alice, root = token(db, "alice"), token(db, "root", admin=True)
    service = start_service_process(db, tmp_path / "data")
    try:
        with httpx.Client(base_url=service.url, timeout=10) as api:
            blocker = api.post(
                "/api/v1/jobs", json=job_spec("blocker", 10**8, 2, gpu_types=["K80"]), headers=auth(alice)
            )
            for i in range(2):
                api.post("/api/v1/jobs", json=job_spec(f"train-{i}", 10**8, 2, gpu_types=["V100"]), headers=auth(root))
            waiting = api.post("/api/v1/jobs", json=job_spec("waits", 10**8, 1, gpu_types=["K80"]), headers=auth(alice))
            browser.get(f"{service.url}/#token={root}")
            wait_for(lambda: any("waits" in r for r in _rows(browser, "queue")), timeout=30)
            wait_for(lambda: sum("running" in r for r in _rows(browser, "running")) == 3, timeout=30)
            users = _rows(browser, "users")
            assert any(r.startswith("alice") for r in users) and any(r.startswith("root") for r in users)
            assert browser.find_element(By.ID, "who").text == "root (admin)"
            assert browser.find_element(By.ID, "busy").text == "6 / 6"
            gpu_cells = _texts(browser, ".node .gpu")
            assert len(gpu_cells) == 6 and set(gpu_cells) == {str(blocker.json()["id"]), "2", "3"}
            # The waiting job starts once the blocker is cancelled: the page follows without a reload.
            api.post(f"/api/v1/jobs/{blocker.json()['id']}/cancel", headers=auth(alice))
            job_id = str(waiting.json()["id"])
            wait_for(lambda: any(r.split()[:2] == [job_id, "waits"] for r in _rows(browser, "running")), timeout=30)
            assert not any("waits" in r for r in _rows(browser, "queue"))
            wait_for(lambda: job_id in _texts(browser, ".node .gpu"), 10)
            assert _texts(browser, "#plot path") is not None and browser.find_elements(By.CSS_SELECTOR, "#plot path")
            assert any("start" in t for t in _texts(browser, "#decisions li"))
            severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert severe == [], severe
            png = tmp_path / "dashboard.png"
            browser.save_screenshot(str(png))
            assert png.stat().st_size > 10_000
            if os.environ.get("GPUWEAVE_DASHBOARD_PNG"):
                shutil.copy(png, os.environ["GPUWEAVE_DASHBOARD_PNG"])
    finally:
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(timeout=60) == 0


def test_dashboard_without_a_token_asks_for_one(browser, tmp_path):
    from selenium.webdriver.common.by import By

    db = f"sqlite:///{tmp_path / 'svc.db'}"
    alice = token(db, "alice")
    service = start_service_process(db, tmp_path / "data")
    try:
        browser.get(f"{service.url}/")
        wait_for(lambda: browser.find_element(By.ID, "login").is_displayed(), timeout=20)
        browser.find_element(By.ID, "token").send_keys(alice)
        browser.find_element(By.CSS_SELECTOR, "#login button").click()
        wait_for(lambda: browser.find_element(By.ID, "who").text == "alice", timeout=20)
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        service.proc.send_signal(signal.SIGTERM)
        service.proc.wait(timeout=60)
