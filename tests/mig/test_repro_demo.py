"""`gpuweave repro far` with the quick default and the demo section."""

from __future__ import annotations

import csv

import pytest

from gpuweave.repro.registry import ReproContext, run_reproduction


def test_repro_far_quick(tmp_path):
    out = tmp_path / "far"
    rows = run_reproduction("far", ReproContext(out_dir=out, reps=3))
    with open(out / "comparison.csv") as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == ["experiment", "metric", "paper", "ours", "unit", "note"]
    assert len(table) == len(rows) > 200
    by = {(r.experiment, r.metric): r for r in rows}
    assert by[("rodinia-a100", "rho")].ours == pytest.approx(1.22, abs=0.01)
    assert by[("rodinia-a100", "sigma_fixpart_ones")].ours == pytest.approx(2.18, abs=0.02)
    assert by[("rodinia-a100", "sigma_fixpart_best")].ours == pytest.approx(1.16, abs=0.01)
    assert "not reproducible" in by[("rodinia-a100", "sigma_fixpart_whole")].note
    for exp in ("table4", "table5", "table6", "table7", "table8", "table9"):
        assert any(r.experiment == exp and r.paper is not None and r.ours is not None for r in rows), exp
    for name in ("rodinia", "table3", "table4", "table5", "table6", "table7_8", "table9"):
        assert (out / f"{name}.md").read_text().startswith("# ")
    assert (out / "fig12_rodinia_far.png").stat().st_size > 1000


def test_demo_section(tmp_path):
    from gpuweave.demo.mig import mig_section
    from gpuweave.demo.sections import DemoContext

    sec = mig_section(DemoContext(out_dir=tmp_path / "mig", quick=True))
    algos = [row["algorithm"] for row in sec.table]
    assert algos[0] == "FAR" and {"MISO-opt", "FixPartBest"} <= set(algos)
    assert all(row["valid"] for row in sec.table)
    assert all(row["sigma_vs_FAR"] >= 1.0 for row in sec.table)
    assert [f.path.name for f in sec.figures] == ["mig_makespan.png", "far_rodinia_a100.png"]
    assert all(f.path.exists() and f.csv.is_file() and f.caption.endswith(".") for f in sec.figures)
