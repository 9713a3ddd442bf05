"""FixPart baselines: a static MIG partition, tasks in FIFO order (FAR paper Sec. 6.1; spec §5.2).

Problem. With a fixed partition P (configured before the batch; no reconfiguration), run the tasks
in FIFO order, each on the instance that becomes free first (heap keyed by (free time, insertion
counter), instances first inserted in partition order, GPU by GPU). FixPart(1,...,1) uses only
1-slice instances, FixPart(7) the whole GPU (A30: FixPart(4)), FixPartBest the best of all maximal
partitions (19 on A100/H100, 5 on A30).

[R] A task whose time on an instance is ``inf`` skips that instance (takes the first-free instance
it can run on); if it can run on none, the partition is infeasible (makespan ``inf``) and
FixPartBest ignores it.

The schedule declares the partition as ``initial_instances`` (alive from time 0, no operations).
Complexity: O(n log |P|) per partition; FixPartBest O(#partitions * n log |P|).
"""

from __future__ import annotations

import heapq
import math

from gpuweave.errors import InputError
from gpuweave.hardware.mig import Placement, get_partition, partition_label, partitions
from gpuweave.mig.problem import MigProblem, lower_bound
from gpuweave.mig.registry import register_planner
from gpuweave.mig.schedule import InitialInstance, Schedule, ScheduledTask


def fixpart_makespan(
    problem: MigProblem, partition: tuple[Placement, ...]
) -> tuple[float, list[tuple[int, int, Placement, float]]]:
    """Makespan and placements ``(task, gpu, placement, start)`` of FixPart(partition)."""
    times = problem.times
    kidx = {s: k for k, s in enumerate(problem.sizes)}
    heap: list[tuple[float, int, int, Placement]] = []
    counter = 0
    for g in range(problem.gpus):
        for p in partition:
            heap.append((0.0, counter, g, p))
            counter += 1
    heapq.heapify(heap)
    out: list[tuple[int, int, Placement, float]] = []
    ms = 0.0
    for i in range(problem.n):
        row = times[i]
        skipped = []
        while heap and math.isinf(row[kidx[heap[0][3].size]]):
            skipped.append(heapq.heappop(heap))
        if not heap:
            return math.inf, []
        free, _, g, p = heapq.heappop(heap)
        end = free + row[kidx[p.size]]
        out.append((i, g, p, free))
        ms = max(ms, end)
        heapq.heappush(heap, (end, counter, g, p))
        counter += 1
        for item in skipped:
            heapq.heappush(heap, item)
    return ms, out


def fixpart(problem: MigProblem, partition: tuple[Placement, ...] | str) -> Schedule:
    """FixPart(P) as a schedule; ``partition`` is a placement tuple or a label like ``"4-2-1"``."""
    part = get_partition(problem.geometry, partition) if isinstance(partition, str) else partition
    ms, placed = fixpart_makespan(problem, part)
    label = partition_label(part)
    if math.isinf(ms):
        raise InputError(f"FixPart({label}): some task cannot run on any instance of the partition (time inf)")
    kidx = {s: k for k, s in enumerate(problem.sizes)}
    tasks = [
        ScheduledTask(
            problem.names[i],
            g,
            p.size,
            p.start,
            st,
            st + problem.times[i][kidx[p.size]],
            problem.commands[i] if problem.commands else None,
        )
        for i, g, p, st in placed
    ]
    init = [InitialInstance(g, p.size, p.start) for g in range(problem.gpus) for p in part]
    return Schedule(
        problem.gpu,
        problem.gpus,
        ms,
        lower_bound(problem),
        tasks,
        [],
        "table",
        init,
        f"fixpart:{label}",
        {"partition": label},
    )


def fixpart_best(problem: MigProblem) -> Schedule:
    """FixPartBest: the best maximal partition (first in Fig. 1 order on ties)."""
    best, best_ms = None, math.inf
    for part in partitions(problem.geometry):
        ms, _ = fixpart_makespan(problem, part)
        if ms < best_ms:
            best, best_ms = part, ms
    if best is None:
        raise InputError("no fixed partition can run every task")
    sched = fixpart(problem, best)
    sched.algo = "fixpart-best"
    return sched


def ones_partition(problem: MigProblem) -> str:
    """Label of FixPart(1,...,1) for the GPU."""
    return "-".join(["1"] * problem.geometry.num_slices)


def whole_partition(problem: MigProblem) -> str:
    """Label of FixPart(7) (A30: FixPart(4))."""
    return str(problem.geometry.max_size)


@register_planner(
    "fixpart",
    help="FixPart(P): static partition P, e.g. fixpart:1-1-1-1-1-1-1, fixpart:7, fixpart:4-2-1",
    takes_arg=True,
)
def fixpart_planner(problem: MigProblem, arg: str | None) -> Schedule:
    return fixpart(problem, arg or "")


@register_planner("fixpart-best", help="FixPartBest: the best static partition")
def fixpart_best_planner(problem: MigProblem, arg: str | None) -> Schedule:
    return fixpart_best(problem)
