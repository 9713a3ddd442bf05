"""Tiresias: discretized two-dimensional least-attained-service (2D-LAS), heterogeneity-unaware.

Problem (Gu et al., NSDI'19, as configured by Hadar, spec hadar.md §4.2): at every round boundary, run
the jobs with the least attained service, where service = GPUs x seconds held. Jobs sit in ``num_queues``
priority queues split at ``thresholds`` GPU-seconds (Tiresias' simulator default ``[3600, 7200, 18000]``;
with 2 queues only 3600 is used); queue 0 has strict priority, jobs are FIFO by (arrival, id) inside a
queue, and there is no starvation promotion (PromoteKnob off). Preemption happens at round boundaries
(360 s) and costs the simulator's restart delay.

Heterogeneity-unaware placement: all ``W_j`` GPUs of a job on one GPU model, consolidated on as few
servers as possible; the model is chosen without looking at throughput, either the first model in the
fixed order ``type_order`` (default K80, P100, V100, then any other model) with enough free GPUs
(``type_choice="fixed"``) or uniformly at random among those (``"random"``, default, seeded). A model on
which the job cannot run at all (throughput 0 or absent) is never chosen. A running job that stays
selected keeps its GPU model and, when it can, its exact placement (no restart).

Presets (``preset``, one option; any option given explicitly wins over its preset):

- ``spec`` (default): the values above, as Hadar's experiments use them: thresholds 3,600 / 7,200 / 18,000
  GPU-seconds (2 queues: 3,600), 360 s rounds, one node if possible (best fit) else the fewest nodes
  (``placement="fewest-nodes"``), FIFO by arrival in every queue (``queue_order="arrival"``).
- ``pollux``: the Tiresias of Pollux's simulator (petuum/adaptdl, branch osdi21-artifact, ``simulator/tiresias.py``;
  Qiao et al., OSDI'21 sec. 5.1): 2 queues split at 16 x 3,600 = 57,600 GPU-seconds, 60 s rounds, GPUs taken
  greedily from the node with the most free GPUs (lowest index on ties) whatever the job's size
  (``placement="most-free"``), and each queue FIFO by the time the job *entered it*, so a demoted job queues
  behind the jobs demoted before it (``queue_order="entry"``; jobs submitted in the same second in the workload's
  row order, ``Job.attrs["submit_order"]`` as the Pollux importer sets it). Pollux's simulator also charges a 30 s
  re-scale delay on every allocation: run it with ``restart_delay: 30`` and ``start_delay: 30``.

Shared GPUs (a run whose ``placement_rule`` is a task placement, :mod:`gpuweave.cluster.sharing.ledger`; our
extension, Tiresias places whole GPUs): attained service counts each task's share of its GPUs; pass 1 chooses in
priority order by milli-GPUs per model (a task's share times its GPUs) instead of GPUs; kept tasks stay, the other
running tasks are preempted (never moved), and the chosen waiting tasks go where the run's task placement puts them,
on any model they may use, in priority order; one that finds no node waits for a later round.

Complexity per round: O(A log A) to sort A active jobs plus O(A x nodes of a model) placement; O(1) for a round
after a round that changed nothing when no job arrived, started or finished since and none changed queue (the
same jobs would be chosen on the same GPUs, drawing no random number).
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.cluster.placement import CapacityCache, CapacityScratch, fewest_nodes, spread
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.rate_table import RateTableCache
from gpuweave.workload.tasks import FULL_GPU_MILLI
from gpuweave.workload.traces.pollux import submit_order

if TYPE_CHECKING:
    from gpuweave.cluster.rate_table import RateTable
    from gpuweave.cluster.state import ClusterView, JobState, Placement

    # a job's sort key in the priority order: (queue, [time entered it,] arrival, [submit order,] id, job state)
    OrderKey = tuple[Any, ...]

PLACEMENTS = ("fewest-nodes", "most-free")
QUEUE_ORDERS = ("arrival", "entry")


@dataclass(frozen=True, slots=True)
class TiresiasPreset:
    """The values one ``preset`` name stands for."""

    thresholds: tuple[float, ...]
    round_length: float
    placement: str
    queue_order: str


PRESETS: dict[str, TiresiasPreset] = {
    "spec": TiresiasPreset((3600.0, 7200.0, 18000.0), 360.0, "fewest-nodes", "arrival"),
    "pollux": TiresiasPreset((16 * 3600.0,), 60.0, "most-free", "entry"),
}


def single_type_placement(
    scratch: CapacityScratch, view: ClusterView, n: int, model: str, placement: str = "fewest-nodes"
) -> Placement | None:
    """All n GPUs of ``model``: the fewest nodes (one if any fits), or greedily from the node with most free GPUs."""
    if placement == "most-free":
        return spread(view.nodes_by_model[model], scratch.free, n)
    return fewest_nodes(scratch, n, model)


@register_policy("tiresias")
class TiresiasPolicy(ClusterPolicy):
    default_round_length = 360.0
    places_tasks = True  # in a shared run it places through the run's task placement (_choose_shares)

    def __init__(
        self,
        num_queues: int = 2,
        thresholds: tuple[float, ...] | list[float] | None = None,
        type_choice: str = "random",
        type_order: tuple[str, ...] | list[str] = ("K80", "P100", "V100"),
        placement: str | None = None,
        queue_order: str | None = None,
        preset: str = "spec",
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")
        values = PRESETS[preset]
        super().__init__(round_length=values.round_length if round_length is None else round_length, seed=seed)
        self._rates = RateTableCache()
        if type_choice not in ("fixed", "random"):
            raise ValueError("type_choice must be 'fixed' or 'random'")
        if num_queues < 1:
            raise ValueError("num_queues must be >= 1")
        self.preset = preset
        self.placement = values.placement if placement is None else placement
        self.queue_order = values.queue_order if queue_order is None else queue_order
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}")
        if self.queue_order not in QUEUE_ORDERS:
            raise ValueError(f"queue_order must be one of {', '.join(QUEUE_ORDERS)}, got {self.queue_order!r}")
        self.num_queues = int(num_queues)
        chosen = values.thresholds if thresholds is None else thresholds
        self.thresholds = sorted(float(t) for t in chosen)[: self.num_queues - 1]
        self.type_choice = type_choice
        self.type_order = tuple(type_order)
        self._rng = random.Random(seed)
        # The active jobs in priority order: sorted keys (queue, [time entered it,] arrival, id, state).
        self._order: list[OrderKey] = []
        self._entries: dict[str, OrderKey] = {}  # job id -> its key in _order
        self._was_running: set[str] = set()  # running at the last round, or started by it
        self._touched: set[str] = set()  # started or moved by the last round's decision
        self._cross: list[tuple[float, str, int]] = []  # (when service crosses the next threshold, id, version)
        # view.version after a round that changed nothing
        self._settled_version: tuple[int, int, int, int] | None = None
        self._next_crossing = math.inf
        self.rounds_computed = 0  # calls that ran the full round (the others found nothing changed)
        self._capacity = CapacityCache()

    def queue_of(self, service: float) -> int:
        return bisect.bisect_right(self.thresholds, service)

    def _models(self, view: ClusterView) -> list[str]:
        ordered = [m for m in self.type_order if m in view.nodes_by_model]
        return ordered + [m for m in view.models if m not in ordered]

    def _priority_order(self, view: ClusterView) -> list[OrderKey]:
        """Active jobs by queue, then FIFO by arrival or by when they entered their queue: the sorted keys
        ``(queue, [time entered,] arrival, id, state)``.

        Kept sorted across rounds instead of re-sorted every round. A running job's service grows, so its queue
        is re-read when it started or moved at the last round and then only when its next threshold crossing is
        due (a heap of crossing times); a pending job's only when it is new or was running at the last round (a
        waiting job's service does not change); only jobs whose queue changed move in the order. The order and
        the entry times are exactly those of a full sort every round (``_rebuild``, the reference)."""
        now = view.now
        running, pending = view.running, view.pending
        entries = self._entries
        gone, stopped = self._no_longer_running(running, pending)
        for job_id in gone:
            self._drop(job_id)
        for job_id in self._touched:  # started or moved at the last round: a new segment, a new crossing time
            js = running.get(job_id)
            if js is not None:
                self._observe_running(js, view)
        for _, job_id, version in self._due_crossings(now):
            js = running.get(job_id)
            if js is not None and js.version == version:
                self._observe_running(js, view)
        for job_id in stopped:  # stopped since the last round: its service is frozen from now on
            js = pending[job_id]
            self._observe(js, self.queue_of(view.attained_service(js)), now)
        missing = len(running) + len(pending) - len(entries)
        if missing > 0:  # new arrivals sit at the tail of pending (insertion order)
            for job_id in reversed(pending):
                if job_id not in entries:
                    js = pending[job_id]
                    self._observe(js, self.queue_of(view.attained_service(js)), now)
                    missing -= 1
                    if not missing:
                        break
        if missing > 0:  # running jobs never seen (a first call, or a driver that starts jobs itself)
            for js in running.values():
                if js.job.job_id not in entries:
                    self._observe_running(js, view)
        if len(entries) != len(running) + len(pending):  # the driver changed the queues some other way
            self._rebuild(view)
        return self._order

    def _due_crossings(self, now: float) -> list[tuple[float, str, int]]:
        """The threshold crossings due by ``now`` (within a relative 1e-6), taken off the heap. All are popped before
        any is observed: a crossing re-pushed within the tolerance of now (a job just short of its threshold, as a
        task holding a share of its GPU can be) waits for the next round instead of being popped again at this same
        instant, forever."""
        cross = self._cross
        due: list[tuple[float, str, int]] = []
        while cross and cross[0][0] - 1e-6 * max(1.0, abs(cross[0][0])) <= now:
            due.append(heapq.heappop(cross))
        return due

    def _no_longer_running(
        self, running: Mapping[str, JobState], pending: Mapping[str, JobState]
    ) -> tuple[list[str], list[str]]:
        """The jobs that ran at the last round (or were started by it) and have since ended, and those stopped.

        A job ends (or fails) only while running. One pass of lookups: set algebra with the queues' key views
        built a set of every running job, twice a round."""
        gone: list[str] = []
        stopped: list[str] = []
        for job_id in self._was_running:
            if job_id not in running:
                (stopped if job_id in pending else gone).append(job_id)
        return gone, stopped

    def _observe_running(self, js: JobState, view: ClusterView) -> None:
        """Read a running job's queue now and remember when its service reaches the next threshold."""
        service = view.attained_service(js)
        queue = self.queue_of(service)
        self._observe(js, queue, view.now)
        if queue < len(self.thresholds):
            held = self._service_rate(js, view)
            if held > 0:  # a CPU-only task of a shared run attains no GPU service
                due = view.now + (self.thresholds[queue] - service) / held
                heapq.heappush(self._cross, (due, js.job.job_id, js.version))

    @staticmethod
    def _service_rate(js: JobState, view: ClusterView) -> float:
        """GPU-seconds a running job attains per second: its GPUs, times its share of each in a shared run."""
        p: Placement = js.placement  # type: ignore[assignment]  # a running job has a placement
        held: float = p[0][1] if len(p) == 1 else sum(k for _, k in p)
        if view.shares is not None:
            held *= view.shares.share(js.job.job_id)
        return held

    def _key(self, js: JobState, queue: int, entered: float) -> OrderKey:
        job = js.job
        if self.queue_order == "entry":  # Pollux's simulator: same-second submissions in the workload's row order
            return (queue, entered, job.arrival, submit_order(job), job.job_id, js)
        return (queue, job.arrival, job.job_id, js)

    def _observe(self, js: JobState, queue: int, now: float) -> None:
        """Place ``js`` in the order with ``queue``; it enters the queue now unless it was already in it."""
        job_id = js.job.job_id
        entry = self._entries.get(job_id)
        if entry is not None:
            if entry[0] == queue:
                return
            self._drop(job_id)
        entry = self._key(js, queue, now)
        bisect.insort(self._order, entry)
        self._entries[job_id] = entry

    def _drop(self, job_id: str) -> None:
        entry = self._entries.pop(job_id)
        order = self._order
        del order[bisect.bisect_left(order, entry)]

    def _rebuild(self, view: ClusterView) -> None:
        """The order from scratch (the reference computation): O(A log A)."""
        active = list(view.running.values()) + list(view.pending.values())
        previous = self._entries
        self._entries = {}
        for js in active:
            queue = self.queue_of(view.attained_service(js))
            old = previous.get(js.job.job_id)
            keep = old is not None and old[0] == queue  # still in the queue it entered earlier
            self._entries[js.job.job_id] = old if old is not None and keep else self._key(js, queue, view.now)
        self._order = sorted(self._entries.values())
        self._cross = []
        for js in view.running.values():
            self._observe_running(js, view)

    def schedule(self, view: ClusterView) -> Decision:
        t0 = time.perf_counter()
        version = view.version
        if version == self._settled_version and view.now < self._next_crossing:
            # Nothing arrived, started or finished and no job changed queue since a round that changed nothing:
            # this round would choose the same jobs on the same GPUs (and draw no random number).
            self.decision_times.append((view.now, len(view.running) + len(view.pending), time.perf_counter() - t0))
            return Decision()
        decision, settled, active = self._full_round(view)
        self.rounds_computed += 1
        self._settled_version = version if settled else None
        if settled:
            self._next_crossing = self._first_crossing(view)
        self.decision_times.append((view.now, active, time.perf_counter() - t0))
        return decision

    def _first_crossing(self, view: ClusterView) -> float:
        """A moment safely before the first running job's attained service reaches its next threshold."""
        first = math.inf
        for js in view.running.values():
            service = view.attained_service(js)
            queue = self.queue_of(service)
            held = self._service_rate(js, view)
            if queue < len(self.thresholds) and held > 0:
                first = min(first, view.now + (self.thresholds[queue] - service) / held)
        return first - 1e-6 * max(1.0, abs(first)) if first < math.inf else first

    def _full_round(self, view: ClusterView) -> tuple[Decision, bool, int]:
        """The round's decision, whether it changes nothing with every chosen job placed, and the active count."""
        table = self._rates.of(view)
        col = {m: i for i, m in enumerate(view.models)}
        order = self._priority_order(view)
        capacity = self._capacity.refresh(view)
        node_models = capacity.node_models
        if view.shares is not None:
            kept, others = self._choose_shares(order, view, table, col, node_models)
            decision, placed = self._decide_shares(view, kept, others)
        else:
            left = dict(capacity.gpus_by_model)
            kept, others = self._choose(order, left, table, col, node_models, self._models(view))
            decision, placed = self._decide(view, kept, others, table, col)
        self._was_running = set(view.running)
        self._was_running.update(placed)
        self._touched = set(decision.assign)
        return decision, not decision and not others, len(order)

    def _choose(
        self,
        order: list[OrderKey],
        left: dict[str, int],
        table: RateTable,
        col: dict[str, int],
        node_models: list[str],
        models: list[str],
    ) -> tuple[list[JobState], list[tuple[JobState, str]]]:
        """Pass 1: the jobs to run, by GPU counts, in priority order (``left``: GPUs per model, used up here).
        Returns the running jobs that keep their GPU model (kept) and the others with the model chosen for
        them, ``(job, model)``, in priority order."""
        room = max(left.values(), default=0)  # most GPUs left on one model: a larger job has no option
        kept: list[JobState] = []
        others: list[tuple[JobState, str]] = []
        for entry in order:
            if room == 0:  # no GPU left on any model: nothing later can be chosen (and no choice is drawn)
                break
            js: JobState = entry[-1]
            n = js.job.num_gpus
            if js.placement is not None:
                model = node_models[js.placement[0][0]]
                have = left[model]
                if have >= n:
                    left[model] = have - n
                    if have == room:  # the model that had the most left: the most may have changed
                        room = max(left.values())
                    kept.append(js)
                    continue
            if n > room:
                continue
            chosen = self._pick_model(js, n, models, left, table, col)
            if chosen is None:
                continue
            have = left[chosen]
            left[chosen] = have - n
            if have == room:
                room = max(left.values())
            others.append((js, chosen))
        return kept, others

    def _pick_model(
        self, js: JobState, need: int, models: list[str], left: dict[str, int], table: RateTable, col: dict[str, int]
    ) -> str | None:
        """The model a waiting job is chosen on: among those with ``need`` left (GPUs, or milli-GPUs in a shared run)
        on which it can run, the first in ``type_order`` or one drawn at random (``type_choice``); None if none."""
        job = js.job
        cons = table.cons(job.job_type, job.num_gpus, job.allowed_models)
        uncons = table.uncons(job.job_type, job.num_gpus, job.allowed_models)
        options = [m for m in models if left[m] >= need and (cons[col[m]] > 0 or uncons[col[m]] > 0)]
        if not options:
            return None
        return options[0] if self.type_choice == "fixed" else self._rng.choice(options)

    def _choose_shares(
        self, order: list[OrderKey], view: ClusterView, table: RateTable, col: dict[str, int], node_models: list[str]
    ) -> tuple[list[JobState], list[tuple[JobState, str]]]:
        """Pass 1 of a shared run: as :meth:`_choose`, counting milli-GPUs (a task's share of each of its GPUs times
        its GPUs; a whole GPU where the cluster does not share) instead of GPUs, per model. A running task whose
        model has no room left is not chosen (a task is never moved: it is preempted and waits)."""
        shares = view.shares
        assert shares is not None
        left = {m: FULL_GPU_MILLI * k for m, k in self._capacity.gpus_by_model.items()}
        models = self._models(view)
        kept: list[JobState] = []
        others: list[tuple[JobState, str]] = []
        for entry in order:
            js: JobState = entry[-1]
            task = shares.requests[js.job.job_id]
            need = task.gpu_milli * task.num_gpus
            if js.placement is not None:
                model = node_models[js.placement[0][0]]
                if left[model] >= need:
                    left[model] -= need
                    kept.append(js)
                continue
            chosen = self._pick_model(js, need, models, left, table, col)
            if chosen is None:
                continue
            left[chosen] -= need
            others.append((js, chosen))
        return kept, others

    def _decide_shares(
        self, view: ClusterView, kept: list[JobState], others: list[tuple[JobState, str]]
    ) -> tuple[Decision, list[str]]:
        """Pass 2 of a shared run: kept tasks stay; every other running task is preempted, its share free at once
        for the plan (:meth:`Plan.stop`); the chosen waiting tasks go where the run's task placement puts them, in
        priority order, on any model they may use (as FIFO's do), or wait for a later round."""
        plan = Plan(view)
        if len(kept) != len(view.running):
            kept_ids = {js.job.job_id for js in kept}
            for job_id, js in view.running.items():
                if job_id not in kept_ids:
                    plan.stop(js)
        place = view.placement.place
        for js, model in others:
            placement = place(plan, js, model)
            if placement is not None:
                plan.start(js, placement)
        return plan.decision, list(plan.decision.assign)

    def _decide(
        self,
        view: ClusterView,
        kept: list[JobState],
        others: list[tuple[JobState, str]],
        table: RateTable,
        col: dict[str, int],
    ) -> tuple[Decision, list[str]]:
        """Pass 2: kept jobs keep their placement (together they fit: they run now); every other running job
        gives its GPUs back; the others are placed in priority order. Returns the decision (what
        ``Decision.from_allocation`` would give, in its order) and the jobs placed in this pass.

        Costs O(jobs that change) when every running job is kept, instead of taking each kept placement from a
        copy of the whole capacity."""
        running = view.running
        scratch = CapacityScratch.now_free(view)
        leaving: list[JobState] = []  # running jobs not kept, in running order
        if len(kept) != len(running):
            kept_ids = {js.job.job_id for js in kept}
            leaving = [js for job_id, js in running.items() if job_id not in kept_ids]
            for js in leaving:
                scratch.give_back(js.placement)  # type: ignore[arg-type]  # a running job has a placement
        placements: dict[str, Placement] = {}
        for js, model in others:
            placement = single_type_placement(scratch, view, js.job.num_gpus, model, self.placement)
            if placement is None:
                continue
            cons, uncons = table.of_job(js.job)
            if (cons[col[model]] if len(placement) == 1 else uncons[col[model]]) <= 0:
                continue
            scratch.take(placement)
            placements[js.job.job_id] = placement
        decision = Decision()
        for js in leaving:
            job_id = js.job.job_id
            if job_id in placements:
                decision.assign[job_id] = placements[job_id]  # moved (another model: never its placement)
            else:
                decision.preempt.append(job_id)
        for job_id, placement in placements.items():
            if job_id not in running:
                decision.assign[job_id] = placement
        return decision, list(placements)
