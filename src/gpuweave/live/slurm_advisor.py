"""Advisor mode: a gpuweave policy orders Slurm's pending GPU jobs; Slurm still launches, places and accounts them.

Problem: a site that runs Slurm keeps slurmctld (its backfill, its accounting, its limits, its users' ``sbatch``)
and wants a policy's order, not a second scheduler. The advisor launches nothing. Every round it

1. reads the nodes (``scontrol show node``) and the pending and running jobs (``squeue``: each job's GPUs from its
   TRES, its nodes, time limit, submit and start time, priority and reason) of the partition (:func:`read_queue`);
2. projects the queue under the policy (:func:`rank_pending`): a scratch :class:`~gpuweave.live.book.LiveBook` at
   now holds the running jobs where Slurm runs them and the pending ones arrived at their submit times. Every job
   runs for its time limit (Slurm's own estimate, the one its backfill plans with) at one step per second on any
   GPU (:class:`~gpuweave.workload.traced_rates.TracedDurations`). The jobs the policy starts now rank first, in its
   decision's order; then the running job that ends first completes (a round policy is also asked on its rounds'
   grid, as the simulator asks it), the policy is asked again, and so on until every pending job has a rank: one
   call per completion for an event-driven policy, O(J) calls a round, at most ``PROJECTION_CALLS_PER_JOB`` x J
   for a round policy, each on a policy built afresh (a policy's memory of an earlier projection's future must not
   leak into this one);
3. applies the rank (:meth:`SlurmAdvisor.apply`). ``priority`` mode sets each ranked job's priority
   (``scontrol update JobId=.. Priority=..``, rank 1 highest, above any priority Slurm's ``priority/basic``
   computes, only where it changes), so Slurm starts jobs in the policy's order and still backfills a later job
   where it delays no earlier one. ``hold`` mode also holds every ranked job the policy would not start now
   (``scontrol hold``) and releases those it would: the policy's order exactly, no backfill past it. The jobs it
   holds are listed in ``OUT/held.json`` before each hold and released when the advisor stops (Ctrl-C, SIGTERM,
   SIGHUP); an advisor started on the same OUT releases what a killed one left held.

What it does not do: preempt (the policy's preemptions in the projection are counted, not done), fork (HadarE) or
place shares of GPUs (task placements). Jobs without GPUs, pending array ranges, jobs held by someone else or
waiting for a dependency or a begin time keep Slurm's order. Slurm knows no job types, so every job runs at the
same speed on any GPU: policies that weigh GPU types by throughput (Gavel, Hadar) see no difference between them.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir
from gpuweave.hardware.cluster_spec import Node
from gpuweave.live.book import LiveBook
from gpuweave.live.slurm_commands import first_line, run_slurm, try_slurm
from gpuweave.workload.job import Job
from gpuweave.workload.traces.slurm import TIME_FORMAT, gpu_tres
from gpuweave.workload.traces.slurm_nodes import GpuSlot, expand_hostlist, gpu_slots, parse_scontrol_text

MODES = ("priority", "hold")
#: rank 1's priority. Slurm's priority/basic gives the n-th job 2^32 - 2^16 - n, so the ranks sit above every job
#: it numbers; 2^32 - 1 and above are not priorities. Room for MAX_RANKED ranks below it.
TOP_PRIORITY = 4_294_967_000
MAX_RANKED = TOP_PRIORITY - (2**32 - 2**16)
#: policy calls a projection may make per job (a round policy is asked every round: jobs of days on 6-minute rounds
#: would otherwise cost thousands of calls); the jobs not ranked by then keep Slurm's order
PROJECTION_CALLS_PER_JOB = 50
#: a job without a time limit (UNLIMITED) runs this long in the projection: after every job that has one
UNLIMITED_S = 365 * 86400.0
#: reasons a pending job cannot start whatever its priority: it keeps Slurm's order
NOT_READY = ("Dependency", "DependencyNeverSatisfied", "BeginTime", "JobHeldUser", "JobHeldAdmin", "JobArrayTaskLimit")
SQUEUE_FIELDS = (
    "JobID",
    "State",
    "tres-alloc",
    "NumNodes",
    "NodeList",
    "TimeLimit",
    "SubmitTime",
    "StartTime",
    "PriorityLong",
    "Reason",
    "UserName",
    "Name",  # last: a job name may hold the separator
)
SEP = "|"
ADVICE_CSV = "advice.csv"
ADVICE_COLUMNS = ["round", "time", "slurm_job_id", "rank", "starts_now", "priority_before", "priority", "held"]
HELD_FILE = "held.json"


@dataclass(slots=True)
class QueuedJob:
    """One of Slurm's GPU jobs as ``squeue`` shows it."""

    slurm_id: str
    state: str  # PENDING | RUNNING
    gpus_per_node: int
    nodes: int
    gpu_type: str  # Slurm's GPU type ("" untyped)
    time_limit_s: float
    submit: float  # epoch seconds
    start: float | None  # epoch seconds (running jobs)
    hosts: list[str]  # the nodes it runs on (running jobs)
    priority: int
    reason: str
    user: str
    name: str


@dataclass(slots=True)
class Ranking:
    """A round's projection: the pending jobs in the policy's order, and what it would do now."""

    order: list[str] = field(default_factory=list)  # Slurm job ids, rank 1 first
    starts_now: list[str] = field(default_factory=list)  # the policy would start these at once
    would_preempt: list[str] = field(default_factory=list)  # running jobs it would stop (advisor mode does not)
    unranked: dict[str, str] = field(default_factory=dict)  # job id -> why it keeps Slurm's order


# ------------------------------------------------------------------------------------------------ reading Slurm
def parse_duration(text: str) -> float:
    """Seconds of a Slurm time (``[days-]hours:minutes:seconds``, ``minutes:seconds``, ``UNLIMITED``)."""
    text = text.strip()
    if text.upper() in ("UNLIMITED", "INFINITE", "NOT_SET", "N/A", ""):
        return math.inf
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if len(parts) == 2:
        parts = [0, *parts]
    hours, minutes, seconds = ([0] * (3 - len(parts)) + parts)[-3:]
    return ((int(days) if days else 0) * 24 + hours) * 3600.0 + minutes * 60.0 + seconds


def _epoch(text: str) -> float | None:
    """Epoch seconds of a Slurm timestamp (local time, ``YYYY-MM-DDTHH:MM:SS``); None for N/A or Unknown."""
    try:
        return datetime.strptime(text.strip(), TIME_FORMAT).timestamp()
    except ValueError:
        return None


def squeue_command(partition: str | None) -> list[str]:
    fields = ",".join(f"{name}:{SEP}" for name in SQUEUE_FIELDS)
    return [
        "squeue",
        "--noheader",
        "--states=PENDING,RUNNING",
        *([f"--partition={partition}"] if partition else []),
        f"--Format={fields}",
    ]


def parse_queue(text: str, source: str = "squeue") -> tuple[list[QueuedJob], dict[str, str]]:
    """The GPU jobs of ``squeue --Format`` output (:func:`squeue_command`), and the jobs left out with why."""
    jobs: list[QueuedJob] = []
    skipped: dict[str, str] = {}
    seen: dict[str, tuple[int, str]] = {}
    for row, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        # every field ends with the separator, the name too: cut the last one off before splitting
        cells = [c.strip() for c in line.rstrip().removesuffix(SEP).split(SEP, len(SQUEUE_FIELDS) - 1)]
        if len(cells) < len(SQUEUE_FIELDS):
            raise InputError(f"expected {len(SQUEUE_FIELDS)} fields, got {len(cells)}", file=source, row=row)
        jid, state, tres, nodes, nodelist, limit, submit, start, prio, reason, user, name = cells
        if "[" in jid:
            skipped[jid] = "a pending array range (its tasks are ranked once Slurm splits them)"
            continue
        gpus, types = gpu_tres(tres, source, row, "tres-alloc", seen)
        if gpus <= 0:
            continue  # not a GPU job: not the advisor's
        count = max(1, int(nodes)) if nodes.isdigit() else 1
        if "+" in types:
            skipped[jid] = f"asks for several GPU types ({types})"
            continue
        try:
            hosts = expand_hostlist(nodelist) if state == "RUNNING" else []
            limit_s = parse_duration(limit)
        except ValueError as exc:
            raise InputError(str(exc), file=source, row=row, field="NodeList/TimeLimit") from None
        jobs.append(
            QueuedJob(
                jid, state, max(1, gpus // count), count, types, limit_s, _epoch(submit) or time.time(),
                _epoch(start) if state == "RUNNING" else None, hosts, int(prio) if prio.isdigit() else 0,
                reason, user, name,
            )
        )  # fmt: skip
    return jobs, skipped


def read_queue(partition: str | None) -> tuple[list[QueuedJob], dict[str, str]]:
    return parse_queue(run_slurm(squeue_command(partition)), source="squeue")


def read_slots(partition: str | None, gpu_map: dict[str, str] | None = None) -> list[GpuSlot]:
    """The partition's (node, GPU type) slots of healthy nodes (a drained or down node starts nothing)."""
    nodes = parse_scontrol_text(run_slurm(["scontrol", "show", "node", "--oneliner"]))
    if partition:
        nodes = [n for n in nodes if partition in n.partitions]
    nodes = [n for n in nodes if n.healthy]
    if not nodes:
        raise InputError(f"no healthy node in {'partition ' + repr(partition) if partition else 'the cluster'}")
    slots, _ = gpu_slots(nodes, gpu_map=gpu_map, skip_unknown=True)
    return slots


# ------------------------------------------------------------------------------------------------ projection
def _runnable(job: QueuedJob, slots: list[GpuSlot]) -> str | None:
    """Why the job can never start on ``slots`` (None: it can)."""
    fitting = [s for s in slots if (not job.gpu_type or s.slurm_type == job.gpu_type) and s.count >= job.gpus_per_node]
    if len({s.host for s in fitting}) < job.nodes:
        what = f"{job.gpu_type.upper()} " if job.gpu_type else ""
        return f"asks for {job.nodes} node(s) of {job.gpus_per_node} {what}GPUs; the partition has no room for it"
    return None


def _placement(
    job: QueuedJob, index: dict[tuple[str, str], int], by_host: dict[str, list[int]], free: list[int]
) -> tuple[tuple[int, int], ...] | None:
    """Where Slurm runs a running job, as a gpuweave placement (None: on nodes the advisor does not see)."""
    pairs = []
    for host in job.hosts:
        candidates = [index[(host, job.gpu_type)]] if (host, job.gpu_type) in index else by_host.get(host, [])
        slot = next((i for i in candidates if free[i] >= job.gpus_per_node), None)
        if slot is None:
            return None
        free[slot] -= job.gpus_per_node
        pairs.append((slot, job.gpus_per_node))
    return tuple(sorted(pairs))


def rank_pending(
    jobs: list[QueuedJob],
    slots: list[GpuSlot],
    make_policy: Callable[[], ClusterPolicy],
    now: float,
    held_here: frozenset[str] = frozenset(),
) -> Ranking:
    """The pending jobs in the order the policy starts them in a projection of the queue (module docstring, 2).
    ``held_here``: jobs this advisor holds (hold mode); they are ranked, not read as held by someone else."""
    from gpuweave.cluster.decision import Decision
    from gpuweave.cluster.run import gpu_power
    from gpuweave.workload.traced_rates import TracedDurations

    ranking = Ranking()
    nodes = [Node(i, s.name, s.model, s.count, 0.0, 1.0) for i, s in enumerate(slots)]
    model_of = {s.slurm_type: s.model for s in slots}
    kept = []
    for qj in jobs:
        why = _runnable(qj, slots)
        ours = qj.slurm_id in held_here and qj.reason == "JobHeldAdmin"
        if qj.state == "PENDING" and why is None and qj.reason in NOT_READY and not ours:
            why = f"cannot start yet ({qj.reason})"
        if why is None or qj.state == "RUNNING":
            kept.append(qj)
        else:
            ranking.unranked[qj.slurm_id] = why
    # the running jobs where Slurm runs them; one on nodes the advisor does not see holds none of these GPUs
    index = {(s.host, s.slurm_type): i for i, s in enumerate(slots)}
    by_host: dict[str, list[int]] = {}
    for i, s in enumerate(slots):
        by_host.setdefault(s.host, []).append(i)
    free = [s.count for s in slots]
    running = Decision()
    for q in kept:
        if q.state == "RUNNING" and (where := _placement(q, index, by_host, free)) is not None:
            running.assign[q.slurm_id] = where
    kept = [q for q in kept if q.state == "PENDING" or q.slurm_id in running.assign]
    if not kept:
        return ranking
    origin = min(min(q.submit for q in kept), now)
    remaining = {q.slurm_id: _limit(q) - (now - q.start if q.start else 0.0) for q in kept}
    book_jobs = [
        Job(q.slurm_id, q.submit - origin, q.gpus_per_node * q.nodes, max(remaining[q.slurm_id], 1.0), "slurm",
            duration=_limit(q), attrs={"user": q.user, "name": q.name},
            allowed_models=(model_of[q.gpu_type],) if q.gpu_type else None)
        for q in kept
    ]  # fmt: skip
    policy = make_policy()
    book = LiveBook(nodes, book_jobs, policy, TracedDurations(), gpu_power(nodes), restart_delay=0.0)
    t = now - origin
    book.start_clock(t)
    for js in book.states:
        book.arrive(js)
    if running:
        book.apply_decision(running)
    ends = {jid: t + max(remaining[jid], 1.0) for jid in running.assign}
    pending = {q.slurm_id for q in kept if q.state == "PENDING"}
    _project(book, policy, ends, remaining, pending, set(running.assign), ranking)
    leftover = sorted((q for q in kept if q.slurm_id in pending - set(ranking.order)), key=lambda q: -q.priority)
    for q in leftover:  # the policy would not start them even on an empty cluster: after the ranked, Slurm's order
        ranking.unranked[q.slurm_id] = f"{policy.name} would not start it in the projection"
    return ranking


def _limit(job: QueuedJob) -> float:
    return job.time_limit_s if math.isfinite(job.time_limit_s) else UNLIMITED_S


def _project(book: LiveBook, policy: ClusterPolicy, ends: dict[str, float], remaining: dict[str, float],
             pending: set[str], in_slurm: set[str], ranking: Ranking) -> None:  # fmt: skip
    """Ask the policy, start what it starts, complete the next job to end (a round policy is also asked on its
    rounds' grid, as the simulator asks it); until every pending job has a rank or the calls reach their cap."""
    t = book.now
    first = True
    ranked: set[str] = set()
    step = policy.round_length
    for _ in range(PROJECTION_CALLS_PER_JOB * (len(ends) + len(pending) + 1)):
        decision = policy.schedule(book.view)
        if decision:
            book.apply_decision(decision)
            for jid in [j for j in ends if j not in book.running]:  # stopped in the projection
                remaining[jid] = ends.pop(jid) - t
                if jid in in_slurm and jid not in ranking.would_preempt:
                    ranking.would_preempt.append(jid)
            for jid in decision.assign:
                if jid in book.running and jid not in ends:
                    ends[jid] = t + max(remaining[jid], 1.0)
                if jid in pending and jid not in ranked:
                    ranked.add(jid)
                    ranking.order.append(jid)
                    if first:
                        ranking.starts_now.append(jid)
        else:
            book.discard_plan()
        first = False
        if len(ranked) == len(pending) or not (ends or step):
            return
        jid = min(ends, key=ends.__getitem__) if ends else ""
        tick = (math.floor(t / step) + 1) * step if step else math.inf
        if not ends or tick < ends[jid]:  # a round before the next job ends (or on an idle cluster)
            t = tick
            book.advance(t)
            continue
        t = ends.pop(jid)
        book.advance(t)
        book.complete(book.cluster.by_id[jid])


# ------------------------------------------------------------------------------------------------ the advisor
@dataclass(slots=True)
class RoundResult:
    round: int
    ranking: Ranking
    changed: int  # priorities set this round
    held: int  # jobs held now (hold mode)
    released: int
    seconds: float  # the round's wall time (reading, projection, scontrol calls)
    idle: bool = False  # no GPU job pending or running in the partition

    def to_json(self) -> dict[str, Any]:
        r = self.ranking
        return {
            "round": self.round,
            "ranked": len(r.order),
            "order": r.order,
            "starts_now": r.starts_now,
            "would_preempt": r.would_preempt,
            "unranked": r.unranked,
            "priorities_set": self.changed,
            "held": self.held,
            "released": self.released,
            "seconds": round(self.seconds, 3),
            "idle": self.idle,
        }


class SlurmAdvisor:
    """Rounds of read, project, apply (module docstring); :meth:`close` releases what it holds."""

    def __init__(
        self,
        make_policy: Callable[[], ClusterPolicy],
        out: Path,
        *,
        mode: str = "priority",
        partition: str | None = None,
        gpu_map: dict[str, str] | None = None,
    ) -> None:
        if mode not in MODES:
            raise InputError(f"unknown advisor mode {mode!r} (known: {', '.join(MODES)})", field="mode")
        probe = make_policy()
        if probe.forks_jobs:
            raise InputError(f"policy {probe.name} forks jobs into copies, which Slurm jobs cannot be", field="policy")
        self.make_policy, self.mode, self.partition, self.gpu_map = make_policy, mode, partition, gpu_map
        self.out = prepare_output_dir(out, field="out", create=False)  # made when it first writes
        self.rounds = 0
        self.held: set[str] = set()
        self.release_left_over()

    # -- holds, kept on disk before each change so that a killed advisor's holds are found again
    def _save_held(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.out / f".{HELD_FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(sorted(self.held)))
        tmp.replace(self.out / HELD_FILE)

    def release_left_over(self) -> list[str]:
        """Release the jobs an earlier advisor on this folder held and did not release (it was killed)."""
        path = self.out / HELD_FILE
        if not path.is_file():
            return []
        try:
            ids = [str(j) for j in json.loads(path.read_text())]
        except (ValueError, TypeError):
            ids = []
        released = [jid for jid in ids if try_slurm(["scontrol", "release", jid])[0]]
        path.unlink()
        return released

    def close(self) -> int:
        """Release every job this advisor holds; how many."""
        released = sum(1 for jid in sorted(self.held) if try_slurm(["scontrol", "release", jid])[0])
        self.held.clear()
        (self.out / HELD_FILE).unlink(missing_ok=True)
        return released

    # -- one round
    def round(self) -> RoundResult:
        t0 = time.monotonic()
        slots = read_slots(self.partition, self.gpu_map)
        jobs, skipped = read_queue(self.partition)
        ranking = rank_pending(jobs, slots, self.make_policy, time.time(), frozenset(self.held))
        ranking.unranked.update(skipped)
        if len(ranking.order) > MAX_RANKED:
            for jid in ranking.order[MAX_RANKED:]:
                ranking.unranked[jid] = f"past the {MAX_RANKED} ranks priorities can hold"
            del ranking.order[MAX_RANKED:]
        self.held &= {q.slurm_id for q in jobs if q.state == "PENDING"}  # ended or cancelled meanwhile
        changed, released = self.apply(ranking, {q.slurm_id: q for q in jobs})
        self.rounds += 1
        result = RoundResult(
            self.rounds,
            ranking,
            changed,
            len(self.held),
            released,
            time.monotonic() - t0,
            idle=not jobs and not skipped,
        )
        self._log(result, {q.slurm_id: q for q in jobs})
        return result

    def apply(self, ranking: Ranking, jobs: dict[str, QueuedJob]) -> tuple[int, int]:
        """Set the ranked jobs' priorities (and holds, in hold mode): (priorities set, jobs released)."""
        changed = released = 0
        now = set(ranking.starts_now)
        for rank, jid in enumerate(ranking.order):
            want = TOP_PRIORITY - rank
            if self.mode == "hold" and jid not in now:
                if jid not in self.held:
                    self.held.add(jid)
                    self._save_held()  # listed before it is held: a kill in between leaves a release, not a hold
                    run_slurm(["scontrol", "hold", jid])
                continue
            if jid in self.held:
                run_slurm(["scontrol", "release", jid])
                self.held.discard(jid)
                self._save_held()
                released += 1
            elif jobs[jid].priority == want:
                continue
            ok, why = try_slurm(["scontrol", "update", f"JobId={jid}", f"Priority={want}"])
            if not ok and "Invalid job id" not in why:  # a job that started or ended meanwhile is no error
                raise InputError(f"`scontrol update JobId={jid} Priority={want}` failed: {first_line(why)}")
            changed += ok
        return changed, released

    def _log(self, result: RoundResult, jobs: dict[str, QueuedJob]) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / ADVICE_CSV
        new = not path.is_file()
        stamp = datetime.now().isoformat(timespec="seconds")
        now = set(result.ranking.starts_now)
        with open(path, "a", newline="") as fh:
            writer = csv.writer(fh)
            if new:
                writer.writerow(ADVICE_COLUMNS)
            for rank, jid in enumerate(result.ranking.order):
                held = jid in self.held
                priority = 0 if held else TOP_PRIORITY - rank
                writer.writerow([result.round, stamp, jid, rank + 1, int(jid in now), jobs[jid].priority, priority,
                                 int(held)])  # fmt: skip
