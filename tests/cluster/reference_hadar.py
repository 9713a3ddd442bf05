"""Hadar and HadarE as cluster policies as they were before the optimised DP (main at 5d4a02c), on the reference
DP (tests/hadar/reference_dp.py): the oracle tests/cluster/test_round_policies_reference.py compares the package's
policies with. Not registered; not used by the package."""

from __future__ import annotations

import math
import time

import numpy as np

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.hadar.dp import DEFAULT_MAX_STATES
from gpuweave.hadar.forking import copy_count, copy_nodes, merge_copies
from gpuweave.hadar.problem import QueuedJob, RoundProblem
from gpuweave.hadar.throughput import RateTable, RateTableCache

from ..hadar.reference_dp import hadar_round, literal_allocation

VARIANTS = ("replan", "sticky", "literal")
SOLVERS = ("dp", "exact")


def cluster_arrays(view) -> tuple[np.ndarray, np.ndarray]:
    col = {m: i for i, m in enumerate(view.models)}
    stype = np.array([col[n.gpu_model] for n in view.nodes], dtype=np.int64)
    cap = np.array([n.num_gpus for n in view.nodes], dtype=np.int64)
    return stype, cap


QUEUE_ORDERS = ("fifo", "srpt", "slack-srpt")


def queue_order(view, order: str = "fifo", table: RateTable | None = None, round_length: float = 360.0) -> list:
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
    left = {}
    for js in jobs:
        cons, uncons = table.get(js.job.job_type, js.job.num_gpus)
        best = max(float(np.max(cons)), float(np.max(uncons)))  # a job wider than any server has only spread rates
        left[js.job.job_id] = view.remaining(js) / best if best > 0 else math.inf
    shortest = sorted(jobs, key=lambda js: (left[js.job.job_id], js.job.arrival, js.job.job_id))
    if order == "srpt" or not jobs:
        return shortest
    load = sum(left[js.job.job_id] * js.job.num_gpus for js in jobs) / max(1, sum(n.num_gpus for n in view.nodes))
    horizon = max(load, max((v for v in left.values() if v < math.inf), default=0.0))
    critical = [js for js in reversed(shortest) if horizon - left[js.job.job_id] < round_length]
    return critical + [js for js in shortest if horizon - left[js.job.job_id] >= round_length]


class ReferenceHadar(ClusterPolicy):
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
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
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
        self.last_constants = None

    def build_problem(self, view, order) -> RoundProblem:
        table = self._rates.of(view)
        stype, cap = cluster_arrays(view)
        L = self.round_length
        jobs = []
        for js in order:
            cons, uncons = table.get(js.job.job_type, js.job.num_gpus)
            jobs.append(
                QueuedJob(
                    key=js.job.job_id,
                    num_gpus=js.job.num_gpus,
                    cons=cons,
                    uncons=uncons,
                    remaining=view.remaining(js),
                    total_work=float(js.job.work),
                    arrival_slot=int(math.floor(js.job.arrival / L)),
                    prev=js.placement,
                    started=js.first_start is not None,
                )
            )
        free = cap.copy()
        if self.variant == "sticky":
            for js in view.running.values():
                for h, k in js.placement:
                    free[h] -= k
        return self.round_problem(view, jobs, stype, cap, free, L)

    def round_problem(self, view, jobs, stype, cap, free, L: float) -> RoundProblem:
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

    def schedule(self, view) -> Decision:
        t0 = time.perf_counter()
        wanted = self.plan_round(view)
        decision = self.guard_starvation(view, wanted) or Decision.from_allocation(view, wanted)
        self.decision_times.append((view.now, len(view.running) + len(view.pending), time.perf_counter() - t0))
        return decision

    def plan_round(self, view) -> dict[str, tuple]:
        """The round's wanted placements {job id: placement} (jobs absent from it wait or are preempted);
        also what ``gpuweave plan hadar`` prints. Records DP states, fallbacks and the price constants."""
        order = queue_order(view, self.order, self._rates.of(view), self.round_length)
        if self.variant == "sticky":
            order = [js for js in order if js.placement is None]
        wanted: dict[str, tuple] = {}
        if self.variant == "sticky":
            wanted = {job_id: js.placement for job_id, js in view.running.items()}
        self.last_result = None
        if order:
            problem = self.build_problem(view, order)
            if self.variant == "literal":
                result = literal_allocation(problem, max_states=self.max_states)
            elif self.solver == "exact":
                from gpuweave.hadar.exact_round import exact_round

                result = exact_round(problem, max_states=self.max_states)
            else:
                result = hadar_round(problem, max_states=self.max_states, backfill=self.backfill)
            wanted.update(result.plan)
            self.dp_states.append(result.states)
            self.fallback_rounds += int(result.fallback)
            self.last_constants = result.constants
            self.last_result = result
        self.rounds += 1
        return wanted

    def guard_starvation(self, view, wanted: dict) -> Decision | None:
        """The greedy start of waiting jobs when the DP would leave an idle cluster idle (see module doc)."""
        if not (self.work_conserving and not wanted and not view.running and view.pending):
            return None
        from gpuweave.cluster.placement import fastest_models, place_on_model

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


class ReferenceHadarE(ReferenceHadar):
    forks_jobs = True

    def __init__(
        self,
        utility: str = "raw",
        max_states: int = DEFAULT_MAX_STATES,
        kappa: float = 1.0,
        max_copies: int | None = None,
        work_conserving: bool = True,
        order: str = "fifo",
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(
            variant="replan",
            utility=utility,
            max_states=max_states,
            kappa=kappa,
            work_conserving=work_conserving,
            order=order,
            round_length=round_length,
            seed=seed,
        )
        self.max_copies = max_copies

    def schedule(self, view) -> Decision:
        t0 = time.perf_counter()
        table = self._rates.of(view)
        stype, cap = cluster_arrays(view)
        L = self.round_length
        largest = int(cap.max())
        n_nodes = len(view.nodes)
        n_copies = n_nodes if self.max_copies is None else max(1, min(n_nodes, int(self.max_copies)))
        order = queue_order(view, self.order, table, L)
        first: list[QueuedJob] = []
        extra: list[QueuedJob] = []
        extra_gpus = 0
        total_gpus = int(cap.sum())
        copies_of: dict[str, int] = {}
        for js in order:
            W = js.job.num_gpus
            k = copy_count(W, largest, n_copies)
            forkable = k > 1
            copies_of[js.job.job_id] = k
            cons, uncons = table.get(js.job.job_type, W)
            prev_nodes = copy_nodes(js.placement, W)
            rem = view.remaining(js) / k
            tot = float(js.job.work) / k
            for i in range(1, k + 1):
                if i == 1 and not forkable:
                    prev = js.placement
                else:
                    prev = ((prev_nodes[i - 1], W),) if i - 1 < len(prev_nodes) else None
                q = QueuedJob(
                    key=(js.job.job_id, i),
                    num_gpus=W,
                    cons=cons,
                    uncons=uncons,
                    remaining=rem,
                    total_work=tot,
                    arrival_slot=int(math.floor(js.job.arrival / L)),
                    prev=prev,
                    started=js.first_start is not None,
                    packed_only=forkable,
                )
                if i == 1:
                    first.append(q)
                elif extra_gpus < total_gpus:
                    extra.append(q)
                    extra_gpus += W
        wanted: dict[str, tuple] = {}
        jobs = first + extra
        if jobs:
            problem = self.round_problem(view, jobs, stype, cap, cap.copy(), L)
            result = hadar_round(problem, max_states=self.max_states)
            wanted.update(merge_copies(result.plan))
            self.dp_states.append(result.states)
            self.fallback_rounds += int(result.fallback)
            self.last_constants = result.constants
        self.rounds += 1
        decision = self.guard_starvation(view, wanted) or Decision.from_allocation(view, wanted)
        self.decision_times.append((view.now, len(view.running) + len(view.pending), time.perf_counter() - t0))
        return decision
