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
    for name in (
        "fig3_gru_cdf.png",
        "fig4_completed.png",
        "fig5_decision_time.png",
        "fig8_12_physical.png",
        "trace_results.csv",
        "fig5_decision_time.csv",
        "physical_results.csv",
    ):
        assert (out / name).stat().st_size > 0


def test_c5_rows_pick_the_best_slot():
    from gpuweave.repro.hadar import MIXES, SLOTS, c5_rows

    res = {}
    for cluster in ("aws", "lab"):
        for mix in MIXES:
            large = mix in ("M-8", "M-10", "M-12")
            for slot in SLOTS:
                # HadarE: large mixes peak at 360 s, small ones at 90 s; Hadar always at 90 s.
                res[(cluster, mix, slot, "hadare")] = {"cru": slot / 1000 if large else 1 - slot / 1000}
                res[(cluster, mix, slot, "hadar")] = {"cru": 1 - slot / 1000}
    rows = {r.metric: r for r in c5_rows(res)}
    assert rows["C5 aws hadare best slot M-12"].ours == 360 and rows["C5 aws hadare best slot M-12"].paper == 360
    assert rows["C5 lab hadare best slot M-1"].ours == 90
    assert rows["C5 aws HadarE best slot M-8..M-12 minus M-1..M-4"].ours == 270
    assert rows["C5 aws mean best slot Hadar minus HadarE"].ours < 0


def test_sensitivity_option_is_declared():
    from gpuweave.repro.registry import get_reproduction, parse_extra_options

    repro = get_reproduction("hadar")
    assert parse_extra_options(repro, ["--sensitivity"]) == {"sensitivity": True}


def test_sensitivity_rows_small(tmp_path):
    from gpuweave.repro.hadar import sensitivity_rows

    rows = sensitivity_rows(ReproContext(out_dir=tmp_path), [0], 20)
    metrics = {r.metric: r for r in rows}
    for case in ("solver=exact", "order=slack-srpt", "backfill", "utility=normalized", "hadar_variant=sticky"):
        assert metrics[f"{case}: Hadar TTD"].ours > 0
    assert metrics["L=90 s TTD gavel/Hadar"].ours > 0
    assert (tmp_path / "sensitivity_results.csv").stat().st_size > 0
