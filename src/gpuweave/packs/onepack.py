"""Algorithm 1, OPTIMAL-1-PACK-SCHEDULE: the optimal processor assignment inside one pack (paper 4.2).

Problem: given ``k <= p`` tasks that start together, choose ``sigma(i) >= 1`` with ``sum sigma <= p``
minimising ``max_i t_{i,sigma(i)}``.

Algorithm (Theorem 3): start from ``sigma = 1``; ``p - k`` times give one more processor to the currently
longest task (a max-heap on ``t_{i,sigma(i)}``). All ``p`` processors are handed out, even to a task on a
plateau (spec R16, kept literal). Ties in the heap go to the earlier position in the pack list (R8).

Complexity: ``O(k log k + (p - k) log k)``. The ``O(k p^2)`` dynamic program of
:mod:`gpuweave.packs.onepack_dp` is the cross-check.
"""

from __future__ import annotations

import heapq
from typing import Sequence


def optimal_one_pack(rows: Sequence[Sequence[float]], tasks: Sequence[int], p: int) -> tuple[list[int], float]:
    """Return ``(sigma, cost)`` for the pack ``tasks``; ``sigma[r]`` belongs to ``tasks[r]``.

    ``rows[i][j-1]`` is ``t_{i,j}`` (a list of lists is fastest here; a numpy array works too).
    """
    k = len(tasks)
    if k == 0:
        return [], 0.0
    if k > p:
        raise ValueError(f"a pack of {k} tasks does not fit on {p} processors")
    sigma = [1] * k
    heap = [(-rows[i][0], r) for r, i in enumerate(tasks)]
    heapq.heapify(heap)
    for _ in range(p - k):
        _, r = heap[0]
        s = sigma[r] + 1
        sigma[r] = s
        heapq.heapreplace(heap, (-rows[tasks[r]][s - 1], r))
    return sigma, -heap[0][0]


def reassign(rows: Sequence[Sequence[float]], packs: Sequence[Sequence[int]], sigma: list[int], p: int) -> float:
    """Apply Algorithm 1 to every pack, overwriting ``sigma`` in place; return the new co-schedule cost."""
    total = 0.0
    for b in packs:
        s, c = optimal_one_pack(rows, b, p)
        for i, j in zip(b, s):
            sigma[i] = j
        total += c
    return total
