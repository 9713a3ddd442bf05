"""PACK-BY-PACK(epsilon), heuristic H4 of the paper (Section 5), with its -1 and -9 variants.

Problem: k-in-p-CoSchedule (no guarantee).

Algorithm: start from ``sigma = 1`` and the list ``L`` of tasks by non-increasing ``t_{i,sigma(i)}``
(ties: lower index first). While ``L`` is not empty, look at the head ``i*`` (time ``t_max``) and the tasks
``V_req`` whose time is at least ``(1-eps) t_max``. If they need ``p_req >= p`` processors, close a pack by
taking tasks of ``V_req`` in order while they fit (at most ``k`` tasks and ``p`` processors), stopping at the
first that does not (spec R2); otherwise give ``i*`` one more processor and re-insert it. Finally
Algorithm 1 re-assigns processors inside every pack. The paper's "V_red" is ``V_req`` (R3).

* ``pack-by-pack-1``: ``eps = 0.5``.
* ``pack-by-pack-9``: the best of ``eps`` in ``{0.1, ..., 0.9}`` (minimum cost, first on ties, R7).

The parameters come from ``data/paper_numbers.toml`` ([heuristics], paper Section 5).

Complexity: at most ``n(p-1)`` increments and ``n`` removals; each step costs ``O(log n + p)`` (a bisection
finds ``V_req``, ``p_req`` is summed only until it reaches ``p``) plus the list insertion ``O(n)``.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from typing import Sequence

import numpy as np

from gpuweave.packs.data import paper_numbers
from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import reassign
from gpuweave.packs.registry import Solution, register_algorithm

_INF = float("inf")


def pack_by_pack_run(
    rows: Sequence[Sequence[float]], n: int, p: int, k: int, eps: float
) -> tuple[list[list[int]], list[int], float]:
    """Return ``(packs, sigma, cost)`` for one value of ``eps`` (``sigma`` after Algorithm 1)."""
    sigma = [1] * n
    lst = sorted((-rows[i][0], i) for i in range(n))  # ascending key = non-increasing time, index asc
    packs: list[list[int]] = []
    while lst:
        negt, istar = lst[0]
        thr = (1.0 - eps) * (-negt)
        m = bisect_right(lst, (-thr, _INF))  # V_req = lst[:m]: all tasks with t >= (1-eps) t_max
        preq = 0
        for r in range(m):
            preq += sigma[lst[r][1]]
            if preq >= p:
                break
        if preq >= p:
            used = 0
            take = 0
            for r in range(m):
                s = sigma[lst[r][1]]
                if used + s <= p and take < k:
                    used += s
                    take += 1
                else:
                    break
            packs.append([lst[r][1] for r in range(take)])
            del lst[:take]
        else:
            del lst[0]
            s = sigma[istar] + 1
            sigma[istar] = s
            insort(lst, (-rows[istar][s - 1], istar))
    cost = reassign(rows, packs, sigma, p)
    return packs, sigma, cost


def best_over_eps(profile: Profile, k: int, eps_values: Sequence[float]) -> Solution:
    rows = profile.rows
    best = None
    for eps in eps_values:
        packs, sigma, cost = pack_by_pack_run(rows, profile.n, profile.p, k, float(eps))
        if best is None or cost < best[2]:
            best = (packs, sigma, cost, eps)
    assert best is not None
    return Solution(best[0], np.asarray(best[1], dtype=np.int64), {"eps": float(best[3])})


@register_algorithm("pack-by-pack-1", summary="pack-by-pack with eps = 0.5 (paper Section 5)")
def pack_by_pack_1(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return best_over_eps(profile, k, [paper_numbers()["heuristics"]["pbp_eps_single"]])


@register_algorithm("pack-by-pack-9", summary="pack-by-pack, best of eps = 0.1..0.9 (paper Section 5)")
def pack_by_pack_9(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    return best_over_eps(profile, k, paper_numbers()["heuristics"]["pbp_eps_multi"])
