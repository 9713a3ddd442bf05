"""Gavel's allocation LPs and round mechanism on plain arrays, shared by the cluster policy and Hadar's emulation.

Why here: Gavel is a baseline, owned neither by the cluster simulator (:mod:`gpuweave.cluster.policies.gavel`
adapts it to a ClusterView) nor by Hadar (:mod:`gpuweave.hadar.emulation` runs it on the physical testbed
model); both import it from this package, which imports neither of them.

Problem (Narayanan et al., OSDI'20; as used by Hadar, spec hadar.md §4.1, policy ``max_min_fairness_perf``):
find time fractions ``x[m, r]`` (job m on GPU type r) that maximise the smallest normalised throughput::

    max  min_m  sum_r T[m,r] * sf_m / (w_m * T_equal_m) * x[m,r]
    s.t. x >= 0;  sum_r x[m,r] <= 1  (each job);  sum_m sf_m * x[m,r] <= workers_r  (each type)

``T[m,r]`` is the whole-job consolidated rate of m on ``sf_m`` GPUs of type r (0 = infeasible: x fixed to
0), ``sf_m = W_m`` the scale factor, ``w_m = 1`` and ``T_equal_m = sum_r T[m,r] * x_prop[r]`` with the
proportional share ``x_prop[r] = workers_r / M`` rescaled so that its row sums to at most 1. The epigraph
form (variable z, rows ``z <= ...``) is an LP with M*R+1 columns and 2M+R rows, built column-wise from
triplets by :func:`gpuweave.highs_models.highs_model`; O(M R) to build, HiGHS simplex/IPM to solve.

Mechanism, each round of ``round_length`` (360 s): ``priority[m,r] = x[m,r] / (time m received on r /
total time r was used)``, or ``x[m,r] * 1e9`` if m has not yet received r; infeasible types are left out.
GPU types are visited in the order ``type_order`` (V100, P100, K80, then any other model); each type's
entries are sorted by (priority, deficit, x) descending (stable) and taken greedily: skip a job already
scheduled this round, skip when its scale factor exceeds that type's free GPUs. Placement goes from the
largest scale factor to the smallest, all of a job's GPUs on one type, consolidated when one node holds
them; a job that keeps its type keeps its placement (no restart). The LP is re-solved when the set of
active jobs changes; time-received counters are reset at such a re-solve at most every 1920 s (Gavel's
``minimum_time_between_allocation_resets``). Space sharing (packing) is off (spec §4.1 [R]).

Policy ``policy="min_total_duration"`` (Gavel's ``min_total_duration_perf``, spec §4.1 and A11, run as a B7
sensitivity because the paper's metric is makespan): binary-search the smallest horizon ``T`` in
[100, 1e6] s (widened tenfold while none is feasible) for which the feasibility LP

    sum_r T[m,r] x[m,r] >= steps_remaining_m / T  (each job);  same base constraints as above

has a solution, stopping when ``1.05 * T_lo >= T_hi`` as Gavel does, and use the ``x`` of the smallest
feasible ``T``. Gavel's LP has a constant objective (``cp.Maximize(1)``); HiGHS solves the same feasibility
LP with a zero objective (dual simplex, warm-started between bisection steps by changing only the row
bounds). The mechanism is the same as for LAS.

Gavel's other allocation policies (stanford-futuredata/gavel@c4fa400, ``scheduler/policies/``), our own code:

- LAS, heterogeneity-unaware (Gavel's ``max_min_fairness``): the LP above with every throughput set to 1.
- ``fifo_perf`` (:func:`fifo_perf_allocation`): jobs in arrival order, each onto the fastest type that still has
  ``sf`` free GPUs (x = 1 there); the pass stops at the first job that fits nowhere. O(M R).
- ``finish_time_fairness_perf`` (:func:`finish_time_fairness_lp`): minimise the largest ratio
  ``rho_m = (t_m + rem_m / (T_m . x_m)) / (iso_m + rem_m / T_iso_m)`` with ``t_m`` the time since arrival,
  ``iso_m`` the cumulative isolated time and ``T_iso_m`` the throughput under :func:`isolated_allocation`.
  Gavel hands the convex program to ECOS; for a fixed ``rho`` every ratio bound is the linear row
  ``T_m . x_m >= rem_m / (rho (iso_m + rem_m / T_iso_m) - t_m)``, so we bisect ``rho`` over feasibility LPs
  (HiGHS, warm-started by changing row bounds), O(log(1/tol)) solves.

The round mechanism Gavel's simulator runs on top of any allocation (``scheduler.py``: ``_update_priorities``,
``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``) is :func:`fraction_priorities` and
:func:`gavel_round`: a job's time on each type starts at a prior (half a round) when it arrives and at every
reset, ``priority = x / (job time on r / all jobs' time on r)``, and deficits accumulate across resets.
:func:`gavel_priorities` is the earlier form (no prior, counters from zero) kept for Hadar's emulation.

Gavel solves its LPs with cvxpy; this is our own formulation of the same programs for HiGHS.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from gpuweave.highs_models import compressed_model, highs_model, run_model

# HiGHS' interior-point method without crossover: like Gavel's ECOS it ends inside the optimal face (near its
# analytic centre) instead of at a vertex, which matters because the max-min LPs have many optimal x.
INTERIOR: dict[str, object] = {"solver": "ipm", "run_crossover": "off", "threads": 1}
# Dual simplex, one thread, for :class:`WarmMaxMinLP`, which starts it from the last solve's basis. Devex pricing:
# steepest-edge pricing computes exact weights for a start that is not a slack basis, one solve with the basis per
# row, and that was most of the time on large LPs (a 1,300-job LP: 27 ms for some 30 iterations). Measured on the
# 2,129 LPs of a 30,000-job run: 41.2 s with steepest edge, 18.2 s with Devex (the interior point: 75 s).
SIMPLEX: dict[str, object] = {"solver": "simplex", "threads": 1, "simplex_dual_edge_weight_strategy": 1}
# A start without a basis (the first LP, or the GPU types changed): the interior point, then crossover to a vertex
# and its basis. Faster than a cold simplex on large LPs: 59-60 ms against 111-205 ms on 1,500-job LPs of that run.
CROSSOVER: dict[str, object] = {"solver": "ipm", "run_crossover": "on", "threads": 1}


def max_min_fairness_lp(
    throughputs: np.ndarray, scale: np.ndarray, workers: np.ndarray, weights=None, *, interior: bool = False
) -> np.ndarray:
    """Solve the LAS LP of the module docstring. ``throughputs`` is M x R (0 = infeasible); returns x (M x R).
    ``interior`` solves it with an interior-point method (Gavel's choice of optimum), else with simplex (a vertex)."""
    T = np.asarray(throughputs, dtype=float)
    M, R = T.shape
    if M == 0:
        return np.zeros((0, R))
    h = max_min_model(T, scale, workers, weights, INTERIOR if interior else None)
    values = _interior_values(h) if interior else None
    if values is None:
        if interior:  # the interior point stopped without a usable point: take a simplex vertex instead
            h.setOptionValue("solver", "simplex")
        solved = run_model(h)
        if solved is None:
            raise RuntimeError("Gavel LP infeasible")
        values = solved[1]
    return np.clip(values[: M * R].reshape(M, R), 0.0, 1.0)


def max_min_model(T: np.ndarray, scale, workers, weights, options):
    """The LAS LP as a HiGHS model (not yet run). Columns: x[m, r] at m*R + r, then z. Rows: fair_m (0..M-1),
    sum_m (M..2M-1), cap_r (2M..2M+R-1): :class:`WarmMaxMinLP` relies on this layout.

    Built column-wise straight into compressed form (a round policy builds one per re-solve): column x[m, r] holds
    rows m, M + m, 2M + r in that order, column z rows 0..M-1; explicit zeros (a type a job cannot use) are kept."""
    M, R = T.shape
    sf = np.asarray(scale, dtype=float)
    n = np.asarray(workers, dtype=float)
    w = np.ones(M) if weights is None else np.asarray(weights, dtype=float)
    coef = T * (sf / (w * _equal_share_throughput(T, n)))[:, None]
    nx = M * R
    m_idx = np.repeat(np.arange(M), R)
    r_idx = np.tile(np.arange(R), M)
    index = np.concatenate([np.column_stack([m_idx, M + m_idx, 2 * M + r_idx]).ravel(), np.arange(M)])
    value = np.concatenate([np.column_stack([-coef.ravel(), np.ones(nx), sf[m_idx]]).ravel(), np.ones(M)])
    start = np.concatenate([np.arange(0, 3 * nx + 1, 3), [3 * nx + M]])
    cost = np.zeros(nx + 1)
    cost[-1] = -1.0
    upper = np.concatenate([np.where(T.ravel() > 0, 1.0, 0.0), [np.inf]])
    return compressed_model(
        cost,
        start,
        index,
        value,
        np.full(2 * M + R, -np.inf),
        np.concatenate([np.zeros(M), np.ones(M), n]),
        col_upper=upper,
        orientation="col",
        options=options,
    )


def max_sum_throughput_lp(throughputs: np.ndarray, scale: np.ndarray, workers: np.ndarray) -> np.ndarray:
    """Gavel's ``max_sum_throughput_perf`` (``ThroughputSumWithPerf``): maximise ``sum T[m,r] x[m,r]`` under the
    base constraints (x >= 0, each job's row at most 1, each type's GPUs), as Sia's simulator runs it. Solved by
    HiGHS' interior point without crossover (ECOS there is an interior-point method too: identical jobs get equal
    shares of the optimal face, not a vertex), a simplex vertex if that stops without a usable point. M x R
    columns, M + R rows: O(M R) to build. Returns x (M x R), rounded to 5 decimals and clipped to [0, 1] as
    Sia's Gavel does."""
    T = np.asarray(throughputs, dtype=float)
    M, R = T.shape
    if M == 0:
        return np.zeros((0, R))
    sf = np.asarray(scale, dtype=float)
    nx = M * R
    m_idx = np.repeat(np.arange(M), R)
    r_idx = np.tile(np.arange(R), M)
    index = np.column_stack([m_idx, M + r_idx]).ravel()
    value = np.column_stack([np.ones(nx), sf[m_idx]]).ravel()
    start = np.arange(0, 2 * nx + 1, 2)
    upper = np.concatenate([np.ones(M), np.asarray(workers, dtype=float)])
    # presolve off: it would settle small or separable LPs at a vertex before the interior point runs
    options = {**INTERIOR, "presolve": "off"}
    h = compressed_model(
        -T.ravel(), start, index, value, np.full(M + R, -np.inf), upper, orientation="col", options=options
    )
    values = _interior_values(h)
    if values is None:
        h.setOptionValue("solver", "simplex")
        solved = run_model(h)
        if solved is None:
            raise RuntimeError("Gavel LP infeasible")
        values = solved[1]
    return np.clip(np.round(values[:nx].reshape(M, R), 5), 0.0, 1.0)


_VALUE = operator.attrgetter("value")  # a HighsBasisStatus' int: faster than int() on pybind's enums


class WarmMaxMinLP:
    """The LAS LP (:func:`max_min_fairness_lp`) solved by dual simplex from the basis of this object's previous
    solve: ours, Gavel's ``lp="warm-simplex"`` option (issue 14's "HiGHS warm starts"), not Gavel's behaviour.

    Problem: a round policy re-solves the LP each time jobs arrive or finish, and consecutive LPs share most of
    their jobs. A job that was in the last LP keeps the basis status of its R columns and its two rows; a new job
    starts with its columns at 0 and its rows' slacks basic; the type rows and z keep theirs. The count of basic
    variables is then brought back to the number of rows (sum-row slacks of kept jobs made nonbasic at their
    bound 1, or row slacks made basic); HiGHS repairs a singular start itself. Without a usable basis (the first
    LP, the GPU types changed, or a warm start that did not end optimal) the interior point runs with crossover,
    which ends at a vertex and leaves its basis for the next solve.

    Why it is a named variant, not the default: the answer is a vertex of the optimal face, not the point near its
    centre that Gavel's interior-point solver (ECOS; HiGHS' IPM here) returns. Both reach the same optimal
    objective (the tests compare them to 1e-7), but the allocations differ: a vertex gives most jobs one type,
    so jobs move less, and the jobs above the smallest normalised throughput get no more than the vertex gives
    them. Measured on bench sim's default trace in docs/round-policies.md.

    Complexity: O(M R) to build and map the basis; the simplex iterations follow what changed since the last
    solve (about 20 per solve on bench sim's 10,000-job trace, against some 1,000 from a cold start)."""

    def __init__(self) -> None:
        # (key -> row, column statuses, row statuses, M) of the last solve; statuses as HighsBasisStatus values
        self._last: tuple[dict, np.ndarray, np.ndarray, int] | None = None
        self.solves = 0
        self.warm_starts = 0  # solves started from the last basis
        self.iterations = 0  # simplex iterations, all solves

    def solve(self, throughputs: np.ndarray, scale: np.ndarray, workers: np.ndarray, keys: list) -> np.ndarray:
        """x (M x R) for the jobs ``keys`` (one hashable per row of ``throughputs``, e.g. job ids)."""
        import highspy  # see gpuweave.highs_models.highs_model

        T = np.asarray(throughputs, dtype=float)
        M, R = T.shape
        if M == 0:
            self._last = None
            return np.zeros((0, R))
        warm = self._last is not None and len(self._last[1]) == self._last[3] * R + 1
        h = max_min_model(T, scale, workers, None, SIMPLEX if warm else CROSSOVER)
        if warm:
            h.setBasis(self._start_basis(keys, R, highspy))
        solved = run_model(h, strict=False)
        if solved is None:  # no optimum that way: once more from scratch the other way (a cold simplex is slow)
            h.clearSolver()
            for name, value in (CROSSOVER if warm else SIMPLEX).items():
                h.setOptionValue(name, value)
            solved = run_model(h)
            if solved is None:
                raise RuntimeError("Gavel LP infeasible")
        self.solves += 1
        self.warm_starts += warm
        self.iterations += h.getInfo().simplex_iteration_count
        basis = h.getBasis()
        self._last = (
            (
                dict(zip(keys, range(M))),
                np.fromiter(map(_VALUE, basis.col_status), dtype=np.int8),
                np.fromiter(map(_VALUE, basis.row_status), dtype=np.int8),
                M,
            )
            if basis.valid
            else None
        )
        return np.clip(solved[1][: M * R].reshape(M, R), 0.0, 1.0)

    def _start_basis(self, keys: list, R: int, highspy):
        """The start basis for jobs ``keys`` from the last solve's (class docstring), on arrays: O(M R)."""
        assert self._last is not None, "a warm start needs a last solve"
        at, cols, rows, PM = self._last
        status = highspy.HighsBasisStatus
        basic, lower, upper = int(status.kBasic), int(status.kLower), int(status.kUpper)
        M = len(keys)
        k = np.fromiter((at.get(key, -1) for key in keys), dtype=np.int64, count=M)
        known = k >= 0
        col = np.full((M, R), lower, dtype=np.int8)
        col[known] = cols[:-1].reshape(PM, R)[k[known]]
        col = np.append(col.ravel(), cols[-1])
        fair = np.where(known, rows[np.where(known, k, 0)], basic)
        total = np.where(known, rows[PM + np.where(known, k, 0)], basic)
        row = np.concatenate([fair, total, rows[2 * PM :]]).astype(np.int8)
        surplus = int(np.count_nonzero(col == basic) + np.count_nonzero(row == basic)) - row.size
        if surplus > 0:  # too many basic: jobs' sum rows at their bound (the job gets all of its time), first first
            at_bound = M + np.flatnonzero(row[M : 2 * M] == basic)[:surplus]
            row[at_bound] = upper
            surplus -= at_bound.size
        if surplus < 0:  # too few: row slacks basic, first first
            row[np.flatnonzero(row != basic)[:-surplus]] = basic
        by_value = {int(v): v for v in status.__members__.values()}
        enums = [by_value[i] for i in range(max(by_value) + 1)]
        start = highspy.HighsBasis()
        col_codes: list[Any] = col.tolist()
        row_codes: list[Any] = row.tolist()
        start.col_status = [enums[i] for i in col_codes]
        start.row_status = [enums[i] for i in row_codes]
        start.valid = True
        return start


def pop_groups(M: int, k: int) -> list[np.ndarray]:
    """POP's split of M jobs into ``k`` sub-problems (Narayanan et al., SOSP'21): round robin over the jobs' order
    (arrival), so every sub-problem sees a like mix of old and new jobs. Fewer groups when M < k; none when M = 0."""
    k = max(1, min(int(k), M))
    return [np.arange(g, M, k) for g in range(k)] if M else []


def max_min_fairness_pop(
    throughputs: np.ndarray, scale: np.ndarray, workers: np.ndarray, partitions: int, *, interior: bool = False
) -> np.ndarray:
    """POP on the LAS LP: the jobs split into ``partitions`` groups (:func:`pop_groups`), each type's workers into
    equal shares ``workers_r / k``, one :func:`max_min_fairness_lp` per group (its own normalisation over its
    jobs and share), the allocations stacked. ``partitions=1`` is :func:`max_min_fairness_lp` itself.

    Why: the LP has M*R+1 columns and HiGHS' interior point grows faster than linearly in them, so k LPs of M/k
    jobs cost less than one of M. The price is optimality: a group cannot use another group's share, so the
    smallest normalised throughput (:func:`max_min_objective`) can only fall; measured in docs/scale.md."""
    T = np.asarray(throughputs, dtype=float)
    M, R = T.shape
    groups = pop_groups(M, partitions)
    if len(groups) <= 1:
        return max_min_fairness_lp(T, scale, workers, interior=interior)
    sf = np.asarray(scale, dtype=float)
    share = np.asarray(workers, dtype=float) / len(groups)
    x = np.zeros((M, R))
    for rows in groups:
        x[rows] = max_min_fairness_lp(T[rows], sf[rows], share, interior=interior)
    return x


def max_min_objective(throughputs: np.ndarray, scale: np.ndarray, workers: np.ndarray, x: np.ndarray) -> float:
    """The LAS LP's objective at ``x``: the smallest normalised throughput over the jobs, with the whole problem's
    normalisation (the proportional share over all M jobs), so partitioned and whole solutions compare."""
    T = np.asarray(throughputs, dtype=float)
    M, _ = T.shape
    if M == 0:
        return 0.0
    t_equal = _equal_share_throughput(T, np.asarray(workers, dtype=float))
    sf = np.asarray(scale, dtype=float)
    return float(np.min((T * np.asarray(x, dtype=float)).sum(axis=1) * sf / t_equal))


def _equal_share_throughput(T: np.ndarray, workers: np.ndarray) -> np.ndarray:
    """``T_equal``, the LAS LP's normalisation (module docstring): each job's throughput under the proportional share
    ``workers_r / M`` of every type it can run on, rows scaled down to sum to at most 1 (M >= 1)."""
    M = T.shape[0]
    x_prop = np.where(T > 0, np.tile(workers / M, (M, 1)), 0.0)
    top = x_prop.sum(axis=1).max()
    if top > 1:
        x_prop /= top
    t_equal = (T * x_prop).sum(axis=1)
    return np.where(t_equal > 0, t_equal, np.maximum(T.max(axis=1), 1e-12))


def _interior_values(h) -> np.ndarray | None:
    """Column values of an interior-point run that ended optimal or imprecise (Gavel accepts ECOS'
    ``optimal_inaccurate`` the same way); None when it produced no feasible point."""
    h.run()
    solution = h.getSolution()
    info = h.getInfo()
    if not solution.value_valid or info.primal_solution_status != 2:  # 2 = feasible
        return None
    return np.asarray(solution.col_value)


def min_total_duration_lp(
    throughputs: np.ndarray,
    scale: np.ndarray,
    workers: np.ndarray,
    steps_remaining: np.ndarray,
    t_lo: float = 100.0,
    t_hi: float = 1e6,
    tolerance: float = 1.05,
) -> tuple[np.ndarray, float, int]:
    """Gavel's ``min_total_duration_perf``: (x, smallest feasible T found, LP solves). See the module docstring."""
    T = np.asarray(throughputs, dtype=float)
    M, R = T.shape
    if M == 0:
        return np.zeros((0, R)), 0.0, 0
    sf = np.asarray(scale, dtype=float)
    n = np.asarray(workers, dtype=float)
    steps = np.asarray(steps_remaining, dtype=float)
    nx = M * R
    # Columns: x[m, r] at m*R + r. Rows: sum_m (0..M-1), cap_r (M..M+R-1), thr_m (M+R..2M+R-1).
    m_idx = np.repeat(np.arange(M), R)
    r_idx = np.tile(np.arange(R), M)
    cols = np.arange(nx)
    ri = np.concatenate([m_idx, M + r_idx, M + R + m_idx])
    rc = np.concatenate([cols, cols, cols])
    rv = np.concatenate([np.ones(nx), sf[m_idx], T.ravel()])
    inf = np.inf
    h = highs_model(
        np.zeros(nx),
        ri,
        rc,
        rv,
        np.concatenate([np.full(M + R, -inf), np.zeros(M)]),
        np.concatenate([np.ones(M), n, np.full(M, inf)]),
        col_upper=np.where(T.ravel() > 0, 1.0, 0.0),
        orientation="col",
    )
    rows = np.arange(M + R, 2 * M + R, dtype=np.int32)
    upper = np.full(M, inf)
    solves = 0

    def feasible(horizon: float):
        nonlocal solves
        solves += 1
        h.changeRowsBounds(M, rows, steps / horizon, upper)
        solved = run_model(h, strict=False)
        return None if solved is None else solved[1][:nx].reshape(M, R)

    best_x, best_t = None, np.inf
    lo, hi = float(t_lo), float(t_hi)
    while best_x is None:
        while tolerance * lo < hi:
            mid = 0.5 * (lo + hi)
            x = feasible(mid)
            if x is not None:
                best_x, best_t, hi = x, mid, mid
            else:
                lo = mid
        if best_x is None:  # nothing feasible below the old upper end: search [hi, 10 hi] (Gavel's outer loop)
            lo, hi = hi, hi * 10.0
            if hi > 1e15:
                raise RuntimeError("Gavel min_total_duration LP: no feasible horizon")
    return np.clip(best_x, 0.0, 1.0), float(best_t), solves


def gavel_priorities(
    alloc: np.ndarray, received: np.ndarray, type_total: np.ndarray, feasible: np.ndarray
) -> np.ndarray:
    """priority = x / (received / type_total), x*1e9 where nothing was received yet, -1 where infeasible."""
    alloc = np.asarray(alloc, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(type_total[None, :] > 0, received / np.where(type_total > 0, type_total, 1.0)[None, :], 0.0)
        prio = np.where(received > 0, alloc / np.where(share > 0, share, 1.0), alloc * 1e9)
    return np.where(feasible, prio, -1.0)


def gavel_round(
    priority: np.ndarray,
    alloc: np.ndarray,
    deficit: np.ndarray,
    scale,
    capacity,
    order: list[int],
    *,
    positive_only: bool = False,
) -> dict[int, int]:
    """Gavel's greedy pass: job index -> type index, visiting types in ``order`` (per-type queues).

    Entries with a negative priority (infeasible) are never taken; ``positive_only`` also skips priority 0
    (Gavel does so for its FIFO policies, so a job runs only where its allocation puts it)."""
    free = list(capacity)
    chosen: dict[int, int] = {}
    M = priority.shape[0]
    floor = 0.0 if positive_only else -0.5
    for r in order:
        keys = [(-priority[m, r], -deficit[m, r], -alloc[m, r], m) for m in range(M) if priority[m, r] > floor]
        keys.sort()
        for _, _, _, m in keys:
            if m in chosen or scale[m] > free[r]:
                continue
            chosen[m] = r
            free[r] -= scale[m]
    return chosen


def fraction_priorities(
    alloc: np.ndarray, in_alloc: np.ndarray, job_time: np.ndarray, type_time: np.ndarray, feasible: np.ndarray
) -> np.ndarray:
    """Gavel's priorities: ``x / (job_time / type_time)``; ``x * 1e9`` where the fraction is 0; 0 where the job
    has no allocation yet (arrived since the last re-solve) or x is 0; -1 where the job cannot run."""
    alloc = np.asarray(alloc, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(type_time[None, :] > 0, job_time / np.where(type_time > 0, type_time, 1.0)[None, :], 0.0)
        prio = np.where(fraction > 0, alloc / np.where(fraction > 0, fraction, 1.0), alloc * 1e9)
    prio = np.where(in_alloc[:, None] & (alloc > 0), prio, 0.0)
    return np.where(feasible, prio, -1.0)


def isolated_allocation(scale: np.ndarray, workers: np.ndarray) -> np.ndarray:
    """Gavel's isolated share: ``workers_r / M / sf_m`` of every type, each row scaled down to sum to at most 1
    (as the reference run's notes on c4fa400 describe it; other Gavel versions scale by the largest row sum)."""
    sf = np.asarray(scale, dtype=float)
    n = np.asarray(workers, dtype=float)
    M = sf.size
    if M == 0:
        return np.zeros((0, n.size))
    x = np.tile(n / M, (M, 1)) / sf[:, None]
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


def fifo_perf_allocation(
    throughputs: np.ndarray, scale: np.ndarray, workers: np.ndarray, order: list[int] | None = None
) -> np.ndarray:
    """Gavel's ``fifo_perf``: rows in arrival order, each job on the fastest type with ``sf`` free GPUs (x = 1
    there); stop at the first job for which no type has room. Ties go to the first type of ``order`` (Gavel:
    type names sorted). As in Gavel, a job whose best type with room gives it throughput 0 is passed over without
    stopping the pass."""
    T = np.asarray(throughputs, dtype=float)
    M, R = T.shape
    order = list(range(R)) if order is None else list(order)
    free = np.asarray(workers, dtype=float).copy()
    x = np.zeros((M, R))
    for m in range(M):
        best, best_rate = -1, -1.0
        for r in order:
            if free[r] >= scale[m] and T[m, r] > best_rate:
                best, best_rate = r, T[m, r]
        if best < 0:
            break
        if best_rate > 0:
            x[m, best] = 1.0
            free[best] -= scale[m]
    return x


def finish_time_fairness_lp(
    throughputs: np.ndarray,
    scale: np.ndarray,
    workers: np.ndarray,
    since_start: np.ndarray,
    remaining: np.ndarray,
    isolated_time: np.ndarray,
    tolerance: float = 1e-4,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Gavel's ``finish_time_fairness_perf``: (x, isolated throughputs, LP solves). See the module docstring."""
    T = np.asarray(throughputs, dtype=float)
    M, R = T.shape
    if M == 0:
        return np.zeros((0, R)), np.zeros(0), 0
    sf = np.asarray(scale, dtype=float)
    n = np.asarray(workers, dtype=float)
    t = np.asarray(since_start, dtype=float)
    rem = np.asarray(remaining, dtype=float)
    t_iso = (T * isolated_allocation(sf, n)).sum(axis=1)
    expected_iso = np.asarray(isolated_time, dtype=float) + rem / np.maximum(t_iso, 1e-12)
    nx = M * R
    # Columns: x[m, r] at m*R + r. Rows: sum_m (0..M-1), cap_r (M..M+R-1), thr_m (M+R..2M+R-1).
    m_idx = np.repeat(np.arange(M), R)
    r_idx = np.tile(np.arange(R), M)
    cols = np.arange(nx)
    h = highs_model(
        np.zeros(nx),
        np.concatenate([m_idx, M + r_idx, M + R + m_idx]),
        np.concatenate([cols, cols, cols]),
        np.concatenate([np.ones(nx), sf[m_idx], T.ravel()]),
        np.concatenate([np.full(M + R, -np.inf), np.zeros(M)]),
        np.concatenate([np.ones(M), n, np.full(M, np.inf)]),
        col_upper=np.where(T.ravel() > 0, 1.0, 0.0),
        orientation="col",
    )
    rows = np.arange(M + R, 2 * M + R, dtype=np.int32)
    solves = 0

    def bound(rho: float) -> bool:
        """Set the throughput rows for ratio ``rho``; False when some job cannot reach it at all."""
        slack = rho * expected_iso - t
        if np.any(slack <= 0):
            return False
        h.changeRowsBounds(M, rows, rem / slack, np.full(M, np.inf))
        return True

    def feasible(rho: float):
        nonlocal solves
        if not bound(rho):
            return None
        solves += 1
        solved = run_model(h, strict=False)
        return None if solved is None else solved[1][:nx].reshape(M, R)

    lo, hi = 0.0, max(1.0, float(np.max((t + 1e-9) / expected_iso)) * 2.0)
    best = feasible(hi)
    while best is None:
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            raise RuntimeError("Gavel finish-time fairness LP: no feasible ratio")
        best = feasible(hi)
    while hi - lo > tolerance * hi:
        mid = 0.5 * (lo + hi)
        x = feasible(mid)
        if x is None:
            lo = mid
        else:
            best, hi = x, mid
    # The bisection ends at a vertex; Gavel's ECOS returns a point inside the optimal face. Re-solve the last
    # feasible ratio with the interior-point method for that point (keep the vertex if it gives none).
    bound(hi)
    for name, value in INTERIOR.items():
        h.setOptionValue(name, value)
    solves += 1
    values = _interior_values(h)
    if values is not None:
        best = values[:nx].reshape(M, R)
    return np.clip(best, 0.0, 1.0), t_iso, solves
