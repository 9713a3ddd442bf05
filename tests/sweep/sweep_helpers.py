"""Fake cell runners for sweep tests: picklable top-level functions that write a small run directory."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from gpuweave.fingerprint import code_fingerprint


def _log_execution(run_dir: Path, config) -> None:
    log = run_dir.parent.parent / "executed.log"
    with open(log, "a") as fh:
        fh.write(f"{config.key()} {os.getpid()}\n")


def fake_runner(config, run_dir) -> dict:
    """Write jobs.csv, timeseries.csv and summary.json like run_simulation (staged, then renamed)."""
    run_dir = Path(run_dir)
    _log_execution(run_dir, config)
    if config.policy == "boom":
        raise RuntimeError(f"policy exploded at rate {config.rate_per_hour:g}")
    staging = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.", dir=run_dir.parent))
    speed = {"fifo": 1.0, "sjf": 0.5}.get(config.policy, 0.75)
    load = config.rate_per_hour / 60.0
    avg = 1000.0 * speed * load * (1 + 0.1 * config.seed)
    lines = ["job_id,job_type,arrival,start,end,jct,queueing_delay,num_gpus"]
    for i in range(config.jobs):
        arrival = 3600.0 * i / config.rate_per_hour
        jct = avg * (0.5 + i / max(config.jobs - 1, 1))
        lines.append(f"j{i},ResNet-18,{arrival},{arrival},{arrival + jct},{jct},0,1")
    (staging / "jobs.csv").write_text("\n".join(lines) + "\n")
    (staging / "timeseries.csv").write_text("time,busy_V100,busy_total,power_w\n0,2,2,500\n100,1,1,400\n200,0,0,300\n")
    metrics = {
        "jobs": config.jobs,
        "completed": config.jobs,
        "avg_jct_s": avg,
        "p99_jct_s": 2 * avg,
        "makespan_s": 5000.0,
        "utilization": 0.5 * load,
        "energy_kwh": 3.0,
        "cost": 1.5,
    }
    summary = {
        "gpuweave_version": "test",
        "gpuweave_code": code_fingerprint(),
        "config": config.model_dump(mode="json"),
        "seed": config.seed,
        "policy": config.policy,
        "cluster": {"total_gpus": 2, "gpus_by_model": {"V100": 2}},
        "metrics": metrics,
    }
    (staging / "summary.json").write_text(json.dumps(summary))
    if run_dir.exists():
        shutil.rmtree(run_dir)
    staging.rename(run_dir)
    return metrics


def executed(out_dir: Path) -> list[str]:
    log = Path(out_dir) / "executed.log"
    return log.read_text().split("\n")[:-1] if log.exists() else []


def square(x: int) -> int:
    if x == 3:
        raise ValueError("three is not allowed")
    return x * x
