"""bench scale: rows for every size and load, the bare loop beside them, and a progress hook that reaches the end."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuweave.bench import bench_scale, timed_sim
from gpuweave.cli import app


def test_bench_scale_reports_every_size_and_load_against_the_bare_loop():
    result = bench_scale("fifo", [300, 100], 0, None)
    rows = result["rows"]
    assert [(r["load"], r["jobs"]) for r in rows] == [
        ("backlog", 100),
        ("backlog", 300),
        ("moderate", 100),
        ("moderate", 300),
    ]
    assert all(r["bare_jobs_per_s"] > 0 and r["ratio_to_bare"] > 0 and r["decisions"] > 0 for r in rows)
    assert set(result["loglog_slope"]) == set(result["bare_loglog_slope"]) == {"backlog", "moderate"}
    assert all(r["bare_cpu_s"] > 0 for r in rows)
    backlog = [r["mean_waiting_jobs"] for r in rows if r["load"] == "backlog"]
    moderate = [r["mean_waiting_jobs"] for r in rows if r["load"] == "moderate"]
    assert backlog[1] > backlog[0] > max(moderate) >= 0  # the backlog's queue grows all run


def test_records_handed_to_a_sink_leave_the_run_with_none_kept():
    from gpuweave.bench import DroppedRecords

    run = timed_sim(300, 64, "fifo", 600.0, 0, None, sink=DroppedRecords())
    rec = run["records"]
    assert rec.allocations == [] and rec.timeseries == [] and all(js.end is not None for js in rec.jobs)


def test_progress_hook_counts_finished_jobs_up_to_the_whole_trace():
    seen: list[int] = []
    run = timed_sim(500, 64, "fifo", 600.0, 0, None, seen.append)
    assert seen == sorted(seen) and seen[-1] == 500 and len(seen) >= 50
    assert all(js.end is not None for js in run["records"].jobs)


def test_bench_scale_cli_prints_json():
    out = CliRunner().invoke(app, ["bench", "scale", "--policy", "sjf", "--max-jobs", "1000", "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["policy"] == "sjf" and [r["jobs"] for r in result["rows"]] == [1000, 1000]
