"""FAR Phase 1: the family of allocations (Turek, Wolf, Yu, SPAA'92; FAR paper Sec. 3.1).

Problem. Choose, for each moldable task, an instance size. Phase 1 builds a *family* of such
allocations: a^1 gives every task its minimum-work size (ties: smallest size); a^{k+1} copies a^k
and grows only the currently longest task (ties: lowest index) to the minimum-work size among the
strictly larger sizes; the family ends when the longest task already has the largest size (spec
§2.1). Theorem 1 of the paper: running a rigid scheduler on every member and keeping the best gives
its approximation factor for the moldable problem.

Deviation from the paper, as the spec says [rev]: the paper's formula grows *every* task tied for
longest, its prose only "the longest one"; we follow the prose (identical unless times tie exactly).
[R] Sizes where a task cannot run (time ``inf``) are skipped; a task whose larger sizes are all
infeasible cannot grow, which ends the family like reaching the largest size.

Complexity: the family has at most n * (|sizes| - 1) + 1 members. :func:`family_steps` yields it as
one change per member in O(log n) each (a max-heap of current times); :func:`family` materialises
the lists in O(n) per member.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

from gpuweave.mig.problem import MigProblem


def min_work_allocation(problem: MigProblem) -> list[int]:
    """a^1: per task, the index (into ``problem.sizes``) of its minimum-work size; ties -> smallest."""
    sizes = problem.sizes
    alloc = []
    for row in problem.times:
        best_k, best_w = 0, math.inf
        for k, (s, t) in enumerate(zip(sizes, row)):
            w = s * t
            if w < best_w:
                best_k, best_w = k, w
        alloc.append(best_k)
    return alloc


def _next_size(problem: MigProblem, task: int, k: int) -> int | None:
    sizes, row = problem.sizes, problem.times[task]
    best_k, best_w = None, math.inf
    for kk in range(k + 1, len(sizes)):
        w = sizes[kk] * row[kk]
        if w < best_w:
            best_k, best_w = kk, w
    return best_k


def family_steps(problem: MigProblem) -> Iterator[tuple[int, int]]:
    """The family as changes to a^1: yields ``(task, new size index)`` for a^2, a^3, ...

    Longest task = max t_i(a_i), ties -> lowest index (heap of (-time, index) with lazy deletion).
    """
    alloc = min_work_allocation(problem)
    times = problem.times
    top = len(problem.sizes) - 1
    heap = [(-times[i][alloc[i]], i) for i in range(problem.n)]
    heapq.heapify(heap)
    while heap:
        neg_t, j = heap[0]
        if -neg_t != times[j][alloc[j]]:
            heapq.heappop(heap)  # stale entry
            continue
        if alloc[j] == top:
            return
        nk = _next_size(problem, j, alloc[j])
        if nk is None:
            return
        alloc[j] = nk
        heapq.heapreplace(heap, (-times[j][nk], j))
        yield j, nk


def family(problem: MigProblem) -> list[list[int]]:
    """All allocations a^1, a^2, ... (lists of size indices), in order."""
    a = min_work_allocation(problem)
    out = [a[:]]
    for j, k in family_steps(problem):
        a[j] = k
        out.append(a[:])
    return out
