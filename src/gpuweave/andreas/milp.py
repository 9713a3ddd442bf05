"""Exact optimum of one rescheduling point for the code proxy f_OBJ, as MILPs in HiGHS (beyond the paper).

Problem: minimise f_OBJ (variant "code", :mod:`gpuweave.andreas.cost`) over all plans that put each queued
job on at most one node with one profiled configuration of that node's type, within node capacities.
f_OBJ is nonlinear (the energy term multiplies node costs by Δt_S = the first finish time, a minimum), so
the problem is linearised by **enumerating configurations and the first-ending (job, configuration)**
(the enumerated-configuration linearisation of specs/dependencies.md): for a fixed Δ* = t_{j*}(k*),

* binaries x_{j,n,k} for every job j, node n and configuration k of n's type with t_j(k) ≥ Δ*;
  Σ_{n,k} x_{j,n,k} ≤ 1; Σ_n x_{j*,n,k*} = 1 (so Δt_S = Δ* exactly);
* binaries y_{n,u}, u = 0..G_n: Σ_u y_{n,u} = 1 and Σ_{j,k} g_k x_{j,n,k} = Σ_u u y_{n,u} (capacity, and
  the node cost c(type_n, u) of the GPUs in use, as in (4f)–(4h) of the paper's Appendix A);
* objective Σ_{n,u} c(type_n, u) Δ*/3600 y_{n,u} + Σ x_{j,n,k} (ω_j max(0, T_c + Δ* − d_j) − W_j) + Σ_j W_j,
  with W_j the postponement term of j;

and the optimum is the best over all Δ* (plus the empty plan). Candidates are solved in ascending order of
a lower bound (Σ_j min(W_j, tardiness at Δ*) + c(k*)Δ*/3600) and skipped once the bound reaches the
incumbent.

``maximal=True`` (default) adds the non-idling constraint every plan of RG's CONSTRUCT satisfies: a
postponed job fits on no node (free_n < its smallest GPU count there). Without it, postponing a job whose
worst-case tardiness is 0 is free in f_OBJ, so the unconstrained optimum idles GPUs that RG (and the
paper's constraint (4n), "use min{N, J} nodes") would use; ``maximal=False`` gives that optimum.

This optimises the *code proxy*, not the Appendix A MINLP (whose α·π term picks any job per node, spec
§4.3 note 3): it is the objective RG minimises, so ``gap = f_RG / f_opt − 1`` is RG's optimality gap.
Complexity: up to |Q|·K MILPs with O(|Q|·N·K + N·G) binaries each; meant for small queues (≲ 10 jobs).

**Paper variant** (``variant="paper"``, spec §5 "paper", the per-node reading of Appendix A): f' = E' + T' + W
with E' = Σ_{n used} t_{j*_n} c(type_n, g_{j*_n})/3600 (j*_n the first-ending job on n), T' = Σ_j ω_j
max(0, T_c + t_j^S − d_j) and W as above. After enumerating configurations (binaries x_{j,n,k}) this is
**one exact MILP**, no Δ* enumeration: T' and W are linear in x (each (j, k) has a constant lateness), and
the α·π term of (1)/(4k)–(4m) is linearised with binaries α_{j,n,k} (the paper's α_jn split by
configuration) and π_{j,n} = t_j(k) c(k) fixed per (j, n, k):

* Σ_{n,k} x_{j,n,k} ≤ 1 (4d–4e); Σ_{j,k} g_k x_{j,n,k} ≤ G_n (capacity, (4g) with y eliminated, since E'
  prices the first job's own g, not the node's usage, spec A4);
* α ≤ x; x_{j,n,k} ≤ Σ_{j',k'} α_{j',n,k'} ≤ 1 (one α per used node, (4l)–(4m));
* M·α_{j,n,k} + Σ x_{j',n,k'} ≤ M over the (j', k') ending earlier on n ((t, j) lexicographic, j' ≠ j; M the
  number of such jobs): α can only mark the truly first-ending job (the proxy's j*_n; the Appendix A MINLP
  lacks this row, spec §4.3 note 3, and would let minimisation pick the cheapest π on the node);
* objective Σ α t c/3600 + Σ x (ω max(0, T_c + t − d) − W_j) + Σ_j W_j; ``maximal`` adds the same
  non-idling rows as the code variant.

Cross-checked against :func:`gpuweave.andreas.bruteforce.brute_force` (``variant="paper"``) in the tests.
The Appendix A constraint (4n) (Σ w_n = min{N, J}) and the Δ-free (4i) (no T_c) are not imposed: the proxy
RG minimises (spec A3, A21) has neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuweave.andreas.model import Instance
from gpuweave.highs_models import solve_binary_milp

EPS = 1e-9


@dataclass(slots=True)
class ExactResult:
    f: float
    node_of: np.ndarray
    cfg_of: np.ndarray
    milps: int  # MILPs solved
    candidates: int  # distinct first-ending times considered


def _triples(inst: Instance):
    """All (j, n, k) with matching type, g_k <= G_n and a finite time."""
    js, ns, ks = [], [], []
    for k in range(len(inst.configs)):
        nodes = np.flatnonzero((inst.node_type == inst.cfg_type[k]) & (inst.node_gpus >= inst.cfg_g[k]))
        jobs = np.flatnonzero(np.isfinite(inst.times[:, k]))
        if nodes.size and jobs.size:
            jj, nn = np.meshgrid(jobs, nodes, indexing="ij")
            js.append(jj.ravel())
            ns.append(nn.ravel())
            ks.append(np.full(jj.size, k))
    if not js:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    return np.concatenate(js), np.concatenate(ns), np.concatenate(ks)


def _solve_binary(cost, rows, offset: float, time_limit: float):
    """Solve min cost·v + offset over binaries v subject to ``rows`` = [(cols, vals, lo, hi)] with HiGHS.
    Returns (objective, solution) or None if infeasible."""
    ri = np.concatenate([np.full(len(c), i) for i, (c, _v, _l, _h) in enumerate(rows)]).astype(np.int64)
    rc = np.concatenate([np.asarray(c, dtype=np.int64) for c, _v, _l, _h in rows])
    rv = np.concatenate([np.asarray(v, dtype=float) for _c, v, _l, _h in rows])
    lo = [lo for _c, _v, lo, _h in rows]
    hi = [hi for _c, _v, _l, hi in rows]
    return solve_binary_milp(cost, ri, rc, rv, lo, hi, offset, time_limit)


def _exact_paper(inst: Instance, maximal: bool, time_limit: float) -> ExactResult:
    """The paper variant as one MILP (see the module docstring)."""
    n, N = inst.n, inst.num_nodes
    W = inst.postpone_cost()
    Wsum = float(W.sum())
    tj, tn, tk = _triples(inst)
    empty = (np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
    if not tj.size:
        return ExactResult(Wsum, empty[0], empty[1], 0, 0)
    nx = tj.size
    tt = inst.times[tj, tk]
    tg = inst.cfg_g[tk].astype(float)
    with np.errstate(invalid="ignore"):
        tard = inst.weight[tj] * np.maximum(0.0, inst.now + tt - inst.due[tj])
    tard = np.where(np.isnan(tard), 0.0, tard)
    cost = np.concatenate([tard - W[tj], tt * inst.cfg_cost[tk] / 3600.0])  # x then alpha
    A = nx  # offset of the alpha columns
    rows = []
    for j in range(n):
        cols = np.flatnonzero(tj == j)
        if cols.size:
            rows.append((cols, np.ones(cols.size), 0.0, 1.0))
    for nd in range(N):
        on = np.flatnonzero(tn == nd)
        if not on.size:
            continue
        rows.append((on, tg[on], 0.0, float(inst.node_gpus[nd])))
        rows.append((A + on, np.ones(on.size), 0.0, 1.0))
        for t in on.tolist():
            rows.append((np.array([A + t, t]), np.array([1.0, -1.0]), -math.inf, 0.0))  # alpha <= x
            rows.append((np.concatenate([[t], A + on]), np.concatenate([[1.0], -np.ones(on.size)]), -math.inf, 0.0))
            j, d = int(tj[t]), float(tt[t])
            earlier = on[((tt[on] < d) | ((tt[on] == d) & (tj[on] < j))) & (tj[on] != j)]
            if earlier.size:
                M = float(np.unique(tj[earlier]).size)
                rows.append(
                    (np.concatenate([[A + t], earlier]), np.concatenate([[M], np.ones(earlier.size)]), -math.inf, M)
                )
    if maximal:
        gmin = np.full((n, N), 1 << 20, dtype=np.int64)
        np.minimum.at(gmin, (tj, tn), inst.cfg_g[tk])
        pj, pn = np.nonzero(gmin <= inst.node_gpus[None, :])
        for j, nd in zip(pj.tolist(), pn.tolist()):
            need = float(inst.node_gpus[nd] - gmin[j, nd] + 1)
            on_n = np.flatnonzero(tn == nd)
            of_j = np.flatnonzero(tj == j)
            rows.append(
                (np.concatenate([on_n, of_j]), np.concatenate([tg[on_n], np.full(of_j.size, need)]), need, math.inf)
            )
    sol = _solve_binary(cost, rows, Wsum, time_limit)
    if sol is None:
        raise ValueError("no feasible plan")
    f, v = sol
    x = v[:nx] > 0.5
    node_of, cfg_of = empty[0].copy(), empty[1].copy()
    node_of[tj[x]] = tn[x]
    cfg_of[tj[x]] = tk[x]
    return ExactResult(f, node_of, cfg_of, 1, nx)


def exact_optimum(
    inst: Instance, *, maximal: bool = True, time_limit: float = 60.0, variant: str = "code"
) -> ExactResult:
    """Minimum of the proxy (``variant`` "code" or "paper") over all (maximal) plans; see the module docstring.

    Code variant: one MILP per candidate first-ending (time d, job j*, configuration k*), in order of a lower
    bound on the proxy, stopping when the bound reaches the best plan found.
    """
    if variant == "paper":
        return _exact_paper(inst, maximal, time_limit)
    if variant != "code":
        raise ValueError(f"unknown proxy variant {variant!r} (code, paper)")
    n, N = inst.n, inst.num_nodes
    W = inst.postpone_cost()
    Wsum = float(W.sum())
    tj, tn, tk = _triples(inst)
    tt = inst.times[tj, tk] if tj.size else np.zeros(0)
    tg = inst.cfg_g[tk]
    # smallest GPU count of job j usable on node n (for the non-idling rows); BIG if none
    gmin = np.full((n, N), 1 << 20, dtype=np.int64)
    if tj.size:
        np.minimum.at(gmin, (tj, tn), tg)
    empty_ok = not maximal or not tj.size
    best_f = Wsum if empty_ok else math.inf
    best = (np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
    if not tj.size:
        return ExactResult(best_f, best[0], best[1], 0, 0)
    # candidates: distinct (first-ending time, job, configuration)
    cand = sorted({(float(inst.times[j, k]), int(j), int(k)) for j, k in zip(tj, tk)})
    bounds = [_first_end_bound(inst, W, d, j, k) for d, j, k in cand]
    milps = 0
    for ci in np.argsort(bounds, kind="stable"):
        if bounds[ci] >= best_f - 1e-12:
            break
        d, jstar, kstar = cand[ci]
        keep = tt >= d - EPS * max(1.0, d)
        xj, xn, xk, xg = tj[keep], tn[keep], tk[keep], tg[keep]
        forced = (xj == jstar) & (xk == kstar)
        if not forced.any():
            continue
        # drop the other configurations of j* (it must end exactly at d on k*)
        sel = (xj != jstar) | forced
        xj, xn, xk, xg = xj[sel], xn[sel], xk[sel], xg[sel]
        cost, rows_i, rows_c, rows_v, lo, hi = _first_end_milp(inst, W, d, jstar, xj, xn, xg, gmin, maximal)
        sol = solve_binary_milp(
            cost, np.concatenate(rows_i), np.concatenate(rows_c), np.concatenate(rows_v), lo, hi, Wsum, time_limit
        )
        milps += 1
        if sol is None:
            continue
        f, values = sol
        if f < best_f - 1e-12:
            x = values[: xj.size] > 0.5
            node_of = np.full(n, -1, dtype=np.int64)
            cfg_of = np.full(n, -1, dtype=np.int64)
            node_of[xj[x]] = xn[x]
            cfg_of[xj[x]] = xk[x]
            best_f, best = f, (node_of, cfg_of)
    return ExactResult(best_f, best[0], best[1], milps, len(cand))


def _tardiness(inst: Instance, d: float) -> np.ndarray:
    """Weighted tardiness of every job if it ended ``d`` seconds from now (0 for a job with no due date)."""
    with np.errstate(invalid="ignore"):
        tard = inst.weight * np.maximum(0.0, inst.now + d - inst.due)
    return np.where(np.isnan(tard), 0.0, tard)


def _first_end_bound(inst: Instance, W: np.ndarray, d: float, j: int, k: int) -> float:
    """Lower bound on the proxy of any plan whose first job to end is j on configuration k at d."""
    tard = _tardiness(inst, d)
    return float(np.minimum(W, tard).sum() - min(W[j], tard[j]) + tard[j]) + inst.cfg_cost[k] * d / 3600.0


def _first_end_milp(
    inst: Instance,
    W: np.ndarray,
    d: float,
    jstar: int,
    xj: np.ndarray,
    xn: np.ndarray,
    xg: np.ndarray,
    gmin: np.ndarray,
    maximal: bool,
) -> tuple[np.ndarray, list, list, list, list[float], list[float]]:
    """The MILP for first-ending time d and job j* over the (job, node, configuration) triples ``x*``.

    Variables: one binary per triple, then per node one binary per usage level u = 0..G_n. Returns the cost
    vector and the constraint triplets (row, column, value) with row bounds.
    """
    n, N = inst.n, inst.num_nodes
    gmax_n = inst.node_gpus
    nx = xj.size
    # y variables per node, u = 0..G_n
    y_node = np.repeat(np.arange(N), gmax_n + 1)
    y_u = np.concatenate([np.arange(G + 1) for G in gmax_n])
    ny = y_node.size
    tard = _tardiness(inst, d)
    cost = np.concatenate([tard[xj] - W[xj], inst.node_cost[y_node, y_u] * d / 3600.0])
    rows_i, rows_c, rows_v, lo, hi = [], [], [], [], []
    r = 0
    # (a) each job at most once; j* exactly once
    rows_i.append(xj.astype(np.int64))
    rows_c.append(np.arange(nx))
    rows_v.append(np.ones(nx))
    lo.extend([1.0 if j == jstar else 0.0 for j in range(n)])
    hi.extend([1.0] * n)
    r += n
    # (b) one usage level per node
    rows_i.append(r + y_node)
    rows_c.append(nx + np.arange(ny))
    rows_v.append(np.ones(ny))
    lo.extend([1.0] * N)
    hi.extend([1.0] * N)
    r += N
    # (c) GPUs in use = chosen level
    rows_i.append(np.concatenate([r + xn, r + y_node]))
    rows_c.append(np.concatenate([np.arange(nx), nx + np.arange(ny)]))
    rows_v.append(np.concatenate([xg.astype(float), -y_u.astype(float)]))
    lo.extend([0.0] * N)
    hi.extend([0.0] * N)
    r += N
    if maximal:
        # (d) postponed j fits nowhere: u_n + (G_n - gmin + 1) * placed_j >= G_n - gmin + 1
        pj, pn = np.nonzero(gmin <= gmax_n[None, :])
        need = (gmax_n[pn] - gmin[pj, pn] + 1).astype(float)
        for idx in range(pj.size):
            j, nd = pj[idx], pn[idx]
            on_n = np.flatnonzero(xn == nd)
            of_j = np.flatnonzero(xj == j)
            cols = np.concatenate([on_n, of_j])
            vals = np.concatenate([xg[on_n].astype(float), np.full(of_j.size, need[idx])])
            rows_i.append(np.full(cols.size, r))
            rows_c.append(cols)
            rows_v.append(vals)
            lo.append(need[idx])
            hi.append(math.inf)
            r += 1
    return cost, rows_i, rows_c, rows_v, lo, hi


def optimality_gap(f_heuristic: float, f_opt: float) -> float:
    """Relative gap f_heuristic / f_opt − 1 (0 when both are 0)."""
    if f_opt <= 0:
        return 0.0 if f_heuristic <= 1e-12 else math.inf
    return f_heuristic / f_opt - 1.0
