"""POP for Hadar's round: split the queue and the servers into k sub-problems and solve each with the DP.

Problem (Narayanan et al., "Solving Large-Scale Granular Resource Allocation Problems Efficiently with POP",
SOSP'21): a granular allocation problem over many jobs and resources is split into k sub-problems, each with about
1/k of the jobs and 1/k of every resource type, solved independently; the union of their allocations is the
answer. Here the problem is one Hadar round (:class:`~gpuweave.hadar.problem.RoundProblem`):

* servers: each GPU type's servers in index order, dealt round robin to the k partitions, so every partition holds
  about 1/k of every type;
* jobs: a running job goes to the partition of the server it runs on (so keeping its placement stays a candidate;
  if its placement spans partitions it is treated as not placed there), a waiting job to the partition with the
  fewest jobs so far, in Q order;
* each partition is an ordinary round: its own price constants (over its jobs and GPUs, Eqs. 5-7), the DP with
  the same state budget, plans mapped back to the cluster's server indices.

``partitions=1`` is not routed here (the policy runs the whole DP). The price of splitting is optimality: a
partition cannot use another's GPUs. :func:`plan_value` scores any plan with the whole round's prices and payoffs
(the DP's own accounting, in Q order), so ``gpuweave bench pop`` can compare a partitioned plan with the whole DP's.

Complexity: k DPs on about |Q|/k jobs and H/k servers each: O(sum over partitions of (budget + |Q_p|) * FIND_ALLOC)
with FIND_ALLOC's per-type work shrinking with H/k; the budget is per partition.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuweave.hadar.dp import DEFAULT_MAX_STATES, DPResult, HadarDP
from gpuweave.hadar.problem import RoundProblem


def split_round(problem: RoundProblem, k: int) -> list[tuple[RoundProblem, list[int]]]:
    """The k sub-problems (at most one per server) with, for each, its servers' indices in the whole problem
    (ascending: local server h is ``servers[h]``)."""
    stype = np.asarray(problem.server_type, dtype=np.int64)
    H = stype.size
    k = max(1, min(int(k), H))
    part_of = np.empty(H, dtype=np.int64)
    for r in np.unique(stype).tolist():
        idx = np.flatnonzero(stype == r)
        part_of[idx] = np.arange(idx.size) % k
    servers = [lst for lst in (np.flatnonzero(part_of == p).tolist() for p in range(k)) if lst]
    k = len(servers)  # a type with fewer servers than k leaves some partitions without it, never all empty
    local = {h: (p, i) for p in range(k) for i, h in enumerate(servers[p])}
    queues: list[list] = [[] for _ in range(k)]
    for job in problem.jobs:
        prev = job.prev
        if prev:
            p = local[prev[0][0]][0]
            inside = all(local[h][0] == p for h, _ in prev)
            queues[p].append(replace(job, prev=tuple((local[h][1], g) for h, g in prev) if inside else None))
            continue
        p = min(range(k), key=lambda q: len(queues[q]))
        queues[p].append(job)
    out = []
    cap = np.asarray(problem.capacity, dtype=np.int64)
    free = np.asarray(problem.free, dtype=np.int64)
    for p in range(k):
        sub = replace(
            problem,
            server_type=stype[servers[p]],
            capacity=cap[servers[p]],
            free=free[servers[p]],
            jobs=queues[p],
        )
        out.append((sub, servers[p]))
    return out


def partitioned_round(
    problem: RoundProblem, k: int, *, max_states: int = DEFAULT_MAX_STATES, backfill: bool = False
) -> DPResult:
    """Solve :func:`split_round`'s sub-problems with the DP and join their plans (cluster server indices). The
    value is the sum of the partitions' own values (each in its own prices); states add up; fallback if any."""
    plan: dict = {}
    value, states, memo, fallback = 0.0, 0, 0, False
    constants = None
    for sub, servers in split_round(problem, k):
        if not sub.jobs:
            continue
        dp = HadarDP(sub, max_states=max_states)
        result = dp.solve()
        if backfill:
            result = dp.backfill(result)
        for key, alloc in result.plan.items():
            plan[key] = tuple((servers[h], g) for h, g in alloc)
        value += result.value
        states += result.states
        memo += result.memo_keys
        fallback = fallback or result.fallback
        constants = constants or result.constants
    if constants is None:
        constants = HadarDP(replace(problem, jobs=[]), max_states=max_states).constants
    return DPResult(value, plan, states, memo, fallback, constants)


def plan_value(problem: RoundProblem, plan: dict) -> float:
    """Eq. 8 of ``plan`` under the whole round's prices and payoffs, with the DP's accounting: jobs in Q order,
    each paying its GPUs at the prices before it is placed (0 for an empty plan)."""
    dp = HadarDP(problem, max_states=1)
    F = [int(v) for v in problem.free]
    total = 0.0
    for i, job in enumerate(problem.jobs):
        alloc = plan.get(job.key)
        if alloc is None:
            continue
        types = sorted({dp.stypel[h] for h, _ in alloc})
        rate = dp.consl[i][types[0]] if len(alloc) == 1 else min(dp.unconsl[i][r] for r in types)
        cost = sum(dp.P[h][dp.capl[h] - F[h]] * g for h, g in alloc) + dp.comm * (len(alloc) - 1)
        total += dp.payoff(i, alloc, rate) - cost
        for h, g in alloc:
            F[h] -= g
    return total
