"""The cluster's book: what every node holds, which job runs where, and the rules a decision must obey.

Problem: the simulator and the live runtime must keep the same cluster state and judge a policy's decision by the
same rules (gang, capacity, feasibility, restart delay, energy), while one advances time from event to event and
the other follows the wall clock and its workers' reports. :class:`ClusterBook` is that state and those rules, and
nothing about time but "now": its driver (:class:`~gpuweave.cluster.simulator.Simulator`, the live runtime's
:class:`~gpuweave.live.book.LiveBook`) moves ``now`` forward with :meth:`ClusterBook.advance` and hands it
decisions; :meth:`ClusterBook.apply` validates a whole decision, applies it and returns the jobs it started, so the
driver can predict their completions (the simulator) or launch their workers (the live runtime).

What it keeps:

- nodes, the GPU models in first-seen order, free GPUs per node and per model, busy GPUs per model;
- the jobs (:class:`~gpuweave.cluster.state.JobState`): every one in (arrival, id) order, the waiting ones
  (``pending``) and the running ones (``running``), both :class:`~gpuweave.cluster.state.CountedDict`;
- the facility's power now, the energy and cost spent so far;
- the records of what happened: segments (one per job placement), allocation changes, busy-GPU time series.

Rates come from a :class:`~gpuweave.workload.profile_source.ProfileSource`; a source with a per-shape rate (Pollux's job
model, :class:`~gpuweave.workload.profile_source.PlacementRateSource`) answers for the exact GPUs per node. A job's
``allowed_models`` (GPU-type constraint) makes every other model read as "cannot run there" (rate 0).

Policies read the book only through :class:`~gpuweave.cluster.state.ClusterView`; nothing outside ``cluster/`` calls
a private name of it. Complexity: O(nodes a decision names) to validate and apply a decision; O(1) per rate look-up
after the first (cached per (job type, model, GPUs, consolidated)).
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, insort
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gpuweave.cluster.decision import Decision, normalize
from gpuweave.cluster.feasibility import ModelCapacity, capacity_by_model, fits_somewhere
from gpuweave.cluster.forking import forked_rate, is_forked
from gpuweave.cluster.free_index import FreeIndex
from gpuweave.cluster.state import CountedDict, JobAgents, JobState, Placement, queue_del, queue_pop, queue_set
from gpuweave.engine.gc_pause import old_objects_left_alone
from gpuweave.errors import InputError, InvalidDecisionError, MissingProfileError
from gpuweave.hardware.cluster_spec import Node as ClusterNode
from gpuweave.workload.job import Job
from gpuweave.workload.profile_source import PlacementRateSource, ProfileSource

if TYPE_CHECKING:
    from gpuweave.cluster.adaptive_clock import Adaptation
    from gpuweave.cluster.epoch_rounding import EpochClock
    from gpuweave.cluster.sharing.ledger import ShareLedger

_NONE: list[JobState] = []  # no preemptions (read only)
_NO_STARTS: list[Start] = []  # a decision that started nothing (read only)
# A GPU model with this many nodes or more is kept in the free index (measured: below it, scanning the model's nodes
# for best fit costs less than keeping the index; bench sim on mixed-1024, 43 nodes a model, was 10% slower with it).
INDEXED_MODEL_NODES = 128
_NONE_SET: frozenset[str] = frozenset()


@dataclass(slots=True)
class Segment:
    """One continuous stretch of a job on one placement."""

    job_id: str
    start: float
    end: float
    placement: Placement
    rate: float
    delay: float  # restart delay charged at the start of this segment


@dataclass(slots=True)
class AllocationChange:
    time: float
    job_id: str
    node: int
    gpus: int  # GPUs the job holds on that node after the change (0 = released)


TimeseriesRow = tuple[float, tuple[int, ...], float]  # (time, busy GPUs per model, facility power W)
Start = tuple[JobState, Placement, float]  # a job a decision started or moved: its state, placement and rate


class RecordSink(Protocol):
    """Where a run's records go as it runs, chunk by chunk, in order (e.g. CSV files in a result's staging)."""

    def allocations(self, rows: list[AllocationChange]) -> None: ...

    def timeseries(self, rows: list[TimeseriesRow]) -> None: ...

    def adaptations(self, rows: list[Adaptation]) -> None: ...


class ClusterBook:
    """The cluster's state and the rules of a decision (see module docstring)."""

    def __init__(
        self,
        nodes: list[ClusterNode],
        jobs: list[Job],
        profiles: ProfileSource,
        gpu_power: dict[str, tuple[float, float]],
        *,
        restart_delay: float = 10.0,
        start_delay: float = 0.0,
        record_segments: bool = True,
        ideal_placement: bool = False,
        forks_jobs: bool = False,
        shares: ShareLedger | None = None,
        epoch_clock: EpochClock | None = None,
    ) -> None:
        """``nodes`` are expanded cluster nodes (index, name, gpu_model, num_gpus, price_per_kwh, pue) indexed
        0..N-1; ``gpu_power`` maps a GPU model to (idle W, max W); ``ideal_placement`` gives every placement the
        consolidated rate (no placement effects, as Gavel's simulator); ``forks_jobs`` lets a decision give a job
        several whole copies of its GPUs (HadarE; the driver's policy says so); ``shares`` makes it a shared run:
        jobs are tasks holding shares of GPUs, CPU and memory, placed by a task placement
        (:mod:`gpuweave.cluster.sharing.ledger`); ``epoch_clock`` rounds each epoch's end as Pollux's simulator does
        (:mod:`gpuweave.cluster.epoch_rounding`; the simulator's, for a profile source that knows epochs)."""
        if not nodes:
            raise InputError("the cluster has no nodes")
        self.nodes = nodes
        self.profiles = profiles
        # Profile sources whose rate depends on the GPUs per node, not just on consolidated or not.
        self.rate_by_counts = profiles.placement_rate if isinstance(profiles, PlacementRateSource) else None
        self.restart_delay = float(restart_delay)
        self.start_delay = float(start_delay)
        self.record_segments = record_segments
        self.ideal_placement = bool(ideal_placement)
        self.forks_jobs = bool(forks_jobs)
        self.shares = shares
        self.epoch_clock = epoch_clock
        # adaptive jobs' agents, for the policy (ClusterView.job_agent): the agents' clock's, or a live run's
        self.agents: JobAgents | None = epoch_clock if isinstance(epoch_clock, JobAgents) else None
        self.now = 0.0
        self._last_t = 0.0
        self._index_nodes(nodes)
        self._init_power(nodes, gpu_power)
        self.rate_cache: dict[tuple[str, str, int, bool], float] = {}
        # Entries the profiles lack, looked up leniently before: 0 at once. A placer asks for a job's spread rate before
        # every spread it builds, and a profile without unconsolidated entries answered each ask with a raised error.
        self.absent_rates: set[tuple[str, str, int, bool]] = set()
        # (job type, GPUs, allowed models) -> models fastest first; ClusterView reads it before calling.
        self.fastest_cache: dict[tuple[str, int, tuple[str, ...] | None], list[str]] = {}
        with old_objects_left_alone():
            # A JobState and its dict are two tracked objects per job, and the collections they set off walked the
            # whole trace again and again (10^5 jobs: 0.32 s to build with the collector, 0.15 s without).
            self.states = [
                JobState(job=j, remaining=float(j.work)) for j in sorted(jobs, key=lambda j: (j.arrival, j.job_id))
            ]
        self.by_id: dict[str, JobState] = {}
        for js in self.states:
            if js.job.job_id in self.by_id:
                raise InputError(f"duplicate job id '{js.job.job_id}'", field="job_id")
            self.by_id[js.job.job_id] = js
        self.pending: CountedDict[str, JobState] = CountedDict()
        self.running: CountedDict[str, JobState] = CountedDict()
        self.segments: list[Segment] = []
        self.allocations: list[AllocationChange] = []
        self.timeseries: list[TimeseriesRow] = []
        self.busy_changed = False  # a GPU was taken or freed since the time series' last record
        self.rollback_lost = 0.0  # work lost to snapshot roll-backs (opt-in, Job.attrs["snapshot_every"])

    def _index_nodes(self, nodes: list[ClusterNode]) -> None:
        """GPU models in first-seen order, the nodes of each, and the free/busy GPU counters per node and model."""
        self.models: list[str] = []
        self.nodes_by_model: dict[str, list[int]] = {}
        for node in nodes:
            if node.gpu_model not in self.nodes_by_model:
                self.models.append(node.gpu_model)
                self.nodes_by_model[node.gpu_model] = []
            self.nodes_by_model[node.gpu_model].append(node.index)
            if node.num_gpus < 1:
                raise InputError(f"node {node.name} has no GPUs", field="gpus_per_node")
        for i, node in enumerate(nodes):
            if node.index != i:
                raise ValueError("nodes must be indexed 0..N-1 in order")
        self.model_index = {m: i for i, m in enumerate(self.models)}
        self.node_model_index = [self.model_index[n.gpu_model] for n in nodes]
        self.node_models = [n.gpu_model for n in nodes]  # read per event: a list, not an attribute per node
        self.free = [n.num_gpus for n in nodes]
        # Nodes by (model, free GPUs): best fit without a scan, for models of INDEXED_MODEL_NODES nodes or more.
        # (a shared run counts GPUs with some share free, which best fit on whole GPUs does not read: no index)
        self.free_index = FreeIndex(nodes, self.free, INDEXED_MODEL_NODES if self.shares is None else len(nodes) + 1)
        self.gpus_by_model = {m: sum(nodes[i].num_gpus for i in idx) for m, idx in self.nodes_by_model.items()}
        self.free_by_model = dict(self.gpus_by_model)
        self.busy_by_model = [0] * len(self.models)
        self._busy_on = [0] * len(nodes)  # a shared run's GPUs with some share taken, per node
        # What every GPU taken or given back updates, read together once per move (bound here, never rebound).
        self._gpu_books = (
            self.node_models,
            self.free,
            self.free_by_model,
            self.busy_by_model,
            self.node_model_index,
            self.free_index.node_buckets if self.free_index.buckets else None,  # None: no model is indexed
        )

    def _init_power(self, nodes: list[ClusterNode], gpu_power: dict[str, tuple[float, float]]) -> None:
        """Idle facility power and cost rate of the whole cluster, and the extra per busy GPU on each node."""
        missing = [m for m in self.models if m not in gpu_power]
        if missing:
            raise InputError(f"no power figures for GPU model(s) {missing}")
        self._extra_w: list[float] = []  # extra facility W per busy GPU on each node
        self._extra_cost: list[float] = []  # extra $/s per busy GPU on each node
        self._busy_w_per_gpu: list[float] = []  # facility W of one busy GPU on each node (for per-job energy)
        self.power_w = 0.0  # facility watts now, updated on every allocate/release
        self.cost_rate = 0.0  # $ per second now
        self.energy_j = 0.0
        self.cost = 0.0
        for node in nodes:
            idle, peak = gpu_power[node.gpu_model]
            self.power_w += node.num_gpus * idle * node.pue
            self.cost_rate += node.num_gpus * idle * node.pue * node.price_per_kwh / 3.6e6
            self._extra_w.append((peak - idle) * node.pue)
            self._extra_cost.append((peak - idle) * node.pue * node.price_per_kwh / 3.6e6)
            self._busy_w_per_gpu.append(peak * node.pue)
        self._node_price = [node.price_per_kwh for node in nodes]

    @property
    def total_gpus(self) -> int:
        return sum(n.num_gpus for n in self.nodes)

    # ------------------------------------------------------------------ time
    def start_clock(self, now: float, energy_j: float = 0.0, cost: float = 0.0) -> None:
        """Begin at time ``now`` with the energy and cost already spent (0 for a new run)."""
        self.now = self._last_t = float(now)
        self.energy_j, self.cost = float(energy_j), float(cost)

    def advance(self, t: float) -> None:
        """Time moves to ``t``: the energy and cost of the power drawn since the last call are added."""
        dt = t - self._last_t
        if dt > 0:
            self.energy_j += self.power_w * dt
            self.cost += self.cost_rate * dt
            self._last_t = t
        self.now = t

    def energy_so_far(self, js: JobState) -> tuple[float, float]:
        """Energy (J) and cost a job has used: its closed placements' (added when each ended) and its current
        placement's until now (the sums ``_vacate`` makes when it ends; this one runs for the service's live figures,
        not per event). O(nodes of its placement)."""
        energy, cost = js.energy_j, js.cost
        held = self.now - js.seg_start
        if held > 0.0 and js.placement is not None:
            busy_w, price = self._busy_w_per_gpu, self._node_price
            for node, k in js.placement:
                e = held * k * busy_w[node]
                energy += e
                cost += e * price[node] / 3.6e6
        return energy, cost

    # ------------------------------------------------------------------ rates
    def model_rate(self, job_type: str, model: str, num_gpus: int, consolidated: bool, strict: bool = True) -> float:
        """Profiled rate. ``strict`` raises MissingProfileError for an absent entry; otherwise it reads as 0
        (policies probe options with strict=False; an applied decision always looks up strictly)."""
        key = (job_type, model, num_gpus, consolidated)
        r = self.rate_cache.get(key)
        if r is None:
            if not strict and key in self.absent_rates:
                return 0.0
            try:
                r = float(self.profiles.rate(job_type, model, num_gpus, consolidated))
            except MissingProfileError:
                self.absent_rates.add(key)
                if strict:
                    raise
                return 0.0
            self.rate_cache[key] = r
        return r

    def job_model_rate(self, job: Job, model: str, consolidated: bool, strict: bool = False) -> float:
        """The job's rate on ``model`` with all its GPUs (0 where its GPU-type constraint forbids the model)."""
        allowed = job.allowed_models
        if allowed is not None and model not in allowed:
            return 0.0
        return self.model_rate(job.job_type, model, job.num_gpus, consolidated, strict)

    def use_profiles(self, profiles: ProfileSource) -> None:
        """Rates come from ``profiles`` from now on (the live runtime swaps in measured rates); a placement-shape
        rate source given at construction (Pollux's job model) keeps answering for shapes."""
        self.profiles = profiles
        self.rate_cache.clear()
        self.absent_rates.clear()
        self.fastest_cache.clear()

    def fastest_models(self, job: Job) -> list[str]:
        """The GPU models a gang of the job's GPUs can run on (of those it allows), fastest consolidated rate
        first (ties keep cluster order); cached per (job type, GPU count, allowed models) until the profiles
        change. Callers must not mutate it."""
        key = (job.job_type, job.num_gpus, job.allowed_models)
        found = self.fastest_cache.get(key)
        if found is None:
            rates = []
            for order, model in enumerate(self.models):
                r = self.job_model_rate(job, model, True)
                if r > 0:
                    rates.append((-r, order, model))
            rates.sort()
            found = self.fastest_cache[key] = [m for _, _, m in rates]
        return found

    def spread_rate(self, job: Job, model: str) -> float | None:
        """The job's rate spread over several nodes of ``model``, or None when the profile source rates each
        split of GPUs per node differently (then only :meth:`placement_rate` of the placement knows)."""
        if self.rate_by_counts is not None:
            return None
        allowed = job.allowed_models  # job_model_rate's rule, inline: placers ask before every spread they build
        if allowed is not None and model not in allowed:
            return 0.0
        return self.model_rate(job.job_type, model, job.num_gpus, self.ideal_placement, False)

    def placement_rate(self, job: Job, num_gpus: int, placement: Placement, strict: bool = True) -> float:
        """Iterations/s of ``job`` holding ``num_gpus`` GPUs on ``placement``: the slowest node's rate,
        unconsolidated across nodes unless the cluster asks for ideal placement; 0 on a model the job's GPU-type
        constraint forbids."""
        nodes = self.nodes
        allowed = job.allowed_models
        if allowed is not None:
            for node, _ in placement:
                if nodes[node].gpu_model not in allowed:
                    return 0.0
        job_type = job.job_type
        if self.rate_by_counts is not None:
            counts = tuple(k for _, k in placement)
            try:
                return min(self.rate_by_counts(job_type, nodes[node].gpu_model, counts) for node, _ in placement)
            except MissingProfileError:
                if strict:
                    raise
                return 0.0
        if len(placement) == 1:
            return self.model_rate(job_type, nodes[placement[0][0]].gpu_model, num_gpus, True, strict)
        rate = math.inf
        for node, _n in placement:
            r = self.model_rate(job_type, nodes[node].gpu_model, num_gpus, self.ideal_placement, strict)
            if r < rate:
                rate = r
        return rate

    # ------------------------------------------------------------------ feasibility
    def capacity(self) -> dict[str, ModelCapacity]:
        return capacity_by_model(self.nodes)

    def check_feasible(self) -> None:
        """Every job must be able to run somewhere, or the run could never finish. Jobs of one (type, GPU count,
        allowed models) fit exactly where each other does, so each such kind is checked once; the error names the
        first job (in arrival order) of the first kind that fits nowhere."""
        capacity = self.capacity()
        checked: set[tuple[str, int, tuple[str, ...] | None]] = set()
        for row, js in enumerate(self.states, start=1):
            job = js.job
            kind = (job.job_type, job.num_gpus, job.allowed_models)
            if kind not in checked:
                if job.num_gpus == 0:
                    self._check_cpu_task(job, row)
                else:
                    self.check_job_feasible(job, row, capacity)
                checked.add(kind)
        if self.shares is not None:
            self.shares.check_fits([js.job for js in self.states])

    def _check_cpu_task(self, job: Job, row: int) -> None:
        """A CPU-only task (0 GPUs) runs only in a shared run, and only at a rate its profiles give for 0 GPUs
        (traced durations do; a throughput table does not)."""
        if self.shares is None:
            raise InputError(
                f"job '{job.job_id}' asks no GPU (a CPU-only task): it runs only on shared nodes, with a task "
                "placement (--placement-rule fgd, best-fit, ...)",
                row=row,
                field="num_gpus",
            )
        if not any(self.model_rate(job.job_type, m, 0, True, strict=False) > 0 for m in self.models):
            raise InputError(
                f"job '{job.job_id}' (a CPU-only task) has no rate without GPUs in the profiles: replay its trace "
                "with --profiles traced",
                row=row,
                field="num_gpus",
            )

    def check_job_feasible(
        self, job: Job, row: int | None = None, capacity: dict[str, ModelCapacity] | None = None
    ) -> None:
        """Raise unless ``job`` can run on some GPU model (``row``: its trace row, named in the error)."""
        capacity = self.capacity() if capacity is None else capacity
        ok, missing = fits_somewhere(
            job.job_type, job.num_gpus, capacity, self.model_rate, self.ideal_placement, job.allowed_models
        )
        if ok:
            return
        if missing is not None:
            raise missing
        raise InputError(
            f"job '{job.job_id}' ({job.job_type}, {job.num_gpus} GPUs) cannot run on any GPU model of the "
            f"cluster ({', '.join(f'{m}: {n}' for m, n in self.gpus_by_model.items())})"
            + (f" that it may use (allowed_models: {'+'.join(job.allowed_models)})" if job.allowed_models else ""),
            row=row,
            field="allowed_models" if job.allowed_models else "num_gpus",
        )

    # ------------------------------------------------------------------ jobs in and out
    def add(self, job: Job) -> JobState:
        """A job handed over while the run goes on (the service); InputError on a duplicate id."""
        if job.job_id in self.by_id:
            raise InputError(f"duplicate job id '{job.job_id}'", field="job_id")
        js = JobState(job=job, remaining=float(job.work))
        self.states.append(js)
        self.by_id[job.job_id] = js
        if self.shares is not None:
            self.shares.add(job)
        return js

    def arrive(self, js: JobState) -> None:
        """The job has arrived: it waits for GPUs."""
        pending = self.pending
        queue_set(pending, js.job.job_id, js)
        pending.changes += 1

    def complete(self, js: JobState) -> None:
        """The job's work is done now (it may have been stopped in the instant its last checkpoint landed)."""
        job_id = js.job.job_id
        if js.placement is not None:
            self._vacate(js)
            running = self.running
            queue_del(running, job_id)
            running.changes += 1
        else:
            self.pending.pop(job_id, None)
        js.remaining = 0.0
        js.end = self.now

    def fail(self, js: JobState) -> None:
        """Take a failed job out of the cluster (it keeps ``end = None``); its segment is closed."""
        job_id = js.job.job_id
        if job_id in self.running:
            self._vacate(js)
            del self.running[job_id]
        self.pending.pop(job_id, None)

    def requeue(self, js: JobState) -> None:
        """A running job stops now and waits again (a preemption the driver did not decide: its node was lost)."""
        self._vacate(js)
        self._rollback(js)
        del self.running[js.job.job_id]
        self.pending[js.job.job_id] = js

    def lose_node(self, index: int) -> list[str]:
        """A node that disappeared: the jobs on it go back to the queue (as a preemption would send them) and its
        GPUs leave the cluster, so policies see a node of 0 GPUs from now on. Returns the jobs sent back."""
        hit = [js for js in self.running.values() if js.placement and any(n == index for n, _ in js.placement)]
        for js in hit:
            self.requeue(js)
        if self.shares is not None:
            self.shares.lose_node(index)
        node = self.nodes[index]
        self.free_index.move(index, self.free[index], 0)
        self.free[index] = 0
        self.free_by_model[node.gpu_model] -= node.num_gpus
        self.gpus_by_model[node.gpu_model] -= node.num_gpus
        # A new node object (not a mutation): policies' capacity caches key on the nodes' identities.
        self.nodes[index] = dataclasses.replace(node, num_gpus=0)
        return [js.job.job_id for js in hit]

    def discard_plan(self) -> None:
        """A decision that was not applied (it changed nothing): a shared run's plan gives back the shares it took
        (:meth:`ShareLedger.rollback`). Nothing to do on whole GPUs."""
        if self.shares is not None:
            self.shares.rollback()

    def gpu_slots(self, job_id: str) -> tuple[tuple[int, ...], float] | None:
        """A running task's GPU slots on its node and the part of each it holds, in a shared run (None: whole
        GPUs, or the job is not running)."""
        if self.shares is None:
            return None
        held = self.shares.assignments.get(job_id)
        return None if held is None else (held.gpus, self.shares.share(job_id))

    # ------------------------------------------------------------------ records
    def record_timeseries(self) -> None:
        """A row of busy GPUs per model and power now, when they changed (one row per instant)."""
        busy = tuple(self.busy_by_model)
        if self.shares is not None:
            self.shares.record(self.now)
        ts = self.timeseries
        if ts and ts[-1][1] == busy:
            return
        if ts and ts[-1][0] == self.now:
            ts[-1] = (self.now, busy, self.power_w)
        else:
            ts.append((self.now, busy, self.power_w))

    def hand_over(self, sink: RecordSink, final: bool) -> None:
        """Give ``sink`` the allocation changes and the time-series rows so far. The last time-series row stays
        until the end: a later change at the same instant replaces it."""
        sink.allocations(self.allocations)
        self.allocations = []
        clock = self.epoch_clock
        if clock is not None and clock.adaptations:
            sink.adaptations(clock.adaptations)
            clock.adaptations = []
        ts = self.timeseries
        if final:
            sink.timeseries(ts)
            self.timeseries = []
        elif len(ts) > 1:
            sink.timeseries(ts[:-1])
            self.timeseries = ts[-1:]

    # ------------------------------------------------------------------ state changes
    def _vacate(self, js: JobState) -> None:
        """A running job leaves its placement now: close its segment (progress, GPU-seconds, energy and cost of
        the time it held the GPUs) and give the GPUs back. One pass over the placement: Gavel-like policies move
        about a hundred jobs a round, so this runs once per move."""
        held = self._close_segment(js)
        if self.shares is not None:
            self._vacate_shares(js, held)
            return
        now = self.now
        placement = js.placement
        assert placement is not None  # only running jobs are vacated
        models, free, free_by_model, busy, index, node_buckets = self._gpu_books
        busy_w, price, extra_w, extra_cost = self._busy_w_per_gpu, self._node_price, self._extra_w, self._extra_cost
        by_model, job_id, record = js.gpu_seconds_by_model, js.job.job_id, self.allocations.append
        # Each sum is made in the same order as a node-by-node update would (floating point: identical results).
        energy, cost, power, cost_rate = js.energy_j, js.cost, self.power_w, self.cost_rate
        gpus = 0  # num_gpus unless moldable
        for node, k in placement:
            gpus += k
            model = models[node]
            by_model[model] = by_model.get(model, 0.0) + held * k
            e = held * k * busy_w[node]
            energy += e
            cost += e * price[node] / 3.6e6
            was = free[node]
            free[node] = was + k
            if node_buckets is not None:  # the free index, moved inline (once per node a job leaves)
                buckets = node_buckets[node]
                if buckets is not None:
                    bucket = buckets[was]
                    del bucket[bisect_left(bucket, node)]
                    insort(buckets[was + k], node)
            busy[index[node]] -= k
            free_by_model[model] += k
            power -= k * extra_w[node]
            cost_rate -= k * extra_cost[node]
            record(AllocationChange(now, job_id, node, 0))
        js.attained_gpu_seconds += held * gpus
        js.energy_j, js.cost, self.power_w, self.cost_rate = energy, cost, power, cost_rate
        js.placement = None
        js.version += 1
        self.busy_changed = True

    def _close_segment(self, js: JobState) -> float:
        """A running job's progress up to now, and its segment (if kept); returns how long it held its GPUs."""
        now = self.now
        # max(0, x) as conditionals (the same floats): two builtin calls fewer per job that leaves its GPUs
        productive = now - js.productive_start
        if self.epoch_clock is not None:
            progress = self.epoch_clock.stop(js, now)
        else:
            progress = productive * js.rate if productive > 0.0 else 0.0
        left = js.remaining - progress
        js.remaining = left if left > 0.0 else 0.0
        if self.record_segments:
            assert js.placement is not None  # only running jobs are vacated
            delay = js.productive_start - js.seg_start
            self.segments.append(Segment(js.job.job_id, js.seg_start, now, js.placement, js.rate, delay))
        return now - js.seg_start

    def _vacate_shares(self, js: JobState, held: float) -> None:
        """``_vacate`` in a shared run: the job's share, CPU and memory go back to the ledger; GPU-seconds, energy
        and cost count its share of each GPU (:mod:`gpuweave.cluster.sharing.ledger`)."""
        shares = self.shares
        assert shares is not None and js.placement is not None
        job_id = js.job.job_id
        share = shares.share(job_id)
        node = shares.release(job_id).node
        k = js.placement[0][1]
        model = self.node_models[node]
        js.gpu_seconds_by_model[model] = js.gpu_seconds_by_model.get(model, 0.0) + held * k * share
        energy = held * k * share * self._busy_w_per_gpu[node]
        js.energy_j += energy
        js.cost += energy * self._node_price[node] / 3.6e6
        js.attained_gpu_seconds += held * k * share
        self.power_w -= k * share * self._extra_w[node]
        self.cost_rate -= k * share * self._extra_cost[node]
        self._resync_node(node)
        if k:  # a CPU-only task holds no GPU: no allocation to record
            self.allocations.append(AllocationChange(self.now, job_id, node, 0))
        js.placement = None
        js.version += 1
        self.busy_changed = True

    def move_share(self, job_id: str, gpus: tuple[int, ...]) -> bool:
        """A shared run's running task is on other GPU slots of its node than the ledger chose (the cluster chose
        them: :meth:`Executor.given_gpus`): the ledger and the node's counts follow (its share, power and records
        are the same). False when nothing moved (:meth:`ShareLedger.rebind`)."""
        shares = self.shares
        if shares is None or not shares.rebind(job_id, gpus):
            return False
        self._resync_node(shares.assignments[job_id].node)
        self.busy_changed = True
        return True

    def _resync_node(self, node: int) -> None:
        """A shared run's integer counts of one node (open GPUs as free, GPUs with a share taken as busy) from
        the ledger, after its shares changed."""
        shares = self.shares
        assert shares is not None
        model = self.node_models[node]
        opened = shares.open_gpus(node)
        self.free_by_model[model] += opened - self.free[node]
        self.free[node] = opened
        busy = shares.busy_gpus(node)
        self.busy_by_model[self.node_model_index[node]] += busy - self._busy_on[node]
        self._busy_on[node] = busy

    def _occupy_shares(self, starts: list[Start]) -> None:
        """``_occupy`` in a shared run: the counts and power follow the shares the ledger holds."""
        shares = self.shares
        assert shares is not None  # the decision's shares are the ledger's already (_settle_shares)
        now = self.now
        for js, placement, rate in starts:
            job_id = js.job.job_id
            if js.first_start is None:
                js.first_start = now
                delay = self.start_delay
            else:
                delay = self.restart_delay
                js.restarts += 1
            node, k = placement[0]
            delay += shares.reconfig_delay(job_id)  # MIG: its instance destroyed idle ones or was created
            share = shares.share(job_id)
            self.power_w += k * share * self._extra_w[node]
            self.cost_rate += k * share * self._extra_cost[node]
            self._resync_node(node)
            if k:  # a CPU-only task holds no GPU: no allocation to record
                self.allocations.append(AllocationChange(now, job_id, node, k))
            js.placement = placement
            js.rate = rate
            js.version += 1
            js.seg_start = now
            js.productive_start = now + delay
            self.running[job_id] = js
        self.busy_changed = True

    def _rollback(self, js: JobState) -> None:
        """Opt-in snapshot roll-back: keep only the progress up to the last multiple of ``snapshot_every``."""
        every = js.job.attrs.get("snapshot_every") if js.job.attrs else None
        if not every:
            return
        assert isinstance(every, (int, float))
        done = js.job.work - js.remaining
        kept = math.floor(done / every + 1e-9) * every
        if kept < done:
            self.rollback_lost += done - kept
            js.remaining = js.job.work - kept

    def apply(self, decision: Decision, policy: str) -> list[Start]:
        """Validate a decision whole (nothing is applied unless all of it is valid), then apply it: stops, then
        moves and starts. Returns a :data:`Start` for every job it started or moved; each job's state then holds
        its new placement, rate and ``productive_start`` (after its start or restart delay). ``policy`` (the deciding
        policy's name) begins an InvalidDecisionError's message, with the time. In a shared run a decision that breaks
        a rule gives back the shares its plan took (:meth:`ShareLedger.rollback`)."""
        if self.shares is None:
            return self._apply(decision, policy)
        try:
            return self._apply(decision, policy)
        except InvalidDecisionError:
            self.shares.rollback()
            raise

    def _apply(self, decision: Decision, policy: str) -> list[Start]:
        stops, stopped = self._checked_preemptions(decision, policy) if decision.preempt else (_NONE, _NONE_SET)
        delta: dict[int, int] = {}
        for js in stops:
            for node, k in js.placement or ():
                delta[node] = delta.get(node, 0) + k
        starts = []
        check = self._checked_assignment
        for job_id, raw in decision.assign.items():
            start = check(job_id, raw, stopped, delta, policy)
            if start is not None:
                starts.append(start)
        free = self.free
        for node, d in delta.items() if self.shares is None else ():  # a shared run's ledger checks its shares
            if free[node] + d < 0:
                raise InvalidDecisionError(
                    f"{self._who(policy)}: capacity: node {self.nodes[node].name} would need "
                    f"{free[node] - (free[node] + d)} more GPUs than it has free"
                )
        if self.shares is not None:
            self._settle_shares(stops, starts, policy)
        return self._stop_and_start(stops, starts)

    def _settle_shares(self, stops: list[JobState], starts: list[Start], policy: str) -> None:
        """A shared run's decision, checked against the ledger's free shares before anything changes: tasks start,
        end and are preempted, and are never moved (a preempted task starts again at a later decision)."""
        assert self.shares is not None
        if any(js.placement is not None for js, _, _ in starts):
            raise InvalidDecisionError(f"{self._who(policy)}: a run on shared GPUs does not move tasks")
        try:
            self.shares.settle([(js, placement) for js, placement, _ in starts], [js.job.job_id for js in stops])
        except InvalidDecisionError as exc:
            raise InvalidDecisionError(f"{self._who(policy)}: {exc}") from None

    def _checked_preemptions(self, decision: Decision, policy: str) -> tuple[list[JobState], set[str]]:
        """The running jobs the decision preempts; preempting a job that is not running is invalid."""
        stops: list[JobState] = []
        stopped: set[str] = set()
        for job_id in decision.preempt:
            js = self.running.get(job_id)
            if js is None:
                raise InvalidDecisionError(f"{self._who(policy)}: preempts job '{job_id}', which is not running")
            stops.append(js)
            stopped.add(job_id)
        return stops, stopped

    def _checked_assignment(
        self,
        job_id: str,
        raw: Placement,
        stopped: set[str] | frozenset[str],
        delta: dict[int, int],
        policy: str,
    ) -> tuple[JobState, Placement, float] | None:
        """Check one assignment (known job, valid nodes, gang rule, positive rate) and add its GPUs to ``delta``.

        Returns ``(state, placement, rate)`` to start, or None when a running job keeps its placement.
        """
        # The queues hold the book's own states (by_id's): looked up there, not in by_id, which holds every job of the
        # trace and is cold in the cache by the time a job starts.
        js = self.pending.get(job_id)
        if js is None:
            js = self.running.get(job_id)
            if js is None:
                raise InvalidDecisionError(
                    f"{self._who(policy)}: assigns job '{job_id}', which is not waiting or running"
                )
        # One (node, k) pair with k > 0 is already normal: most placements, skipped without a dict and a sort.
        placement: Placement
        if type(raw) is tuple and len(raw) == 1 and type(raw[0]) is tuple and raw[0][1] > 0:
            placement = raw
        elif js.job.num_gpus == 0 and self.shares is not None:
            placement = tuple(raw)  # a CPU-only task: its node with no GPU, which normalising would drop
        else:
            placement = normalize(raw)
        old = js.placement  # not None exactly while the job runs
        if old is not None and old == placement and job_id not in stopped:
            return None
        total = 0
        n_nodes = len(self.nodes)
        for node, k in placement:
            if not (0 <= node < n_nodes) or k < 0:
                raise InvalidDecisionError(f"{self._who(policy)}: job '{job_id}' placed on invalid node {node}")
            total += k
            delta[node] = delta.get(node, 0) - k
        job = js.job
        forked = self.forks_jobs and is_forked(job.num_gpus, placement, total)
        if total != job.num_gpus and not forked and not _moldable_ok(job, total):
            raise InvalidDecisionError(
                f"{self._who(policy)}: gang rule: job '{job_id}' needs {job.num_gpus} GPUs, placement gives {total}"
            )
        rate: float | None
        if forked:
            # each copy: the job's consolidated rate on its node's model (0 where the job may not run)
            rate = forked_rate(
                job.num_gpus, placement, lambda node: self.job_model_rate(job, self.node_models[node], True, True)
            )
        elif len(placement) == 1 and self.rate_by_counts is None and job.allowed_models is None:
            # one node, no constraint: the consolidated rate, looked up
            rate = self.rate_cache.get((job.job_type, self.node_models[placement[0][0]], total, True))
            if rate is None:
                rate = self.placement_rate(job, total, placement)
        else:
            rate = self.placement_rate(job, total, placement)
        if not rate > 0:
            raise InvalidDecisionError(
                f"{self._who(policy)}: job '{job_id}' ({job.job_type}) cannot run on {placement}"
            )
        if old is not None and job_id not in stopped:
            for node, k in old:
                delta[node] = delta.get(node, 0) + k
        return js, placement, rate

    def _who(self, policy: str) -> str:
        """The start of an InvalidDecisionError's message: the policy and the time."""
        return f"policy '{policy}' at t={self.now:g}"

    def _stop_and_start(self, stops: list[JobState], starts: list[Start]) -> list[Start]:
        """Apply a validated decision: stops, then moves and starts."""
        pending = self.pending
        for js in stops:
            self._vacate(js)
            if js.job.attrs:  # snapshot roll-back is opt-in through the job's attrs
                self._rollback(js)
            del self.running[js.job.job_id]
            pending[js.job.job_id] = js
        # Release every moving job before occupying anything, so jobs that swap nodes never overfill one.
        vacate = self._vacate
        waited = 0
        for js, _placement, _rate in starts:
            if js.placement is not None:
                vacate(js)
                if js.job.attrs:
                    self._rollback(js)
            else:
                queue_pop(pending, js.job.job_id, None)
                waited += 1
        if not starts:
            return _NO_STARTS
        pending.changes += waited
        self._occupy(starts)
        return starts

    def _occupy(self, starts: list[Start]) -> None:
        """Start each job on its placement now (GPUs taken, segment opened after its start or restart delay). One
        loop for the whole decision: about a hundred starts a round under Gavel."""
        if self.shares is not None:
            self._occupy_shares(starts)
            return
        now = self.now
        models, free, free_by_model, busy, index, node_buckets = self._gpu_books
        extra_w, extra_cost, record, running = self._extra_w, self._extra_cost, self.allocations.append, self.running
        restart_delay, start_delay = self.restart_delay, self.start_delay
        power, cost_rate = self.power_w, self.cost_rate  # summed in the order of node-by-node updates
        for js, placement, rate in starts:
            job_id = js.job.job_id
            if js.first_start is None:
                js.first_start = now
                delay = start_delay
            else:
                delay = restart_delay
                js.restarts += 1
            for node, k in placement:
                was = free[node]
                free[node] = was - k
                if node_buckets is not None:  # the free index, moved inline (once per node a job takes)
                    buckets = node_buckets[node]
                    if buckets is not None:
                        bucket = buckets[was]
                        del bucket[bisect_left(bucket, node)]
                        insort(buckets[was - k], node)
                busy[index[node]] += k
                free_by_model[models[node]] -= k
                power += k * extra_w[node]
                cost_rate += k * extra_cost[node]
                record(AllocationChange(now, job_id, node, k))
            js.placement = placement
            js.rate = rate
            js.version += 1
            js.seg_start = now
            js.productive_start = now + delay
            queue_set(running, job_id, js)
        running.changes += len(starts)
        self.power_w, self.cost_rate = power, cost_rate
        self.busy_changed = True


def _moldable_ok(job: Job, total: int) -> bool:
    """Opt-in gang relaxation: ``Job.attrs["moldable"]`` True (any count >= 1), a number N (1..N GPUs: a trace
    column, e.g. an elastic Pollux job's most replicas) or a collection of counts."""
    allowed = job.attrs.get("moldable") if job.attrs else None
    if not allowed:
        return False
    if allowed is True:
        return total >= 1
    if isinstance(allowed, (int, float)):
        return 1 <= total <= allowed
    return total in allowed  # type: ignore[operator]  # a collection of counts
