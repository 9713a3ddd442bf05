"""Hadar's DP as it was before the per-free-vector summaries (main at 5d4a02c), kept as the oracle that
tests/hadar/test_dp_reference.py compares the optimised :mod:`gpuweave.hadar.dp` with: same plans, values, state
counts and fallbacks. Not used by the package.

The original module docstring follows.
Algorithm 2 (DP_allocation) and FIND_ALLOC in the spec's corrected form, plus the literal variant.

Problem (paper §IV, Eq. 8; spec hadar.md §2.8): for the jobs of queue Q in a round, choose a subset and an
allocation of exactly ``W_j`` GPUs for each selected job (gang; tasks may span GPU types and servers) that
maximises ``sum_j mu_j`` with ``mu_j = U_j(f_j - a_j + 1) - sum_{h,r} k_h^r(gamma_h^r) w_jh^r - comm``.

* ``FIND_ALLOC(j, F)`` generates candidates on the free vector F: PACKED (one server; we keep the cheapest
  server per GPU type, since same-type single-server candidates differ only in cost, plus KEEP), SPREAD
  (for each anchor type, most-free servers first, then the job's other types fastest first), KEEP (the
  running job's current placement, no restart delay). A spread's rate is the slowest used type's
  *unconsolidated* rate; a zero or absent rate drops the candidate. It returns the argmax-mu candidate
  (ties: higher rate, fewer servers, lower cost, first generated) iff mu > 0, else None.
* ``DP(idx, F)`` = max(skip j, select j with FIND_ALLOC(j, F)), memoised on the exact per-server free
  vector (spec §2.8 "Memo key"); ties select. Select is explored first, so the first descent is the
  greedy schedule. When ``max_states`` distinct memo keys are reached, the remaining branches are not
  explored: every open index finishes greedily (select iff FIND_ALLOC != None), which is the spec's
  fallback; rounds where it fires are counted.

Departures from the printed Algorithm 2 (spec §7): payoffs, not costs, are compared (A1); a null
FIND_ALLOC skips the job instead of returning (A2); memo on exact free vectors with a state budget (A3);
mu is evaluated per candidate (A4). :func:`literal_allocation` keeps the printed form (min-cost
comparison, early return on null) to demonstrate A1/A2. Spec default budget is 200 000 states; ours is
``DEFAULT_MAX_STATES`` = 64 (see its comment) because of the issue's time budgets.

Restart delay in f(a): the simulator charges it when a job that has run before gets a new placement (a
first start is free), so FIND_ALLOC uses ``delta`` iff the job has started and ``a != prev`` (the spec
charges first starts too; we follow the simulator so the DP predicts what will happen).

Complexity: FIND_ALLOC is O(H + R log R) numpy work; the DP visits at most ``max_states`` branching
states plus one greedy descent, O((max_states + |Q|) * H). Paper Theorem 1 claims O(|Q| (HR)^2) assuming
few distinct states per index, which include/exclude recursion does not guarantee (spec A3).
"""

from __future__ import annotations

import math
import sys

import numpy as np

# Unchanged by the optimisation, so shared with the package: the reference is what changed
# (HadarDP and its entry points).
from gpuweave.hadar.dp import (
    Candidate,
    DPResult,
    _fractional_knapsack,
    _suffix_min,
    job_lists,
)
from gpuweave.hadar.price import PriceConstants, price, price_constants
from gpuweave.hadar.problem import RoundProblem

# The spec suggests 200 000 memo keys per round. A round here costs ~20-60 us per state (FIND_ALLOC), and a
# trace run has hundreds to thousands of rounds with queues of 100-480 jobs, so 200 000 states would cost
# ~10 s per round and hours per run, against the budgets (< 2 s per round at 2,048 jobs, the whole
# 480-job reproduction in < 60 s, the 200-job demo in seconds). 64 states keep a round at ~1-2 ms; small
# queues (A6: |Q| <= 8) are still searched exhaustively, and exact pruning (a fractional-knapsack bound on
# the skip branch, a price/rate filter before FIND_ALLOC) makes the budget go further. On the 200-job demo
# trace 16, 64 and 256 states gave makespans within 5% of each other and no monotone gain. The budget is
# the ``max_states`` option; rounds that hit it are counted (spec B6 "DP fallback occurrences").
DEFAULT_MAX_STATES = 64


_LISTS: dict[tuple[bytes, bytes], tuple[list[int], list[float], list[float]]] = {}


class HadarDP:
    """One round of Hadar on a :class:`RoundProblem` (see the module docstring)."""

    def __init__(
        self, problem: RoundProblem, *, max_states: int = DEFAULT_MAX_STATES, constants: PriceConstants | None = None
    ) -> None:
        self.p = problem
        self.max_states = int(max_states)
        jobs = problem.jobs
        R = problem.num_types
        cap = np.asarray(problem.capacity, dtype=np.int64)
        self.stype = np.asarray(problem.server_type, dtype=np.int64)
        self.cap = cap
        H = cap.size
        if constants is None:
            best = np.empty(len(jobs))
            worst = np.empty(len(jobs))
            for i, j in enumerate(jobs):
                _, consl, unconsl = job_lists(j.cons, j.uncons)
                rates = [v for v in consl if v > 0] or [v for v in unconsl if v > 0]
                if not rates:
                    raise ValueError(f"job {j.key!r} has no GPU type with a positive throughput")
                best[i] = max(rates)
                worst[i] = min(rates)
            constants = price_constants(
                np.array([j.total_work for j in jobs]),
                np.array([j.num_gpus for j in jobs]),
                best,
                worst,
                np.array([j.arrival_slot for j in jobs]),
                problem.total_gpus,
                R,
                problem.round_length,
                problem.utility,
            )
        self.constants = constants
        self.t_min = constants.t_min
        cmax = int(cap.max()) if H else 0
        g = np.arange(cmax + 1)[None, :]
        umin = constants.u_min[self.stype][:, None]
        umax = constants.u_max[self.stype][:, None]
        self.prices = np.where(
            g <= cap[:, None], price(np.minimum(g, cap[:, None]), np.maximum(cap[:, None], 1), umin, umax), np.inf
        )
        self.comm = problem.kappa * float(np.max(constants.u_min)) if R else 0.0
        # Pure-Python tables: FIND_ALLOC runs on tiny per-type loops where numpy call overhead dominates.
        self.P = [list(map(float, self.prices[h, : int(cap[h]) + 1])) for h in range(H)]
        self.capl = [int(c) for c in cap]
        self.stypel = [int(t) for t in self.stype]
        self.by_type = [[int(h) for h in np.flatnonzero(self.stype == r)] for r in range(R)]
        # Per job: feasible types, fastest (per-worker consolidated X) first; ties: lower type index.
        self.types = []
        self.consl = []
        self.unconsl = []
        for j in jobs:
            order, consl, unconsl = job_lists(j.cons, j.uncons)
            self.types.append(order)
            self.consl.append(consl)
            self.unconsl.append(unconsl)
        self.tminl = [float(v) for v in self.t_min]
        self.states = 0

    # ------------------------------------------------------------------ FIND_ALLOC
    def candidates(self, i: int, F) -> list[Candidate]:
        """All generated candidates of job i on free vector F, with their payoffs (deduplicated).

        Generation order is KEEP, PACKED per type, SPREAD per anchor type; ``Candidate.order`` records it
        and breaks the last ties in :meth:`find_alloc`.
        """
        j = self.p.jobs[i]
        seen: dict[tuple, Candidate] = {}
        # KEEP first so that a tie goes to not moving.
        prev = j.prev
        if prev is not None and all(F[h] >= k for h, k in prev):
            self._add_candidate(seen, i, F, tuple(prev), sorted({self.stypel[h] for h, _ in prev}))
        tot, top = self._add_packed(seen, i, F)
        if not j.packed_only:
            self._add_spread(seen, i, F, tot, top)
        return list(seen.values())

    def _add_candidate(self, seen: dict[tuple, Candidate], i: int, F, alloc: tuple, used_types) -> None:
        """Price ``alloc`` for job i on F and record it in ``seen`` unless known or at rate 0."""
        if alloc in seen:
            return
        if len(alloc) == 1:
            rate = self.consl[i][used_types[0]]
        else:
            uncons = self.unconsl[i]
            rate = min(uncons[r] for r in used_types)
        if not rate > 0:
            return
        P = self.P
        capl = self.capl
        cost = 0.0
        for h, k in alloc:
            cost += P[h][capl[h] - F[h]] * k
        cost += self.comm * (len(alloc) - 1)
        mu = self.payoff(i, alloc, rate) - cost
        seen[alloc] = Candidate(alloc, rate, len(alloc), cost, mu, len(seen))

    def _add_packed(self, seen: dict[tuple, Candidate], i: int, F) -> tuple[dict, dict]:
        """PACKED: the cheapest server per type that holds all W GPUs (one scan per type).

        Returns the free GPUs per type and each type's most-free server ``(h, free)``, which SPREAD reuses.
        """
        W = self.p.jobs[i].num_gpus
        cons = self.consl[i]
        P = self.P
        capl = self.capl
        by_type = self.by_type
        tot = {}
        top = {}
        for r in self.types[i]:
            best_h = -1
            best_u = math.inf
            t = 0
            top_h = -1
            top_f = 0
            for h in by_type[r]:
                f = F[h]
                if f:
                    t += f
                    if f > top_f:
                        top_f, top_h = f, h
                    if f >= W:
                        u = P[h][capl[h] - f]
                        if u < best_u:
                            best_u, best_h = u, h
            tot[r] = t
            top[r] = (top_h, top_f)
            if best_h >= 0 and cons[r] > 0:
                self._add_candidate(seen, i, F, ((best_h, W),), (r,))
        return tot, top

    def _add_spread(self, seen: dict[tuple, Candidate], i: int, F, tot: dict, top: dict) -> None:
        """SPREAD: each anchor type first, most-free servers first, then the other types fastest first."""
        W = self.p.jobs[i].num_gpus
        types = self.types[i]
        cons = self.consl[i]
        by_type = self.by_type
        ordered: dict[int, list] = {}
        for r0 in types:
            top_h, top_f = top[r0]
            if top_f >= W:  # the anchor's most-free server holds the whole job
                if cons[r0] > 0:
                    self._add_candidate(seen, i, F, ((top_h, W),), (r0,))
                continue
            need = W
            take = []
            used = []
            for r in [r0] + [r for r in types if r != r0]:
                if not tot[r]:
                    continue
                srv = ordered.get(r)
                if srv is None:
                    srv = [h for h in by_type[r] if F[h] > 0]
                    srv.sort(key=lambda h: -F[h])
                    ordered[r] = srv
                for h in srv:
                    k = F[h] if F[h] < need else need
                    take.append((h, k))
                    need -= k
                    if need == 0:
                        break
                used.append(r)
                if need == 0:
                    break
            if need == 0:
                self._add_candidate(seen, i, F, tuple(sorted(take)), used)

    def payoff(self, i: int, alloc: tuple, rate: float) -> float:
        """U_j(f(a) - a_j + 1): f(a) = first slot in which the job's remaining work is done on ``alloc``."""
        j = self.p.jobs[i]
        d = self.p.restart_delay if (j.started and alloc != j.prev) else 0.0
        return self.payoff_at(i, rate, d)

    def payoff_at(self, i: int, rate: float, d: float) -> float:
        p = self.p
        j = p.jobs[i]
        L = p.round_length
        first = rate * max(L - d, 0.0)
        if j.remaining <= first:
            k = 1
        else:
            k = 1 + math.ceil((j.remaining - first) / (rate * L) - 1e-12)
        tau = max(1.0, float(p.now_slot - j.arrival_slot + k))
        if p.utility == "raw":
            return j.total_work / (tau * L)
        return self.tminl[i] / tau

    def find_alloc(self, i: int, F) -> Candidate | None:
        self.states += 1
        W = self.p.jobs[i].num_gpus
        total = 0
        for r in self.types[i]:
            for h in self.by_type[r]:
                total += F[h]
            if total >= W:
                break
        if total < W:
            return None
        cands = self.candidates(i, F)
        if not cands:
            return None
        best = max(cands, key=lambda c: (c.mu, c.rate, -c.servers, -c.cost, -c.order))
        return best if best.mu > 0 else None

    # ------------------------------------------------------------------ DP
    def solve(self) -> DPResult:
        """The DP over (job index, free vector) with memo and branch and bound; the plan it picks.

        ``rec(i, F, free)`` is the best value of jobs i.. on free vector F; it selects job i's FIND_ALLOC
        candidate and, unless the bound prunes it, also tries skipping i. Past ``max_states`` memo entries the
        DP stops exploring skip branches (``capped``).
        """
        jobs = self.p.jobs
        n = len(jobs)
        memo: dict = {}
        self.capped = False
        limit = sys.getrecursionlimit()
        if limit < 4 * n + 1000:
            sys.setrecursionlimit(4 * n + 1000)
        gpus = [j.num_gpus for j in jobs]
        cap = self.max_states
        min_w = _suffix_min(gpus)
        P = self.P
        capl = self.capl
        R = self.p.num_types
        stypel = self.stypel
        ub, u_type = self._payoff_bounds(gpus)
        dens = sorted((k for k in range(n) if ub[k] > 0), key=lambda k: -ub[k] / gpus[k])

        def bound(i: int, capacity: int) -> float:
            return _fractional_knapsack(dens, gpus, ub, i, capacity)

        self.pruned = 0

        def rec(i: int, F: tuple, free_total: int):
            key = (i, F)
            hit = memo.get(key)
            if hit is not None:
                return hit
            res = (0.0, None)
            # Cheapest free GPU now, and which types have free GPUs: no candidate of job k costs less than
            # W_k * pmin, nor runs faster than its best type that still has a free GPU (exact filter).
            pmin, avail = _cheapest_free(F, stypel, P, capl, R)
            while i < n and free_total >= min_w[i]:
                if gpus[i] > free_total:
                    i += 1
                    continue
                ut = u_type[i]
                if max(ut[r] for r in avail) - gpus[i] * pmin <= 0:
                    i += 1
                    continue
                cand = self.find_alloc(i, F)
                if cand is None:
                    i += 1
                    continue
                F2 = list(F)
                for h, k in cand.alloc:
                    F2[h] -= k
                v_sel, p_sel = rec(i + 1, tuple(F2), free_total - gpus[i])
                res = (v_sel + cand.mu, (i, cand.alloc, p_sel))
                if not self.capped:
                    if bound(i + 1, free_total) <= res[0]:
                        self.pruned += 1
                        break
                    v_skip, p_skip = rec(i + 1, F, free_total)
                    if v_skip > res[0]:
                        res = (v_skip, p_skip)
                break
            if len(memo) >= cap:
                self.capped = True
            else:
                memo[key] = res
            return res

        F0 = tuple(int(v) for v in self.p.free)
        try:
            value, node = rec(0, F0, sum(F0))
        finally:
            sys.setrecursionlimit(limit)
        plan = {}
        while node is not None:  # the chosen path, as a linked list (job index, allocation, rest)
            i, alloc, node = node
            plan[jobs[i].key] = alloc
        return DPResult(value, plan, self.states, len(memo), self.capped, self.constants)

    def _payoff_bounds(self, gpus: list[int]) -> tuple[list[float], list[list[float]]]:
        """Upper bounds for branch and bound (exact: they only prune a skip branch that cannot beat the select
        branch): every job's payoff is at most its utility at its best rate without restart delay minus W GPUs
        at the lowest price (``ub``); per type, its utility at that type's best rate (``u_type``)."""
        p_low = float(np.min(self.constants.u_min))
        ub = []
        u_type = []
        for k in range(len(gpus)):
            c, uc = self.consl[k], self.unconsl[k]
            ub.append(self.payoff_at(k, max(c + uc), 0.0) - gpus[k] * p_low)
            u_type.append(
                [
                    self.payoff_at(k, max(c[r], uc[r]), 0.0) if max(c[r], uc[r]) > 0 else -math.inf
                    for r in range(self.p.num_types)
                ]
            )
        return ub, u_type

    def backfill(self, result: DPResult) -> DPResult:
        """Offer each job the DP skipped, in Q order, its FIND_ALLOC on the GPUs the plan leaves free.

        Why (ours, not in the spec): the DP gives a job only its argmax-payoff candidate *at the moment it is
        considered* (spec A6), so when a later job is worth more on that GPU the DP skips the earlier job
        outright, although a slower GPU is still free and would pay it a positive payoff: on the emulated
        clusters (one GPU per node) Hadar left K80 nodes idle while jobs waited. Every added job has
        ``mu > 0`` at the prices of the remaining free GPUs, so the plan's Eq. 8 objective only grows and no
        selected job's placement changes. One pass suffices: free GPUs only shrink."""
        jobs = self.p.jobs
        F = [int(v) for v in self.p.free]
        for alloc in result.plan.values():
            for h, k in alloc:
                F[h] -= k
        plan = dict(result.plan)
        value = result.value
        for i, j in enumerate(jobs):
            if j.key in plan or sum(F) < j.num_gpus:
                continue
            cand = self.find_alloc(i, tuple(F))
            if cand is None:
                continue
            plan[j.key] = cand.alloc
            value += cand.mu
            for h, k in cand.alloc:
                F[h] -= k
        return DPResult(value, plan, self.states, result.memo_keys, result.fallback, result.constants)


def _cheapest_free(F: tuple, stypel: list[int], P: list[list[float]], capl: list[int], R: int):
    """The cheapest free GPU's price on F and the types that still have a free GPU."""
    pmin = math.inf
    has = [False] * R
    for h, f in enumerate(F):
        if f:
            has[stypel[h]] = True
            u = P[h][capl[h] - f]
            if u < pmin:
                pmin = u
    return pmin, [r for r in range(R) if has[r]]


def hadar_round(problem: RoundProblem, *, max_states: int = DEFAULT_MAX_STATES, backfill: bool = False) -> DPResult:
    """Solve one round (§2.8 ``HADAR_ROUND`` after Q and F0 are built by the caller); with ``backfill``,
    then offer every job the DP skipped its FIND_ALLOC on what is left (:meth:`HadarDP.backfill`)."""
    dp = HadarDP(problem, max_states=max_states)
    result = dp.solve()
    return dp.backfill(result) if backfill else result


def literal_allocation(problem: RoundProblem, *, max_states: int = DEFAULT_MAX_STATES) -> DPResult:
    """Algorithm 2 as printed (``hadar_variant="literal"``): FIND_ALLOC returns the *min-cost* candidate if
    its payoff is positive; a null FIND_ALLOC returns at once (A2); the with/without comparison uses costs
    only (A1), so with positive prices it never selects a job. For demonstrating the defects only."""
    dp = HadarDP(problem, max_states=max_states)
    jobs = problem.jobs
    n = len(jobs)
    memo: dict = {}

    def find_alloc_literal(i, F):
        dp.states += 1
        cands = dp.candidates(i, F)
        total = sum(F[h] for r in dp.types[i] for h in dp.by_type[r])
        if total < jobs[i].num_gpus or not cands:
            return None
        best = min(cands, key=lambda c: (c.cost, c.order))
        return best if best.mu > 0 else None

    def rec(i, F):
        if i >= n or not any(F):
            return (0.0, None)
        key = (i, F)
        if key in memo:
            return memo[key]
        cand = find_alloc_literal(i, F)
        if cand is None:
            res = (0.0, None)  # line 7-8: early return, later jobs are never considered
        else:
            F2 = list(F)
            for h, k in cand.alloc:
                F2[h] -= k
            c_with, p_with = rec(i + 1, tuple(F2))
            c_without, p_without = rec(i + 1, F)
            c_with += cand.cost
            res = (c_with, (i, cand.alloc, p_with)) if c_with < c_without else (c_without, p_without)
        if len(memo) < max_states:
            memo[key] = res
        return res

    cost, node = rec(0, tuple(int(v) for v in problem.free))
    plan = {}
    while node is not None:
        i, alloc, node = node
        plan[jobs[i].key] = alloc
    return DPResult(-cost, plan, dp.states, len(memo), False, dp.constants)
