"""Hadar and HadarE as cluster policies on the reference DP (tests/hadar/reference_dp.py, the DP before it was
optimised, main at 5d4a02c): the oracle tests/cluster/test_round_policies_reference.py compares the package's
policies with. The policy layer around the DP (queue order, problem building, starvation guard) is the package's
own, which the optimisation left as it was; HadarE keeps its first way of building job copies (every copy built,
the extra ones dropped once they fill the cluster). Not registered; not used by the package."""

from __future__ import annotations

import math
import time

from gpuweave.cluster.decision import Decision
from gpuweave.cluster.forking import copy_nodes, merge_copies
from gpuweave.cluster.policies.hadar import HadarPolicy, cluster_arrays, queue_order
from gpuweave.hadar.dp import DEFAULT_MAX_STATES
from gpuweave.hadar.forking import copy_count
from gpuweave.hadar.problem import QueuedJob, RoundProblem

from ..hadar.reference_dp import hadar_round


class ReferenceHadar(HadarPolicy):
    """HadarPolicy whose rounds are solved by the reference DP."""

    def solve_round(self, problem: RoundProblem, backfill: bool = False):
        return hadar_round(problem, max_states=self.max_states, backfill=backfill)


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
            result = self.solve_round(problem)
            wanted.update(merge_copies(result.plan))
            self.dp_states.append(result.states)
            self.fallback_rounds += int(result.fallback)
            self.last_constants = result.constants
        self.rounds += 1
        decision = self.guard_starvation(view, wanted) or Decision.from_allocation(view, wanted)
        self.decision_times.append((view.now, len(view.running) + len(view.pending), time.perf_counter() - t0))
        return decision
