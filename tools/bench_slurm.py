"""Closing-note figures for the slurm executor (issue 15), on the throwaway local Slurm; never asserted in tests.

    .venv/bin/python tools/bench_slurm.py [JOBS]     # as root, with Debian's slurm-wlm, slurmdbd, munge, mariadb-server

Starts :mod:`gpuweave.live.slurm_sandbox` (one node, 4 V100 + 2 K80 fake GPUs), then runs synthetic workers under
FIFO (every job starts once: ``sbatch``) and under Gavel with 60 s rounds (preemption: workers stopped, requeued
and released, or moved as new jobs), ``JOBS`` jobs each (default 24). Reports per run:

* decision to RUNNING in Slurm (the executor's ``sbatch``/``scontrol release`` call to the first ``squeue`` poll
  that shows RUNNING; polls every 0.1 s), p50/p95, for new submissions and for requeued releases apart;
* decision to the worker's first step (live.csv ``launch_latency_wall_s``: Slurm's start plus the worker's
  Python start), p50/p95;
* the runtime's overhead per round: the wall time of the runtime polls of the run minus the policy's own
  ``schedule`` time, per decision (reading workers, squeue, bookkeeping, sbatch/scontrol/scancel calls);
* the mean time of each Slurm command.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

RESNET = "ResNet-18 (batch size 128)"


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 3)


def _run(folder: Path, policy: str, jobs: int) -> dict:
    from gpuweave.live.config import LiveConfig
    from gpuweave.live.results import write_live_run
    from gpuweave.live.runtime import LiveRuntime
    from gpuweave.live.slurm import SlurmExecutor, SlurmOptions
    from gpuweave.live.slurm_commands import TIMINGS

    TIMINGS.clear()
    (folder / "cluster.yaml").write_text(
        "name: sandbox\nnodes:\n  - {gpu: V100, gpus_per_node: 4, names: [gw0-v100]}\n"
        "  - {gpu: K80, gpus_per_node: 2, names: [gw0-k80]}\n"
    )
    rows = [f"j{i},{i * 25},{1 + i % 2},{RESNET},{300 + 60 * (i % 5)}" for i in range(jobs)]
    (folder / "trace.csv").write_text("\n".join(["job_id,arrival,num_gpus,job_type,duration", *rows]) + "\n")
    config = LiveConfig.model_validate(
        {
            "policy": policy,
            "round_length": 60,
            "cluster": str(folder / "cluster.yaml"),
            "trace": str(folder / "trace.csv"),
            "executor": {
                "kind": "slurm",
                "program": "synthetic",
                "time_scale": 100,
                "checkpoint_every": 0.5,
                "poll_interval": 0.03,
                "slurm": {"poll_interval": 0.1},
            },
        }
    )
    out = folder / "out"
    rt = LiveRuntime(config, SlurmExecutor(out, SlurmOptions(poll_interval=0.1)), out)
    step_s: list[float] = []
    step = rt.step

    def timed() -> None:
        t0 = time.perf_counter()
        step()
        step_s.append(time.perf_counter() - t0)

    rt.step = timed
    t0 = time.perf_counter()
    rt.run()
    wall = time.perf_counter() - t0
    write_live_run(rt, out)
    with open(out / "slurm.csv") as fh:
        launches = list(csv.DictReader(fh))
    with open(out / "live.csv") as fh:
        first_step = [float(r["launch_latency_wall_s"]) for r in csv.DictReader(fh) if r["launch_latency_wall_s"]]
    by_action = {
        a: [float(r["launch_to_running_s"]) for r in launches if r["action"] == a and r["launch_to_running_s"]]
        for a in ("submit", "requeue")
    }
    ticks = max(1, len(rt.decision_s))
    return {
        "policy": policy,
        "jobs": jobs,
        "completed": sum(j.done for j in rt.jobs.values()),
        "wall_s": round(wall, 1),
        "launches": {a: len(v) for a, v in by_action.items()},
        "to_running_p50_s": {a: _pct(v, 50) for a, v in by_action.items()},
        "to_running_p95_s": {a: _pct(v, 95) for a, v in by_action.items()},
        "to_first_step_p50_s": _pct(first_step, 50),
        "to_first_step_p95_s": _pct(first_step, 95),
        "decisions": len(rt.decision_s),
        "runtime_overhead_per_round_ms": round(1e3 * (sum(step_s) - sum(rt.decision_s)) / ticks, 1),
        "poll_mean_ms": round(1e3 * statistics.fmean(step_s), 2),
        "policy_decision_mean_ms": round(1e3 * statistics.fmean(rt.decision_s), 2),
        "slurm_command_mean_ms": {k: round(1e3 * statistics.fmean(v), 1) for k, v in sorted(TIMINGS.items())},
        "slurm_command_calls": {k: len(v) for k, v in sorted(TIMINGS.items())},
    }


def main(jobs: int) -> None:
    from gpuweave.live.slurm_sandbox import SlurmSandbox, missing_requirements

    reason = missing_requirements()
    if reason:
        sys.exit(f"cannot start a local Slurm: {reason}")
    with tempfile.TemporaryDirectory(prefix="gw-slurm-bench-") as tmp:
        box = SlurmSandbox(Path(tmp) / "slurm").start()
        os.environ.update(box.env)
        try:
            for policy in ("fifo", "gavel"):
                folder = Path(tmp) / policy
                folder.mkdir()
                print(json.dumps(_run(folder, policy, jobs)))
        finally:
            box.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 24)
