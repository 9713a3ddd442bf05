"""Algorithm 2, MAKE-PACK: first-fit packing of tasks with fixed processor counts (paper 4.4).

Problem: given ``sigma`` (each ``sigma(i) <= p``), split the tasks into packs of at most ``k`` tasks and
``p`` processors, trying to keep the sum of pack makespans small.

Algorithm: like First-Fit-Decreasing-Height. Sort the tasks by non-increasing ``t_{i,sigma(i)}`` (ties:
lower index first, spec R8); put each task into the first pack, in creation order, that still has room for
``sigma(i)`` processors and one more task; open a new pack when none has. The cost of a pack is the time of
its first task.

Complexity: ``O(n log n + n u)`` with ``u`` packs (the paper quotes ``O(n log n)`` with a smarter search).
"""

from __future__ import annotations

from typing import Sequence


def sorted_by_time(rows: Sequence[Sequence[float]], sigma: Sequence[int]) -> list[int]:
    """Task indices by non-increasing ``t_{i,sigma(i)}``, lower index first on ties."""
    return sorted(range(len(sigma)), key=lambda i: (-rows[i][sigma[i] - 1], i))


def make_pack(
    rows: Sequence[Sequence[float]],
    sigma: Sequence[int],
    p: int,
    k: int,
    order: Sequence[int] | None = None,
) -> list[list[int]]:
    """Return the packs (task indices, in creation order). ``order`` may pass a precomputed sort."""
    if order is None:
        order = sorted_by_time(rows, sigma)
    packs: list[list[int]] = []
    used: list[int] = []
    first_open = 0  # packs before this index are full (k tasks or p processors)
    for i in order:
        s = sigma[i]
        placed = False
        for b in range(first_open, len(packs)):
            if used[b] + s <= p and len(packs[b]) < k:
                packs[b].append(i)
                used[b] += s
                placed = True
                break
        if not placed:
            packs.append([i])
            used.append(s)
        while first_open < len(packs) and (used[first_open] == p or len(packs[first_open]) == k):
            first_open += 1
    return packs


def packs_raw_cost(rows: Sequence[Sequence[float]], packs: Sequence[Sequence[int]], sigma: Sequence[int]) -> float:
    """Cost of packs under ``sigma``: sum of the longest task of each pack."""
    return sum(max(rows[i][sigma[i] - 1] for i in b) for b in packs)
