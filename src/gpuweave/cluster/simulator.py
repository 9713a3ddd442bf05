"""Event-driven cluster simulator: every policy is judged by the same physics.

Problem: replay a job trace on a heterogeneous GPU cluster under a scheduling policy and record when each
job runs where, how much energy the cluster draws and what it costs.

Model (issue #2, DESIGN.md):
- Events: arrival, completion, round tick. Time jumps from event to event; nothing is stepped.
- Gang: a job runs on exactly ``num_gpus`` GPUs or not at all. Capacity: never more GPUs than a node has.
- Speed: a job's rate (iterations/s) comes from the profile store for its GPU model and count; on several
  models it runs at the slowest one's rate; on several nodes it uses the unconsolidated rate, unless the
  cluster asks for ideal placement (``ideal_placement``, as Gavel's simulator): then every placement runs at the
  consolidated rate, however many nodes it spans. A profile source with a
  ``placement_rate(job_type, gpu_model, counts)`` method (Pollux's job model) answers for the exact GPUs per
  node instead.
- Restart delay: whenever a job that has run before is given GPUs again (resumed or moved), it holds them
  for ``restart_delay`` seconds without progress. A job's first start costs ``start_delay`` (0 by default;
  Pollux's simulator charges its 30 s re-scale delay on every allocation, the first included).
- Energy: every GPU draws idle power when free and max power when allocated (restarting included), times
  its node's PUE; cost is that energy times the node's price per kWh.
- Opt-in per job (``Job.attrs``): ``moldable`` (True = any GPU count with a positive rate, or a collection of
  allowed counts) relaxes the gang rule to "as many GPUs as the placement gives", with the rate looked up for
  that count (ANDREAS picks a job's GPU count at every rescheduling); ``snapshot_every`` (work units, e.g. 1
  epoch) makes a preempted or moved job resume from its last snapshot: progress since the last multiple is
  lost (counted in ``Simulator.rollback_lost``).
- Forking (opt-in, HadarE): a policy with ``forks_jobs = True`` may give a job m >= 2 whole copies of
  ``num_gpus`` GPUs, each copy on one node; the job then progresses at the sum of the copies' consolidated
  rates (copies' steps add up) until its work is done.
- Triggers (:class:`~gpuweave.cluster.contract.ClusterPolicy`): a policy with a ``round_length`` is called on
  round ticks (``k * round_length``) while jobs are active; one with ``reacts_to_events`` (every event-driven
  policy) is called after every instant at which a job arrived or completed.

A policy returns a :class:`~gpuweave.cluster.decision.Decision`; the simulator validates all of it and
raises :class:`~gpuweave.errors.InvalidDecisionError` on the first broken rule, naming the policy, the time
and the job. Complexity: O(log E) per event plus the policy's own cost; a round costs O(active jobs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Protocol

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, normalize
from gpuweave.cluster.state import ClusterView, CountedDict, JobState, Placement
from gpuweave.engine.gc_pause import old_objects_left_alone
from gpuweave.engine.loop import STALE, EventLoop
from gpuweave.errors import InputError, InvalidDecisionError, MissingProfileError
from gpuweave.hadar.forking import forked_rate, is_forked
from gpuweave.workload.job import Job

_NONE: list = []  # no preemptions (read only)
_NONE_SET: frozenset = frozenset()

# Event kinds, in the order they are handled at one instant.
COMPLETION, ARRIVAL, ROUND = 0, 1, 2

# A round-based policy that leaves jobs waiting on an idle cluster for this many consecutive rounds after
# the last arrival is declared stuck (otherwise its ticks would go on for ever).
STALL_ROUNDS = 1000


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


# Rows a list of records holds before the simulator hands them to its sink (if it has one).
SINK_ROWS = 50_000


class RecordSink(Protocol):
    """Where a run's records go as it runs, chunk by chunk, in order (e.g. CSV files in a result's staging)."""

    def allocations(self, rows: list[AllocationChange]) -> None: ...

    def timeseries(self, rows: list[tuple[float, tuple[int, ...], float]]) -> None: ...


@dataclass(slots=True)
class SimulationRecords:
    """Everything a run produces; metrics and result files are computed from this."""

    jobs: list[JobState]
    segments: list[Segment]
    allocations: list[AllocationChange]
    timeseries: list[tuple[float, tuple[int, ...], float]]  # (time, busy GPUs per model, power W)
    models: list[str]
    total_gpus: int
    gpus_by_model: dict[str, int]
    energy_j: float
    cost: float
    start_time: float
    end_time: float
    events: int
    decisions: int
    extra: dict[str, object] = field(default_factory=dict)


class Simulator:
    def __init__(
        self,
        nodes: list,
        jobs: list[Job],
        policy: ClusterPolicy,
        profiles,
        gpu_power: dict[str, tuple[float, float]],
        *,
        restart_delay: float = 10.0,
        start_delay: float = 0.0,
        record_segments: bool = True,
        max_time: float = math.inf,
        ideal_placement: bool = False,
        progress: Callable[[int], None] | None = None,
        sink: RecordSink | None = None,
    ) -> None:
        """``nodes`` are expanded cluster nodes (index, name, gpu_model, num_gpus, price_per_kwh, pue);
        ``gpu_power`` maps a GPU model to (idle W, max W); ``ideal_placement`` gives every placement the
        consolidated rate (no placement effects, as Gavel's simulator); ``progress(done)`` is called with the
        number of finished jobs about every 1% of the trace (for a progress bar). ``sink`` takes the allocation
        changes and time-series rows in chunks of :data:`SINK_ROWS` as the run goes (memory stays bounded; see
        :class:`RecordSink`); the records then hold only what was not yet handed over (nothing, after ``run``)."""
        if not nodes:
            raise InputError("the cluster has no nodes")
        self.nodes = nodes
        self.policy = policy
        self.profiles = profiles
        self.restart_delay = float(restart_delay)
        self.start_delay = float(start_delay)
        # Profile sources whose rate depends on the GPUs per node, not just on consolidated or not.
        self._rate_by_counts = getattr(profiles, "placement_rate", None)
        self.ideal_placement = bool(ideal_placement)
        self.round_length = policy.round_length
        # Opt-in job forking (HadarE, spec hadar.md §3; rules in gpuweave.hadar.forking).
        self._forks = policy.forks_jobs
        self.record_segments = record_segments
        self.sink = sink
        self.max_time = max_time
        self.now = 0.0
        self._progress = progress
        self._progress_step = max(1, len(jobs) // 100)
        self._progress_next = self._progress_step

        self._index_nodes(nodes)
        self._init_power(nodes, gpu_power)
        self._init_jobs(jobs)

        self.pending: dict[str, JobState] = CountedDict()
        self.running: dict[str, JobState] = CountedDict()
        self.view = ClusterView(self)
        self.segments: list[Segment] = []
        self.allocations: list[AllocationChange] = []
        self.timeseries: list[tuple[float, tuple[int, ...], float]] = []
        self.energy_j = 0.0
        self.cost = 0.0
        self._last_t = 0.0
        self.events = 0
        self.decisions = 0
        self._busy_changed = False  # a GPU was taken or freed since the time series' last record
        self.rollback_lost = 0.0  # work lost to snapshot roll-backs (opt-in, Job.attrs["snapshot_every"])

    def _index_nodes(self, nodes: list) -> None:
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
        self._node_models = [n.gpu_model for n in nodes]  # read per event: a list, not an attribute per node
        self.free = [n.num_gpus for n in nodes]
        self.gpus_by_model = {m: sum(nodes[i].num_gpus for i in idx) for m, idx in self.nodes_by_model.items()}
        self.free_by_model = dict(self.gpus_by_model)
        self.busy_by_model = [0] * len(self.models)
        # What every GPU taken or given back updates, read together once per move (bound here, never rebound).
        self._gpu_books = (self._node_models, self.free, self.free_by_model, self.busy_by_model, self.node_model_index)

    def _init_power(self, nodes: list, gpu_power: dict[str, tuple[float, float]]) -> None:
        """Idle facility power and cost rate of the whole cluster, and the extra per busy GPU on each node."""
        # Power bookkeeping: facility watts now and $ per second now, updated on every allocate/release.
        missing = [m for m in self.models if m not in gpu_power]
        if missing:
            raise InputError(f"no power figures for GPU model(s) {missing}")
        self._extra_w = []  # extra facility W per busy GPU on each node
        self._extra_cost = []  # extra $/s per busy GPU on each node
        self._busy_w_per_gpu = []  # facility W of one busy GPU on each node (for per-job energy)
        self.power_w = 0.0
        self.cost_rate = 0.0
        for node in nodes:
            idle, peak = gpu_power[node.gpu_model]
            self.power_w += node.num_gpus * idle * node.pue
            self.cost_rate += node.num_gpus * idle * node.pue * node.price_per_kwh / 3.6e6
            self._extra_w.append((peak - idle) * node.pue)
            self._extra_cost.append((peak - idle) * node.pue * node.price_per_kwh / 3.6e6)
            self._busy_w_per_gpu.append(peak * node.pue)
        self._node_price = [node.price_per_kwh for node in nodes]

    def _init_jobs(self, jobs: list[Job]) -> None:
        """One JobState per job in (arrival, id) order; ids must be unique and every job must fit somewhere.

        Built with the cyclic collector off the trace (:mod:`gpuweave.engine.gc_pause`): a JobState and its dict are
        two tracked objects per job, and the collections they set off walked the whole trace again and again (10^5
        jobs: 0.32 s to build with the collector, 0.15 s without)."""
        self._rate_cache: dict[tuple, float] = {}
        self._fastest_cache: dict[tuple[str, int], list[str]] = {}
        with old_objects_left_alone():
            self.states = [
                JobState(job=j, remaining=float(j.work)) for j in sorted(jobs, key=lambda j: (j.arrival, j.job_id))
            ]
        ids = set()
        for js in self.states:
            if js.job.job_id in ids:
                raise InputError(f"duplicate job id '{js.job.job_id}'", field="job_id")
            ids.add(js.job.job_id)
        self.by_id = {js.job.job_id: js for js in self.states}
        self._check_feasible()

    # ------------------------------------------------------------------ rates
    def model_rate(self, job_type: str, model: str, num_gpus: int, consolidated: bool, strict: bool = True) -> float:
        """Profiled rate. ``strict`` raises MissingProfileError for an absent entry; otherwise it reads as 0
        (policies probe options with strict=False; an applied decision always looks up strictly)."""
        key = (job_type, model, num_gpus, consolidated)
        r = self._rate_cache.get(key)
        if r is None:
            try:
                r = float(self.profiles.rate(job_type, model, num_gpus, consolidated))
            except MissingProfileError:
                if strict:
                    raise
                return 0.0
            self._rate_cache[key] = r
        return r

    def use_profiles(self, profiles) -> None:
        """Rates come from ``profiles`` from now on (the live runtime swaps in measured rates); a placement-shape
        rate source given at construction (Pollux's job model) keeps answering for shapes."""
        self.profiles = profiles
        self._rate_cache.clear()
        self._fastest_cache.clear()

    def fastest_models(self, job_type: str, num_gpus: int) -> list[str]:
        """The GPU models a gang of ``num_gpus`` can run on, fastest consolidated rate first (ties keep cluster
        order); cached per (job type, GPU count) until the profiles change. Callers must not mutate it."""
        key = (job_type, num_gpus)
        found = self._fastest_cache.get(key)
        if found is None:
            rates = []
            for order, model in enumerate(self.models):
                r = self.model_rate(job_type, model, num_gpus, True, strict=False)
                if r > 0:
                    rates.append((-r, order, model))
            rates.sort()
            found = self._fastest_cache[key] = [m for _, _, m in rates]
        return found

    def placement_rate(self, job_type: str, num_gpus: int, placement: Placement, strict: bool = True) -> float:
        nodes = self.nodes
        if self._rate_by_counts is not None:
            counts = tuple(k for _, k in placement)
            try:
                return min(self._rate_by_counts(job_type, nodes[node].gpu_model, counts) for node, _ in placement)
            except MissingProfileError:
                if strict:
                    raise
                return 0.0
        consolidated = len(placement) == 1
        if consolidated:
            return self.model_rate(job_type, nodes[placement[0][0]].gpu_model, num_gpus, True, strict)
        rate = math.inf
        for node, _n in placement:
            r = self.model_rate(job_type, nodes[node].gpu_model, num_gpus, self.ideal_placement, strict)
            if r < rate:
                rate = r
        return rate

    def _check_feasible(self) -> None:
        """Every job must be able to run somewhere, or the run could never finish. Jobs of one (type, GPU count)
        fit exactly where each other does, so each such kind is checked once; the error names the first job (in
        arrival order) of the first kind that fits nowhere."""
        largest_node = {m: max(self.nodes[i].num_gpus for i in idx) for m, idx in self.nodes_by_model.items()}
        checked: set[tuple[str, int]] = set()
        for row, js in enumerate(self.states, start=1):
            job = js.job
            kind = (job.job_type, job.num_gpus)
            if kind in checked:
                continue
            self._check_kind_feasible(job, row, largest_node)
            checked.add(kind)

    def _check_kind_feasible(self, job: Job, row: int, largest_node: dict[str, int]) -> None:
        """Raise unless a job of ``job``'s type and GPU count can run on some GPU model (``row``: its trace row)."""
        ok = False
        missing = []
        for m in self.models:
            if job.num_gpus > self.gpus_by_model[m]:
                continue
            one_node = job.num_gpus <= largest_node[m] or self.ideal_placement
            for consolidated in (True, False) if one_node else (False,):
                try:
                    if self.model_rate(job.job_type, m, job.num_gpus, consolidated) > 0:
                        ok = True
                        break
                except MissingProfileError as exc:
                    missing.append(exc)
            if ok:
                break
        if not ok and missing:
            raise missing[0]
        if not ok:
            raise InputError(
                f"job '{job.job_id}' ({job.job_type}, {job.num_gpus} GPUs) cannot run on any GPU model of the "
                f"cluster ({', '.join(f'{m}: {n}' for m, n in self.gpus_by_model.items())})",
                row=row,
                field="num_gpus",
            )

    # ------------------------------------------------------------------ run
    def run(self) -> SimulationRecords:
        loop = self._loop = EventLoop()
        loop.on(COMPLETION, self._on_completion)
        loop.on(ARRIVAL, self._on_arrival)
        loop.on(ROUND, self._on_round)
        # One arrival on the heap at a time (each pushes the next): the heap holds O(active) events, not O(N).
        if self.states:
            loop.push(self.states[0].job.arrival, ARRIVAL, 0, ARRIVAL)
        start_time = self.states[0].job.arrival if self.states else 0.0
        self.now = self._last_t = start_time
        self._record_timeseries()
        self._done = self._arrived = self._idle_rounds = 0
        self._changed = self._tick = self._tick_scheduled = self._busy_changed = False
        self._reacts = self.policy.reacts_to_events
        loop.run(until=self.max_time, before_instant=self._advance, after_instant=self._after_instant)
        self.events = loop.events
        if self.sink is not None:
            self._hand_over(final=True)
        n_jobs = len(self.states)
        if self._done < n_jobs and self.max_time == math.inf:
            stuck = next(iter(self.pending.values()), None) or next(iter(self.running.values()), None)
            raise InvalidDecisionError(
                f"policy '{self.policy.name}' left {n_jobs - self._done} job(s) unfinished with nothing left to "
                f"happen (e.g. job '{stuck.job.job_id}' needing {stuck.job.num_gpus} GPUs)"
            )
        return self.records(start_time)

    def records(self, start_time: float) -> SimulationRecords:
        """What the run produced from ``start_time`` to now (the simulator's end, or the live runtime's now)."""
        return SimulationRecords(
            jobs=self.states,
            segments=self.segments,
            allocations=self.allocations,
            timeseries=self.timeseries,
            models=self.models,
            total_gpus=sum(n.num_gpus for n in self.nodes),
            gpus_by_model=self.gpus_by_model,
            energy_j=self.energy_j,
            cost=self.cost,
            start_time=start_time,
            end_time=self.now,
            events=self.events,
            decisions=self.decisions,
        )

    # ------------------------------------------------------------------ event handlers
    def _on_completion(self, t: float, payload: tuple[JobState, int]) -> object:
        js, version = payload
        if js.version != version or js.placement is None:
            # Stale: the job was moved or stopped after this completion was scheduled. It changes nothing that
            # _after_instant reads (no tick, arrival or completion, no busy GPU), so the loop skips that hook for an
            # instant of stale events only; _advance still runs there, so energy is summed over the same intervals.
            return STALE
        self._complete(js)
        self._done += 1
        self._changed = True

    def _on_arrival(self, t: float, index: int) -> None:
        states = self.states
        js = states[index]
        if index + 1 < len(states):
            self._loop.push(states[index + 1].job.arrival, ARRIVAL, index + 1, ARRIVAL)
        self.pending[js.job.job_id] = js
        self._arrived += 1
        self._changed = True

    def _on_round(self, t: float, _payload: None) -> None:
        self._tick = True
        self._tick_scheduled = False

    def _after_instant(self, t: float) -> None:
        """After every event of one instant: ask the policy (on a tick, or on events if it reacts to them),
        schedule the next tick, record the time series; stop once every job is done."""
        tick = self._tick
        if (tick or (self._changed and self._reacts)) and (self.pending or self.running):
            decision = self.policy.schedule(self.view)
            self.decisions += 1
            if decision:
                self._apply(decision)
            if tick:
                self._count_idle_round()
            else:
                self._idle_rounds = 0
        L = self.round_length
        if L is not None and not self._tick_scheduled and (self.pending or self.running):
            # Ticks sit on the grid k*L; after a tick the next one is a full round later.
            nxt = t + L if tick else math.ceil(t / L) * L
            self._loop.push(max(nxt, t), ROUND, None, ROUND)
            self._tick_scheduled = True
        self._changed = self._tick = False
        if self._busy_changed:  # the time series only records changes of the busy GPUs
            self._busy_changed = False
            self._record_timeseries()
            if self.sink is not None and len(self.allocations) >= SINK_ROWS:
                self._hand_over(final=False)
        if self._progress is not None and self._done >= self._progress_next:
            self._progress(self._done)
            self._progress_next = self._done + self._progress_step
        if self._done == len(self.states):
            self._loop.stop()

    def _hand_over(self, final: bool) -> None:
        """Give the sink the allocation changes and the time-series rows so far. The last time-series row stays
        until the end: a later change at the same instant replaces it."""
        self.sink.allocations(self.allocations)
        self.allocations = []
        ts = self.timeseries
        if final:
            self.sink.timeseries(ts)
            self.timeseries = []
        elif len(ts) > 1:
            self.sink.timeseries(ts[:-1])
            self.timeseries = ts[-1:]

    def _count_idle_round(self) -> None:
        """After a round: a round-based policy that leaves jobs waiting on an idle cluster after the last arrival
        for STALL_ROUNDS rounds is stuck: raise instead of ticking for ever."""
        if self.running or self._arrived != len(self.states):
            self._idle_rounds = 0
            return
        self._idle_rounds += 1
        if self._idle_rounds >= STALL_ROUNDS:
            stuck = next(iter(self.pending.values()))
            raise InvalidDecisionError(
                f"policy '{self.policy.name}' left {len(self.pending)} job(s) waiting on an "
                f"idle cluster for {STALL_ROUNDS} rounds after the last arrival (e.g. job "
                f"'{stuck.job.job_id}' needing {stuck.job.num_gpus} GPUs)"
            )

    def _advance(self, t: float) -> None:
        dt = t - self._last_t
        if dt > 0:
            self.energy_j += self.power_w * dt
            self.cost += self.cost_rate * dt
            self._last_t = t
        self.now = t

    def _record_timeseries(self) -> None:
        busy = tuple(self.busy_by_model)
        ts = self.timeseries
        if ts and ts[-1][1] == busy:
            return
        if ts and ts[-1][0] == self.now:
            ts[-1] = (self.now, busy, self.power_w)
        else:
            ts.append((self.now, busy, self.power_w))

    # ------------------------------------------------------------------ state changes
    def _complete(self, js: JobState) -> None:
        self._vacate(js)
        js.remaining = 0.0
        js.end = self.now
        del self.running[js.job.job_id]

    def _vacate(self, js: JobState) -> None:
        """A running job leaves its placement now: close its segment (progress, GPU-seconds, energy and cost of
        the time it held the GPUs) and give the GPUs back. One pass over the placement: Gavel-like policies move
        about a hundred jobs a round, so this runs once per move."""
        now = self.now
        held = now - js.seg_start
        progress = max(0.0, now - js.productive_start) * js.rate
        js.remaining = max(0.0, js.remaining - progress)
        placement = js.placement
        n = placement[0][1] if len(placement) == 1 else sum(k for _, k in placement)  # num_gpus unless moldable
        js.attained_gpu_seconds += held * n
        if self.record_segments:
            delay = js.productive_start - js.seg_start
            self.segments.append(Segment(js.job.job_id, js.seg_start, now, placement, js.rate, delay))
        models, free, free_by_model, busy, index = self._gpu_books
        busy_w, price, extra_w, extra_cost = self._busy_w_per_gpu, self._node_price, self._extra_w, self._extra_cost
        by_model, job_id, record = js.gpu_seconds_by_model, js.job.job_id, self.allocations.append
        # Each sum is made in the same order as a node-by-node update would (floating point: identical results).
        energy, cost, power, cost_rate = js.energy_j, js.cost, self.power_w, self.cost_rate
        for node, k in placement:
            model = models[node]
            by_model[model] = by_model.get(model, 0.0) + held * k
            e = held * k * busy_w[node]
            energy += e
            cost += e * price[node] / 3.6e6
            free[node] += k
            busy[index[node]] -= k
            free_by_model[model] += k
            power -= k * extra_w[node]
            cost_rate -= k * extra_cost[node]
            record(AllocationChange(now, job_id, node, 0))
        js.energy_j, js.cost, self.power_w, self.cost_rate = energy, cost, power, cost_rate
        js.placement = None
        js.version += 1
        self._busy_changed = True

    def _rollback(self, js: JobState) -> None:
        """Opt-in snapshot roll-back: keep only the progress up to the last multiple of ``snapshot_every``."""
        every = js.job.attrs.get("snapshot_every") if js.job.attrs else None
        if not every:
            return
        done = js.job.work - js.remaining
        kept = math.floor(done / every + 1e-9) * every
        if kept < done:
            self.rollback_lost += done - kept
            js.remaining = js.job.work - kept

    def _apply(self, decision: Decision) -> None:
        """Validate a decision whole (nothing is applied unless all of it is valid), then apply it."""
        stops, stopped = self._checked_preemptions(decision) if decision.preempt else (_NONE, _NONE_SET)
        delta: dict[int, int] = {}
        for js in stops:
            for node, k in js.placement:
                delta[node] = delta.get(node, 0) + k
        starts = []
        check = self._checked_assignment
        for job_id, raw in decision.assign.items():
            start = check(job_id, raw, stopped, delta)
            if start is not None:
                starts.append(start)
        free = self.free
        for node, d in delta.items():
            if free[node] + d < 0:
                raise InvalidDecisionError(
                    f"{self._who()}: capacity: node {self.nodes[node].name} would need "
                    f"{free[node] - (free[node] + d)} more GPUs than it has free"
                )
        self._stop_and_start(stops, starts)

    def _who(self) -> str:
        """The start of an InvalidDecisionError's message: the policy and the time."""
        return f"policy '{self.policy.name or type(self.policy).__name__}' at t={self.now:g}"

    def _checked_preemptions(self, decision: Decision) -> tuple[list[JobState], set[str]]:
        """The running jobs the decision preempts; preempting a job that is not running is invalid."""
        stops: list[JobState] = []
        stopped: set[str] = set()
        if not decision.preempt:
            return stops, stopped
        for job_id in decision.preempt:
            js = self.running.get(job_id)
            if js is None:
                raise InvalidDecisionError(f"{self._who()}: preempts job '{job_id}', which is not running")
            stops.append(js)
            stopped.add(job_id)
        return stops, stopped

    def _checked_assignment(
        self, job_id: str, raw, stopped: set[str], delta: dict[int, int]
    ) -> tuple[JobState, tuple, float] | None:
        """Check one assignment (known job, valid nodes, gang rule, positive rate) and add its GPUs to ``delta``.

        Returns ``(state, placement, rate)`` to start, or None when a running job keeps its placement.
        """
        js = self.by_id.get(job_id)
        if js is None or (job_id not in self.pending and job_id not in self.running):
            raise InvalidDecisionError(f"{self._who()}: assigns job '{job_id}', which is not waiting or running")
        # One (node, k) pair with k > 0 is already normal: most placements, skipped without a dict and a sort.
        if type(raw) is tuple and len(raw) == 1 and type(raw[0]) is tuple and raw[0][1] > 0:
            placement = raw
        else:
            placement = normalize(raw)
        old = js.placement  # not None exactly while the job runs
        if old is not None and old == placement and job_id not in stopped:
            return None
        total = 0
        n_nodes = len(self.nodes)
        for node, k in placement:
            if not (0 <= node < n_nodes) or k < 0:
                raise InvalidDecisionError(f"{self._who()}: job '{job_id}' placed on invalid node {node}")
            total += k
            delta[node] = delta.get(node, 0) - k
        job = js.job
        forked = self._forks and is_forked(job.num_gpus, placement, total)
        if total != job.num_gpus and not forked and not _moldable_ok(job, total):
            raise InvalidDecisionError(
                f"{self._who()}: gang rule: job '{job_id}' needs {job.num_gpus} GPUs, placement gives {total}"
            )
        if forked:
            rate = forked_rate(
                job.num_gpus,
                placement,
                lambda node: self.model_rate(job.job_type, self.nodes[node].gpu_model, job.num_gpus, True),
            )
        elif len(placement) == 1 and self._rate_by_counts is None:  # one node: the consolidated rate, looked up
            rate = self._rate_cache.get((job.job_type, self._node_models[placement[0][0]], total, True))
            if rate is None:
                rate = self.placement_rate(job.job_type, total, placement)
        else:
            rate = self.placement_rate(job.job_type, total, placement)
        if not rate > 0:
            raise InvalidDecisionError(f"{self._who()}: job '{job_id}' ({job.job_type}) cannot run on {placement}")
        if old is not None and job_id not in stopped:
            for node, k in old:
                delta[node] = delta.get(node, 0) + k
        return js, placement, rate

    def _stop_and_start(self, stops: list[JobState], starts: list[tuple[JobState, tuple, float]]) -> None:
        """Apply a validated decision: stops, then moves and starts; schedule each start's completion."""
        for js in stops:
            self._vacate(js)
            if js.job.attrs:  # snapshot roll-back is opt-in through the job's attrs
                self._rollback(js)
            del self.running[js.job.job_id]
            self.pending[js.job.job_id] = js
        # Release every moving job before occupying anything, so jobs that swap nodes never overfill one.
        vacate, pending = self._vacate, self.pending
        for js, _placement, _rate in starts:
            if js.placement is not None:
                vacate(js)
                if js.job.attrs:
                    self._rollback(js)
            else:
                pending.pop(js.job.job_id, None)
        if starts:
            self._occupy(starts)

    def _occupy(self, starts: list[tuple[JobState, tuple, float]]) -> None:
        """Start each job on its placement now (GPUs taken, segment opened after its start or restart delay) and
        schedule its completion. One loop for the whole decision: about a hundred starts a round under Gavel."""
        now = self.now
        models, free, free_by_model, busy, index = self._gpu_books
        extra_w, extra_cost, record, running = self._extra_w, self._extra_cost, self.allocations.append, self.running
        restart_delay, start_delay = self.restart_delay, self.start_delay
        push = self._loop.push  # the live runtime's book drops these: its workers say when a job is done
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
                free[node] -= k
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
            running[job_id] = js
            finish = js.productive_start + js.remaining / rate
            push(finish, COMPLETION, (js, js.version), COMPLETION)
        self.power_w, self.cost_rate = power, cost_rate
        self._busy_changed = True


def _moldable_ok(job: Job, total: int) -> bool:
    """Opt-in gang relaxation: ``Job.attrs["moldable"]`` True (any count >= 1) or a collection of counts."""
    allowed = job.attrs.get("moldable") if job.attrs else None
    if not allowed:
        return False
    return total >= 1 if allowed is True else total in allowed
