"""Fabricate small run directories in the format run_simulation writes (for tests)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

MODELS = ("V100", "K80")


def write_run_dir(
    path: Path,
    *,
    policy: str = "fifo",
    seed: int = 0,
    n_jobs: int = 12,
    avg_jct_s: float = 1234.5,
    utilization: float = 0.625,
    energy_kwh: float = 42.125,
    extra_config: dict | None = None,
    extra_metrics: dict | None = None,
) -> Path:
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    stretch = 1.0 + 0.25 * seed
    jobs = []
    for i in range(n_jobs):
        arrival = 60.0 * i
        start = arrival + 30.0 * (i % 3)
        done = i != n_jobs - 1  # the last job never completes
        jct = 600.0 * (i + 1) * stretch
        end = arrival + jct if done else None
        jobs.append((i, arrival, start, end))
    with open(path / "jobs.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "job_id",
                "job_type",
                "arrival",
                "start",
                "end",
                "jct",
                "queueing_delay",
                "num_gpus",
                "restarts",
                "deadline",
                "gpu_seconds",
                "energy_j",
                "cost",
            ]
            + [f"gpu_seconds_{m}" for m in MODELS]
        )
        for i, arrival, start, end in jobs:
            jct = "" if end is None else end - arrival
            w.writerow(
                [
                    f"job{i}",
                    "ResNet-50",
                    arrival,
                    start,
                    "" if end is None else end,
                    jct,
                    start - arrival,
                    1 + i % 2,
                    i % 2,
                    "",
                    100.0 * i,
                    5000.0 * i,
                    0.5 * i,
                    60.0 * i,
                    40.0 * i,
                ]
            )
    times = sorted({t for _, a, s, e in jobs for t in (a, s, e) if t is not None})
    with open(path / "timeseries.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time"] + [f"busy_{m}" for m in MODELS] + ["busy_total", "power_w"])
        for k, t in enumerate(times):
            busy = [(k * 3) % 9, (k * 5) % 7]
            w.writerow([t, *busy, sum(busy), 1000.0 + 250.0 * sum(busy)])
    with open(path / "allocations.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time", "job_id", "node", "gpu_model", "gpus"])
        for i, _, start, end in jobs:
            w.writerow([start, f"job{i}", "node0", "V100", 1])
    config = {"policy": policy, "seed": seed, "cluster": "gavel-60", "jobs": n_jobs, "rate_per_hour": 60.0}
    config.update(extra_config or {})
    summary = {
        "gpuweave_version": "0.1.0",
        "config": config,
        "seed": seed,
        "policy": policy,
        "cluster": {"total_gpus": 16, "gpus_by_model": {"V100": 8, "K80": 8}},
        "metrics": {
            "jobs": n_jobs,
            "completed": n_jobs - 1,
            "avg_jct_s": avg_jct_s,
            "p50_jct_s": 900.0,
            "p99_jct_s": 7000.25,
            "makespan_s": 9000.0,
            "time_to_50pct_s": 3000.0,
            "mean_queueing_delay_s": 30.0,
            "utilization": utilization,
            "energy_kwh": energy_kwh,
            "cost": 12.5,
            "restarts": 3,
            "gpu_hours": 4.5,
            "events": 40,
            "decisions": 20,
            "utilization_V100": 0.75,
            "utilization_K80": 0.5,
        },
        "definitions": {"jct": "end - arrival"},
    }
    summary["metrics"].update(extra_metrics or {})
    (path / "summary.json").write_text(json.dumps(summary, indent=2))
    return path
