"""Measure gangs on a testbed (issue 37's targets): launch latency and recovery from a node cut off, p50/p95.

    sudo .venv/bin/python tools/gang_measure.py launch --jobs 10 [--executor ray|local|slurm] [--json]
    sudo .venv/bin/python tools/gang_measure.py recovery --trials 10 [--executor ray|slurm] [--failure link|daemon]

``launch``: ``--jobs`` 4-GPU torch jobs, one after another (FIFO on a cluster of two 2-GPU nodes, so each is a
4-rank gang across two namespaces), on a fresh testbed; the figure is ``live.csv``'s ``launch_latency_wall_s``
(the policy's decision to the gang's first reported step: Ray's placement group or Slurm's allocation, the node
agents, torch's import, the process group's forming; Slurm: a control plane in namespace 0 and a slurmd in each of
three more). ``recovery``: each trial makes a fresh testbed (Ray: a head and three worker nodes; Slurm: the
control plane and three slurmd, ``SlurmdTimeout`` 5 s), starts one 4-GPU job, cuts the link of the node that
holds rank 0 once a checkpoint is saved (``--failure daemon``: kills only that node's raylet or slurmd; the
ranks there live on until their peers are gone), and measures from the cut to the job's first step on the other
two nodes; a trial counts a lost job when the run does not finish every step. Needs root (``ip netns``). Prints
a table, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from gpuweave.live import testbed
from gpuweave.live.slurm_sandbox import SlurmSandbox

RESNET = "ResNet-18 (batch size 128)"


def _config(folder: Path, nodes: int, jobs: list[str], executor: dict, names: list[str] | None = None) -> Path:
    group = {"gpu": "V100", "gpus_per_node": 2, "count": nodes}
    cluster = {"name": "tb", "nodes": [group | ({"names": names} if names else {"name_prefix": "w"})]}
    (folder / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    (folder / "trace.csv").write_text("job_id,arrival,num_gpus,job_type,work\n" + "".join(f"{j}\n" for j in jobs))
    run = {"policy": "fifo", "cluster": "cluster.yaml", "trace": "trace.csv", "restart_delay": 0, "executor": executor}
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    return path


def _run_argv(bed: testbed.Testbed, config: Path, out: Path, kind: str) -> list[str]:
    argv = [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config), "--out", str(out)]
    if kind == "ray":
        return ["ip", "netns", "exec", bed.nodes[0].namespace, *argv, "--executor", "ray", "--address", bed.ray_address]
    return argv


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=20, method="inclusive") if len(ordered) > 1 else ordered * 19
    return {"p50_s": statistics.median(ordered), "p95_s": q[18], "min_s": ordered[0], "max_s": ordered[-1]}


def _slurm_on(bed: testbed.Testbed, folder: Path, env: dict, executor: dict) -> SlurmSandbox:
    """A Slurm on the testbed (control plane in namespace 0, a slurmd in each other, SlurmdTimeout 5 s); its
    environment into ``env`` and the slurm executor's settings into ``executor``."""
    box = SlurmSandbox(
        folder / "slurm",
        namespaces=[(n.namespace, n.addr) for n in bed.nodes[1:]],
        control=(bed.nodes[0].namespace, bed.nodes[0].addr),
    ).start()
    env |= box.env
    executor |= {"kind": "slurm", "slurm": {"poll_interval": 0.1, "gpus": "emulated"}}
    return box


def launch(jobs: int, kind: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="gw-gang-") as tmp:
        folder = Path(tmp)
        bed = testbed.up("lat", 4 if kind == "slurm" else 3, ray=kind == "ray")
        box = None
        try:
            executor = {"program": "torch", "time_scale": 1, "checkpoint_every": 5, "report_timeout": 120}
            env = dict(os.environ)
            if kind == "local":
                executor |= {"kind": "local", "local": {"namespaces": bed.namespaces[1:]}}
            if kind == "slurm":
                box = _slurm_on(bed, folder, env, executor)
            trace = [f"g{i},{i},4,{RESNET},60" for i in range(jobs)]
            names = ["gw0-v100", "gw1-v100"] if kind == "slurm" else None
            config = _config(folder, 2, trace, executor, names)
            out = folder / "out"
            done = subprocess.run(_run_argv(bed, config, out, kind), capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise SystemExit(f"run failed: {done.stderr[-2000:]}")
            with open(out / "live.csv") as fh:
                rows = list(csv.DictReader(fh))
        finally:
            if box is not None:
                box.stop()
            testbed.down("lat")
    latencies = [float(r["launch_latency_wall_s"]) for r in rows]
    return {"executor": kind, "gangs": len(latencies), "ranks": 4, "nodes": 2, **_percentiles(latencies)}


#: the daemon a ``--failure daemon`` trial kills on the node of rank 0 (the machine and its link live on)
DAEMON = {"ray": "raylet", "slurm": "slurmd"}


def _recovery_trial(folder: Path, steps: int, kind: str, failure: str) -> tuple[float | None, bool, list[str]]:
    bed = testbed.up("rec", 4, ray=kind == "ray")
    box = None
    try:
        executor = {"program": "torch", "time_scale": 1, "checkpoint_every": 0.2, "report_timeout": 120}
        env, names = dict(os.environ), None
        if kind == "slurm":
            box = _slurm_on(bed, folder, env, executor)
            names = ["gw0-v100", "gw1-v100", "gw2-v100"]
        config = _config(folder, 3, [f"g4,0,4,{RESNET},{steps}"], executor, names)
        out = folder / "out"
        argv = _run_argv(bed, config, out, kind)
        run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        status = out / "channels" / "g4" / "a1-c0-r0" / "status.json"
        while not (status.exists() and json.loads(status.read_text() or "{}").get("checkpoint_steps", 0) > 0):
            if run.poll() is not None:
                raise SystemExit(f"run ended early: {run.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        rendezvous = json.loads((out / "channels" / "g4" / "a1-c0.rendezvous.json").read_text())
        victim = next(i for i, n in enumerate(bed.nodes) if n.addr == rendezvous["addr"])
        cut = time.time()
        if failure == "link":
            bed.set_link(victim, up=False)
        elif not bed.kill_program(victim, DAEMON[kind]):
            raise SystemExit(f"no {DAEMON[kind]} found on testbed node {victim}")
        run.wait(timeout=600)
        # the attempt that ran again: the last one (a killed raylet may fail the first attempt's task before GCS
        # declares its node dead, and the retry on the same nodes is then sent back too)
        last = max(int(p.name[1:].split("-")[0]) for p in (out / "channels" / "g4").glob("a*-c0-r0"))
        again = out / "channels" / "g4" / f"a{last}-c0-r0" / "status.json"
        first = json.loads(again.read_text()).get("first_step_wall") if last > 1 and again.exists() else None
        with open(out / "live.csv") as fh:
            rows = list(csv.DictReader(fh))
        finished = run.returncode == 0 and rows[-1]["outcome"] == "done"
        return (first - cut if first else None), finished, [r["outcome"] for r in rows]
    finally:
        if box is not None:
            box.stop()
        testbed.down("rec")


def recovery(trials: int, steps: int, kind: str = "ray", failure: str = "link") -> dict:
    times, lost, crashes = [], 0, 0
    for trial in range(trials):
        with tempfile.TemporaryDirectory(prefix="gw-rec-") as tmp:
            seconds, finished, outcomes = _recovery_trial(Path(tmp), steps, kind, failure)
        lost += not finished
        crashes += outcomes.count("crash")  # a node lost is no crash: each one counted is a misreading
        if seconds is not None:
            times.append(seconds)
        shown = seconds if seconds is None else round(seconds, 2)
        print(f"trial {trial + 1}/{trials}: {shown} s, attempts {', '.join(outcomes)}", file=sys.stderr)
    return {"executor": kind, "failure": failure, "trials": trials, "recovered": len(times), "jobs_lost": lost,
            "crashes_counted": crashes, **(_percentiles(times) if times else {})}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("launch", help="launch latency of 4-rank gangs across two nodes")
    one.add_argument("--jobs", type=int, default=10)
    one.add_argument("--executor", choices=("ray", "local", "slurm"), default="ray")
    two = sub.add_parser("recovery", help="node link down to the gang running again elsewhere")
    two.add_argument("--trials", type=int, default=10)
    two.add_argument("--steps", type=int, default=400)
    two.add_argument("--executor", choices=("ray", "slurm"), default="ray")
    two.add_argument(
        "--failure", choices=("link", "daemon"), default="link", help="cut the link, or kill only raylet/slurmd"
    )
    for p in (one, two):
        p.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.what == "launch":
        result = launch(args.jobs, args.executor)
    else:
        result = recovery(args.trials, args.steps, args.executor, args.failure)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:>10}: {value:.2f}" if isinstance(value, float) else f"{key:>10}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
