"""Event-driven cluster simulator: the clock that drives a policy over a :class:`~gpuweave.cluster.book.ClusterBook`.

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
- Opt-in per job (``Job.attrs``): ``moldable`` (True = any GPU count with a positive rate, a number N = 1..N GPUs,
  or a collection of allowed counts) relaxes the gang rule to "as many GPUs as the placement gives", with the rate
  looked up for that count (ANDREAS picks a job's GPU count at every rescheduling; Optimus an elastic Pollux job's);
  ``snapshot_every`` (work units, e.g. 1 epoch) makes a preempted or moved job resume from its last snapshot:
  progress since the last multiple is lost (counted in ``Simulator.rollback_lost``).
- Forking (opt-in, HadarE): a policy with ``forks_jobs = True`` may give a job m >= 2 whole copies of
  ``num_gpus`` GPUs, each copy on one node; the job then progresses at the sum of the copies' consolidated
  rates (copies' steps add up) until its work is done.
- Triggers (:class:`~gpuweave.cluster.contract.ClusterPolicy`): a policy with a ``round_length`` is called on
  round ticks (``k * round_length``) while jobs are active; one with ``reacts_to_events`` (every event-driven
  policy) is called after every instant at which a job arrived or completed.

The simulator is the clock (events, rounds, the stall rule, progress, metrics' counters); the cluster's state and the
rules above are the book's (:mod:`gpuweave.cluster.book`), shared with the live runtime. A policy returns a
:class:`~gpuweave.cluster.decision.Decision`; the book validates all of it and raises
:class:`~gpuweave.errors.InvalidDecisionError` on the first broken rule, naming the policy, the time and the job; the
simulator predicts the completions of the jobs it started. Complexity: O(log E) per event plus the policy's own
cost; a round costs O(active jobs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from heapq import heappush
from typing import TYPE_CHECKING

from gpuweave.cluster.adaptive_clock import Adaptation, AdaptiveClock
from gpuweave.cluster.book import AllocationChange, ClusterBook, RecordSink, Segment, TimeseriesRow
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.epoch_rounding import EpochClock, EpochRounding
from gpuweave.cluster.placements import PlacementRule, TaskPlacement
from gpuweave.cluster.state import ClusterView, JobState, queue_set
from gpuweave.engine.loop import STALE, EventLoop
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.hardware.cluster_spec import Node
from gpuweave.workload.job import Job
from gpuweave.workload.pollux import PolluxJobModel
from gpuweave.workload.profile_source import EpochStepSource, ProfileSource
from gpuweave.workload.sia import SiaJobModel

if TYPE_CHECKING:
    from gpuweave.cluster.sharing.ledger import ShareLedger

__all__ = ["AllocationChange", "RecordSink", "Segment", "SimulationRecords", "Simulator", "STALL_ROUNDS"]

# Event kinds, in the order they are handled at one instant.
COMPLETION, ARRIVAL, ROUND = 0, 1, 2

# A round-based policy that leaves jobs waiting on an idle cluster for this many consecutive rounds after
# the last arrival is declared stuck (otherwise its ticks would go on for ever).
STALL_ROUNDS = 1000

# Rows a list of records holds before the simulator hands them to its sink (if it has one).
SINK_ROWS = 50_000


@dataclass(slots=True)
class SimulationRecords:
    """Everything a run produces; metrics and result files are computed from this."""

    jobs: list[JobState]
    segments: list[Segment]
    allocations: list[AllocationChange]
    timeseries: list[TimeseriesRow]  # (time, busy GPUs per model, power W)
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
    # The job's rate with all its GPUs on one node of a GPU model (0: unknown or not allowed), and the delays a
    # start and a restart charge: the useful-work metrics (metrics.summarize) are computed from them at the end.
    consolidated_rate: Callable[[Job, str], float] | None = None
    start_delay: float = 0.0
    restart_delay: float = 0.0
    # A shared run (jobs holding shares of GPUs): the ledger, whose ``share`` scales a job's useful GPU-seconds and
    # whose ``series`` is the cluster's used share and fragmentation over time (sharing.csv). None: whole GPUs.
    shares: ShareLedger | None = None
    # Adaptive jobs' intervals (their GPUs, batch, throughput and efficiency; adaptation.csv) not yet handed over
    adaptations: list[Adaptation] = field(default_factory=list)


def book_records(book: ClusterBook, start_time: float, events: int, decisions: int) -> SimulationRecords:
    """What ``book`` recorded from ``start_time`` to its now (the simulator's end, or the live runtime's now)."""
    return SimulationRecords(
        jobs=book.states,
        segments=book.segments,
        allocations=book.allocations,
        timeseries=book.timeseries,
        models=book.models,
        total_gpus=book.total_gpus,
        gpus_by_model=book.gpus_by_model,
        energy_j=book.energy_j,
        cost=book.cost,
        start_time=start_time,
        end_time=book.now,
        events=events,
        decisions=decisions,
        consolidated_rate=lambda job, model: book.job_model_rate(job, model, True),
        start_delay=book.start_delay,
        restart_delay=book.restart_delay,
        shares=book.shares,
        adaptations=book.epoch_clock.adaptations if book.epoch_clock is not None else [],
    )


def _epoch_clock(profiles: ProfileSource, policy: ClusterPolicy, nodes: list[Node]) -> EpochClock | None:
    """Pollux's rounding at epoch ends, for a profile source that knows where epochs end (Pollux's job model) and a
    policy on a round grid, as in Pollux's simulator (:mod:`gpuweave.cluster.epoch_rounding`); for a policy whose
    jobs adapt their batches (Pollux's), or for Sia's job model (each job on its type's tables, rigid jobs keeping
    their batches), the jobs' agents' clock (:mod:`gpuweave.cluster.adaptive_clock`); else None."""
    if not isinstance(profiles, EpochStepSource) or not policy.round_length:
        return None
    fixed = getattr(policy, "fixed_batches", None)
    if isinstance(profiles, SiaJobModel):
        models = [node.gpu_model for node in nodes]
        return AdaptiveClock(profiles, policy.round_length, dict(fixed or ()), node_models=models, rigid=fixed is None)
    if fixed is not None:
        if not isinstance(profiles, PolluxJobModel):
            raise InputError(f"policy '{policy.name}' needs Pollux's job model as profiles", field="profiles")
        return AdaptiveClock(profiles, policy.round_length, targets=dict(fixed))
    return EpochRounding(profiles, policy.round_length)


class Simulator:
    """The clock of a simulated run: arrivals, predicted completions and round ticks on one event loop."""

    def __init__(
        self,
        nodes: list[Node],
        jobs: list[Job],
        policy: ClusterPolicy,
        profiles: ProfileSource,
        gpu_power: dict[str, tuple[float, float]],
        *,
        restart_delay: float = 10.0,
        start_delay: float = 0.0,
        record_segments: bool = True,
        max_time: float = math.inf,
        ideal_placement: bool = False,
        placement: PlacementRule | TaskPlacement | None = None,
        progress: Callable[[int], None] | None = None,
        sink: RecordSink | None = None,
    ) -> None:
        """``nodes``, ``jobs``, ``profiles``, ``gpu_power``, the delays, ``record_segments`` and
        ``ideal_placement`` make the book (:class:`~gpuweave.cluster.book.ClusterBook`); ``placement`` is the rule
        policies place gangs by (None: the default, :mod:`gpuweave.cluster.placements`), or a task placement: then
        jobs are tasks sharing GPUs, CPU and memory (:mod:`gpuweave.cluster.sharing.ledger`; only a policy that
        places through the run's rule, ``places_tasks``, can drive it; ties between nodes follow an order seeded
        with the policy's seed); ``progress(done)`` is
        called with the number of finished jobs about every 1% of the trace (for a progress bar). ``sink`` takes
        the allocation changes and time-series rows in chunks of :data:`SINK_ROWS` as the run goes (memory stays
        bounded; see :class:`RecordSink`); the records then hold only what was not yet handed over (nothing, after
        ``run``)."""
        shares = None
        if isinstance(placement, TaskPlacement):
            # imported here: numpy and the sharing arrays are for shared runs only
            from gpuweave.cluster.sharing.ledger import shared_run

            shares, placement = shared_run(nodes, jobs, policy, placement)
        self.book = ClusterBook(
            nodes,
            jobs,
            profiles,
            gpu_power,
            restart_delay=restart_delay,
            start_delay=start_delay,
            record_segments=record_segments,
            ideal_placement=ideal_placement,
            forks_jobs=policy.forks_jobs,  # opt-in job forking (HadarE, spec hadar.md §3)
            shares=shares,
            epoch_clock=_epoch_clock(profiles, policy, nodes),
        )
        self.policy = policy
        self.round_length = policy.round_length
        self.sink = sink
        self.max_time = max_time
        self._progress = progress
        self._progress_step = max(1, len(jobs) // 100)
        self._progress_next = self._progress_step
        self.view = ClusterView(self.book, policy.round_length, placement)
        self.events = 0
        self.decisions = 0
        self.book.check_feasible()

    @property
    def now(self) -> float:
        return self.book.now

    # ------------------------------------------------------------------ run
    def run(self) -> SimulationRecords:
        loop = self._loop = EventLoop()
        loop.on(COMPLETION, self._on_completion)
        loop.on(ARRIVAL, self._on_arrival)
        loop.on(ROUND, self._on_round)
        book = self.book
        self._states = states = book.states
        # One arrival on the heap at a time (each pushes the next): the heap holds O(active) events, not O(N).
        if states:
            loop.push(states[0].job.arrival, ARRIVAL, 0, ARRIVAL)
        start_time = states[0].job.arrival if states else 0.0
        book.start_clock(start_time)
        book.record_timeseries()
        self._done = self._arrived = self._idle_rounds = 0
        self._changed = self._tick = self._tick_scheduled = False
        book.busy_changed = False
        self._reacts = self.policy.reacts_to_events
        self._complete = book.complete  # bound once: called per completion
        self._policy_name = self.policy.name or type(self.policy).__name__  # named in an invalid decision's error
        self._pending = book.pending  # bound once, read per arrival (the book never rebinds it)
        # Arrivals and completions go on the loop's heap without EventLoop.push's call (two a job), as push would.
        self._heap, self._next_seq = loop.raw_queue()
        loop.run(until=self.max_time, before_instant=book.advance, after_instant=self._after_instant)
        self.events = loop.events
        if self.sink is not None:
            book.hand_over(self.sink, final=True)
        n_jobs = len(states)
        if self._done < n_jobs and self.max_time == math.inf:
            stuck = next(iter(book.pending.values()), None) or next(iter(book.running.values()), None)
            raise InvalidDecisionError(
                f"policy '{self.policy.name}' left {n_jobs - self._done} job(s) unfinished with nothing left to "
                f"happen (e.g. job '{stuck.job.job_id if stuck else '?'}' needing "
                f"{stuck.job.num_gpus if stuck else '?'} GPUs)"
            )
        return self.records(start_time)

    def records(self, start_time: float) -> SimulationRecords:
        """What the run produced from ``start_time`` to now."""
        return book_records(self.book, start_time, self.events, self.decisions)

    # ------------------------------------------------------------------ event handlers
    def _on_completion(self, t: float, payload: tuple[JobState, int]) -> object:
        js, version = payload
        if js.version != version or js.placement is None:
            # Stale: the job was moved or stopped after this completion was scheduled. It changes nothing that
            # _after_instant reads (no tick, arrival or completion, no busy GPU), so the loop skips that hook for an
            # instant of stale events only; the book's advance still runs there, so energy is summed over the same
            # intervals.
            return STALE
        self._complete(js)
        self._done += 1
        self._changed = True
        return None

    def _on_arrival(self, t: float, index: int) -> None:
        states = self._states
        js = states[index]
        if index + 1 < len(states):
            heappush(self._heap, (states[index + 1].job.arrival, ARRIVAL, self._next_seq(), ARRIVAL, index + 1))
        pending = self._pending  # the book's arrive(), inline: one Python call fewer per job
        queue_set(pending, js.job.job_id, js)
        pending.changes += 1
        self._arrived += 1
        self._changed = True

    def _on_round(self, t: float, _payload: None) -> None:
        self._tick = True
        self._tick_scheduled = False

    def _after_instant(self, t: float) -> None:
        """After every event of one instant: ask the policy (on a tick, or on events if it reacts to them),
        schedule the next tick, record the time series; stop once every job is done."""
        tick = self._tick
        book = self.book
        if (tick or (self._changed and self._reacts)) and (book.pending or book.running):
            decision = self.policy.schedule(self.view)
            self.decisions += 1
            # The book applies it; the clock predicts the completions of the jobs it started. (Decision's __bool__,
            # spelled out: a Python call fewer per event.)
            if decision.assign or decision.preempt:
                heap, seq = self._heap, self._next_seq
                clock = book.epoch_clock
                for js, _placement, _rate in book.apply(decision, self._policy_name):
                    finish = js.productive_start + js.remaining / js.rate if clock is None else clock.finish(js)
                    heappush(heap, (finish, COMPLETION, seq(), COMPLETION, (js, js.version)))
            elif book.shares is not None:  # a plan that started nothing may still have taken shares
                book.discard_plan()
            if tick:
                self._count_idle_round()
            else:
                self._idle_rounds = 0
        L = self.round_length
        if L is not None and not self._tick_scheduled and (book.pending or book.running):
            # Ticks sit on the grid k*L; after a tick the next one is a full round later.
            nxt = t + L if tick else math.ceil(t / L) * L
            self._loop.push(max(nxt, t), ROUND, None, ROUND)
            self._tick_scheduled = True
        self._changed = self._tick = False
        if book.busy_changed:  # the time series only records changes of the busy GPUs
            book.busy_changed = False
            book.record_timeseries()
            if self.sink is not None and len(book.allocations) >= SINK_ROWS:
                book.hand_over(self.sink, final=False)
        if self._progress is not None and self._done >= self._progress_next:
            self._progress(self._done)
            self._progress_next = self._done + self._progress_step
        if self._done == len(self._states):
            self._loop.stop()

    def _count_idle_round(self) -> None:
        """After a round: a round-based policy that leaves jobs waiting on an idle cluster after the last arrival
        for STALL_ROUNDS rounds is stuck: raise instead of ticking for ever."""
        book = self.book
        if book.running or self._arrived != len(self._states):
            self._idle_rounds = 0
            return
        self._idle_rounds += 1
        if self._idle_rounds >= STALL_ROUNDS:
            stuck = next(iter(book.pending.values()))
            raise InvalidDecisionError(
                f"policy '{self.policy.name}' left {len(book.pending)} job(s) waiting on an "
                f"idle cluster for {STALL_ROUNDS} rounds after the last arrival (e.g. job "
                f"'{stuck.job.job_id}' needing {stuck.job.num_gpus} GPUs)"
            )
