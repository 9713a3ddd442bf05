"""`gpuweave demo` (quick): every section runs on bundled data and lands in one self-contained report, which a
real browser (Debian's headless Chromium) renders without errors: images load, contents links resolve and every
figure has a caption of at least one sentence."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from gpuweave.demo import run_demo
from gpuweave.demo.sections import demo_sections

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import chromium  # noqa: E402

SENTENCE = re.compile(r"[A-Z][^.!?]*?\b\w+\b[^.!?]*?\b\w+\b[^.!?]*[.!?](\s|$)")


# one worker for the module: its tests share the quick demo (23 s), which a module fixture runs once per xdist worker
pytestmark = pytest.mark.xdist_group("demo")


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> Path:
    return run_demo(tmp_path_factory.mktemp("demo") / "demo", quick=True)


def test_quick_demo_writes_one_report_with_every_section(demo_report):
    html = demo_report.read_text()
    assert demo_report.name == "report.html"
    names = [name for name, _ in demo_sections()]
    assert {"cluster", "mig", "packs", "fikit", "andreas"} <= set(names)
    assert html.count("<h2") >= len(names)
    assert 'id="contents"' in html and 'id="summary"' in html and 'id="appendix"' in html
    assert "Cluster policies on gavel-60" in html
    assert 'src="http' not in html and "data:image/png;base64," in html and "<script" not in html
    assert "andreas-fifo = edf = priority" in html  # identical results share one line, labelled a = b = c
    from gpuweave.cluster.policies import policy_names

    for policy in policy_names():
        assert (demo_report.parent / "cluster" / "runs" / policy / "summary.json").exists()


def test_live_section_has_a_figure_drawn_from_its_runs(demo_report):
    """The live section's figure: simulated vs live JCT per job, its CSV made from the two runs' jobs.csv."""
    import csv

    from gpuweave.live.results import read_jct

    live = demo_report.parent / "live"
    png, data = live / "live_jct.png", live / "live_jct.csv"
    assert png.read_bytes()[:4] == b"\x89PNG"
    with open(data, newline="") as fh:
        rows = list(csv.DictReader(fh))
    sim, run = read_jct(live / "sim"), read_jct(live / "live")
    assert [r["job"] for r in rows] == sorted(set(sim) | set(run))
    for r in rows:
        assert float(r["sim_jct_s"]) == pytest.approx(sim[r["job"]]) and float(r["live_jct_s"]) == pytest.approx(
            run[r["job"]]
        )
        assert float(r["live_over_sim"]) == pytest.approx(run[r["job"]] / sim[r["job"]], rel=1e-6)
    html = demo_report.read_text()
    caption = re.search(
        r"<figcaption><b>Figure \d+\.</b> (Job completion time of each job[^<]*)<a [^>]*"
        r'download="live_jct.csv"',
        html,
    )
    assert caption and "live/sim" in caption.group(1), "the live figure has no numbered caption with its CSV"


def test_demo_report_in_headless_chromium(demo_report, tmp_path):
    """One Chromium start: console, images, contents links, captions, CSV links, width, no network."""
    if not chromium.available():
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium and chromium-driver must be installed (.ci/run installs them)")
        pytest.skip("Debian's chromium/chromium-driver not installed")
    with chromium.chromium(1400, 1000) as driver:
        driver.get(demo_report.as_uri())
        page = driver.execute_script(
            """
            const figs = [...document.querySelectorAll('figure')];
            return {
              images: [...document.images].map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width]),
              toc: [...document.querySelectorAll('nav#contents a')].map(a => a.getAttribute('href')),
              resolved: [...document.querySelectorAll('nav#contents a')].map(
                  a => document.getElementById(a.getAttribute('href').slice(1)) !== null),
              captions: figs.map(f => f.querySelector('figcaption') ? f.querySelector('figcaption').innerText : ''),
              csv: figs.map(f => { const a = f.querySelector('figcaption a[download]');
                                   return a ? a.getAttribute('href').slice(0, 22) : null; }),
              ids: figs.map(f => f.id),
              network: performance.getEntriesByType('resource').map(r => r.name).filter(n => /^https?:/.test(n)),
              overflow: document.documentElement.scrollWidth > window.innerWidth,
            };"""
        )
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    assert page["network"] == [] and not page["overflow"]
    assert len(page["images"]) >= 8
    for complete, natural, shown in page["images"]:
        assert complete and natural > 0
        assert shown >= 1000  # figures use the width of a 1,400 px window (responsive, not a fixed 550 px)
    assert page["toc"] and all(page["resolved"]), page["toc"]
    assert all(f"#{fid}" in page["toc"] for fid in page["ids"])  # every figure is in the contents
    for n, caption in enumerate(page["captions"], 1):
        assert caption.startswith(f"Figure {n}. "), caption
        assert SENTENCE.search(caption.removeprefix(f"Figure {n}. ")), caption
    assert all(href is not None and href.startswith("data:text/csv;base64,") for href in page["csv"]), page["csv"]
