"""Hadar's per-round problem (Eq. 8 summed over Q) solved exactly as one HiGHS MILP: a named variant.

Problem (paper §IV, Eq. 8; spec hadar.md §2.5, §2.8): choose for each queued job at most one allocation of
exactly ``W_j`` GPUs so that the sum over selected jobs of ``U_j(f(a) - a_j + 1) - price - comm(a)`` is
largest. The paper says Algorithm 2 "generates optimal scheduling decisions for the jobs in the queue in
each round"; our DP (:mod:`gpuweave.hadar.dp`) is exact only while its memo budget lasts, and on the 480-job
trace it finishes most rounds with the spec's greedy fallback (Q order). This module answers "what would
the round's *optimal* decision do?" so that the reproduction can tell the budget's effect from the
algorithm's.

Model. Columns: one binary per (job, candidate) where the candidates are the DP's generator on the round's
free vector (KEEP, SPREAD) plus PACKED on *every* server that holds the job (the DP keeps only the cheapest
server per type, which is exact for a sequential choice but not for a joint one), and one binary ``z_hg``
per free GPU ``g`` of server ``h``. Rows: each job takes at most one candidate; on each server the GPUs the
chosen candidates take equal the ``z`` used. Objective: maximise sum of candidate utilities minus comm
minus ``sum_h sum_g k_h(gamma_h + g) z_hg``. Prices grow with ``g`` (Eq. 5), so the optimum uses a
server's cheapest free GPUs first and a server holding ``n`` new GPUs pays ``k(gamma) + ... +
k(gamma + n - 1)``.

Departure from the DP's accounting (stated, not hidden): the DP charges a job all of its ``k`` GPUs on a
server at the price *before* it arrives (spec §2.8 "prices at pre-allocation gamma"), which makes the total
depend on the order of selection; here every GPU pays its own step on the price curve, which is
order-free. For 1-GPU jobs (96-100 % of the Philly workload) the two totals are identical.

Complexity: NP-hard in general (gang allocations); on the trace's rounds the LP relaxation is nearly a
transportation problem and HiGHS closes it in tens of milliseconds. ``time_limit`` guards a round; if HiGHS
does not prove optimality in time the round falls back to the DP's plan and is counted.
"""

from __future__ import annotations

import math

import numpy as np

from gpuweave.hadar.dp import DEFAULT_MAX_STATES, DPResult, HadarDP
from gpuweave.hadar.problem import RoundProblem
from gpuweave.highs_models import solve_binary_milp


def exact_round(problem: RoundProblem, *, time_limit: float = 10.0, max_states: int = DEFAULT_MAX_STATES) -> DPResult:
    """The optimal round plan under the model of the module docstring (``fallback`` = HiGHS ran out of time)."""
    dp = HadarDP(problem, max_states=max_states)
    jobs = problem.jobs
    F0 = tuple(int(v) for v in problem.free)
    cap = dp.capl
    pmin = min((dp.P[h][cap[h] - F0[h]] for h in range(len(F0)) if F0[h] > 0), default=math.inf)
    cost: list[float] = []
    ri: list[int] = []
    rc: list[int] = []
    rv: list[float] = []
    columns: list[tuple[int, tuple]] = []
    n_jobs = len(jobs)
    for i, j in enumerate(jobs):
        W = j.num_gpus
        cands: dict[tuple, float] = {}
        for c in dp.candidates(i, F0):
            cands[c.alloc] = c.rate
        for r in dp.types[i]:
            rate = dp.consl[i][r]
            if rate > 0:
                for h in dp.by_type[r]:
                    if F0[h] >= W:
                        cands.setdefault(((h, W),), rate)
        for alloc, rate in cands.items():
            value = dp.payoff(i, alloc, rate) - dp.comm * (len(alloc) - 1)
            if value <= W * pmin:
                continue  # cannot pay even the cheapest free GPUs: never in an optimum
            col = len(cost)
            columns.append((i, alloc))
            cost.append(-value)
            ri.append(i)
            rc.append(col)
            rv.append(1.0)
            for h, k in alloc:
                ri.append(n_jobs + h)
                rc.append(col)
                rv.append(float(k))
    if not columns:
        return DPResult(0.0, {}, 0, 0, False, dp.constants)
    for h, f in enumerate(F0):
        for g in range(f):
            col = len(cost)
            cost.append(dp.P[h][cap[h] - f + g])
            ri.append(n_jobs + h)
            rc.append(col)
            rv.append(-1.0)
    lo = [-np.inf] * n_jobs + [0.0] * len(F0)
    hi = [1.0] * n_jobs + [0.0] * len(F0)
    try:
        sol = solve_binary_milp(np.array(cost), np.array(ri), np.array(rc), np.array(rv), lo, hi, 0.0, time_limit)
    except RuntimeError:
        result = dp.solve()
        return DPResult(result.value, result.plan, len(cost), 0, True, dp.constants)
    if sol is None:  # cannot happen (the empty plan is feasible); keep the DP's answer if it does
        return dp.solve()
    objective, x = sol
    plan = {jobs[i].key: alloc for (i, alloc), v in zip(columns, x[: len(columns)]) if v > 0.5}
    return DPResult(-objective, plan, len(cost), 0, False, dp.constants)
