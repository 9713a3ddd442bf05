"""Advisor mode (gpuweave.live.slurm_advisor): a policy orders Slurm's own pending jobs; Slurm launches them.

The projection and the parsing are checked on their own; on the sandbox, jobs submitted with plain sbatch start in
the policy's order (SJF by time limit) instead of Slurm's (submission order), and hold mode's holds are released
when the advisor stops, or by the next advisor when one was killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from gpuweave.cluster.policies import make_policy, policy_names
from gpuweave.live.slurm_advisor import (
    HELD_FILE,
    QueuedJob,
    SlurmAdvisor,
    parse_duration,
    parse_queue,
    rank_pending,
)
from gpuweave.workload.traces.slurm_nodes import GpuSlot, expand_hostlist

SLOTS = [GpuSlot("gw0", "v100", "V100", 4, "gw0-v100"), GpuSlot("gw0", "k80", "K80", 2, "gw0-k80")]


def _job(jid, state="PENDING", gpus=1, kind="v100", limit=60.0, nodes=1, reason="Priority", age=10.0):
    now = time.time()
    return QueuedJob(jid, state, gpus, nodes, kind, limit, now - age, now - age if state == "RUNNING" else None,
                     ["gw0"] if state == "RUNNING" else [], 1, reason, "u", "n")  # fmt: skip


def test_times_host_lists_and_squeue_lines_read_as_slurm_writes_them():
    assert parse_duration("5:00") == 300 and parse_duration("1:02:03") == 3723
    assert parse_duration("2-00:00:10") == 2 * 86400 + 10 and parse_duration("UNLIMITED") == float("inf")
    assert expand_hostlist("gw[0-2,5],login1") == ["gw0", "gw1", "gw2", "gw5", "login1"]
    assert expand_hostlist("n[08-10]") == ["n08", "n09", "n10"] and expand_hostlist("r[1-2]n[1-2]")[1] == "r1n2"
    text = (
        "7|PENDING|cpu=1,mem=4000M,node=1,billing=1,gres/gpu=2,gres/gpu:v100=2|1||6:00|2026-12-02T04:05:46|N/A|"
        "4294901753|Resources|root|my|job|\n"
        "8|RUNNING|cpu=2,node=2,gres/gpu=4|2|gw[0-1]|1:00:00|2026-12-02T04:05:46|2026-12-02T04:06:00|9|None|u|x|\n"
        "9|PENDING|cpu=1,mem=4000M,node=1,billing=1|1||3:00|2026-12-02T04:05:46|N/A|1|Priority|root|cpu|\n"
        "10_[1-4]|PENDING|cpu=1,gres/gpu=1|1||3:00|2026-12-02T04:05:46|N/A|1|Priority|root|array|\n"
    )
    jobs, skipped = parse_queue(text)
    assert [j.slurm_id for j in jobs] == ["7", "8"]  # 9 asks no GPU: not the advisor's
    assert jobs[0].name == "my|job" and jobs[0].gpu_type == "v100" and jobs[0].time_limit_s == 360
    assert (jobs[1].gpus_per_node, jobs[1].nodes, jobs[1].hosts) == (2, 2, ["gw0", "gw1"])
    assert "array" in skipped["10_[1-4]"]


def test_the_projection_ranks_pending_jobs_in_the_policy_order():
    jobs = [
        _job("run", "RUNNING", gpus=4, limit=600, age=60),  # every V100 until its limit, 540 s from now
        _job("long", limit=3600),
        _job("short", limit=60),
        _job("k80", kind="k80", limit=1800),  # the K80s are free: it starts now
        _job("huge", gpus=8),  # no node has 8 V100
        _job("later", limit=30, reason="Dependency"),
    ]
    ranking = rank_pending(jobs, SLOTS, lambda: make_policy("sjf"), time.time())
    assert ranking.order == ["k80", "short", "long"] and ranking.starts_now == ["k80"]  # the order they start in
    assert set(ranking.unranked) == {"huge", "later"} and "Dependency" in ranking.unranked["later"]
    elsewhere = _job("other-partition", "RUNNING", gpus=4, limit=600)
    elsewhere.hosts = ["gw9"]  # a node the advisor does not see: it holds none of these GPUs
    free = rank_pending([elsewhere, *jobs[1:]], SLOTS, lambda: make_policy("sjf"), time.time())
    assert free.starts_now == ["short", "k80", "long"]
    fifo = rank_pending(jobs, SLOTS, lambda: make_policy("fifo"), time.time())
    assert fifo.order == ["long", "short", "k80"]  # arrival order (ties by id); strict FIFO starts nothing now
    assert fifo.starts_now == [] and not fifo.would_preempt


def test_every_policy_ranks_every_job_it_could_start():
    """Event-driven and round policies alike (a round policy is asked on its rounds' grid in the projection, Gavel's
    fifo_perf re-solving only at its reset interval), GPU-type constraints and a two-node job among them."""
    slots = [*SLOTS, GpuSlot("gw1", "v100", "V100", 4, "gw1")]
    jobs = [_job("run", "RUNNING", gpus=4, limit=600, age=50)]
    jobs += [_job(str(i), gpus=(1, 2, 4)[i % 3], kind="", limit=60.0 * (1 + i % 7), age=100 - i) for i in range(1, 13)]
    jobs += [_job("pair", gpus=4, nodes=2, limit=120), _job("k80", kind="k80", limit=300)]
    for name in policy_names():
        if make_policy(name).forks_jobs:
            continue  # refused by the advisor: a Slurm job cannot be forked into copies
        ranking = rank_pending(jobs, slots, lambda: make_policy(name), time.time())
        assert sorted(ranking.order) == sorted(j.slurm_id for j in jobs[1:]) and not ranking.unranked, name
        assert ranking.starts_now and set(ranking.starts_now) <= set(ranking.order[: len(ranking.starts_now)]), name


def _sbatch(*args: str) -> str:
    out = subprocess.run(
        ["sbatch", "--parsable", "--output=/dev/null", *args], capture_output=True, text=True, check=True
    ).stdout
    return out.strip().split(";")[0]


def _running(jid: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-o", "%T", "-j", jid], capture_output=True, text=True).stdout
        if state.strip() == "RUNNING":
            return
        time.sleep(0.2)
    raise AssertionError(f"job {jid} did not start")


def _finished(ids: list[str], timeout: float = 90.0) -> dict[str, str]:
    """Start time of each job once sacct has every one's end (slurmdbd lags slurmctld)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(
            ["sacct", "-X", "-n", "--parsable2", "--format=JobID,Start,End,State", f"--jobs={','.join(ids)}"],
            capture_output=True,
            text=True,
        )
        rows = {r[0]: r for r in (line.split("|") for line in proc.stdout.splitlines()) if len(r) == 4}
        if len(rows) == len(ids) and all(r[3] == "COMPLETED" for r in rows.values()):
            return {jid: rows[jid][1] for jid in ids}
        time.sleep(0.5)
    raise AssertionError(f"jobs did not all complete: {proc.stdout}")


def test_slurm_starts_its_own_jobs_in_the_policy_order(slurm, tmp_path):
    blocker = _sbatch("--gres=gpu:v100:4", "--time=1", "--job-name=adv-block", "--wrap", "sleep 3")
    _running(blocker)
    # each asks for every V100, so they run one at a time: submitted longest limit first
    limits = {
        _sbatch("--gres=gpu:v100:4", f"--time={m}", "--job-name=adv", "--wrap", "sleep 1"): m for m in (4, 3, 1, 2)
    }
    out = tmp_path / "advice"
    first = SlurmAdvisor(lambda: make_policy("sjf"), out).round()  # before the blocker ends
    assert first.ranking.order == sorted(limits, key=limits.__getitem__)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cli = [sys.executable, "-m", "gpuweave.cli", "slurm", "advise", "--policy", "sjf", "--interval", "0.5"]
    proc = subprocess.run([*cli, "--until-idle", "--json", "--out", str(out)], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rounds = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rounds[-1]["idle"] and all(r["held"] == 0 for r in rounds)
    starts = _finished([blocker, *limits])
    started = sorted(limits, key=lambda jid: (starts[jid], limits[jid]))
    assert [limits[jid] for jid in started] == [1, 2, 3, 4]  # Slurm's own order would be 4, 3, 1, 2
    assert (out / "advice.csv").read_text().count("\n") > len(limits)


def test_hold_mode_holds_what_would_wait_releases_it_when_it_can_start_and_after_a_kill(slurm, tmp_path):
    blocker = _sbatch("--gres=gpu:v100:4", "--time=1", "--job-name=adv-block", "--wrap", "sleep 60")
    _running(blocker)
    waiting = [_sbatch("--gres=gpu:v100:2", f"--time={m}", "--job-name=adv", "--wrap", "sleep 1") for m in (2, 1)]
    out = tmp_path / "advice"

    def reasons() -> str:
        return subprocess.run(["squeue", "-h", "-o", "%i %r", "-j", ",".join(waiting)], capture_output=True,
                              text=True).stdout  # fmt: skip

    try:
        first = SlurmAdvisor(lambda: make_policy("sjf"), out, mode="hold")
        assert first.round().held == 2 and json.loads((out / HELD_FILE).read_text()) == sorted(waiting)
        assert reasons().count("JobHeldAdmin") == 2
        # the first advisor is killed (its close never runs): the next one on the same folder releases its holds
        advisor = SlurmAdvisor(lambda: make_policy("sjf"), out, mode="hold")
        assert not (out / HELD_FILE).exists() and "JobHeldAdmin" not in reasons()
        assert advisor.round().held == 2
        again = advisor.round()  # its own holds are ranked, not read as someone else's
        assert again.ranking.order == [waiting[1], waiting[0]] and again.held == 2 and not again.ranking.unranked
        subprocess.run(["scancel", blocker], check=True)
        deadline = time.monotonic() + 30
        released = 0
        while released < 2 and time.monotonic() < deadline:  # once the blocker's GPUs are free, both may start
            released += advisor.round().released
            time.sleep(0.2)
        assert released == 2 and not advisor.held and "JobHeldAdmin" not in reasons()
        assert advisor.close() == 0
        _finished(waiting)
    finally:
        subprocess.run(["scancel", blocker, *waiting])
