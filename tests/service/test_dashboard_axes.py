"""Issue 40, item 8, in a real browser (headless Chromium, the fixture of test_dashboard.py): the utilisation chart
has a time axis and several y ticks, "Recent decisions" lines wrap in full, and energy and cost read with a unit
chosen by magnitude, so a running user's small energy is not 0.0000. ``GPUWEAVE_DASHBOARD_AXES_PNG=PATH`` keeps
the screenshot.
"""

from __future__ import annotations

import os
import re
import shutil
import signal

import httpx
import pytest

from tests.service.helpers import CLUSTER, auth, job_spec, start_service_process, token, wait_for
from tests.service.test_dashboard import _rows, _texts, browser  # noqa: F401  (browser: the fixture)

pytestmark = pytest.mark.browser
ENERGY = re.compile(r"^-?[\d,]+(\.\d+)? (J|kJ|kWh)$")


def _users(driver) -> dict[str, list[str]]:
    script = "return [...document.querySelectorAll('#users tbody tr')].map((r) => [...r.cells].map((c) => c.innerText))"
    return {cells[0]: cells for cells in driver.execute_script(script)}


def test_formatters_choose_the_unit_by_magnitude(browser, tmp_path):  # noqa: F811
    db = f"sqlite:///{tmp_path / 'svc.db'}"
    root = token(db, "root", admin=True)
    service = start_service_process(db, tmp_path / "data")
    try:
        browser.get(f"{service.url}/#token={root}")
        wait_for(lambda: browser.execute_script("return typeof energy === 'function'"), timeout=20)

        # One unit per page, chosen by the cluster's energy so far; the currency is the answer's (the spec's).
        def units(total_j, values, currency="$"):
            return browser.execute_script(
                "chooseUnits({energy_j: arguments[0], currency: arguments[1]});"
                "return arguments[2].map(energy).concat([money(0), money(0.0018), money(0.25), money(12.5)])",
                total_j, currency, values,
            )  # fmt: skip

        assert units(50, [0, 0.004, 50]) == ["0 J", "0.00400 J", "50.0 J", "$0.00", "$0.00180", "$0.250", "$12.50"]
        assert units(1500, [0, 4, 1500]) == ["0 kJ", "0.00400 kJ", "1.50 kJ", "$0.00", "$0.00180", "$0.250", "$12.50"]
        assert units(7.2e9, [3.6e6, 1800, 7.2e9], "€")[:4] == ["1.00 kWh", "0.000500 kWh", "2,000 kWh", "€0.00"]
        assert browser.execute_script("chooseUnits({energy_j: 1}); return money(1)") == "$1.00"  # no currency: $
    finally:
        service.proc.send_signal(signal.SIGTERM)
        service.proc.wait(timeout=60)


def test_chart_axes_wrapped_decisions_and_live_energy(browser, tmp_path):  # noqa: F811
    db = f"sqlite:///{tmp_path / 'svc.db'}"
    alice, root = token(db, "alice"), token(db, "root", admin=True)
    cluster = tmp_path / "cluster.yaml"  # the example cluster, its costs in euros
    cluster.write_text(CLUSTER.read_text() + '\ncurrency: "€"\n', encoding="utf-8")
    service = start_service_process(db, tmp_path / "data", "--cluster", str(cluster))
    try:
        with httpx.Client(base_url=service.url, timeout=10) as api:
            api.post("/api/v1/jobs", json=job_spec("short", 2000, 1, gpu_types=["K80"]), headers=auth(alice))
            for i in range(2):  # root's jobs run for minutes: root has only running jobs
                api.post("/api/v1/jobs", json=job_spec(f"long-{i}", 10**8, 2, gpu_types=["V100"]), headers=auth(root))
            browser.get(f"{service.url}/#token={root}")
            wait_for(lambda: sum("running" in r for r in _rows(browser, "running")) >= 2, timeout=30)

            # A running user's energy counts its current placement: nonzero, with a unit, never 0.0000.
            def root_energy():
                cells = _users(browser).get("root")
                return cells if cells and cells[5].split()[0] != "0" else None

            cells = wait_for(root_energy, timeout=30)
            assert ENERGY.match(cells[5]), cells
            assert cells[6].startswith("€"), cells
            energies = [*_texts(browser, "#users td:nth-child(6)"), browser.find_element("id", "energy").text]
            assert all(ENERGY.match(t) for t in energies), energies
            assert len({t.rsplit(" ", 1)[1] for t in energies}) == 1, energies  # one energy unit on the page
            assert browser.find_element("id", "cost").text.startswith("€")
            job = api.get("/api/v1/jobs", params={"state": "running", "name": "long-0"}, headers=auth(root)).json()
            assert job["jobs"][0]["energy_j"] > 0  # the API's running job too

            # The chart: wall-clock ticks on the x axis, several GPU-count ticks (0 .. the cluster's 6) on y.
            wait_for(lambda: len(_texts(browser, "#plot .x-tick")) >= 2, timeout=30)
            x_ticks = _texts(browser, "#plot .x-tick")
            assert all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in x_ticks), x_ticks
            y_ticks = _texts(browser, "#plot .y-tick")
            assert len(y_ticks) >= 3 and y_ticks[0] == "0" and y_ticks[-1] == "6", y_ticks
            assert [int(t) for t in y_ticks] == sorted(int(t) for t in y_ticks)
            # Labels are not stretched: the SVG is drawn at its own size.
            width, box = browser.execute_script(
                "const svg = document.getElementById('plot'); return [svg.clientWidth, svg.getAttribute('viewBox')]"
            )
            assert box.split()[2] == str(width), (box, width)

            # Recent decisions: each line wraps in full inside its column (nothing cut), the tooltip repeats it.
            wait_for(lambda: _texts(browser, "#decisions li"), timeout=20)
            style = browser.execute_script(
                "const li = document.querySelector('#decisions li'); const s = getComputedStyle(li);"
                "const ul = getComputedStyle(document.getElementById('decisions'));"
                "return [s.whiteSpace, s.overflowWrap, ul.maxHeight, ul.overflowY, li.title === li.textContent]"
            )
            assert style == ["normal", "anywhere", "none", "visible", True], style
            # A long line (a policy error's text) wraps: the list grows no wider than its column.
            fits = browser.execute_script(
                "const ul = document.getElementById('decisions');"
                "const li = document.createElement('li'); li.textContent = 'policy-error ' + 'x'.repeat(400);"
                "ul.appendChild(li); const ok = ul.scrollWidth <= ul.clientWidth + 1 && li.offsetHeight > 30;"
                "return ok"
            )
            assert fits
            assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
            png = tmp_path / "dashboard.png"
            browser.save_screenshot(str(png))
            if os.environ.get("GPUWEAVE_DASHBOARD_AXES_PNG"):
                shutil.copy(png, os.environ["GPUWEAVE_DASHBOARD_AXES_PNG"])
    finally:
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(timeout=60) == 0
