"""Exact k-in-p-CoSchedule by enumerating set partitions (paper 4.3, method 1: "exhaustive search").

Problem: the optimal co-schedule for small ``n``.

Algorithm: enumerate every partition of the tasks into blocks of at most ``min(k, p)`` tasks (task ``i`` either
opens a new block or joins an open one), evaluate each block with Algorithm 1 (memoised per subset) and keep
the cheapest partition (first found on ties).

Complexity: ``O(Bell(n))`` partitions (115,975 for ``n = 10``), each evaluated in ``O(n)`` after memoisation.
Limited to ``n <= 10``.
"""

from __future__ import annotations

import numpy as np

from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import optimal_one_pack
from gpuweave.packs.registry import Solution, register_algorithm

MAX_N = 10


def enumerate_optimum(profile: Profile, k: int) -> tuple[float, list[list[int]]]:
    """Return ``(OPT_k, packs)`` by exhaustive enumeration of the partitions."""
    n, p = profile.n, profile.p
    rows = profile.rows
    limit = min(k, p)
    memo: dict[int, float] = {}

    def cost1(mask: int) -> float:
        c = memo.get(mask)
        if c is None:
            c = optimal_one_pack(rows, [b for b in range(n) if mask >> b & 1], p)[1]
            memo[mask] = c
        return c

    best_cost = float("inf")
    best: list[int] = []
    blocks: list[int] = []

    def rec(i: int) -> None:
        nonlocal best_cost, best
        if i == n:
            c = sum(cost1(b) for b in blocks)
            if c < best_cost:
                best_cost, best = c, list(blocks)
            return
        bit = 1 << i
        for r in range(len(blocks)):
            if blocks[r].bit_count() < limit:
                blocks[r] |= bit
                rec(i + 1)
                blocks[r] ^= bit
        blocks.append(bit)
        rec(i + 1)
        blocks.pop()

    rec(0)
    return best_cost, [[b for b in range(n) if m >> b & 1] for m in best]


@register_algorithm("exact-enum", summary="proven optimum by partition enumeration (n <= 10)", exact=True, max_n=MAX_N)
def exact_enum(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    cost, packs = enumerate_optimum(profile, k)
    rows = profile.rows
    sigma = [0] * profile.n
    for blk in packs:
        sg, _ = optimal_one_pack(rows, blk, profile.p)
        for i, j in zip(blk, sg):
            sigma[i] = j
    return Solution(packs, np.asarray(sigma, dtype=np.int64), {"optimum": cost})
