"""Advisor mode against Slurm's own order on the sandbox: the same jobs, submitted the same way, twice.

    sudo .venv/bin/python tools/advisor_measure.py [--policy sjf] [--jobs 16] [--seed 0] [--mode priority] [--json]

Starts a throwaway Slurm (:mod:`gpuweave.live.slurm_sandbox`: one node, 4 V100 + 2 K80 as typed GRES). Each run
submits a blocker that holds every GPU for a few seconds, then ``--jobs`` plain ``sbatch`` jobs in one burst
(seeded: 1, 2 or 4 untyped GPUs, a time limit of 1-10 minutes, each sleeping its limit in seconds, so a job's
limit is its real length scaled by 1/60, as honest an estimate as a user's limit can be). Run 1 leaves the order
to Slurm (``priority/basic``: submission order, and its backfill); run 2 runs ``gpuweave slurm advise`` beside
it. Per run, from ``sacct``: mean job completion time and wait (from submission, seconds), makespan, and the
order the jobs started in. Needs root. Prints a table, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from gpuweave.live.slurm_sandbox import SlurmSandbox
from gpuweave.workload.traces.slurm import TIME_FORMAT

BLOCK_S = 4
SACCT_WAIT_S = 600.0  # the longest a run of the jobs below may take to be in sacct, all of them completed


def _sbatch(*args: str) -> str:
    out = subprocess.run(
        ["sbatch", "--parsable", "--output=/dev/null", *args], capture_output=True, text=True, check=True
    ).stdout
    return out.strip().split(";")[0]


def _wait_running(jid: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(["squeue", "-h", "-o", "%T", "-j", jid], capture_output=True, text=True).stdout.strip() != (
        "RUNNING"
    ):
        if time.monotonic() > deadline:
            raise SystemExit(f"job {jid} did not start within {timeout:g} s")
        time.sleep(0.2)


def _sacct(ids: list[str]) -> dict[str, tuple[float, float, float]]:
    """(submit, start, end) epoch seconds of each job, once slurmdbd has every end."""
    deadline = time.monotonic() + SACCT_WAIT_S
    while time.monotonic() < deadline:
        proc = subprocess.run(
            ["sacct", "-X", "-n", "--parsable2", "--format=JobID,Submit,Start,End,State", f"--jobs={','.join(ids)}"],
            capture_output=True,
            text=True,
        )
        rows = [line.split("|") for line in proc.stdout.splitlines()]
        done = {r[0]: r for r in rows if len(r) == 5 and r[4] == "COMPLETED"}
        if len(done) == len(ids):
            return {j: tuple(datetime.strptime(done[j][k], TIME_FORMAT).timestamp() for k in (1, 2, 3)) for j in ids}
        time.sleep(1.0)
    raise SystemExit(f"sacct did not show every job completed within {SACCT_WAIT_S:g} s: {proc.stdout[-500:]}")


def _workload(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.choice((1, 1, 2, 4)), rng.randint(1, 10)) for _ in range(n)]


def _run(jobs: list[tuple[int, int]], advisor: list[str] | None, out: Path) -> dict:
    blocker = _sbatch("--gres=gpu:v100:4", "--time=1", "--wrap", f"sleep {BLOCK_S}")
    k80 = _sbatch("--gres=gpu:k80:2", "--time=1", "--wrap", f"sleep {BLOCK_S}")
    _wait_running(blocker)
    _wait_running(k80)
    proc = None
    rounds_file = out.with_suffix(".jsonl")
    if advisor is not None:  # started before the burst: its rounds see the queue as it fills
        cmd = [sys.executable, "-m", "gpuweave.cli", "slurm", "advise", *advisor, "--until-idle", "--out", str(out)]
        with open(rounds_file, "w") as sink:  # a file, not a pipe: nobody reads it until the run ends
            proc = subprocess.Popen([*cmd, "--interval", "0.5", "--json"], stdout=sink)
    ids = [_sbatch(f"--gres=gpu:{g}", f"--time={m}", "--wrap", f"sleep {m}") for g, m in jobs]
    times = _sacct([blocker, k80, *ids])
    if proc is not None:
        proc.wait(timeout=120)
    rounds = [json.loads(line) for line in rounds_file.read_text().splitlines()] if proc else []
    submitted = {j: times[j][0] for j in ids}
    jct = [times[j][2] - submitted[j] for j in ids]
    wait = [times[j][1] - submitted[j] for j in ids]
    start_order = sorted(ids, key=lambda j: (times[j][1], int(j)))
    return {
        "mean_jct_s": statistics.fmean(jct),
        "mean_wait_s": statistics.fmean(wait),
        "makespan_s": max(times[j][2] for j in ids) - min(submitted.values()),
        "start_order": start_order,
        "rounds": len(rounds),
        "advisor_round_s": statistics.fmean(r["seconds"] for r in rounds) if rounds else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default="sjf")
    ap.add_argument("--mode", default="priority", choices=("priority", "hold"))
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    jobs = _workload(args.jobs, args.seed)
    with tempfile.TemporaryDirectory(prefix="gw-advisor-") as tmp:
        box = SlurmSandbox(Path(tmp) / "slurm").start()
        os.environ.update(box.env)
        try:
            slurm_own = _run(jobs, None, Path(tmp) / "a")
            advised = _run(jobs, ["--policy", args.policy, "--mode", args.mode], Path(tmp) / "b")
        finally:
            box.stop()
    result = {"jobs": args.jobs, "seed": args.seed, "policy": args.policy, "mode": args.mode,
              "slurm": slurm_own, "advised": advised}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.jobs} jobs (seed {args.seed}) behind a {BLOCK_S} s blocker, 4 V100 + 2 K80")
    print(f"{'':<28}{'mean JCT s':>12}{'mean wait s':>13}{'makespan s':>12}")
    for label, r in (("Slurm's own order", slurm_own), (f"advised: {args.policy} ({args.mode})", advised)):
        print(f"{label:<28}{r['mean_jct_s']:>12.1f}{r['mean_wait_s']:>13.1f}{r['makespan_s']:>12.1f}")
    print(f"advisor: {advised['rounds']} rounds, {advised['advisor_round_s']:.3f} s each on average")
    return 0


if __name__ == "__main__":
    sys.exit(main())
