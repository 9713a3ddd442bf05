"""ANDREAS costs: the optimizer's proxy objective f_OBJ and the real (ex-post) cost of a run.

**Proxy f_OBJ** (spec andreas.md §5). For a candidate schedule S at time T_c (each placed job j on node
n with configuration k, remaining time t_j^S), P the postponed jobs, u_n the GPUs in use on n:

* variant ``"code"`` (default; what the authors' code evaluates, spec A2), with Δt_S = min_{j∈S} t_j^S::

    E = Σ_{n: u_n>0} c(type_n, u_n) · Δt_S / 3600
    T = Σ_{j∈S} ω_j · max(0, T_c + Δt_S − d_j)
    W = Σ_{j∈P} ρ · ω_j · max(0, T_c + H_wc + M_j − d_j)

* variant ``"paper"`` (flag; the Appendix A formulation read per node): E' = Σ_{n used} t_{j*_n} ·
  c(type_n, g_{j*_n}) / 3600 with j*_n the first-ending job on n, T' = Σ_{j∈S} ω_j max(0, T_c + t_j^S − d_j),
  W as above.

``proxy_batch`` evaluates B schedules at once with numpy (O(B·(n+N))) — it is RG's inner evaluation.

**Real cost** (spec §3): energy = ∫ Σ_n c(type_n, u_n(t)) dt / 3600 over the run, where u_n is the number of
GPUs in use on n (idle nodes cost 0), attributed to jobs in proportion g_j/u_n; tardiness =
Σ_j ω_j max(0, C_j − d_j); total = energy + tardiness. The ANDREAS reproduction's ``real_cost`` computes
it from a simulated run, so every policy is charged the same way. :func:`deviation` is Table III's
(pred − real)/pred (spec A24, AC11).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuweave.andreas.model import Instance


@dataclass(slots=True)
class ProxyTerms:
    f: np.ndarray
    energy: np.ndarray
    tardiness: np.ndarray
    postpone: np.ndarray


def gpus_in_use(inst: Instance, node_of: np.ndarray, cfg_of: np.ndarray) -> np.ndarray:
    """(B, N) GPUs in use per node for B schedules given as (B, n) node/config indices (-1 = postponed)."""
    B, n = node_of.shape
    N = inst.num_nodes
    placed = node_of >= 0
    rows = np.broadcast_to(np.arange(B)[:, None], (B, n))[placed]
    g = inst.cfg_g[cfg_of[placed]]
    flat = np.bincount(rows * N + node_of[placed], weights=g, minlength=B * N)
    return flat.reshape(B, N).astype(np.int64)


def proxy_batch(
    inst: Instance,
    node_of: np.ndarray,
    cfg_of: np.ndarray,
    variant: str = "code",
    used: np.ndarray | None = None,
) -> ProxyTerms:
    """f_OBJ of B schedules ((B, n) arrays; node -1 = postponed); ``used`` = (B, N) GPUs in use if known."""
    node_of = np.atleast_2d(node_of)
    cfg_of = np.atleast_2d(cfg_of)
    B, n = node_of.shape
    placed = node_of >= 0
    W_all = inst.postpone_cost()
    W = W_all.sum() - np.where(placed, W_all[None, :], 0.0).sum(axis=1) if n else np.zeros(B)
    if n == 0:
        z = np.zeros(B)
        return ProxyTerms(z, z.copy(), z.copy(), z.copy())
    jidx = np.broadcast_to(np.arange(n)[None, :], (B, n))
    t = np.where(placed, inst.times[jidx, np.where(placed, cfg_of, 0)], np.inf)
    any_placed = placed.any(axis=1)
    with np.errstate(invalid="ignore"):
        if variant == "code":
            dt = np.where(any_placed, t.min(axis=1), 0.0)
            if used is None:
                used = gpus_in_use(inst, node_of, cfg_of)
            N = inst.num_nodes
            E = inst.node_cost[np.arange(N)[None, :], used].sum(axis=1) * dt / 3600.0
            late = np.maximum(0.0, inst.now + dt[:, None] - inst.due[None, :])
            T = np.where(placed, inst.weight[None, :] * late, 0.0).sum(axis=1)
        elif variant == "paper":
            E = _paper_energy(inst, node_of, cfg_of, t, placed)
            late = np.maximum(0.0, inst.now + np.where(placed, t, 0.0) - inst.due[None, :])
            T = np.where(placed, inst.weight[None, :] * late, 0.0).sum(axis=1)
        else:
            raise ValueError(f"unknown proxy variant {variant!r} (code, paper)")
    return ProxyTerms(E + T + W, E, T, W)


def _paper_energy(inst, node_of, cfg_of, t, placed) -> np.ndarray:
    """Σ over used nodes of t_{j*} c(type_n, g_{j*}) / 3600, j* = the first-ending job on the node."""
    B, n = node_of.shape
    N = inst.num_nodes
    rows = np.broadcast_to(np.arange(B)[:, None], (B, n))[placed]
    key = rows * N + node_of[placed]
    tt = t[placed]
    cost = inst.cfg_cost[cfg_of[placed]]
    order = np.lexsort((tt, key))
    key_s = key[order]
    first = np.ones(key_s.size, dtype=bool)
    first[1:] = key_s[1:] != key_s[:-1]
    sel = order[first]
    out = np.zeros(B)
    np.add.at(out, rows[sel], tt[sel] * cost[sel] / 3600.0)
    return out


def proxy(
    inst: Instance, node_of: np.ndarray, cfg_of: np.ndarray, variant: str = "code"
) -> tuple[float, float, float, float]:
    """(f, E, T, W) of one schedule given as (n,) arrays."""
    terms = proxy_batch(inst, np.asarray(node_of)[None, :], np.asarray(cfg_of)[None, :], variant)
    return float(terms.f[0]), float(terms.energy[0]), float(terms.tardiness[0]), float(terms.postpone[0])


def deviation(predicted: float, real: float) -> float:
    """Table III's deviation (pred − real)/pred (spec §10.3, A24); e.g. (1.08438, 0.95111) -> 0.1229."""
    if not (predicted > 0 and math.isfinite(predicted)):
        raise ValueError(f"predicted cost must be a positive number, got {predicted}")
    return (predicted - real) / predicted
