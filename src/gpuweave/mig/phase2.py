"""FAR Phase 2: LPT + list scheduling on the repartitioning tree (FAR paper Sec. 3.2, Algorithm 1).

Problem. Given a rigid allocation (a size per task), place every task on a node of the
repartitioning forest and give it a start time. Tasks of each size are taken longest first (LPT);
the node that becomes free first (min-heap keyed by end time, then insertion order) takes the
longest remaining task of its size, creating its instance on first use; a node with no task of its
size left is destroyed (if it was used and tasks remain anywhere) and its children inherit its end
time. Create/destroy operations are sequential (per GPU, [R] for several GPUs): each is
``rec := max(rec, node end) + t_op`` and is recorded as the interval ``[rec - t_op, rec]`` (spec §2.2).

:func:`best_allocation` runs this on every member of the Phase-1 family and keeps the first with the
smallest makespan (strict ``<``). [R] An exact speed-up: a member whose simple lower bound
max(max_i t_i(a_i), sum_i a_i t_i(a_i) / #slices) is already >= the best makespan cannot win under
the strict ``<`` rule and is skipped (``prune=False`` evaluates all members, as the paper does).

Complexity: O(n log n + #nodes) per allocation; with the family, O(n^2 log n) worst case, usually
far less thanks to pruning.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from gpuweave.mig.phase1 import family_steps, min_work_allocation
from gpuweave.mig.problem import MigProblem
from gpuweave.mig.schedule import Operation
from gpuweave.mig.tree import Forest, Node, build_forest


def schedule_allocation(problem: MigProblem, alloc: list[int]) -> Forest:
    """SCHEDULE_ALLOCATION (spec §2.2): the forest with task lists, start times and operations."""
    sizes = problem.sizes
    times = problem.times
    geom = problem.geometry
    forest = build_forest(geom, problem.gpus, sizes)
    create = [geom.create_s[s] for s in sizes]
    destroy = [geom.destroy_s[s] for s in sizes]
    # groups[k]: task ids of size index k, ascending by (time, -id) so pop() is LPT with ties -> lowest id
    groups: list[list[int]] = [[] for _ in sizes]
    for i, k in enumerate(alloc):
        groups[k].append(i)
    for k, grp in enumerate(groups):
        grp.sort(key=lambda i: (times[i][k], -i))
    left = problem.n
    rec = [0.0] * problem.gpus
    ops: list[Operation] = []
    heap: list[tuple[float, int, Node]] = []
    counter = 0
    for root in forest.roots:
        heap.append((0.0, counter, root))
        counter += 1
    pop, push = heapq.heappop, heapq.heappush
    while heap and left:
        _, _, node = pop(heap)
        k = node.k
        group = groups[k]
        if group:
            g = node.gpu
            if not node.tasks:
                c = create[k]
                r = rec[g]
                r = (r if r > node.end else node.end) + c
                rec[g] = r
                ops.append(Operation("create", g, node.size, node.start_slice, r - c, r))
                node.end = r
            tid = group.pop()
            d = times[tid][k]
            node.tasks.append(tid)
            node.times.append(d)
            node.starts.append(node.end)
            node.end += d
            left -= 1
            push(heap, (node.end, counter, node))
            counter += 1
        else:
            if node.tasks:
                g = node.gpu
                d_t = destroy[k]
                r = rec[g]
                r = (r if r > node.end else node.end) + d_t
                rec[g] = r
                ops.append(Operation("destroy", g, node.size, node.start_slice, r - d_t, r))
            for ch in node.children:
                ch.end = node.end
                push(heap, (ch.end, counter, ch))
                counter += 1
    if left:
        raise RuntimeError("phase 2 left tasks unplaced (a size has no node in the tree)")
    forest.ops = ops
    return forest


@dataclass(slots=True)
class Phase2Result:
    forest: Forest
    alloc: list[int]
    makespan: float
    best_index: int  # position of the winner in the family
    family_size: int
    evaluated: int
    makespans: list[float] = field(default_factory=list)  # per member; nan where pruned


def best_allocation(problem: MigProblem, *, prune: bool = True) -> Phase2Result:
    """PHASE2 over the Phase-1 family: the first allocation with the smallest Phase-2 makespan."""
    sizes = problem.sizes
    times = problem.times
    alloc = min_work_allocation(problem)
    slices = problem.num_slices
    area = sum(sizes[k] * times[i][k] for i, k in enumerate(alloc))
    hmax = max(times[i][k] for i, k in enumerate(alloc))
    best: Forest | None = None
    best_ms = math.inf
    best_alloc = alloc[:]
    best_idx = 0
    evaluated = 0
    makespans: list[float] = []
    member = 0

    def consider(h: float) -> None:
        nonlocal best, best_ms, best_alloc, best_idx, evaluated
        if prune and max(h, area / slices) >= best_ms:
            makespans.append(math.nan)
            return
        forest = schedule_allocation(problem, alloc)
        evaluated += 1
        ms = forest.makespan()
        makespans.append(ms)
        if ms < best_ms:
            best, best_ms, best_alloc, best_idx = forest, ms, alloc[:], member

    consider(hmax)
    for j, nk in family_steps(problem):
        member += 1
        ok = alloc[j]
        area += sizes[nk] * times[j][nk] - sizes[ok] * times[j][ok]
        alloc[j] = nk
        # any single task's time is a valid lower bound; the grown task's is at hand
        consider(times[j][nk])
    assert best is not None
    return Phase2Result(best, best_alloc, best_ms, best_idx, member + 1, evaluated, makespans)
