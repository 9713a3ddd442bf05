"""2-in-p-CoSchedule by maximum-weight matching (paper 4.1, Theorem 1).

Problem: the optimal co-schedule when packs hold at most two tasks (polynomial, Theorem 1).

Algorithm: the paper builds a graph with a loop of weight ``t_{i,p}`` on every task and an edge of weight
``w_{ii'} = min_j max(t_{i,p-j}, t_{i',j})`` (Algorithm 1 on the pair) and takes a minimum-weight perfect
matching with loops. Equivalently (spec 2.1, [OURS]): the cost is ``sum_i t_{i,p} - sum_{(i,i') in M} s_{ii'}``
with savings ``s_{ii'} = t_{i,p} + t_{i',p} - w_{ii'}``, so ``M`` is a maximum-weight matching over the edges
with ``s > 0``; unmatched tasks run alone on ``p`` processors. The matching is computed with networkx
(Edmonds' blossom algorithm).

Complexity: ``O(n^2 p)`` for the weights plus ``O(n^3)`` for the matching.
"""

from __future__ import annotations

import numpy as np

from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import optimal_one_pack
from gpuweave.packs.registry import Solution, register_algorithm


def matching_k2(profile: Profile) -> tuple[float, list[list[int]], list[int]]:
    """Return ``(OPT_2, packs, sigma)``."""
    import networkx as nx

    n, p = profile.n, profile.p
    rows = profile.rows
    alone = [rows[i][p - 1] for i in range(n)]
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    if p >= 2:
        for i in range(n):
            for j in range(i + 1, n):
                w = optimal_one_pack(rows, [i, j], p)[1]
                s = alone[i] + alone[j] - w
                if s > 0:
                    graph.add_edge(i, j, weight=s)
    mate = nx.max_weight_matching(graph, maxcardinality=False)
    sigma = [p] * n
    packs: list[list[int]] = []
    matched: set[int] = set()
    for a, b in sorted(tuple(sorted(e)) for e in mate):
        sg, _ = optimal_one_pack(rows, [a, b], p)
        sigma[a], sigma[b] = sg
        packs.append([a, b])
        matched.update((a, b))
    packs.extend([i] for i in range(n) if i not in matched)
    cost = sum(max(rows[i][sigma[i] - 1] for i in blk) for blk in packs)
    return float(cost), packs, sigma


@register_algorithm(
    "matching",
    summary="proven optimum for k = 2 by maximum-weight matching (Theorem 1)",
    exact=True,
    only_k=2,
    size_limit="matching_tasks",  # networkx's blossom matching: O(n^3), 500 tasks take half a minute
)
def matching(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    cost, packs, sigma = matching_k2(profile)
    return Solution(packs, np.asarray(sigma, dtype=np.int64), {"optimum": cost})
