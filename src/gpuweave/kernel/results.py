"""A kernel-level simulation as a result directory (``gpuweave kernel simulate CONFIG --out DIR``).

Files: ``tasks.csv`` (one row per task: service, task, submit_ms, start_ms, end_ms, jct_ms; the same table
``--out FILE.csv`` writes), ``kernels.csv`` when kernels were recorded (those of the record window, what the
report's timeline draws; :mod:`gpuweave.kernel.timeline`), ``services.csv`` (per service: priority, tasks,
mean/std JCT, CV, busy share) and ``summary.json`` with the result core (:mod:`gpuweave.results`, kind
``kernel``): simulated time, kernels, device busy fraction, mean JCT over all tasks and per service
(``mean_jct_ms[NAME]``, ``cv_jct[NAME]``). Complexity: O(tasks + services).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuweave.kernel.sim import Service, SimResult
from gpuweave.kernel.timeline import write_kernels_csv
from gpuweave.results import ResultCore, write_csv, write_result

TASK_COLUMNS = ("service", "task", "submit_ms", "start_ms", "end_ms", "jct_ms")
SERVICE_COLUMNS = ("service", "priority", "tasks", "mean_jct_ms", "std_jct_ms", "cv_jct", "busy_share")


def write_tasks_csv(res: SimResult, services: Sequence[Service], path: str | Path) -> Path:
    """Per-task JCTs, services in config order, times in ms with 6 decimals."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TASK_COLUMNS)
        for s in services:
            for r in res.tasks[s.name]:
                w.writerow([r.service, r.index, f"{r.submit:.6f}", f"{r.start:.6f}", f"{r.end:.6f}", f"{r.jct:.6f}"])
    return Path(path)


def _cv(res: SimResult, name: str) -> float:
    return res.cv_jct(name) if res.tasks[name] else math.nan


def kernel_metrics(res: SimResult, services: Sequence[Service]) -> dict[str, float | int]:
    """Flat metrics: totals, then mean JCT and its CV per service."""
    jcts = [r.jct for s in services for r in res.tasks[s.name]]
    metrics: dict[str, float | int] = {
        "end_time_ms": res.end_time,
        "kernels": res.kernels_run,
        "events": res.events,
        "busy_fraction": res.busy_fraction(),
        "tasks": len(jcts),
        "mean_jct_ms": sum(jcts) / len(jcts) if jcts else math.nan,
    }
    for s in services:
        metrics[f"mean_jct_ms[{s.name}]"] = res.mean_jct(s.name)
        metrics[f"cv_jct[{s.name}]"] = _cv(res, s.name)
    return metrics


def write_kernel_result(
    out_dir: str | Path, res: SimResult, services: Sequence[Service], config: dict[str, Any]
) -> Path:
    """Write tasks.csv, services.csv and summary.json into ``out_dir`` (whole or not at all)."""

    def write_files(staging: Path) -> None:
        write_tasks_csv(res, services, staging / "tasks.csv")
        if res.kernels and res.config.record_window is not None:
            write_kernels_csv([(res.config.mode, res.kernels)], res.config.record_window, staging / "kernels.csv")
        busy = max(res.end_time, 1e-12)
        rows = (
            (
                s.name,
                s.priority,
                len(res.tasks[s.name]),
                res.mean_jct(s.name),
                res.std_jct(s.name),
                _cv(res, s.name),
                res.service_busy[s.name] / busy,
            )
            for s in services
        )
        write_csv(staging / "services.csv", SERVICE_COLUMNS, rows)

    core = ResultCore("kernel", config, res.config.seed, kernel_metrics(res, services))
    return write_result(out_dir, core, write_files)
