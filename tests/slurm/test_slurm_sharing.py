"""A shared run (tasks holding shares of GPUs) on the session's real Slurm: a share of one GPU is Slurm's
``gres/shard`` (the sandbox declares 100 shards per GPU), a CPU-only task asks no GRES, and Slurm's accounting
says so."""

from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path

from gpuweave.live.launch import run_live


def _rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_shares_of_gpus_run_as_slurm_shards(slurm, tmp_path):
    (tmp_path / "cluster.yaml").write_text(
        "name: gwsandbox\nnodes:\n  - {gpu: V100, gpus_per_node: 4, names: [gw0-v100], cpu_milli: 16000, "
        "memory_mib: 65536, sharing: fraction}\n"
    )
    rows = ["job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib"]
    rows += [f"half{i},0,1,any,200,500,1000,1024" for i in range(3)]
    rows += ["quarter,0,1,any,200,250,1000,1024", "whole,0,1,any,200,,1000,1024", "cpu,0,0,cpu-only,100,,1000,1024"]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    config = {
        "policy": "fifo",
        "cluster": "cluster.yaml",
        "trace": "trace.csv",
        "profiles": "traced",
        "placement_rule": "best-fit",
        "restart_delay": 0,
        "executor": {
            "kind": "slurm",
            "program": "synthetic",
            "time_scale": 200,
            "checkpoint_every": 0.5,
            "poll_interval": 0.03,
            "slurm": {"poll_interval": 0.1, "gpus": "emulated"},  # the sandbox's GPUs are fake devices
        },
    }
    (tmp_path / "run.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    summary = run_live(tmp_path / "run.json", None, None, out)
    assert summary["completed"] == 6
    launches = {r["job_id"]: r for r in _rows(out / "slurm.csv")}
    assert {launches[f"half{i}"]["gres"] for i in range(3)} == {"shard:v100:50"}
    assert launches["quarter"]["gres"] == "shard:v100:25" and launches["whole"]["gres"] == "gpu:v100:1"
    assert launches["cpu"]["gres"] == ""
    ids = ",".join(r["slurm_job_id"] for r in launches.values())
    sacct = ["sacct", "-X", "--parsable2", "--format=JobID,State,AllocTRES", f"--jobs={ids}"]
    deadline = time.time() + 20
    while True:  # slurmdbd records a job's end a moment after slurmctld (seen lagging on a loaded machine)
        proc = subprocess.run(sacct, capture_output=True, text=True)
        accounted = {r["JobID"]: r for r in csv.DictReader(proc.stdout.splitlines(), delimiter="|")}
        if time.time() > deadline or all(r["State"] not in ("RUNNING", "PENDING") for r in accounted.values()):
            break
        time.sleep(0.2)
    for job, row in launches.items():  # Slurm's own record: it ran, with the shards or GPUs the ledger asked
        record = accounted[row["slurm_job_id"]]
        assert record["State"] == "COMPLETED", (job, record)
        if row["gres"].startswith("shard"):
            assert "gres/shard" in record["AllocTRES"], record
    assert (out / "sharing.csv").is_file()
