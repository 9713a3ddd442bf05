"""Brute force over every plan of a tiny rescheduling point: the test oracle for the MILP and RG.

Problem: the same as :mod:`gpuweave.andreas.milp` (minimise f_OBJ over plans that give each job at most one
node and one configuration of its type, within capacity; ``maximal`` keeps only non-idling plans), for
either proxy variant. Every plan is enumerated depth-first with capacity pruning, and all plans are
evaluated in one :func:`~gpuweave.andreas.cost.proxy_batch` call. Complexity: O((1 + N·K)^|Q|) plans —
tiny instances only (≤ 5 jobs, ≤ 3 nodes, spec §13).
"""

from __future__ import annotations

import numpy as np

from gpuweave.andreas.cost import proxy_batch
from gpuweave.andreas.milp import ExactResult
from gpuweave.andreas.model import Instance


def all_plans(inst: Instance, maximal: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(P, n) node and configuration arrays of every feasible plan (maximal ones only if asked)."""
    n = inst.n
    options: list[list[tuple[int, int, int]]] = []
    for j in range(n):
        opts = []
        for k in range(len(inst.configs)):
            if not np.isfinite(inst.times[j, k]):
                continue
            for nd in range(inst.num_nodes):
                if inst.node_type[nd] == inst.cfg_type[k] and inst.node_gpus[nd] >= inst.cfg_g[k]:
                    opts.append((nd, k, int(inst.cfg_g[k])))
        options.append(opts)
    plans_n: list[list[int]] = []
    plans_k: list[list[int]] = []
    free = inst.node_gpus.tolist()
    cur_n = [-1] * n
    cur_k = [-1] * n

    def rec(j: int) -> None:
        if j == n:
            if maximal:
                for q in range(n):
                    if cur_n[q] < 0 and any(free[nd] >= g for nd, _, g in options[q]):
                        return
            plans_n.append(cur_n.copy())
            plans_k.append(cur_k.copy())
            return
        cur_n[j], cur_k[j] = -1, -1
        rec(j + 1)
        for nd, k, g in options[j]:
            if free[nd] >= g:
                free[nd] -= g
                cur_n[j], cur_k[j] = nd, k
                rec(j + 1)
                free[nd] += g
                cur_n[j], cur_k[j] = -1, -1

    rec(0)
    if not plans_n:
        return np.zeros((0, n), dtype=np.int64), np.zeros((0, n), dtype=np.int64)
    return np.array(plans_n, dtype=np.int64), np.array(plans_k, dtype=np.int64)


def brute_force(inst: Instance, *, maximal: bool = True, variant: str = "code") -> ExactResult:
    """The best plan by exhaustive enumeration (first one found on ties)."""
    node_of, cfg_of = all_plans(inst, maximal)
    if node_of.shape[0] == 0:
        raise ValueError("no feasible plan")
    f = proxy_batch(inst, node_of, cfg_of, variant).f
    b = int(np.argmin(f))
    return ExactResult(float(f[b]), node_of[b], cfg_of[b], 0, node_of.shape[0])
