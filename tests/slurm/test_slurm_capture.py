"""The importers asking the session's real Slurm (tests/slurm/conftest.py) themselves: `gpuweave trace import-slurm`
runs sacct and `gpuweave cluster import-slurm` runs scontrol, on jobs this test submits with plain sbatch."""

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _slurm(*args: str) -> str:
    return subprocess.run(list(args), capture_output=True, text=True, check=True).stdout


def _sbatch(*args: str, seconds: int = 1) -> str:
    return _slurm("sbatch", "--parsable", "-o", "/dev/null", *args, "--wrap", f"sleep {seconds}").strip()


def _state(job: str) -> str:
    return _slurm("squeue", "-h", "--states=all", "-j", job, "-o", "%T").strip()


def _node_state() -> str:
    return _slurm("sinfo", "-h", "-N", "-o", "%T").strip().lower()


def _wait(what: str, check, timeout: float = 60, why=lambda: "") -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {why()}")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True, env=env)


def test_import_slurm_commands_read_this_slurm(slurm, tmp_path):
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 2))
    v100 = _sbatch("--gres=gpu:v100:2")
    k80 = _sbatch("--gres=gpu:k80:1")
    cpu = _sbatch()
    array = _sbatch("--array=0-1", "--gres=gpu:v100:1")
    requeued = _sbatch("--requeue", "--gres=gpu:k80:1", seconds=60)
    try:
        _wait("the long job to run", lambda: _state(requeued) == "RUNNING")
        _slurm("scontrol", "requeue", requeued)
        requeued_at = time.time()
        _wait("the requeue", lambda: _state(requeued) == "PENDING" and "comp" not in _node_state())

        def started_again() -> bool:
            # Slurm holds a requeued job 2 minutes (a begin time); we lift the hold, but not within 2 s of the kill:
            # slurmd refuses a launch whose credential is from the same second as the revoked one ("Job N already
            # killed, do not launch batch job") and the second run then fails at once with exit code 1.
            if time.time() - requeued_at < 2.5:
                return False
            if _state(requeued) == "RUNNING":
                return True
            subprocess.run(["scontrol", "update", f"JobId={requeued}", "StartTime=now"], capture_output=True)
            return False

        _wait("the second run", started_again, why=lambda: _slurm("squeue", "-h", "--states=all", "-o", "%i %T %r"))
        short = [v100, k80, cpu, f"{array}_0", f"{array}_1"]
        _wait("the short jobs", lambda: all(_state(j) == "COMPLETED" for j in short))
        out, raw = tmp_path / "trace.csv", tmp_path / "raw.sacct"
        expected = {v100, k80, f"{array}_0", f"{array}_1", requeued}

        seen: list[dict] = [{}]

        def imported() -> bool:  # slurmdbd stores job ends a moment after squeue shows them
            proc = _cli("trace", "import-slurm", "-S", start, "--out", str(out), "--save-sacct", str(raw))
            assert proc.returncode == 0, proc.stderr
            with open(out) as fh:
                # only this test's jobs: an earlier test's that ended within the window's first 2 s are there too
                rows = {r["job_id"]: r for r in csv.DictReader(fh) if int(r["job_id"].split("_")[0]) >= int(v100)}
            seen[0] = {j: (r["state"], r["restarts"]) for j, r in rows.items()}
            done = set(rows) == expected and all(rows[j]["state"] == "COMPLETED" for j in expected - {requeued})
            return done and rows[requeued]["restarts"] == "1"  # the first run's REQUEUED record is stored too

        _wait("sacct to record every job", imported, timeout=30, why=lambda: f"imported {seen[0]}, want {expected}")
        with open(out) as fh:
            rows = {r["job_id"]: r for r in csv.DictReader(fh)}
        assert rows[v100]["num_gpus"] == "2" and rows[v100]["gpu_model"] == "V100"
        assert rows[k80]["gpu_model"] == "K80" and rows[f"{array}_1"]["gpu_model"] == "V100"
        again = rows[requeued]
        assert again["restarts"] == "1" and again["state"] == "RUNNING" and not again["end_time"]
        assert "lower bound" in again["note"] and float(again["duration"]) > 0
        assert cpu not in rows and f"{cpu}|" in raw.read_text()  # sacct listed the CPU job; the import left it out
    finally:
        subprocess.run(["scancel", requeued], capture_output=True)
    spec_path = tmp_path / "cluster.yaml"
    proc = _cli("cluster", "import-slurm", "--name", "here", "--out", str(spec_path))
    assert proc.returncode == 0, proc.stderr
    spec = yaml.safe_load(spec_path.read_text())
    assert [(g["gpu"], g["gpus_per_node"], g["names"]) for g in spec["nodes"]] == [
        ("V100", 4, ["gw0-v100"]),
        ("K80", 2, ["gw0-k80"]),
    ]
