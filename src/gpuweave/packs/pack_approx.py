"""Algorithm 3, PACK-APPROX, and its k-in-p extension (paper 4.4 and Section 5, heuristic H3).

Problem: k-in-p-CoSchedule. For ``k = p`` the literal algorithm is a 3-approximation (Theorem 5); for
``k < p`` no guarantee is known.

Algorithm: start from ``sigma = 1``. In every iteration evaluate MAKE-PACK(n, p, k, sigma) and keep the best
co-schedule; stop when the longest task ``j*`` already has ``p`` processors (exit 1) or when
``A_tot / p > t_max`` (exit 2, tested after the evaluation); otherwise give ``j*`` one more processor.
``j*`` is the longest task, lowest index on ties (R8). The loop runs until an exit fires (spec R15; the
paper's bound ``n(p-1)-1`` would skip the last state), so at most ``n(p-1)+1`` evaluations.

Variants (spec R1), registered under separate names:

* ``pack-approx-raw``: literal; the cost is MAKE-PACK's cost under the unmodified ``sigma``.
  Used for the Theorem 5 checks.
* ``pack-approx-a``: the raw run, then Algorithm 1 on the packs of the first iteration with minimum raw cost.
* ``pack-approx`` (default, variant (b) of R1): **deviation from the paper's text** (which applies
  Algorithm 1 only in the other heuristics): Algorithm 1 is applied to the packs of *every* iteration and
  the best re-assigned co-schedule is kept. The exit test and the ``sigma`` update still use the unmodified
  ``sigma``. It is never worse than (a) or raw, and gives the packing ratios near 1 the paper reports;
  the literal reading does not (spec R1).

Complexity: ``O(I (n log n + n u))`` with ``I <= n(p-1)+1`` iterations and ``u`` packs; variant (b) adds
``O(p log k)`` per pack and iteration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from gpuweave.packs.makepack import make_pack, packs_raw_cost
from gpuweave.packs.model import Profile
from gpuweave.packs.onepack import reassign
from gpuweave.packs.registry import Solution, register_algorithm


@dataclass(slots=True)
class ApproxStep:
    """One iteration of the literal algorithm (for the Theorem 5 checks)."""

    sigma: list[int]
    a_tot: float
    t_max: float
    raw_cost: float
    packs: list[list[int]]


@dataclass(slots=True)
class ApproxRun:
    packs: list[list[int]]
    sigma: list[int]
    cost: float
    iterations: int
    steps: list[ApproxStep] = field(default_factory=list)


def pack_approx_run(
    rows: Sequence[Sequence[float]], n: int, p: int, k: int, *, reassign_each: bool, record: bool = False
) -> ApproxRun:
    """Run the iteration. ``reassign_each`` selects variant (b); otherwise the literal (raw) algorithm."""
    sigma = [1] * n
    cur = [rows[i][0] for i in range(n)]
    a_tot = sum(cur)
    best: ApproxRun | None = None
    steps: list[ApproxStep] = []
    it = 0
    while True:
        order = sorted(range(n), key=lambda i: (-cur[i], i))
        jstar = order[0]
        t_max = cur[jstar]
        packs = make_pack(rows, sigma, p, k, order)
        if reassign_each:
            s2 = list(sigma)
            cost = reassign(rows, packs, s2, p)
        else:
            s2 = sigma
            cost = packs_raw_cost(rows, packs, sigma)
        it += 1
        if record:
            steps.append(ApproxStep(list(sigma), a_tot, t_max, packs_raw_cost(rows, packs, sigma), packs))
        if best is None or cost < best.cost:
            best = ApproxRun(packs, list(s2), cost, 0)
        if a_tot / p > t_max or sigma[jstar] == p:
            break
        s = sigma[jstar] + 1
        sigma[jstar] = s
        new_t = rows[jstar][s - 1]
        a_tot += new_t * s - cur[jstar] * (s - 1)
        cur[jstar] = new_t
    assert best is not None
    best.iterations = it
    best.steps = steps
    return best


def _solution(run: ApproxRun) -> Solution:
    return Solution(run.packs, np.asarray(run.sigma, dtype=np.int64), {"iterations": float(run.iterations)})


@register_algorithm("pack-approx", summary="pack-Approx with Algorithm 1 on every iteration's packs (spec R1 b)")
def pack_approx(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    rows = profile.rows
    return _solution(pack_approx_run(rows, profile.n, profile.p, k, reassign_each=True))


@register_algorithm("pack-approx-raw", summary="literal Algorithm 3 with MAKE-PACK(n,p,k); 3-approx for k=p")
def pack_approx_raw(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    rows = profile.rows
    return _solution(pack_approx_run(rows, profile.n, profile.p, k, reassign_each=False))


@register_algorithm("pack-approx-a", summary="literal pack-Approx, then Algorithm 1 on its best packs (spec R1 a)")
def pack_approx_a(profile: Profile, k: int, rng: np.random.Generator) -> Solution:
    rows = profile.rows
    run = pack_approx_run(rows, profile.n, profile.p, k, reassign_each=False)
    sigma = list(run.sigma)
    reassign(rows, run.packs, sigma, profile.p)
    return Solution(run.packs, np.asarray(sigma, dtype=np.int64), {"iterations": float(run.iterations)})
