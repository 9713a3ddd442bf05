"""Hadar: heterogeneity-aware primal-dual scheduling with task-level heterogeneity (cluster policy).

Problem (Sultana et al., arXiv 2503.10918v1 §IV, Algorithm 1; spec hadar.md §2): every round of
``round_length`` seconds (paper: 6 min), build the queue Q of arrived, unfinished jobs, recompute the
price constants (Eqs. 5-7) over Q, and run the DP allocation (Algorithm 2 in the spec's corrected form,
:mod:`gpuweave.hadar.dp`). A job's ``W_j`` tasks may span GPU types and servers; the simulator makes it
progress at the slowest type's rate, unconsolidated when it spans servers, and charges the 10 s restart
delay on a changed allocation, so the DP and the physics agree.

Variants (``variant``): ``replan`` (default; full re-plan, running jobs first in Q by start time, then
waiting jobs by (arrival, id); a running job's current placement is a candidate without restart delay),
``sticky`` (running jobs keep their GPUs; the DP places only waiting jobs on the free GPUs, paper §IV-B
incremental mode) and ``literal`` (Algorithm 2 exactly as printed; it never selects a job, spec A1,
so a simulation with it cannot finish: for demonstrating the defect only). ``utility`` is ``raw``
(effective throughput, default) or ``normalized``.

Named variants beside the paper's (ours; the defaults are the spec's): ``order`` = ``fifo`` (default),
``srpt`` or ``slack-srpt`` (Q order, :func:`queue_order`); ``solver`` = ``dp`` (default, the budgeted DP)
or ``exact`` (the round's optimum by HiGHS, :mod:`gpuweave.hadar.exact_round`); ``backfill`` (default off:
after the DP, offer skipped jobs the GPUs left free, :meth:`gpuweave.hadar.dp.HadarDP.backfill`).

Starvation guard (ours, ``work_conserving``, default True): the spec's FIND_ALLOC (§2.8) returns None when
the payoff U_j(tau) - cost is not positive, and U_j decays while a job waits, so a job can starve forever
on an *idle* cluster (a property test found an LM job left pending for 46 M simulated seconds). When the
DP selects nothing while no job runs, the round instead starts the waiting jobs greedily in Q order on
their fastest GPU model (fewest nodes). ``work_conserving=False`` keeps the spec's behaviour.

POP (ours, a named option; Narayanan et al., SOSP'21): ``partitions=k`` > 1 splits each round's queue and servers
into k sub-rounds solved by the DP independently (:mod:`gpuweave.hadar.pop`), each with its own state budget;
default 1 (the whole round). Its speed and quality loss: ``gpuweave bench pop`` and docs/round-policies.md.

Recorded per round: wall time of the decision (``decision_times``), DP states, fallback rounds, price
constants. Complexity: see :mod:`gpuweave.hadar.dp`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.cluster.placement import fastest_models, place_on_model
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.rate_table import RateTable, RateTableCache
from gpuweave.hadar.dp import DEFAULT_MAX_STATES, hadar_round, literal_allocation
from gpuweave.hadar.pop import partitioned_round, plan_value
from gpuweave.hadar.price import PriceConstants
from gpuweave.hadar.problem import QueuedJob, RoundProblem

if TYPE_CHECKING:
    from gpuweave.cluster.state import ClusterView, JobState, Placement
    from gpuweave.hadar.dp import DPResult
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.job import Job
    from gpuweave.workload.profile_source import ProfileSource

    # a job's parts fixed while it waits or runs: (job, cons, uncons, total work, arrival slot)
    FixedPart = tuple[Job, np.ndarray, np.ndarray, float, int]

VARIANTS = ("replan", "sticky", "literal")
SOLVERS = ("dp", "exact")


class RoundView(Protocol):
    """What a Hadar round reads of the cluster: a :class:`~gpuweave.cluster.state.ClusterView`, or a snapshot's
    :class:`~gpuweave.cluster.hadar_snapshot.SnapshotView` (``gpuweave cluster plan hadar``)."""

    @property
    def nodes(self) -> list[Node]: ...

    @property
    def models(self) -> list[str]: ...

    @property
    def running(self) -> Mapping[str, JobState]: ...

    @property
    def pending(self) -> Mapping[str, JobState]: ...

    @property
    def profiles(self) -> ProfileSource: ...

    @property
    def now(self) -> float: ...

    @property
    def restart_delay(self) -> float: ...

    def remaining(self, js: JobState) -> float: ...


def cluster_arrays(view: RoundView) -> tuple[np.ndarray, np.ndarray]:
    col = {m: i for i, m in enumerate(view.models)}
    stype = np.array([col[n.gpu_model] for n in view.nodes], dtype=np.int64)
    cap = np.array([n.num_gpus for n in view.nodes], dtype=np.int64)
    return stype, cap


QUEUE_ORDERS = ("fifo", "srpt", "slack-srpt")


def queue_order(
    view: RoundView, order: str = "fifo", table: RateTable | None = None, round_length: float = 360.0
) -> list[JobState]:
    """Q for a round; the DP and its greedy fallback favour early positions, so Q order is a priority.

    * ``fifo`` (default; spec §2.8, A5): running jobs first (by first start), then waiting jobs by (arrival,
      id). The first start, not the current segment's, so a migrated job keeps its place in Q.
    * ``srpt`` (ours, a named variant, not the paper's): every job by its remaining time at its best rate
      ("left"; consolidated, or spread for a job wider than any server), shortest first (ties: arrival, id).
      Finishes short jobs first; starts the longest jobs last, which lengthens the makespan when one long job bounds it.
    * ``slack-srpt`` (ours): shortest first, except for jobs that could no longer wait. The remaining makespan
      is at least ``H = max(max_j left_j, sum_j W_j left_j / G)``; a job whose slack ``H - left_j`` is under one
      round would push the makespan past that bound if it started a round later, so such jobs go first (least
      slack first), then the rest shortest first. As the longest job runs, H falls by one round per round and
      the next long jobs become critical just in time. No tuning constant.
    """
    if order == "fifo":
        running = sorted(view.running.values(), key=lambda js: (js.first_start, js.job.arrival, js.job.job_id))
        waiting = sorted(view.pending.values(), key=lambda js: (js.job.arrival, js.job.job_id))
        return running + waiting
    if table is None:
        table = RateTable(view.profiles, list(view.models))
    jobs = [*view.running.values(), *view.pending.values()]
    left: dict[str, float] = {}
    for js in jobs:
        cons, uncons = table.of_job(js.job)
        best = max(float(np.max(cons)), float(np.max(uncons)))  # a job wider than any server has only spread rates
        left[js.job.job_id] = view.remaining(js) / best if best > 0 else math.inf
    shortest = sorted(jobs, key=lambda js: (left[js.job.job_id], js.job.arrival, js.job.job_id))
    if order == "srpt" or not jobs:
        return shortest
    load = sum(left[js.job.job_id] * js.job.num_gpus for js in jobs) / max(1, sum(n.num_gpus for n in view.nodes))
    horizon = max(load, max((v for v in left.values() if v < math.inf), default=0.0))
    critical = [js for js in reversed(shortest) if horizon - left[js.job.job_id] < round_length]
    return critical + [js for js in shortest if horizon - left[js.job.job_id] >= round_length]


@register_policy("hadar")
class HadarPolicy(ClusterPolicy):
    default_round_length = 360.0

    def __init__(
        self,
        variant: str = "replan",
        utility: str = "raw",
        max_states: int = DEFAULT_MAX_STATES,
        kappa: float = 1.0,
        work_conserving: bool = True,
        backfill: bool = False,
        order: str = "fifo",
        solver: str = "dp",
        partitions: int = 1,
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
        if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
            raise ValueError(f"partitions must be an integer >= 1, got {partitions!r}")
        if partitions > 1 and (solver != "dp" or variant == "literal"):
            raise ValueError("partitions > 1 (POP) splits the DP's round: it needs solver 'dp' and no 'literal'")
        self.partitions = int(partitions)
        self.audit_pop = False  # set by `gpuweave bench pop`: also solve the whole round and score both plans
        self.pop_values: list[tuple[int, float, float]] = []  # (queue, partitioned plan's value, whole DP's value)
        self._rates = RateTableCache()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}")
        if utility not in ("raw", "normalized"):
            raise ValueError("utility must be 'raw' or 'normalized'")
        self.variant = variant
        self.work_conserving = work_conserving
        for name, flag in (("backfill", backfill), ("work_conserving", work_conserving)):
            if not isinstance(flag, (bool, np.bool_)):
                raise ValueError(f"{name} must be true or false, got {flag!r}")
        self.backfill = bool(backfill)
        if order not in QUEUE_ORDERS:
            raise ValueError(f"order must be one of {QUEUE_ORDERS}")
        self.order = order
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}")
        self.solver = solver
        self.starvation_rounds = 0  # rounds in which the starvation guard placed jobs
        self.utility = utility
        self.max_states = int(max_states)
        self.kappa = float(kappa)
        if self.max_states < 1 or not self.kappa >= 0:
            raise ValueError(f"max_states must be >= 1 and kappa >= 0, got {max_states!r} and {kappa!r}")
        self.dp_states: list[int] = []
        self.fallback_rounds = 0
        self.rounds = 0
        self.last_constants: PriceConstants | None = None
        self._fixed_of: tuple[RateTable, float] | None = None  # (rate table, round length) the fixed parts are for
        self._fixed: dict[str, FixedPart] = {}

    @property
    def round_s(self) -> float:
        """The round length: a Hadar policy always has one (default 360 s)."""
        length = self.round_length
        assert length is not None, "Hadar is round-based"
        return length

    def build_problem(self, view: RoundView, order: list[JobState]) -> RoundProblem:
        """Q as the DP's input. What does not change while a job waits or runs (its rate vectors, total work and
        arrival slot) is looked up once per job and kept while the rates and the round length stay the same;
        a round computes only the remaining work, the current placement and whether the job has started."""
        table = self._rates.of(view)
        stype, cap = cluster_arrays(view)
        L = self.round_s
        fixed = self._fixed_parts(table, L, len(order))
        remaining = view.remaining
        jobs: list[QueuedJob] = []
        for js in order:
            job = js.job
            part = fixed.get(job.job_id)
            if part is None or part[0] is not job:  # a new job, or another job under a known id (live runs)
                cons, uncons = table.of_job(job)
                part = fixed[job.job_id] = (job, cons, uncons, float(job.work), int(math.floor(job.arrival / L)))
            jobs.append(  # QueuedJob's fields in order (positional: one call per queued job per round)
                QueuedJob(
                    job.job_id,
                    job.num_gpus,
                    part[1],
                    part[2],
                    remaining(js),
                    part[3],
                    part[4],
                    js.placement,
                    js.first_start is not None,
                )
            )
        free = cap.copy()
        if self.variant == "sticky":
            for js in view.running.values():
                for h, k in js.placement:  # type: ignore[union-attr]  # a running job has a placement
                    free[h] -= k
        return self.round_problem(view, jobs, stype, cap, free, L)

    def _fixed_parts(self, table: RateTable, L: float, queued: int) -> dict[str, FixedPart]:
        """Job id -> (job, cons, uncons, total work, arrival slot), for ``table`` and round length ``L``; forgotten
        when either changes, and cleared when it holds far more jobs than the queue (finished jobs' entries), so
        its size follows the queue's, not the trace's."""
        if self._fixed_of is None or self._fixed_of[0] is not table or self._fixed_of[1] != L:
            self._fixed_of, self._fixed = (table, L), {}
        elif len(self._fixed) > 2 * queued + 1024:
            self._fixed = {}
        return self._fixed

    def round_problem(
        self, view: RoundView, jobs: list[QueuedJob], stype: np.ndarray, cap: np.ndarray, free: np.ndarray, L: float
    ) -> RoundProblem:
        """The DP's input for this round: servers, queued jobs (or copies), prices' settings."""
        return RoundProblem(
            server_type=stype,
            capacity=cap,
            free=free,
            num_types=len(view.models),
            jobs=jobs,
            round_length=L,
            now_slot=int(math.floor(view.now / L + 1e-9)),
            restart_delay=view.restart_delay,
            utility=self.utility,
            kappa=self.kappa,
            type_names=list(view.models),
        )

    def schedule(self, view: ClusterView) -> Decision:
        t0 = time.perf_counter()
        wanted = self.plan_round(view)
        decision = self.guard_starvation(view, wanted) or Decision.from_allocation(view, wanted)
        self.decision_times.append((view.now, len(view.running) + len(view.pending), time.perf_counter() - t0))
        return decision

    def plan_round(self, view: RoundView) -> dict[str, Placement]:
        """The round's wanted placements {job id: placement} (jobs absent from it wait or are preempted);
        also what ``gpuweave plan hadar`` prints. Records DP states, fallbacks and the price constants."""
        order = queue_order(view, self.order, self._rates.of(view), self.round_s)
        if self.variant == "sticky":
            order = [js for js in order if js.placement is None]
        wanted: dict[str, Placement] = {}
        if self.variant == "sticky":
            wanted = {job_id: js.placement for job_id, js in view.running.items()}  # type: ignore[misc]  # running: placed
        self.last_result = None
        if order:
            problem = self.build_problem(view, order)
            if self.variant == "literal":
                result = literal_allocation(problem, max_states=self.max_states)
            elif self.solver == "exact":
                # imported when called: `gpuweave --help` imports this module
                from gpuweave.hadar.exact_round import exact_round

                result = exact_round(problem, max_states=self.max_states)
            else:
                result = self.solve_round(problem, backfill=self.backfill)
            wanted.update(result.plan)
            self.dp_states.append(result.states)
            self.fallback_rounds += int(result.fallback)
            self.last_constants = result.constants
            self.last_result = result
        self.rounds += 1
        return wanted

    def solve_round(self, problem: RoundProblem, backfill: bool = False) -> DPResult:
        """The DP on the whole round, or POP over ``partitions`` sub-rounds (:mod:`gpuweave.hadar.pop`)."""
        if self.partitions == 1:
            return hadar_round(problem, max_states=self.max_states, backfill=backfill)
        result = partitioned_round(problem, self.partitions, max_states=self.max_states, backfill=backfill)
        if self.audit_pop:
            whole = hadar_round(problem, max_states=self.max_states, backfill=backfill)
            self.pop_values.append(
                (len(problem.jobs), plan_value(problem, result.plan), plan_value(problem, whole.plan))
            )
        return result

    def guard_starvation(self, view: ClusterView, wanted: dict[str, Placement]) -> Decision | None:
        """The greedy start of waiting jobs when the DP would leave an idle cluster idle (see module doc)."""
        if not (self.work_conserving and not wanted and not view.running and view.pending):
            return None

        plan = Plan(view)
        for js in queue_order(view):
            for model in fastest_models(view, js):
                placement = place_on_model(plan, js, model)
                if placement is not None:
                    plan.start(js, placement)
                    break
        if plan.decision:
            self.starvation_rounds += 1
            return plan.decision
        return None
