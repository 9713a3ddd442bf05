"""`gpuweave demo` (quick): every section runs on bundled data and lands in one self-contained report."""

from __future__ import annotations

from gpuweave.demo import run_demo
from gpuweave.demo.sections import demo_sections


def test_quick_demo_writes_one_report_with_every_section(tmp_path):
    report = run_demo(tmp_path / "demo", quick=True)
    html = report.read_text()
    assert report == tmp_path / "demo" / "report.html"
    names = [name for name, _ in demo_sections()]
    assert {"cluster", "mig", "packs", "fikit", "andreas"} <= set(names)
    assert html.count("<h2>") >= len(names)
    assert "Cluster policies on gavel-60" in html
    assert 'src="http' not in html and "data:image/png;base64," in html
    from gpuweave.cluster.policies import policy_names

    for policy in policy_names():
        assert (tmp_path / "demo" / "cluster" / "runs" / policy / "summary.json").exists()
