"""Exact k-in-p-CoSchedule by integer linear programming in HiGHS (paper 4.3, Theorem 4).

Problem: the optimal co-schedule for small ``n``.

Model (Theorem 4): Boolean ``x[i,j,b]`` (task ``i`` in pack ``b`` on ``j`` processors) and ``y[b] >= 0``
(cost of pack ``b``); minimise ``sum_b y[b]`` subject to (i) every task in exactly one (pack, count),
(ii) at most ``k`` tasks per pack and (iii) at most ``p`` processors per pack. Two deviations from the
paper's text, both exact reformulations:

* (iv) ``x[i,j,b] t_{i,j} <= y[b]`` for all ``i, j, b`` is written as ``sum_j t_{i,j} x[i,j,b] <= y[b]`` for all
  ``i, b`` (equivalent because of (i), and at least as tight): ``n^2`` rows instead of ``n^2 p``.
* Symmetry breaking: pack ``b`` is empty or has task ``b`` as its lowest-index task
  (``x[i,.,b] = 0`` for ``i < b`` and ``sum_j x[i,j,b] <= sum_j x[b,j,b]``). Any co-schedule can be relabelled so.

The model is built from triplets by :func:`gpuweave.highs_models.highs_model` (row-wise, one ``passModel``).

Complexity: exponential (branch and bound); ``n^2 p + n`` columns and ``O(n^2)`` rows. Limited to
``n <= 12``; the cross-checks use ``n <= 8``.
"""

from __future__ import annotations

import numpy as np

from gpuweave.highs_models import EXACT, highs_model, run_model
from gpuweave.packs.model import Profile
from gpuweave.packs.registry import Solution, register_algorithm

MAX_N = 12


def ilp_optimum(profile: Profile, k: int, *, time_limit: float = 300.0) -> tuple[float, list[list[int]], list[int]]:
    """Return ``(OPT_k, packs, sigma)`` solved to proven optimality by HiGHS."""
    n, p = profile.n, profile.p
    t = profile.times
    nx = n * p * n

    def x(i: int, j: int, b: int) -> int:  # j is 1-based
        return (i * p + (j - 1)) * n + b

    def y(b: int) -> int:
        return nx + b

    ri: list[int] = []
    index: list[int] = []
    value: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(cols: list[int], vals: list[float], lower: float, upper: float) -> None:
        ri.extend([len(lo)] * len(cols))
        index.extend(cols)
        value.extend(vals)
        lo.append(lower)
        hi.append(upper)

    inf = np.inf
    allowed = [(i, b) for i in range(n) for b in range(n) if b <= i]
    for i in range(n):  # (i)
        cols = [x(i, j, b) for b in range(i + 1) for j in range(1, p + 1)]
        row(cols, [1.0] * len(cols), 1.0, 1.0)
    for b in range(n):  # (ii) and (iii)
        cols = [x(i, j, b) for i in range(b, n) for j in range(1, p + 1)]
        row(cols, [1.0] * len(cols), -inf, float(k))
        row(cols, [float(j) for i in range(b, n) for j in range(1, p + 1)], -inf, float(p))
    for i, b in allowed:  # (iv), aggregated over j
        cols = [x(i, j, b) for j in range(1, p + 1)] + [y(b)]
        row(cols, [float(t[i, j - 1]) for j in range(1, p + 1)] + [-1.0], -inf, 0.0)
    for i, b in allowed:  # symmetry: task i > b joins pack b only if task b is in it
        if i > b:
            cols = [x(i, j, b) for j in range(1, p + 1)] + [x(b, j, b) for j in range(1, p + 1)]
            row(cols, [1.0] * p + [-1.0] * p, -inf, 0.0)

    ncol = nx + n
    upper = np.zeros(ncol)
    for i, b in allowed:
        for j in range(1, p + 1):
            upper[x(i, j, b)] = 1.0
    upper[nx:] = inf
    cost = np.zeros(ncol)
    cost[nx:] = 1.0

    integral = np.zeros(ncol, dtype=bool)
    integral[:nx] = True
    h = highs_model(
        cost,
        ri,
        index,
        value,
        lo,
        hi,
        col_upper=upper,
        integral=integral,
        options={**EXACT, "mip_abs_gap": 1e-9, "time_limit": float(time_limit)},
    )
    solved = run_model(h)
    if solved is None:
        raise RuntimeError("HiGHS did not prove optimality: Infeasible")
    col = solved[1]
    packs_by_b: dict[int, list[int]] = {}
    sigma = [0] * n
    for i, b in allowed:
        for j in range(1, p + 1):
            if col[x(i, j, b)] > 0.5:
                packs_by_b.setdefault(b, []).append(i)
                sigma[i] = j
    packs = [packs_by_b[b] for b in sorted(packs_by_b)]
    opt = float(sum(max(t[i, sigma[i] - 1] for i in blk) for blk in packs))
    return opt, packs, sigma


@register_algorithm(
    "exact-ilp", summary="proven optimum by the Theorem-4 ILP in HiGHS (n <= 12)", exact=True, max_n=MAX_N
)
def exact_ilp(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    opt, packs, sigma = ilp_optimum(profile, k)
    return Solution(packs, np.asarray(sigma, dtype=np.int64), {"optimum": opt})
