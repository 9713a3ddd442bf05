"""HadarE: Hadar with job forking, so that idle nodes can train copies of running jobs (cluster policy).

Problem (paper §V; spec hadar.md §3): fork each job into up to ``n`` copies (n = number of nodes, or
``max_copies``), submit the copies to Hadar's DP as ordinary jobs of ``W_j`` GPUs restricted to one node
each, and let the copies' progress add up. In this simulator a forked job holds several whole copies
(``forks_jobs = True``, see :mod:`gpuweave.cluster.simulator`) and progresses at the sum of the copies'
consolidated rates, i.e. the remaining steps are split in proportion to the copies' true throughputs and
aggregated at the end of each round; the job completes when the aggregate reaches its work.

Q order: every job's first copy (running jobs first, then waiting ones by (arrival, id), as for Hadar),
then the extra copies ``i = 2..n`` job by job, cut once the extra copies alone could fill the cluster. For
DP scoring a copy carries the parent's arrival and utility, total work ``E_jN_j / n`` and remaining work
``S_rem / n`` (spec §3.7 [rev]). A job with ``W_j`` larger than every node is not forked. Copies of one job
may share a node when it has room for several (each copy is an independent process); the spec's
one-copy-per-node holds on the single-GPU-node clusters of §6 (see :mod:`gpuweave.hadar.emulation`, which
also models Eq. 10 estimates, per-round overheads and early finishes exactly as §3.7 describes).

``partitions`` (POP) is Hadar's option, applied to the round with the copies.

Complexity: as Hadar with |Q| <= #jobs + #GPUs entries (copies stop being built once the extra copies alone could
fill the cluster).
"""

from __future__ import annotations

import math
import time

from gpuweave.cluster.decision import Decision
from gpuweave.cluster.forking import copy_nodes, merge_copies
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.hadar import HadarPolicy, cluster_arrays, queue_order
from gpuweave.cluster.state import ClusterView, Placement
from gpuweave.hadar.dp import DEFAULT_MAX_STATES
from gpuweave.hadar.forking import copy_count
from gpuweave.hadar.problem import QueuedJob


@register_policy("hadare")
class HadarEPolicy(HadarPolicy):
    forks_jobs = True

    def __init__(
        self,
        utility: str = "raw",
        max_states: int = DEFAULT_MAX_STATES,
        kappa: float = 1.0,
        max_copies: int | None = None,
        work_conserving: bool = True,
        order: str = "fifo",
        partitions: int = 1,
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
            partitions=partitions,
            round_length=round_length,
            seed=seed,
        )
        self.max_copies = max_copies

    def schedule(self, view: ClusterView) -> Decision:
        t0 = time.perf_counter()
        table = self._rates.of(view)
        stype, cap = cluster_arrays(view)
        L = self.round_s
        largest = int(cap.max())
        n_nodes = len(view.nodes)
        n_copies = n_nodes if self.max_copies is None else max(1, min(n_nodes, int(self.max_copies)))
        order = queue_order(view, self.order, table, L)
        first: list[QueuedJob] = []
        extra: list[QueuedJob] = []
        extra_gpus = 0
        total_gpus = int(cap.sum())
        for js in order:
            W = js.job.num_gpus
            k = copy_count(W, largest, n_copies)
            forkable = k > 1
            cons, uncons = table.get(js.job.job_type, W, js.job.allowed_models)
            prev_nodes = copy_nodes(js.placement, W)
            rem = view.remaining(js) / k
            tot = float(js.job.work) / k
            for i in range(1, k + 1):
                if i > 1 and extra_gpus >= total_gpus:
                    break  # the extra copies alone could fill the cluster: no later copy joins Q
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
        wanted: dict[str, Placement] = {}
        jobs = first + extra
        if jobs:
            problem = self.round_problem(view, jobs, stype, cap, cap.copy(), L)
            result = self.solve_round(problem)
            wanted.update(merge_copies(result.plan))  # type: ignore[arg-type]  # keyed by job id
            self.dp_states.append(result.states)
            self.fallback_rounds += int(result.fallback)
            self.last_constants = result.constants
        self.rounds += 1
        decision = self.guard_starvation(view, wanted) or Decision.from_allocation(view, wanted)
        self.decision_times.append((view.now, len(view.running) + len(view.pending), time.perf_counter() - t0))
        return decision
