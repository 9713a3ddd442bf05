"""`gpuweave repro hadar` end to end at a small size: comparison.csv, figures, paper numbers beside ours."""

from __future__ import annotations

import csv

from gpuweave.repro.registry import ReproContext, run_reproduction


def test_repro_hadar_small(tmp_path):
    out = tmp_path / "hadar"
    rows = run_reproduction("hadar", ReproContext(out_dir=out, options={"jobs": 60}))
    with open(out / "comparison.csv") as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == ["experiment", "metric", "paper", "ours", "unit", "note"]
    metrics = {r["metric"]: r for r in table}
    assert float(metrics["TTD Gavel/Hadar"]["paper"]) == 1.21 and float(metrics["TTD Gavel/Hadar"]["ours"]) > 0
    assert float(metrics["Hadar decision time at ~2000 jobs"]["ours"]) > 0
    assert metrics["optimal makespan under strict gang (brute force)"]["ours"] == "6"
    assert any(r.experiment == "physical" and r.paper is not None for r in rows)
    for name in ("fig3_gru_cdf.png", "fig4_completed.png", "fig5_decision_time.png", "fig8_12_physical.png",
                 "trace_results.csv", "fig5_decision_time.csv", "physical_results.csv"):
        assert (out / name).stat().st_size > 0
