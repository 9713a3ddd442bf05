"""Exact k-in-p-CoSchedule by dynamic programming over subsets (spec 2.3, the recommended exact solver).

Problem: the optimal co-schedule (strongly NP-hard for ``k >= 3``, Theorem 2), for small ``n``.

Algorithm: ``cost1(P)`` is the optimal one-pack cost of every subset ``P`` with ``|P| <= min(k, p)``
(Algorithm 1, Theorem 3), ``+inf`` otherwise. Then
``OPT(S) = min over P subset of S containing the lowest task of S of cost1(P) + OPT(S \\ P)``, ``OPT({}) = 0``.
The pairs ``(S, P)`` are enumerated once per ``n`` and the recurrence is evaluated layer by layer
(``|S| = 1..n``) with numpy, so one value of ``k`` costs a few vectorised passes. The paper computes the
Workload-I optimum by "exhaustive search" (4.3); :mod:`gpuweave.packs.exact_enum` is that search and
agrees with this DP.

Complexity: ``O(3^n)`` time and memory for the pairs (about ``3^n / 2`` of them), plus
``O(2^n p log k)`` for ``cost1``. Limited to ``n <= 14`` (2.4 million pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import optimal_one_pack
from gpuweave.packs.registry import Solution, register_algorithm

MAX_N = 14


@dataclass(frozen=True, slots=True)
class _Pairs:
    s: np.ndarray  # S of every pair, pairs sorted by (|S|, S)
    p: np.ndarray  # P (contains the lowest bit of S)
    r: np.ndarray  # S \ P
    layer_bounds: list[tuple[int, int]]  # pair range of the sets S of each size 1..n
    group_start: np.ndarray  # first pair index of each S (indexed by S)
    group_end: np.ndarray


@lru_cache(maxsize=4)
def _pairs(n: int) -> _Pairs:
    ss: list[int] = []
    ps: list[int] = []
    for s in range(1, 1 << n):
        low = s & -s
        rest = s ^ low
        sub = rest
        while True:
            ss.append(s)
            ps.append(sub | low)
            if sub == 0:
                break
            sub = (sub - 1) & rest
    s_arr = np.asarray(ss, dtype=np.int64)
    p_arr = np.asarray(ps, dtype=np.int64)
    size = np.bitwise_count(s_arr.astype(np.uint64)).astype(np.int64)
    order = np.lexsort((s_arr, size))
    s_arr, p_arr, size = s_arr[order], p_arr[order], size[order]
    r_arr = s_arr ^ p_arr
    bounds = []
    for c in range(1, n + 1):
        a, b = np.searchsorted(size, [c, c + 1])
        bounds.append((int(a), int(b)))
    change = np.flatnonzero(np.diff(s_arr)) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [len(s_arr)]))
    gs = np.zeros(1 << n, dtype=np.int64)
    ge = np.zeros(1 << n, dtype=np.int64)
    gs[s_arr[starts]] = starts
    ge[s_arr[starts]] = ends
    return _Pairs(s_arr, p_arr, r_arr, bounds, gs, ge)


def one_pack_costs(profile: Profile, max_size: int) -> np.ndarray:
    """``cost1[mask]`` for every subset of at most ``max_size`` tasks (``+inf`` for larger ones)."""
    n, p = profile.n, profile.p
    rows = profile.rows
    cost1 = np.full(1 << n, np.inf)
    cost1[0] = 0.0
    limit = min(max_size, p)
    for mask in range(1, 1 << n):
        if mask.bit_count() <= limit:
            tasks = [b for b in range(n) if mask >> b & 1]
            cost1[mask] = optimal_one_pack(rows, tasks, p)[1]
    return cost1


@dataclass(slots=True)
class ExactResult:
    cost: float
    packs: list[list[int]]
    sigma: list[int]


def exact_from_costs(profile: Profile, k: int, cost1: np.ndarray) -> ExactResult:
    """Solve for one ``k`` given ``cost1`` (computed with ``max_size >= min(k, p)``)."""
    n, p = profile.n, profile.p
    if n > MAX_N:
        raise ValueError(f"the subset DP handles at most {MAX_N} tasks, got {n}")
    pr = _pairs(n)
    sizes = np.bitwise_count(np.arange(1 << n, dtype=np.uint64)).astype(np.int64)
    c1 = np.where(sizes <= min(k, p), cost1, np.inf)
    opt = np.full(1 << n, np.inf)
    opt[0] = 0.0
    for a, b in pr.layer_bounds:
        vals = c1[pr.p[a:b]] + opt[pr.r[a:b]]
        s_layer = pr.s[a:b]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(s_layer)) + 1))
        opt[s_layer[starts]] = np.minimum.reduceat(vals, starts)
    full = (1 << n) - 1
    packs: list[list[int]] = []
    s = full
    while s:
        a, b = int(pr.group_start[s]), int(pr.group_end[s])
        vals = c1[pr.p[a:b]] + opt[pr.r[a:b]]
        pick = a + int(np.argmin(vals))
        pmask = int(pr.p[pick])
        packs.append([i for i in range(n) if pmask >> i & 1])
        s = int(pr.r[pick])
    rows = profile.rows
    sigma = [0] * n
    for blk in packs:
        sg, _ = optimal_one_pack(rows, blk, p)
        for i, j in zip(blk, sg):
            sigma[i] = j
    return ExactResult(float(opt[full]), packs, sigma)


def exact_all_k(profile: Profile, ks: Sequence[int]) -> dict[int, ExactResult]:
    """``OPT_k`` for several ``k`` on one instance, sharing the one-pack costs."""
    cost1 = one_pack_costs(profile, max(ks))
    return {k: exact_from_costs(profile, k, cost1) for k in ks}


@register_algorithm("exact", summary="proven optimum by subset DP, O(3^n) (n <= 14)", exact=True, max_n=MAX_N)
def exact(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    res = exact_from_costs(profile, k, one_pack_costs(profile, k))
    return Solution(res.packs, np.asarray(res.sigma, dtype=np.int64), {"optimum": res.cost})
