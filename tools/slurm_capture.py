"""Make the Slurm example's history on a real (throwaway) Slurm: ``examples/slurm/history.sacct`` and ``nodes*.txt``.

Starts :mod:`gpuweave.live.slurm_sandbox` (one node, 4 V100 + 2 K80 declared as typed GPU GRES), submits a scripted
day-in-the-life of about 40 jobs over two minutes with ``sbatch`` (sleeping jobs of 1-4 GPUs of either type, a few
untyped, CPU-only jobs, an array job, a job an admin requeues, one that fails, one that hits its time limit, jobs
cancelled before they started), lets Slurm schedule them (FIFO with backfill: jobs without a time limit cannot be
backfilled, so a big job at the head of the queue blocks the others) and captures, while the last long job still
runs and a held job still waits (sacct lists neither held jobs nor jobs cancelled while held):

* ``history.sacct``: ``sacct --allusers --duplicates --parsable2 --format=<gpuweave's fields>`` (the importer's input);
* ``nodes.txt`` and ``nodes-multiline.txt``: ``scontrol show node --oneliner`` and without ``--oneliner``.

Run as root on a machine with Debian's slurm-wlm, slurmdbd, munge and mariadb-server (about 3 minutes):

    .venv/bin/python tools/slurm_capture.py [OUT_DIR]     # default examples/slurm
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sbatch(env: dict, *args: str, seconds: float = 5, code: int = 0) -> str:
    script = f"sleep {seconds}; exit {code}"
    out = subprocess.run(
        ["sbatch", "--parsable", "--requeue", "-o", "/dev/null", *args, "--wrap", script],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.strip().split(";")[0]


def slurm(env: dict, *args: str) -> str:
    return subprocess.run(list(args), env=env, capture_output=True, text=True, check=True).stdout


def wait_running(env: dict, job: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if slurm(env, "squeue", "-h", "-j", job, "-o", "%T").strip() == "RUNNING":
            return
        time.sleep(0.2)
    raise RuntimeError(f"job {job} did not start")


def history(env: dict) -> None:
    """The scripted submissions: a random mix (seed 7) plus one job per edge case, over about a minute."""
    rng = random.Random(7)
    requests = ["v100:1", "v100:1", "v100:2", "v100:4", "k80:1", "k80:2", "1", "v100:1", "k80:1", "v100:2"]
    users = ["alice", "bob", "carol"]
    special = {4: "requeue", 9: "array", 13: "fail", 17: "cpu", 21: "timeout", 25: "cancel", 29: "cpu"}
    requeue = cancel = None
    for i in range(34):
        name = f"--job-name={users[i % 3]}-{i:02d}"
        kind = special.get(i)
        if kind == "cpu":
            sbatch(env, name, seconds=rng.randint(3, 10))
        elif kind == "array":
            sbatch(env, name, "--array=0-3", "--gres=gpu:k80:1", seconds=rng.randint(4, 9))
        elif kind == "fail":
            sbatch(env, name, "--gres=gpu:k80:1", seconds=3, code=1)
        elif kind == "timeout":
            sbatch(env, name, "--gres=gpu:v100:1", "--time=1", seconds=300)
        elif kind == "cancel":
            cancel = sbatch(env, name, "--gres=gpu:k80:1", seconds=120)
        elif kind == "requeue":
            requeue = sbatch(env, name, "--gres=gpu:v100:1", seconds=25)
        else:
            gres = rng.choice(requests)
            sbatch(env, name, f"--gres=gpu:{gres}", seconds=rng.randint(5, 40))
        time.sleep(rng.uniform(0.5, 3.5))
        if i == 12 and requeue:  # an admin requeues a running job; it runs again from the start
            wait_running(env, requeue)
            slurm(env, "scontrol", "requeue", requeue)  # Slurm holds a requeued job back for two minutes
        if i == 30 and cancel:  # in the captured history it was still waiting behind the queue's head
            slurm(env, "scancel", cancel)
    held = sbatch(env, "--job-name=dave-held", "--hold", "--gres=gpu:v100:2", seconds=30)
    pending_cancel = sbatch(env, "--job-name=dave-gone", "--hold", "--gres=gpu:k80:1", seconds=30)
    slurm(env, "scancel", pending_cancel)
    sbatch(env, "--job-name=erin-long", "--gres=gpu:k80:1", seconds=900)
    del held


def wait_for_quiet(env: dict, timeout: float = 240) -> None:
    """Until only the long job runs and the held job waits (every other job ended)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = slurm(env, "squeue", "-h", "-o", "%j|%T|%r").splitlines()
        others = [line for line in lines if not line.startswith(("erin-long|", "dave-held|"))]
        if not others and any(line.startswith("erin-long|RUNNING") for line in lines):
            return
        time.sleep(1)
    raise RuntimeError(f"jobs still queued after {timeout} s: {lines}")


def main(out: Path) -> None:
    from gpuweave.live.slurm_sandbox import SlurmSandbox, missing_requirements
    from gpuweave.workload.traces.slurm import sacct_command

    reason = missing_requirements()
    if reason:
        sys.exit(f"cannot start a local Slurm: {reason}")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gw-slurm-") as tmp:
        box = SlurmSandbox(Path(tmp)).start()
        env = dict(os.environ, **box.env)
        try:
            started = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 60))
            history(env)
            wait_for_quiet(env)
            time.sleep(2)  # slurmdbd stores job ends asynchronously
            (out / "history.sacct").write_text(slurm(env, *sacct_command(start=started)))
            (out / "nodes.txt").write_text(slurm(env, "scontrol", "show", "node", "--oneliner"))
            (out / "nodes-multiline.txt").write_text(slurm(env, "scontrol", "show", "node"))
        finally:
            box.stop()
    print(f"wrote {out}/history.sacct, nodes.txt, nodes-multiline.txt")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "examples" / "slurm")
