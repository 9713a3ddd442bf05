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
    rows = [f"half{i},0,1,any,200,500,1000,1024" for i in range(3)]
    rows += ["quarter,0,1,any,200,250,1000,1024", "whole,0,1,any,200,,1000,1024", "cpu,0,0,cpu-only,100,,1000,1024"]
    out, summary = _sandbox_run(tmp_path, rows, time_scale=200)
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


def test_the_ledger_follows_the_gpu_slurm_gives_a_shard(slurm, tmp_path):
    """Slurm takes a task's shards from the first GPU with room; the run's best-fit placement picks the fullest GPU
    that fits. Two whole GPUs taken, a half on GPU 2 and 0.7 on GPU 3: best fit puts 0.3 on GPU 3, Slurm on GPU 2. The
    ledger moves it to GPU 2, so a later half waits until a GPU has room for it (the first half ends) instead of
    being started where the ledger alone would see room and Slurm none."""
    rows = ["w0,0,1,any,400,,1000,1024", "w1,0,1,any,400,,1000,1024", "a,1,1,any,150,500,1000,1024"]
    rows += ["b,2,1,any,400,700,1000,1024", "c,20,1,any,400,300,1000,1024", "d,100,1,any,50,500,1000,1024"]
    out, summary = _sandbox_run(tmp_path, rows, time_scale=20)
    assert summary["completed"] == 6
    given = {r["job_id"]: r["gpus"] for r in _rows(out / "slurm.csv")}
    assert (given["w0"], given["w1"], given["a"], given["b"], given["c"]) == ("0", "1", "2", "3", "2")  # Slurm's
    written = json.loads((out / "summary.json").read_text())
    assert written["shares_moved_to_given_gpus"] == 1  # c: the placement chose GPU 3
    starts = {r["job_id"]: float(r["planned_start"]) for r in _rows(out / "live.csv") if r["kind"] == "start"}
    jobs = {r["job_id"]: r for r in _rows(out / "jobs.csv")}
    assert float(jobs["a"]["end"]) <= starts["d"] + 1e-6  # d waited in the book for a's GPU, not in Slurm's queue
    assert given["d"] == "2"  # where a was, the only GPU with room for it then


def _sandbox_run(tmp_path: Path, tasks: list[str], time_scale: float) -> tuple[Path, dict]:
    """Run ``tasks`` (rows of ``job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib``) under
    fifo with best fit on the sandbox's node of 4 shared V100s (synthetic workers): the out folder and summary."""
    (tmp_path / "cluster.yaml").write_text(
        "name: gwsandbox\nnodes:\n  - {gpu: V100, gpus_per_node: 4, names: [gw0-v100], cpu_milli: 16000, "
        "memory_mib: 65536, sharing: fraction}\n"
    )
    header = "job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib"
    (tmp_path / "trace.csv").write_text("\n".join([header, *tasks]) + "\n")
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
            "time_scale": time_scale,
            "checkpoint_every": 0.5,
            "poll_interval": 0.03,
            "slurm": {"poll_interval": 0.1, "gpus": "emulated"},  # the sandbox's GPUs are fake devices
        },
    }
    (tmp_path / "run.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    return out, run_live(tmp_path / "run.json", None, None, out)
