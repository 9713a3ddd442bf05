"""Algorithm 2 (DP_allocation) and FIND_ALLOC in the spec's corrected form, plus the literal variant.

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

Complexity: the DP visits at most ``max_states`` branching states plus one greedy descent. Each state's free vector
F is summarised once (:class:`FreeView`: free GPUs, most-free server and cheapest free GPU per type), derived from
its parent's summary by recomputing only the types the last allocation touched (O(H_r) C steps); FIND_ALLOC then
works per type in O(R) Python steps plus a sort of a type's servers only for a job no single server holds. So
O((max_states + |Q|) * (R + H/R)) with the H part in C, against O((max_states + |Q|) * H) Python steps for a scan of
every server (same plans, values and state counts: tests/hadar/test_dp_reference.py). The round's setup is O(|Q| R)
with the rate vectors converted once per (job type, GPU count) kind, not per queued job. A queue of hundreds of
selectable jobs fills the state budget while unwinding its first descent (memo keys are stored on the way back up),
so such a round is essentially that greedy descent: one FIND_ALLOC per job it meets.
Paper Theorem 1 claims O(|Q| (HR)^2) assuming few distinct states per index, which include/exclude recursion does
not guarantee (spec A3).
"""

from __future__ import annotations

import gc
import math
import operator
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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


def job_lists(cons: np.ndarray, uncons: np.ndarray) -> tuple[list[int], list[float], list[float]]:
    """(feasible types fastest first, cons as list, uncons as list), cached per rate vector."""
    key = (cons.tobytes(), uncons.tobytes())
    hit = _LISTS.get(key)
    if hit is None:
        x = np.where(cons > 0, cons, uncons)
        order = [int(r) for r in np.argsort(-x, kind="stable") if x[r] > 0]
        hit = (order, [float(v) for v in cons], [float(v) for v in uncons])
        if len(_LISTS) < 100_000:
            _LISTS[key] = hit
    return hit


@dataclass(slots=True)
class Candidate:
    alloc: tuple  # ((server, gpus), ...)
    rate: float
    servers: int
    cost: float
    mu: float
    order: int


@dataclass(slots=True)
class DPResult:
    value: float
    plan: dict  # job key -> placement
    states: int  # FIND_ALLOC calls
    memo_keys: int
    fallback: bool  # the state budget was hit
    constants: PriceConstants


@dataclass(slots=True)
class ServerTables:
    """What a :class:`FreeView` reads of its DP: per type a getter of its servers' free counts, its servers and whether
    they are uniform; per server its type, capacity and price row."""

    _getters: list[Callable[[Sequence[int]], tuple[int, ...]]]
    stypel: list[int]
    by_type: list[list[int]]
    P: list[list[float]]
    capl: list[int]
    _uniform: list[bool]


class FreeView:
    """What FIND_ALLOC and the DP's filter read from one free vector F, computed once per F: free GPUs per type,
    each type's most-free server (first index on ties), the cheapest free GPU and the types with a free GPU.

    Same values as scanning every server (the DP's first form) but per type with C-speed ``sum``/``max`` over the
    type's servers, O(H) C steps and O(R) Python steps; the cheapest server that holds W GPUs is the most-free one
    on uniform types, else a scan of that type."""

    __slots__ = ("tables", "F", "frees", "tot", "top", "low", "pmin", "avail", "_packed", "_ordered")
    frees: list[tuple[int, ...]]  # per type: its servers' free GPUs

    def __init__(self, dp: "HadarDP", F: tuple, parent: "FreeView | None" = None, alloc: tuple = ()) -> None:
        """The summary of F; with ``parent`` (the summary of F + ``alloc``), only the types ``alloc`` touches are
        recomputed, and a type's most-free server only when ``alloc`` took GPUs from it.

        It keeps the DP's server tables (:class:`ServerTables`), not the DP: the DP caches summaries, and a summary
        pointing back at the DP would make every round's DP a reference cycle, freed only by the cyclic collector.
        On a long queue that is megabytes per round, piling up between collections."""
        tables = self.tables = dp.tables
        self.F = F
        if parent is None:
            R = len(tables._getters)
            self.frees, self.tot, self.top, self.low = [()] * R, [0] * R, [(-1, 0)] * R, [math.inf] * R
            touched: Sequence[int] = range(R)
        else:
            self.frees, self.tot, self.top, self.low = (
                list(parent.frees),
                list(parent.tot),
                list(parent.top),
                list(parent.low),
            )
            stypel = tables.stypel
            touched = sorted({stypel[h] for h, _ in alloc})
        for r in touched:
            self._summarise(r, parent is not None and all(h != parent.top[r][0] for h, _ in alloc))
        self.avail = [r for r, t in enumerate(self.tot) if t]
        self.pmin = min(self.low) if self.low else math.inf
        self._packed: dict[tuple[int, int], int] = {}
        self._ordered: dict[int, list[int]] = {}

    def _summarise(self, r: int, keep_top: bool) -> None:
        """Free GPUs, most-free server and cheapest free GPU of type r (``keep_top``: its most-free server lost
        nothing, so it is still the first server holding the most free GPUs)."""
        tables = self.tables
        idx = tables.by_type[r]
        Fr = self.frees[r] = tables._getters[r](self.F)
        t = self.tot[r] = sum(Fr)
        if not t:
            self.top[r], self.low[r] = (-1, 0), math.inf
            return
        if not keep_top:
            mx = max(Fr)
            self.top[r] = (idx[Fr.index(mx)], mx)
        h, mx = self.top[r]
        P, capl = tables.P, tables.capl
        if tables._uniform[r]:
            self.low[r] = P[h][capl[h] - mx]
        else:
            self.low[r] = min(P[g][capl[g] - f] for g, f in zip(idx, Fr) if f)

    def packed(self, r: int, W: int) -> int:
        """The cheapest type-r server with at least W free GPUs (first index on ties), -1 if none."""
        key = (r, W)
        h = self._packed.get(key)
        if h is None:
            tables = self.tables
            if tables._uniform[r]:
                top_h, top_f = self.top[r]
                h = top_h if top_f >= W else -1
            else:
                P, capl = tables.P, tables.capl
                h, best_u = -1, math.inf
                for g, f in zip(tables.by_type[r], self.frees[r]):
                    if f >= W:
                        u = P[g][capl[g] - f]
                        if u < best_u:
                            best_u, h = u, g
            self._packed[key] = h
        return h

    def most_free(self, r: int) -> list[int]:
        """Type-r servers with a free GPU, most free first (index order on ties)."""
        srv = self._ordered.get(r)
        if srv is None:
            F = self.F
            # A stable sort by free GPUs, largest first (reverse=True keeps index order among equals).
            free_here = (h for h, f in zip(self.tables.by_type[r], self.frees[r]) if f)
            srv = sorted(free_here, key=F.__getitem__, reverse=True)
            self._ordered[r] = srv
        return srv


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
        self._index_kinds(jobs)
        if constants is None:
            kind = self._kind
            for i, k in enumerate(kind):
                if self._kind_best[k] is None:
                    raise ValueError(f"job {jobs[i].key!r} has no GPU type with a positive throughput")
            constants = price_constants(
                np.array([j.total_work for j in jobs]),
                np.array([j.num_gpus for j in jobs]),
                np.array([self._kind_best[k] for k in kind], dtype=float),
                np.array([self._kind_worst[k] for k in kind], dtype=float),
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
        self.capl = [int(c) for c in cap]
        self.P = _shared_rows(self.prices, self.capl)
        self.stypel = [int(t) for t in self.stype]
        self.by_type = [[int(h) for h in np.flatnonzero(self.stype == r)] for r in range(R)]
        self.tminl = [float(v) for v in self.t_min]
        self.states = 0
        self._init_type_views(R)
        self._views: dict[tuple, FreeView] = {}
        self._payoffs: dict[tuple, float] = {}
        self._keep_types: dict[int, list[int]] = {}  # job -> the types of its current placement (KEEP)

    def _index_kinds(self, jobs: list) -> None:
        """Per job: feasible types, fastest (per-worker consolidated X) first (ties: lower type index), and its rates
        as lists; per distinct rate vector pair (a "kind": the policies hand every job of one (job type, GPU count)
        the same arrays), the best and worst positive rate. Jobs of a kind share one set of lists, so a queue of
        thousands of jobs of a few dozen kinds costs a few dozen conversions, not thousands."""
        kinds: dict[tuple[int, int], int] = {}  # (id(cons), id(uncons)) -> kind; the jobs keep the arrays alive
        self.types, self.consl, self.unconsl = [], [], []
        self._kind: list[int] = []
        self._kind_best: list[float | None] = []
        self._kind_worst: list[float | None] = []
        kind_lists: list[tuple] = []
        for j in jobs:
            key = (id(j.cons), id(j.uncons))
            k = kinds.get(key)
            if k is None:
                k = kinds[key] = len(kind_lists)
                hit = job_lists(j.cons, j.uncons)
                kind_lists.append(hit)
                rates = [v for v in hit[1] if v > 0] or [v for v in hit[2] if v > 0]
                self._kind_best.append(max(rates) if rates else None)
                self._kind_worst.append(min(rates) if rates else None)
            order, consl, unconsl = kind_lists[k]
            self.types.append(order)
            self.consl.append(consl)
            self.unconsl.append(unconsl)
            self._kind.append(k)
        self._kind_lists = kind_lists

    def _init_type_views(self, R: int) -> None:
        """Per GPU type: a C-speed getter of its servers' free counts, and whether its servers are uniform.

        Uniform (same capacity, identical price rows, prices strictly rising with use, checked on the floats
        themselves): then a server's price falls strictly as its free GPUs rise, so the cheapest server that
        holds W GPUs is the most-free one (first index on ties), found with ``max`` instead of a scan."""
        self._getters: list[Callable[[Sequence[int]], tuple[int, ...]]] = []
        self._uniform = []
        for r in range(R):
            idx = self.by_type[r]
            if len(idx) == 1:
                h0 = idx[0]
                self._getters.append(lambda F, h0=h0: (F[h0],))  # type: ignore[misc]  # mypy can't type a default
            elif idx:
                self._getters.append(operator.itemgetter(*idx))
            else:
                self._getters.append(lambda F: ())
            rows = {id(self.P[h]): self.P[h] for h in idx}  # equal rows are one shared list (_shared_rows)
            row = next(iter(rows.values())) if len(rows) == 1 else ()
            self._uniform.append(len(rows) == 1 and all(a < b for a, b in zip(row, row[1:])))
        self._all_uniform = all(self._uniform)
        self.tables = ServerTables(self._getters, self.stypel, self.by_type, self.P, self.capl, self._uniform)

    # ------------------------------------------------------------------ FIND_ALLOC
    def view(self, F: tuple) -> "FreeView":
        """The per-type summary of free vector F (cached: the DP meets the same F on several branches)."""
        v = self._views.get(F)
        if v is None:
            v = self._views[F] = FreeView(self, F)
        return v

    def candidates(self, i: int, F, v: "FreeView | None" = None) -> list[Candidate]:
        """All generated candidates of job i on free vector F, with their payoffs (deduplicated).

        Generation order is KEEP, PACKED per type, SPREAD per anchor type; ``Candidate.order`` records it
        and breaks the last ties in :meth:`find_alloc`.
        """
        return [Candidate(t[5], t[1], -t[2], -t[3], t[0], -t[4]) for t in self._scored(i, tuple(F), v)]

    def _scored(self, i: int, F: tuple, v: "FreeView | None") -> list[tuple]:
        """The candidates of :meth:`candidates` as tuples ``(mu, rate, -servers, -cost, -order, alloc)``, whose
        order is FIND_ALLOC's preference (the order numbers are distinct, so ``alloc`` is never compared)."""
        if v is None:
            v = self.view(F)
        j = self.p.jobs[i]
        seen: dict[tuple, tuple] = {}
        # KEEP first so that a tie goes to not moving.
        prev = j.prev
        if prev is not None and all(F[h] >= k for h, k in prev):
            used = self._keep_types.get(i)
            if used is None:
                used = self._keep_types[i] = sorted({self.stypel[h] for h, _ in prev})
            self._add_candidate(seen, i, F, tuple(prev), used)
        self._add_packed(seen, i, F, v)
        if not j.packed_only:
            self._add_spread(seen, i, F, v)
        return list(seen.values())

    def _add_candidate(self, seen: dict[tuple, tuple], i: int, F, alloc: tuple, used_types) -> None:
        """Price ``alloc`` for job i on F and record it in ``seen`` unless known or at rate 0."""
        if alloc in seen:
            return
        servers = len(alloc)
        if servers == 1:
            rate = self.consl[i][used_types[0]]
        else:
            uncons = self.unconsl[i]
            rate = min(uncons[r] for r in used_types)
        if not rate > 0:
            return
        P = self.P
        capl = self.capl
        if servers == 1:
            h, k = alloc[0]
            cost = 0.0 + P[h][capl[h] - F[h]] * k + self.comm * 0
        else:
            cost = 0.0
            for h, k in alloc:
                cost += P[h][capl[h] - F[h]] * k
            cost += self.comm * (servers - 1)
        mu = self.payoff(i, alloc, rate) - cost
        seen[alloc] = (mu, rate, -servers, -cost, -len(seen), alloc)

    def _add_packed(self, seen: dict[tuple, tuple], i: int, F, v: "FreeView") -> None:
        """PACKED: the cheapest server per type that holds all W GPUs.

        :meth:`_add_candidate` written out for one server (the most frequent candidate of every FIND_ALLOC; same
        rate, cost, payoff and order number, without three calls per candidate). On a uniform type the cheapest
        server is the most-free one (:meth:`FreeView.packed`)."""
        j = self.p.jobs[i]
        W = j.num_gpus
        cons = self.consl[i]
        P, capl, uniform, top = self.P, self.capl, self._uniform, v.top
        payoffs, prev = self._payoffs, j.prev
        delay = self.p.restart_delay if j.started else None  # charged for any allocation but ``prev``
        comm0 = self.comm * 0
        for r in self.types[i]:
            if uniform[r]:
                h, f = top[r]
                if f < W:
                    continue
            else:
                h = v.packed(r, W)
                if h < 0:
                    continue
            rate = cons[r]
            if not rate > 0:
                continue
            alloc = ((h, W),)
            if alloc in seen:
                continue
            cost = 0.0 + P[h][capl[h] - F[h]] * W + comm0
            d = delay if delay is not None and alloc != prev else 0.0
            u = payoffs.get((i, rate, d))
            if u is None:
                u = payoffs[(i, rate, d)] = self.payoff_at(i, rate, d)
            seen[alloc] = (u - cost, rate, -1, -cost, -len(seen), alloc)

    def _add_spread(self, seen: dict[tuple, tuple], i: int, F, v: "FreeView") -> None:
        """SPREAD: each anchor type first, most-free servers first, then the other types fastest first."""
        W = self.p.jobs[i].num_gpus
        if W == 1 and self._all_uniform:
            # One GPU: every spread is one server, a type's most-free one, which PACKED has already priced (the
            # cheapest server on a uniform type) or found at rate 0: it would add nothing.
            return
        types = self.types[i]
        cons = self.consl[i]
        tot, top = v.tot, v.top
        uniform = self._uniform
        for r0 in types:
            top_h, top_f = top[r0]
            if top_f >= W:  # the anchor's most-free server holds the whole job
                if cons[r0] > 0 and not uniform[r0]:  # on a uniform type PACKED has added this very server
                    self._add_candidate(seen, i, F, ((top_h, W),), (r0,))
                continue
            need = W
            take = []
            used = []
            for r in [r0] + [r for r in types if r != r0]:
                if not tot[r]:
                    continue
                h, f = top[r]
                if f >= need:  # the most-free server (the first of most_free(r)) finishes the job: no sort needed
                    take.append((h, need))
                    need = 0
                    used.append(r)
                    break
                for h in v.most_free(r):
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
        key = (i, rate, d)
        u = self._payoffs.get(key)
        if u is None:
            u = self._payoffs[key] = self.payoff_at(i, rate, d)
        return u

    def payoff_at(self, i: int, rate: float, d: float) -> float:
        p = self.p
        j = p.jobs[i]
        L = p.round_length
        first = rate * (L - d if L - d > 0.0 else 0.0)
        if j.remaining <= first:
            k = 1
        else:
            k = 1 + math.ceil((j.remaining - first) / (rate * L) - 1e-12)
        tau = float(p.now_slot - j.arrival_slot + k)
        if not tau > 1.0:
            tau = 1.0
        if p.utility == "raw":
            return j.total_work / (tau * L)
        return self.tminl[i] / tau

    def find_alloc(self, i: int, F, v: "FreeView | None" = None) -> Candidate | None:
        self.states += 1
        F = tuple(F)
        if v is None:
            v = self.view(F)
        W = self.p.jobs[i].num_gpus
        total = 0
        tot = v.tot
        for r in self.types[i]:
            total += tot[r]
            if total >= W:
                break
        if total < W:
            return None
        cands = self._scored(i, F, v)
        if not cands:
            return None
        t = max(cands)
        return Candidate(t[5], t[1], -t[2], -t[3], t[0], -t[4]) if t[0] > 0 else None

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
        ub = self._prepare_filter(gpus)
        dens = sorted((k for k in range(n) if ub[k] > 0), key=lambda k: -ub[k] / gpus[k])

        def bound(i: int, capacity: int) -> float:
            return _fractional_knapsack(dens, gpus, ub, i, capacity)

        self.pruned = 0
        stored: set[int] = set()  # the job indices of memo's keys: most calls meet an index not among them

        def rec(i: int, F: tuple, free_total: int, v: FreeView, alloc: tuple | None = None):
            first = i
            # (i, F) can be in memo only if i is in stored: otherwise hashing F (one int per server) is skipped.
            hit = memo.get((i, F)) if i in stored else None
            if hit is not None:
                return hit
            res: tuple[float, Any] = (0.0, None)  # (value, chosen path as a linked list)
            if alloc is not None:  # v summarises F + alloc: derive F's summary from it
                v = FreeView(self, F, v, alloc)
            while True:
                i, cand = self._next_selectable(i, F, free_total, v)
                if cand is None:
                    break
                F2 = list(F)
                for h, k in cand.alloc:
                    F2[h] -= k
                v_sel, p_sel = rec(i + 1, tuple(F2), free_total - gpus[i], v, cand.alloc)
                res = (v_sel + cand.mu, (i, cand.alloc, p_sel))
                if not self.capped:
                    if bound(i + 1, free_total) <= res[0]:
                        self.pruned += 1
                        break
                    v_skip, p_skip = rec(i + 1, F, free_total, v)
                    if v_skip > res[0]:
                        res = (v_skip, p_skip)
                break
            if len(memo) >= cap:
                self.capped = True
            else:
                memo[(first, F)] = res
                stored.add(first)
            return res

        F0 = tuple(int(v) for v in self.p.free)
        # The search allocates many short-lived tuples and makes no garbage cycles of its own: the cyclic
        # collector, which would otherwise run (and walk every live object) many times per round, waits until it
        # is done. Reference counting still frees everything as it goes.
        collecting = gc.isenabled()
        gc.disable()
        try:
            value, node = rec(0, F0, sum(F0), self.view(F0))
        finally:
            sys.setrecursionlimit(limit)
            if collecting:
                gc.enable()
            # ``rec`` refers to itself through its closure, a cycle holding the memo and the round's problem:
            # cut it so reference counting frees them now, not the cyclic collector some time later.
            rec = bound = None  # type: ignore[assignment]  # dropped to cut the cycle  # noqa: F841
        plan = {}
        while node is not None:  # the chosen path, as a linked list (job index, allocation, rest)
            i, alloc, node = node
            plan[jobs[i].key] = alloc
        return DPResult(value, plan, self.states, len(memo), self.capped, self.constants)

    def _prepare_filter(self, gpus: list[int]) -> list[float]:
        """The tables :meth:`_next_selectable` reads (GPUs per job, their suffix minimum, each job's utility per
        type); returns every job's payoff bound for the branch and bound."""
        ub, u_type = self._payoff_bounds(gpus)
        self._gpus, self._min_w = gpus, _suffix_min(gpus)
        self._gpus_arr = np.array(gpus, dtype=float)
        self._u_arr = np.array(u_type, dtype=float).reshape(len(gpus), self.p.num_types)
        self._u_best: dict[tuple, tuple] = {}  # types with a free GPU -> each job's best utility there (list, array)
        return ub

    def _next_selectable(self, i: int, F: tuple, free_total: int, v: FreeView) -> tuple[int, Candidate | None]:
        """The first job from i on that FIND_ALLOC places on F, and its candidate ((n, None) if none).

        Filters before FIND_ALLOC (exact): a job must fit in the free GPUs, and no candidate of job k costs less
        than W_k times the cheapest free GPU nor pays more than its utility on its best type with a free GPU.
        After a few filtered jobs in a row the rest of Q is filtered in one numpy step (the same comparisons on
        the same floats), so a long queue on a nearly full cluster is not walked job by job at every state."""
        n = len(self.p.jobs)
        gpus, min_w = self._gpus, self._min_w
        pmin, avail = v.pmin, v.avail
        best = self._best_on(avail)[0] if avail else ()  # no free GPU: the loop below does not run
        filtered = 0
        while i < n and free_total >= min_w[i]:
            W = gpus[i]
            if W <= free_total:
                if best[i] - W * pmin > 0:
                    cand = self.find_alloc(i, F, v)
                    if cand is not None:
                        return i, cand
                    i += 1
                    continue
            i += 1
            filtered += 1
            if filtered == 8 and i < n:
                i = self._first_passing(i, free_total, pmin, avail)
        return n, None

    def _best_on(self, avail: list[int]) -> tuple[list[float], np.ndarray]:
        """Every job's utility on its best type among ``avail`` (-inf where it runs on none of them), as a list and an
        array, computed once per round for each set of types with a free GPU (at most 2^R sets; usually a handful):
        the filter of :meth:`_next_selectable` then reads one number per job instead of taking a max per job and
        state."""
        key = tuple(avail)
        hit = self._u_best.get(key)
        if hit is None:
            U = self._u_arr
            arr = U[:, avail].max(axis=1) if len(avail) > 1 else U[:, avail[0]]
            hit = self._u_best[key] = (arr.tolist(), arr)
        return hit

    def _first_passing(self, i: int, free_total: int, pmin: float, avail: list[int]) -> int:
        """The first job from i on that passes :meth:`_next_selectable`'s filter (n if none)."""
        W, best = self._gpus_arr[i:], self._best_on(avail)[1][i:]
        ok = (W <= free_total) & (best - W * pmin > 0)
        k = int(ok.argmax())
        return i + k if ok[k] else len(self.p.jobs)

    def _payoff_bounds(self, gpus: list[int]) -> tuple[list[float], list[list[float]]]:
        """Upper bounds for branch and bound (exact: they only prune a skip branch that cannot beat the select
        branch): every job's payoff is at most its utility at its best rate without restart delay minus W GPUs
        at the lowest price (``ub``); per type, its utility at that type's best rate (``u_type``)."""
        p_low = float(np.min(self.constants.u_min))
        n, R = len(gpus), self.p.num_types
        if n == 0:
            return [], []
        kind_rates = np.maximum(
            np.array([c for _, c, _ in self._kind_lists], dtype=float),
            np.array([u for _, _, u in self._kind_lists], dtype=float),
        ).reshape(len(self._kind_lists), R)
        rates = kind_rates[np.array(self._kind, dtype=np.intp)]
        best = rates.max(axis=1)
        u = self._payoffs_no_delay(np.concatenate([best[:, None], rates], axis=1))
        if u is None:  # beyond exact float integers: the scalar form
            ub = [self.payoff_at(k, best[k], 0.0) - gpus[k] * p_low for k in range(n)]
            u_type = [
                [self.payoff_at(k, rates[k, r], 0.0) if rates[k, r] > 0 else -math.inf for r in range(R)]
                for k in range(n)
            ]
            return ub, u_type
        ub = (u[:, 0] - np.array(gpus, dtype=float) * p_low).tolist()
        return ub, np.where(rates > 0, u[:, 1:], -math.inf).tolist()

    def _payoffs_no_delay(self, rates: np.ndarray) -> np.ndarray | None:
        """:meth:`payoff_at` with no restart delay for every job (row) at every rate of its row, with the same
        floating-point steps as the scalar form (entries at rate 0 are meaningless); None when a slot count would
        leave the range where floats hold integers exactly (the caller then uses the scalar form)."""
        p = self.p
        L = p.round_length
        jobs = p.jobs
        rem = np.array([j.remaining for j in jobs], dtype=float)[:, None]
        first = rates * (L if L > 0.0 else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(rem <= first, 1.0, 1.0 + np.ceil((rem - first) / (rates * L) - 1e-12))
            slots = np.array([p.now_slot - j.arrival_slot for j in jobs], dtype=float)[:, None]
            if np.nanmax(np.abs(np.where(np.isfinite(k), k, 0.0)), initial=0.0) > 2.0**50 or (
                np.abs(slots).max(initial=0.0) > 2.0**50
            ):
                return None
            tau = slots + k
            tau = np.where(tau > 1.0, tau, 1.0)
            if p.utility == "raw":
                return np.array([j.total_work for j in jobs], dtype=float)[:, None] / (tau * L)
            return np.array(self.tminl, dtype=float)[:, None] / tau

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


def _shared_rows(prices: np.ndarray, capl: list[int]) -> list[list[float]]:
    """Each server's prices for 0..c GPUs in use as a Python list; servers whose rows are bit for bit equal share
    one list (O(H) byte comparisons instead of O(H c) float conversions, and equal rows are recognised by identity)."""
    shared: dict[bytes, list[float]] = {}
    out = []
    for h, c in enumerate(capl):
        row = prices[h, : c + 1]
        key = row.tobytes()
        lst = shared.get(key)
        if lst is None:
            lst = shared[key] = row.tolist()
        out.append(lst)
    return out


def _suffix_min(gpus: list[int]) -> list[int]:
    """``min_w[k]`` = the fewest GPUs any job k.. asks for (a huge sentinel past the end)."""
    n = len(gpus)
    min_w = [0] * (n + 1)
    m = 1 << 30
    for k in range(n - 1, -1, -1):
        m = min(m, gpus[k])
        min_w[k] = m
    min_w[n] = 1 << 30
    return min_w


def _fractional_knapsack(dens: list[int], gpus: list[int], ub: list[float], i: int, capacity: int) -> float:
    """Fractional-knapsack bound on the value of jobs i.. in ``capacity`` GPUs (``dens``: by ub/W, best first)."""
    total = 0.0
    for k in dens:
        if k < i:
            continue
        w = gpus[k]
        if w <= capacity:
            total += ub[k]
            capacity -= w
            if capacity == 0:
                break
        else:
            total += ub[k] * capacity / w
            break
    return total


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
