"""One Hadar round from a cluster snapshot: what ``gpuweave plan hadar STATE.json`` decides.

Format::

    {"cluster": "gavel-60",                # bundled cluster name or a cluster YAML path
     "now": 0, "round_length": 360, "restart_delay": 10,            # optional (defaults shown)
     "jobs": [{"id": "a", "job_type": "ResNet-50 (batch size 64)", "gpus": 4,
               "work": 2.0e6, "remaining": 8.0e5,                    # iterations; remaining defaults to work
               "arrival": 0,                                         # s, optional (0)
               "running": [["v100-0", 4]]}]}                         # optional: node name, GPUs on it

A job's ``running`` placement (GPUs summing to ``gpus``) makes it a running job: Q puts it first and its
placement is a candidate without restart delay (spec §2.8). Throughputs come from the bundled Gavel table
(``profiles``: a profile CSV instead). The round is solved by the Hadar policy's own
:meth:`~gpuweave.cluster.policies.hadar.HadarPolicy.plan_round` on a read-only view of the snapshot, so the
plan is what the simulator's Hadar would decide in that state.

Bad input raises :class:`~gpuweave.errors.InputError` naming the file and field: unknown nodes or job types,
a placement that is not the job's GPU count or exceeds a node, remaining above work, duplicate ids, a job
with no throughput on any GPU model of the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave.checks import GPUS, ITERATIONS, SECONDS, Range, number
from gpuweave.cluster.rate_table import RateTable
from gpuweave.cluster.state import JobState
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.limits import check_limit
from gpuweave.workload.job import Job
from gpuweave.workload.profiles import load_profiles

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.profile_source import ProfileSource


@dataclass
class SnapshotView:
    """The parts of :class:`~gpuweave.cluster.state.ClusterView` Hadar reads, built from a snapshot."""

    nodes: list[Node]
    profiles: ProfileSource
    now: float = 0.0
    round_length: float = 360.0
    restart_delay: float = 10.0
    running: dict[str, JobState] = field(default_factory=dict)
    pending: dict[str, JobState] = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(n.gpu_model for n in self.nodes))

    def remaining(self, js: JobState) -> float:
        return js.remaining


def _number(
    obj: dict[str, Any],
    key: str,
    where: str,
    file: str,
    default: float | None = None,
    minimum: float = 0.0,
    row: int | None = None,
    rng: Range = SECONDS,
) -> float:
    """``obj[key]`` (or ``default``) checked against ``rng`` (seconds by default) with its floor at ``minimum``."""
    if key not in obj:
        if default is None:
            raise InputError(f"{where}: missing '{key}'", file=file, row=row, field=key)
        return float(default)
    checked: float = number(obj[key], rng.with_low(minimum), file=file, row=row, field=key, what=where)
    return checked


def parse_snapshot(data: object, file: str = "<snapshot>") -> SnapshotView:
    """A Hadar round's state from its JSON form (cluster, profiles, now, jobs waiting or running)."""
    # imported here: importing gpuweave.cluster.hadar_snapshot does without pydantic
    from gpuweave.hardware.cluster_spec import load_cluster

    if not isinstance(data, dict):
        raise InputError("a snapshot must be a JSON object with cluster and jobs", file=file)
    if not isinstance(data.get("cluster"), str):
        raise InputError("'cluster' must be a bundled cluster name or a cluster YAML path", file=file, field="cluster")
    nodes = load_cluster(data["cluster"]).expand()
    profiles = load_profiles(data["profiles"]) if data.get("profiles") else load_profiles()
    view = SnapshotView(
        nodes=nodes,
        profiles=profiles,
        now=_number(data, "now", "snapshot", file, default=0.0),
        round_length=_number(data, "round_length", "snapshot", file, default=360.0, minimum=1e-3),
        restart_delay=_number(data, "restart_delay", "snapshot", file, default=10.0),
    )
    index = {n.name: n.index for n in nodes}
    table = RateTable(profiles, view.models)
    used = [0] * len(nodes)
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise InputError("'jobs' must be a non-empty list", file=file, field="jobs")
    check_limit("hadar_jobs", len(jobs), "jobs in the snapshot", file=file, field="jobs")
    for k, raw in enumerate(jobs):
        js, running = _parse_job(k, raw, view, table, profiles, file)
        jid = js.job.job_id
        if running is None:
            view.pending[jid] = js
            continue
        where = f"job {jid!r}"
        placement = _parse_placement(running, where, k + 1, index, js.job.num_gpus, file)
        for h, g in placement.items():
            used[h] += g
            if used[h] > nodes[h].num_gpus:
                raise InputError(
                    f"{where}: node {nodes[h].name} has {nodes[h].num_gpus} GPUs, the running jobs hold {used[h]}",
                    file=file,
                    row=k + 1,
                    field="running",
                )
        js.placement = tuple(sorted(placement.items()))
        js.first_start = view.now
        view.running[jid] = js
    return view


def _parse_job(
    k: int, raw: object, view: SnapshotView, table: RateTable, profiles: ProfileSource, file: str
) -> tuple[JobState, object]:
    """``jobs[k]`` as a job state (unique id, profiled type with a rate on this cluster, work, remaining,
    arrival not after now) and its raw ``running`` entry (None for a waiting job)."""
    where = f"job {k}"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected an object", file=file, row=k + 1, field="jobs")
    jid = raw.get("id")
    if not isinstance(jid, str) or not jid:
        raise InputError(f"{where}: 'id' must be a non-empty string", file=file, row=k + 1, field="id")
    where = f"job {jid!r}"
    if jid in view.running or jid in view.pending:
        raise InputError(f"{where}: duplicate id", file=file, row=k + 1, field="id")
    jt = raw.get("job_type")
    if not isinstance(jt, str) or jt not in profiles:
        raise InputError(
            f"{where}: unknown job_type {jt!r} (see the profile table)", file=file, row=k + 1, field="job_type"
        )
    W = raw.get("gpus")
    if isinstance(W, float):
        raise InputError(f"{where}: 'gpus' must be an integer >= 1, got {W!r}", file=file, row=k + 1, field="gpus")
    W = number(W, GPUS, file=file, row=k + 1, field="gpus", what=where)
    cons, uncons = table.get(jt, W)
    if not (cons.max() > 0 or uncons.max() > 0):
        raise InputError(
            f"{where}: {jt} has no throughput on {W} GPUs of any model of this cluster",
            file=file,
            row=k + 1,
            field="job_type",
        )
    work = _number(raw, "work", where, file, minimum=1e-12, row=k + 1, rng=ITERATIONS)
    remaining = _number(raw, "remaining", where, file, default=work, row=k + 1, rng=ITERATIONS)
    if remaining > work:
        raise InputError(
            f"{where}: remaining {remaining:g} exceeds work {work:g}", file=file, row=k + 1, field="remaining"
        )
    arrival = _number(raw, "arrival", where, file, default=0.0, row=k + 1)
    if arrival > view.now:
        raise InputError(
            f"{where}: arrival {arrival:g} is after now {view.now:g}", file=file, row=k + 1, field="arrival"
        )
    return JobState(Job(jid, arrival, W, work, jt), remaining), raw.get("running")


def _parse_placement(
    running: object, where: str, row: int, index: dict[str, int], W: int, file: str
) -> dict[int, int]:
    """A running job's ``[[node name, gpus], ...]`` as {node index: GPUs}, holding exactly the job's W GPUs."""
    if not isinstance(running, list) or not running:
        raise InputError(f"{where}: 'running' must be a list of [node, gpus]", file=file, row=row, field="running")
    placement: dict[int, int] = {}
    for item in running:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or item[0] not in index
            or isinstance(item[1], bool)
            or not isinstance(item[1], int)
            or item[1] < 1
        ):
            raise InputError(
                f"{where}: bad placement entry {item!r} (want [node name, gpus >= 1])",
                file=file,
                row=row,
                field="running",
            )
        h = index[item[0]]
        placement[h] = placement.get(h, 0) + item[1]
    if sum(placement.values()) != W:
        raise InputError(
            f"{where}: placement holds {sum(placement.values())} GPUs, the job needs {W}",
            file=file,
            row=row,
            field="running",
        )
    return placement


def load_snapshot(path: str | Path) -> SnapshotView:
    return parse_snapshot(load_json(path, what="Hadar snapshot"), str(path))
