"""Issue 39, class 10: `gpuweave mig run` whose tasks did not all exit 0 exits 3, naming them in its last line.

The run goes through the real pynvml wrappers against the C stub (conftest.py), so no GPU is needed.
"""

from __future__ import annotations

import csv

from gpuweave.mig.nvml_exec import INCOMPLETE_EXIT_CODE, ExecutionResult, TaskTiming

from .test_nvml import live_at_exit, write_schedule


def test_a_failed_task_makes_the_run_exit_3_and_the_dry_run_stays_0(nvml_stub, tmp_path):
    path = write_schedule(tmp_path, command=lambda t: "exit 7" if t.task == "t1" else "true")
    out = tmp_path / "timings.csv"
    proc, log = nvml_stub.cli(["mig", "run", str(path), "--out", str(out)], tmp_path / "stub.log")
    assert proc.returncode == INCOMPLETE_EXIT_CODE == 3, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"1 of 6 tasks did not finish (exit status not 0: t1 (7)); see the returncode column of {out}"
    )
    rows = {r["task"]: r["returncode"] for r in csv.DictReader(out.open())}
    assert rows["t1"] == "7" and all(rc == "0" for task, rc in rows.items() if task != "t1")
    assert live_at_exit(log) == "exit live_gi=0 live_ci=0"  # the other tasks ran, every instance destroyed
    proc, _ = nvml_stub.cli(["mig", "run", str(path), "--json"], tmp_path / "json.log")
    assert proc.returncode == 3 and '"returncode": 7' in proc.stdout
    assert proc.stderr.splitlines()[-1].startswith("1 of 6 tasks did not finish")
    dry, _ = nvml_stub.cli(["mig", "run", str(path), "--dry-run"], tmp_path / "dry.log")
    assert dry.returncode == 0, dry.stderr


def test_unfinished_line_names_at_most_five_tasks():
    timings = [TaskTiming(f"t{i}", 1, 0, 0.0, 1.0, returncode=None if i == 0 else i % 2) for i in range(12)]
    result = ExecutionResult(timings, 1.0, 1.0)
    line = result.unfinished_line()
    assert line == (
        "7 of 12 tasks did not finish (exit status not 0: t0 (not run), t1 (1), t3 (1), t5 (1), t7 (1) and 2 more)"
    )
    assert ExecutionResult([TaskTiming("a", 1, 0, 0.0, 1.0, returncode=0)], 1.0, 1.0).unfinished_line() is None
