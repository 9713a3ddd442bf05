"""Randomized Greedy (RG): ANDREAS' Job Optimizer (paper Sec. IV-B, Algorithm 1; spec andreas.md §6).

Problem: at a rescheduling point, choose for every queued job (waiting or running) a node and a
configuration k = (GPU type, g), or postpone it, minimising the proxy f_OBJ (:mod:`gpuweave.andreas.cost`).

Algorithm (spec §6.3, every parameter of §6.1):

1. Pressure Δ_j = T_c + m_j − d_j (unweighted, A9); L0 = jobs by Δ descending (stable; the queue is
   first ordered by submission, then id).
2. Iteration 0: CONSTRUCT(L0) deterministically (plain greedy), so f(RG) ≤ f(greedy) (AC7).
3. Iterations 1..It−1, It = min(MaxIt_RG = 1000, N·|Q|·G_cat) (cap ON by default, A14; the paper states
   only MaxIt_RG): re-sort L by Δ (ties keep the previous order), then one pass of sequential adjacent
   swaps, pair (i, i+1) swapped with p = 0.5 + π if ω(L[i]) > ω(L[i+1]) else 0.5 − π (π = 0.05;
   ``swap_rule="inverse"`` exchanges the two, A5); CONSTRUCT(L); keep S if it places ≥ 1 job and
   f(S) < f_best (strict).
4. CONSTRUCT(L): every node starts empty (full re-plan); for j in L: D = configurations meeting the due
   date (T_c + t_j(k) < d_j, A8) by t_j(k)·c(k) ascending (ties: t_j(k), which matters when energy is
   free), D̄ = the others by t_j(k) ascending (ties: (type, g)); try D then D̄, each on its best-fit node
   (fewest free GPUs that still fit, lowest index, A7); j is postponed if nothing fits. SELECT is the
   code's RCL with α = 0.05: the r = round(α·|Lc|) first entries, which is deterministic (r ≤ 1) for fewer
   than 30 candidate configurations;
   ``config_rule="roulette"`` picks with probability ∝ 1/key (A6).
5. Optional variants of spec §6 (default off): ``node_rule="random_beta"`` (randomized iterations pick a
   node uniformly among the first round(0.2·#fitting) nodes in best-fit order, [C-main]) and
   ``postprocessing=True`` (the returned plan gives each node's idle GPUs to the co-located job with the
   largest speed-up, [C-main], A10; see :func:`postprocess`).

Implementation: all It−1 randomized iterations are evaluated **at once** with numpy. When the
pressures are pairwise distinct (the usual case) the re-sort restores L0 every iteration, so the orders
are independent: the swap pass is vectorised over iterations (one numpy step per list position), and
CONSTRUCT runs over all iterations in lock-step on a (B, N) free-GPU matrix; f_OBJ is evaluated for all B
schedules by :func:`gpuweave.andreas.cost.proxy_batch`. The random stream is drawn in the sequential
order (iteration-major), so the batched path returns exactly what the sequential definition returns for
the same seed (tested). With tied pressures the orders depend on each other through the tie order and are
generated sequentially (O(It·|Q|) Python steps); randomised configuration choice (r ≥ 2 or roulette) or
node choice (random_beta) uses a scalar CONSTRUCT per iteration.

Scalar CONSTRUCT keeps each node type's nodes in heaps bucketed by free GPUs, so the best-fit node costs O(G_max)
instead of a scan of the N nodes, and it counts the nodes with a free GPU instead of re-checking them per job.
When no randomized iteration can win (f of the greedy plan is 0 and nothing is negative) the iterations' uniforms
are not drawn: the PCG64 stream is advanced past them (:func:`skip_uniforms`), so later calls see the same numbers.
Same plans and stream as the first form (tests/andreas/test_rg_reference.py).

Complexity: O(It·|Q|·(K + N)) numpy element operations per call; O(|Q|·K·G_max) Python steps.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from gpuweave.andreas.cost import proxy_batch
from gpuweave.andreas.model import Instance

BIG = 1 << 14


@dataclass(frozen=True, slots=True)
class RGConfig:
    """Parameters of RG with the spec's defaults (§6.1, §13)."""

    max_it: int = 1000
    cap_iterations: bool = True
    pi_swap: float = 0.05
    alpha_cfg: float = 0.05
    proxy_variant: str = "code"
    swap_rule: str = "code"
    config_rule: str = "rcl"
    deadline_strict: bool = True
    node_rule: str = "best_fit"
    beta_node: float = 0.2
    postprocessing: bool = False

    def __post_init__(self) -> None:
        if self.max_it < 1:
            raise ValueError("max_it must be >= 1")
        if self.proxy_variant not in ("code", "paper"):
            raise ValueError(f"proxy_variant must be 'code' or 'paper', got {self.proxy_variant!r}")
        if self.swap_rule not in ("code", "inverse"):
            raise ValueError(f"swap_rule must be 'code' or 'inverse', got {self.swap_rule!r}")
        if self.config_rule not in ("rcl", "roulette"):
            raise ValueError(f"config_rule must be 'rcl' or 'roulette', got {self.config_rule!r}")
        if self.node_rule not in ("best_fit", "random_beta"):
            raise ValueError(f"node_rule must be 'best_fit' or 'random_beta', got {self.node_rule!r}")
        if not 0 <= self.beta_node <= 1:
            raise ValueError("beta_node must be in [0, 1]")
        if not 0 <= self.pi_swap <= 0.5:
            raise ValueError("pi_swap must be in [0, 0.5]")


@dataclass(slots=True)
class Schedule:
    """A plan: per queued job (instance order) its node and configuration, -1 = postponed."""

    node_of: np.ndarray
    cfg_of: np.ndarray
    f: float
    energy: float
    tardiness: float
    postpone: float
    f_greedy: float = math.nan
    iterations: int = 1
    best_iteration: int = 0
    extra: dict = field(default_factory=dict)

    def placed(self) -> np.ndarray:
        return np.flatnonzero(self.node_of >= 0)


# ------------------------------------------------------------------------------------------ orderings
def pressure_order(inst: Instance) -> np.ndarray:
    """L0: jobs by pressure descending; ties by submission, then id (stable sorts)."""
    base = np.array(sorted(range(inst.n), key=lambda j: (inst.submission[j], inst.job_ids[j])), dtype=np.int64)
    delta = inst.pressure()
    return base[np.argsort(-delta[base], kind="stable")]


def swap_pass_batch(L0: np.ndarray, weight: np.ndarray, U: np.ndarray, pi: float, rule: str = "code") -> np.ndarray:
    """B independent swap passes over L0: row b uses uniforms U[b, i] for pair i (sequential, so an element
    may move several places). O(B·n) numpy work in n steps.

    A sequential pass only ever compares the element carried forward so far with the untouched L0[i+1], so
    each step is a (B,)-vector operation against one scalar weight: position i receives L0[i+1] if the pair
    swaps, else the carried element (which then stays carried)."""
    B = U.shape[0]
    n = L0.size
    L = np.empty((B, n), dtype=np.int64)
    if n == 0:
        return L
    hi, lo = 0.5 + pi, 0.5 - pi
    if rule == "inverse":
        hi, lo = lo, hi
    w0 = weight[L0]
    carried = np.full(B, L0[0], dtype=np.int64)
    wc = np.full(B, w0[0])
    UT = np.ascontiguousarray(U.T)
    for i in range(n - 1):
        right, wr = L0[i + 1], w0[i + 1]
        sw = UT[i] < np.where(wc > wr, hi, lo)
        L[:, i] = np.where(sw, right, carried)
        keep = ~sw
        carried = np.where(sw, carried, right)
        wc = np.where(keep, wr, wc)
    L[:, n - 1] = carried
    return L


def swap_orders_sequential(
    L0: np.ndarray, delta: np.ndarray, weight: np.ndarray, U: np.ndarray, pi: float, rule: str
) -> np.ndarray:
    """The literal loop of spec §6.3 lines 6–10 (re-sort by Δ keeping ties, then one swap pass)."""
    its, _ = U.shape
    n = L0.size
    out = np.empty((its, n), dtype=np.int64)
    L = L0.copy()
    hi, lo = 0.5 + pi, 0.5 - pi
    if rule == "inverse":
        hi, lo = lo, hi
    w = weight.tolist()
    for it in range(its):
        L = L[np.argsort(-delta[L], kind="stable")]
        row = L.tolist()
        u = U[it]
        for i in range(n - 1):
            p = hi if w[row[i]] > w[row[i + 1]] else lo
            if u[i] < p:
                row[i], row[i + 1] = row[i + 1], row[i]
        L = np.array(row, dtype=np.int64)
        out[it] = L
    return out


# ------------------------------------------------------------------------------------------ construction
def config_lists(inst: Instance, strict: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job: the configurations to try in order (D by t·c, then D̄ by t; ties by (type, g)), -1 padded;
    the size of D; and the sort keys. Shapes (n, K), (n,), (n, K)."""
    t = inst.times
    finite = np.isfinite(t)
    end = inst.now + t
    meets = (end < inst.due[:, None]) if strict else (end <= inst.due[:, None])
    inD = finite & meets
    group = np.where(inD, 0, np.where(finite, 1, 2))
    with np.errstate(invalid="ignore"):
        key = np.where(inD, t * inst.cfg_cost[None, :], t)
    K = inst.cfg_g.size
    idx = np.broadcast_to(np.arange(K)[None, :], t.shape)
    # Ties of t·c (e.g. all costs 0 on a cluster with a zero energy price): the faster configuration first.
    order = np.lexsort((idx, t, key, group), axis=-1) if t.size else np.zeros(t.shape, dtype=np.int64)
    count = finite.sum(axis=1)
    ranks = np.arange(K)[None, :]
    lists = np.where(ranks < count[:, None], order, -1).astype(np.int64)
    keys = np.take_along_axis(key, order, axis=1) if t.size else key
    return lists, inD.sum(axis=1), keys


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def initial_free(inst: Instance, keep: np.ndarray | None = None) -> np.ndarray:
    """Free GPUs per node: all of them, minus those of the jobs in ``keep`` (FPM keeps running jobs)."""
    free = inst.node_gpus.copy()
    if keep is not None:
        for j in keep:
            free[inst.run_node[j]] -= inst.cfg_g[inst.run_cfg[j]]
    return free


def construct(
    inst: Instance,
    order,
    free: np.ndarray,
    lists: np.ndarray,
    n_d: np.ndarray,
    *,
    randomized: bool = False,
    rng: np.random.Generator | None = None,
    cfg: RGConfig = RGConfig(),
    keys: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scalar CONSTRUCT (spec §6.3) over ``order`` starting from ``free`` (modified in place).

    Returns (node_of, cfg_of) of length n with -1 for jobs not placed (or not in ``order``).
    """
    node_of = np.full(inst.n, -1, dtype=np.int64)
    cfg_of = np.full(inst.n, -1, dtype=np.int64)
    node_type = inst.node_type.tolist()
    cfg_type = inst.cfg_type.tolist()
    cfg_g = inst.cfg_g.tolist()
    fr = free.tolist()
    beta = randomized and rng is not None and cfg.node_rule == "random_beta"
    fits = None if beta else _BestFitNodes(node_type, fr)
    busy = sum(1 for f in fr if f > 0)  # nodes with a free GPU: none left ends the pass
    rows, nds = lists.tolist(), n_d.tolist()
    tried = (lists >= 0).sum(axis=1).tolist()  # config_lists pads each row with -1 after its entries
    key_rows = keys.tolist() if keys is not None else None
    for j in order.tolist() if isinstance(order, np.ndarray) else order:
        j = int(j)
        if not busy:
            break
        row = rows[j][: tried[j]]
        nd = int(nds[j])
        D, Dbar = row[:nd], row[nd:]
        kD, kDbar = ([], [])
        if key_rows is not None:
            kr = key_rows[j]
            kD, kDbar = kr[:nd], kr[nd : len(row)]
        while D or Dbar:
            if D:
                Lc, kc = D, kD
            else:
                Lc, kc = Dbar, kDbar
            pos = _select(Lc, kc, randomized, rng, cfg) if randomized else 0
            k = Lc.pop(pos)
            if kc:
                kc.pop(pos)
            t, g = cfg_type[k], cfg_g[k]
            best = _random_beta_node(fr, node_type, t, g, cfg.beta_node, rng) if beta else fits.best(t, g)  # type: ignore[union-attr]  # fits unless beta
            if best >= 0:
                if fits is not None:
                    fits.move(best, fr[best], fr[best] - g)
                fr[best] -= g
                busy -= fr[best] <= 0 < fr[best] + g
                node_of[j] = best
                cfg_of[j] = k
                break
    free[:] = fr
    return node_of, cfg_of


class _BestFitNodes:
    """The best-fit rule of CONSTRUCT (the node of type t with the fewest free GPUs that still holds g, lowest index
    on ties) with the nodes of each type bucketed by free GPUs (a heap of indices per count): O(G_max) per query
    instead of a scan of every node. Nodes with more than ``BIG`` free GPUs are never chosen, as in the scan."""

    __slots__ = ("buckets", "node_type")

    def __init__(self, node_type: list[int], free: list[int]) -> None:
        self.node_type = node_type
        top = min(max(free, default=0), BIG - 1)
        self.buckets: dict[int, list[list[int]]] = {}
        for n, (t, f) in enumerate(zip(node_type, free)):
            b = self.buckets.get(t)
            if b is None:
                b = self.buckets[t] = [[] for _ in range(max(top, 0) + 1)]
            if 0 <= f < BIG:
                b[f].append(n)  # in index order: each bucket starts sorted, i.e. as a heap

    def best(self, t: int, g: int) -> int:
        b = self.buckets.get(t)
        if b is None:
            return -1
        for f in range(max(g, 0), len(b)):
            if b[f]:
                return b[f][0]
        return -1

    def move(self, n: int, old: int, new: int) -> None:
        b = self.buckets[self.node_type[n]]
        bucket = b[old]
        if bucket[0] == n:
            heapq.heappop(bucket)
        else:
            bucket.remove(n)
            heapq.heapify(bucket)
        if 0 <= new:
            heapq.heappush(b[new], n)


def _random_beta_node(fr: list, node_type: list, t: int, g: int, beta: float, rng) -> int:
    """``node_rule="random_beta"`` ([C-main], spec §6 optional variants): the fitting nodes sorted by residual
    capacity (free GPUs, then index: the best-fit order), and a uniform pick among the first
    r = round(β·#fitting) of them (β = 0.2); r ≤ 1 is plain best fit and draws no random number."""
    fits = sorted((fr[n], n) for n in range(len(fr)) if node_type[n] == t and fr[n] >= g)
    if not fits:
        return -1
    r = _round_half_away(beta * len(fits))
    return fits[int(rng.integers(0, r))][1] if r >= 2 else fits[0][1]


def postprocess(inst: Instance, node_of: np.ndarray, cfg_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``postprocessing`` ([C-main], spec §6 optional variants, A10; not in the paper): give a node's idle
    GPUs to the co-located job with the largest speed-up.

    For every node (index order) that hosts at least one job and has idle GPUs: among its jobs j and the
    profiled configurations k' of the node's type with g(k') > g(k_j) and g(k') − g(k_j) ≤ idle, take the
    largest speed-up t_j(k_j)/t_j(k') (ties: lower job index, then fewer GPUs), move j to k', and repeat
    until no upgrade fits. Returns new (node_of, cfg_of) and the number of upgrades. O(N·|Q|·K) per pass."""
    node_of = node_of.copy()
    cfg_of = cfg_of.copy()
    K = inst.cfg_g.size
    used = np.zeros(inst.num_nodes, dtype=np.int64)
    placed = np.flatnonzero(node_of >= 0)
    np.add.at(used, node_of[placed], inst.cfg_g[cfg_of[placed]])
    upgrades = 0
    for nd in range(inst.num_nodes):
        while True:
            idle = int(inst.node_gpus[nd] - used[nd])
            on = placed[node_of[placed] == nd]
            if idle <= 0 or on.size == 0:
                break
            best = None
            for j in on.tolist():
                k = int(cfg_of[j])
                g, t = int(inst.cfg_g[k]), float(inst.times[j, k])
                for k2 in range(K):
                    g2 = int(inst.cfg_g[k2])
                    t2 = float(inst.times[j, k2])
                    if inst.cfg_type[k2] != inst.node_type[nd] or not (g < g2 <= g + idle) or not np.isfinite(t2):
                        continue
                    key = (-(t / t2) if t2 > 0 else -math.inf, j, g2)
                    if best is None or key < best[0]:
                        best = (key, j, k2, g2 - g)
            if best is None:
                break
            _, j, k2, dg = best
            cfg_of[j] = k2
            used[nd] += dg
            upgrades += 1
    return node_of, cfg_of, upgrades


def _postprocessed(inst: Instance, best: "Schedule", cfg: RGConfig) -> "Schedule":
    node_of, cfg_of, ups = postprocess(inst, best.node_of, best.cfg_of)
    best.extra["postprocessed"] = ups
    if ups:
        best.node_of, best.cfg_of = node_of, cfg_of
        best.f, best.energy, best.tardiness, best.postpone = _terms(inst, node_of, cfg_of, cfg.proxy_variant)
    return best


def _select(Lc: list, keys: list, randomized: bool, rng, cfg: RGConfig) -> int:
    if not randomized or rng is None:
        return 0
    if cfg.config_rule == "roulette" and keys:
        inv = np.array([1.0 / k if k > 0 else 1e300 for k in keys])
        return int(rng.choice(len(Lc), p=inv / inv.sum()))
    r = _round_half_away(cfg.alpha_cfg * len(Lc))
    return int(rng.integers(0, r)) if r >= 2 else 0


def construct_batch(inst: Instance, orders: np.ndarray, lists: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic CONSTRUCT of B orders in lock-step (every node empty at the start).

    Returns node_of, cfg_of (B, n) and the GPUs in use (B, N). O(B·n·K_tried·N_type) numpy element work.

    The free-GPU matrix has its columns grouped by GPU type (node order kept within a type), so a
    configuration only scans the nodes of its type (a contiguous slice), and it is stored unsigned: the
    slack ``free − g`` wraps around for nodes that are too small, so the best-fit node (least free GPUs that
    still fit, lowest index on ties) is a plain ``argmin`` of the slack.
    """
    B, n = orders.shape
    N = inst.num_nodes
    gmax = int(inst.node_gpus.max(initial=0))
    dt = np.uint8 if gmax < 1 << 7 else (np.uint16 if gmax < 1 << 15 else np.uint32)
    perm = np.argsort(inst.node_type, kind="stable")
    ptype = inst.node_type[perm]
    T = len(inst.types)
    lo_t = np.searchsorted(ptype, np.arange(T), side="left")
    hi_t = np.searchsorted(ptype, np.arange(T), side="right")
    free = np.tile(inst.node_gpus[perm].astype(dt), (B, 1))
    node_of = np.full((B, n), -1, dtype=np.int64)
    cfg_of = np.full((B, n), -1, dtype=np.int64)
    K = inst.cfg_g.size
    cfg_lo = [int(lo_t[t]) if 0 <= t < T else 0 for t in inst.cfg_type.tolist()]
    cfg_hi = [int(hi_t[t]) if 0 <= t < T else 0 for t in inst.cfg_type.tolist()]
    cfg_gd = [dt(g) for g in inst.cfg_g.tolist()]
    kmax = lists.shape[1]
    all_rows = np.arange(B)
    for i in range(n):
        jb = orders[:, i]
        act = all_rows
        for r in range(kmax):
            c = lists[jb[act], r]
            left = []
            present = np.flatnonzero(np.bincount(c + 1, minlength=K + 1)[1:])
            for k in present.tolist():
                sel = act if present.size == 1 and c[0] == k and c[-1] == k and (c == k).all() else act[c == k]
                lo, hi = cfg_lo[k], cfg_hi[k]
                if hi <= lo:
                    left.append(sel)
                    continue
                slack = free[sel, lo:hi] - cfg_gd[k]
                best = slack.argmin(axis=1)
                ok = slack[np.arange(sel.size), best] <= gmax
                b = sel[ok]
                if b.size:
                    cols = lo + best[ok]
                    free[b, cols] -= cfg_gd[k]
                    jj = jb[b]
                    node_of[b, jj] = perm[cols]
                    cfg_of[b, jj] = k
                if b.size < sel.size:
                    left.append(sel[~ok])
            if not left:
                break
            act = np.concatenate(left) if len(left) > 1 else left[0]
    used = np.empty((B, N), dtype=np.int64)
    used[:, perm] = inst.node_gpus[perm][None, :] - free
    return node_of, cfg_of, used


# ------------------------------------------------------------------------------------------ RG
def iteration_count(inst: Instance, cfg: RGConfig = RGConfig()) -> int:
    """It = MaxIt_RG, capped at N·|Q|·G_cat when ``cap_iterations`` (spec §6.1, A14)."""
    it = cfg.max_it
    if cfg.cap_iterations:
        it = min(it, inst.num_nodes * inst.n * inst.g_cat)
    return max(1, it)


def greedy(inst: Instance, cfg: RGConfig = RGConfig()) -> Schedule:
    """Iteration 0 of RG: deterministic CONSTRUCT of the pressure order L0."""
    lists, n_d, _ = config_lists(inst, cfg.deadline_strict)
    node_of, cfg_of = construct(inst, pressure_order(inst), inst.node_gpus.copy(), lists, n_d)
    f, E, T, W = _terms(inst, node_of, cfg_of, cfg.proxy_variant)
    return Schedule(node_of, cfg_of, f, E, T, W, f_greedy=f)


def _terms(inst, node_of, cfg_of, variant):
    terms = proxy_batch(inst, node_of[None, :], cfg_of[None, :], variant)
    return float(terms.f[0]), float(terms.energy[0]), float(terms.tardiness[0]), float(terms.postpone[0])


def randomized_greedy(
    inst: Instance, seed: int | np.random.Generator | None = 0, cfg: RGConfig = RGConfig()
) -> Schedule:
    """Algorithm 1 (see the module docstring). Deterministic for a given seed (AC7). With
    ``cfg.postprocessing`` the returned plan is :func:`postprocess`-ed (its f may then exceed f_greedy)."""
    best = _randomized_greedy(inst, seed, cfg)
    return _postprocessed(inst, best, cfg) if cfg.postprocessing else best


def _randomized_greedy(
    inst: Instance, seed: int | np.random.Generator | None = 0, cfg: RGConfig = RGConfig()
) -> Schedule:
    """Algorithm 1 (see the module docstring). Deterministic for a given seed (AC7)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    lists, n_d, keys = config_lists(inst, cfg.deadline_strict)
    L0 = pressure_order(inst)
    node0, cfg0 = construct(inst, L0, inst.node_gpus.copy(), lists, n_d)
    f0, E0, T0, W0 = _terms(inst, node0, cfg0, cfg.proxy_variant)
    best = Schedule(node0, cfg0, f0, E0, T0, W0, f_greedy=f0)
    its = iteration_count(inst, cfg)
    best.iterations = its
    n = inst.n
    if its <= 1 or n == 0:
        return best
    n_dbar = np.isfinite(inst.times).sum(axis=1) - n_d
    deterministic = (
        cfg.config_rule == "rcl"
        and cfg.node_rule == "best_fit"
        and max(int(n_d.max(initial=0)), int(n_dbar.max(initial=0))) < 30
    )
    if deterministic and f0 <= 0.0 and not (inst.node_cost < 0).any():
        # f_OBJ >= 0 (costs, weights, lateness are all >= 0) and only a strictly lower f is kept, so no
        # iteration can win (e.g. a free energy price and no deadlines); the random stream moves on by the
        # numbers the iterations would have drawn all the same, so later calls see the same numbers.
        skip_uniforms(rng, (its - 1) * max(n - 1, 0))
        return best
    U = rng.random((its - 1, max(n - 1, 0)))
    delta = inst.pressure()
    distinct = np.unique(delta).size == n and np.isfinite(delta).all()
    if distinct:
        orders = swap_pass_batch(L0, inst.weight, U, cfg.pi_swap, cfg.swap_rule)
    else:
        orders = swap_orders_sequential(L0, delta, inst.weight, U, cfg.pi_swap, cfg.swap_rule)
    if deterministic:
        node_b, cfg_b, used = construct_batch(inst, orders, lists)
    else:
        node_b = np.empty_like(orders)
        cfg_b = np.empty_like(orders)
        used = None
        for b in range(orders.shape[0]):
            node_b[b], cfg_b[b] = construct(
                inst, orders[b], inst.node_gpus.copy(), lists, n_d, randomized=True, rng=rng, cfg=cfg, keys=keys
            )
    terms = proxy_batch(inst, node_b, cfg_b, cfg.proxy_variant, used=used if cfg.proxy_variant == "code" else None)
    ok = (node_b >= 0).any(axis=1) & (terms.f < f0)
    if ok.any():
        b = int(np.argmin(np.where(ok, terms.f, np.inf)))
        best = Schedule(
            node_b[b].copy(),
            cfg_b[b].copy(),
            float(terms.f[b]),
            float(terms.energy[b]),
            float(terms.tardiness[b]),
            float(terms.postpone[b]),
            f_greedy=f0,
            iterations=its,
            best_iteration=b + 1,
        )
    return best


def skip_uniforms(rng: np.random.Generator, count: int) -> None:
    """Move ``rng`` on as if ``rng.random(count)`` had been drawn, without drawing: PCG64 (numpy's default) takes
    one 64-bit step per double, so ``advance(count)`` reaches the same state in O(log count). Other bit generators,
    or a PCG64 holding a buffered 32-bit half (which ``advance`` would drop and drawing doubles keeps), draw."""
    bits = rng.bit_generator
    if isinstance(bits, np.random.PCG64) and not bits.state.get("has_uint32"):
        bits.advance(count)
    elif count:
        rng.random(count)


def randomized_greedy_reference(inst: Instance, seed: int = 0, cfg: RGConfig = RGConfig()) -> Schedule:
    """The literal sequential loop of spec §6.3 (one scalar CONSTRUCT per iteration); a test oracle for
    :func:`randomized_greedy`, which must return the same schedule for the same seed."""
    rng = np.random.default_rng(seed)
    lists, n_d, keys = config_lists(inst, cfg.deadline_strict)
    L0 = pressure_order(inst)
    node0, cfg0 = construct(inst, L0, inst.node_gpus.copy(), lists, n_d)
    f0, E0, T0, W0 = _terms(inst, node0, cfg0, cfg.proxy_variant)
    best = Schedule(node0, cfg0, f0, E0, T0, W0, f_greedy=f0)
    its = iteration_count(inst, cfg)
    n = inst.n
    if its <= 1 or n == 0:
        return _postprocessed(inst, best, cfg) if cfg.postprocessing else best
    U = rng.random((its - 1, max(n - 1, 0)))
    orders = swap_orders_sequential(L0, inst.pressure(), inst.weight, U, cfg.pi_swap, cfg.swap_rule)
    f_best = f0
    for it in range(its - 1):
        node_of, cfg_of = construct(
            inst, orders[it], inst.node_gpus.copy(), lists, n_d, randomized=True, rng=rng, cfg=cfg, keys=keys
        )
        f, E, T, W = _terms(inst, node_of, cfg_of, cfg.proxy_variant)
        if (node_of >= 0).any() and f < f_best:
            best = Schedule(node_of, cfg_of, f, E, T, W, f_greedy=f0, iterations=its, best_iteration=it + 1)
            f_best = f
    best.iterations = its
    return _postprocessed(inst, best, cfg) if cfg.postprocessing else best
