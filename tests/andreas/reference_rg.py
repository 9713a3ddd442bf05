"""ANDREAS' Randomized Greedy as it was before the bucketed best fit and the skipped random draws (main at
5d4a02c), kept as the oracle that tests/andreas/test_rg_reference.py and
tests/cluster/test_round_policies_reference.py compare the optimised module with. Not used by the package. Only
what the optimisation changed is here (CONSTRUCT's node scan, the iteration loop that always draws, and the
entry points that call them); the algorithm is described in :mod:`gpuweave.andreas.randomized_greedy`."""

from __future__ import annotations

import numpy as np

from gpuweave.andreas.cost import proxy_batch
from gpuweave.andreas.model import Instance

# Unchanged by the optimisation, so shared with the package: the reference is what changed
# (CONSTRUCT, the iteration loop and what calls them).
from gpuweave.andreas.randomized_greedy import (
    RGConfig,
    Schedule,
    _postprocessed,
    _random_beta_node,
    _select,
    _terms,
    config_lists,
    construct_batch,
    iteration_count,
    pressure_order,
    swap_orders_sequential,
    swap_pass_batch,
)

BIG = 1 << 14


# ------------------------------------------------------------------------------------------ orderings


# ------------------------------------------------------------------------------------------ construction


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
    N = len(fr)
    for j in order:
        j = int(j)
        if not any(f > 0 for f in fr):
            break
        row = [k for k in lists[j].tolist() if k >= 0]
        nd = int(n_d[j])
        D, Dbar = row[:nd], row[nd:]
        kD, kDbar = ([], [])
        if keys is not None:
            kr = keys[j].tolist()
            kD, kDbar = kr[:nd], kr[nd : len(row)]
        while D or Dbar:
            if D:
                Lc, kc = D, kD
            else:
                Lc, kc = Dbar, kDbar
            pos = _select(Lc, kc, randomized, rng, cfg)
            k = Lc.pop(pos)
            if kc:
                kc.pop(pos)
            t, g = cfg_type[k], cfg_g[k]
            best, best_free = -1, BIG
            if randomized and rng is not None and cfg.node_rule == "random_beta":
                best = _random_beta_node(fr, node_type, t, g, cfg.beta_node, rng)
            else:
                for n in range(N):
                    if node_type[n] == t and g <= fr[n] < best_free:
                        best, best_free = n, fr[n]
            if best >= 0:
                fr[best] -= g
                node_of[j] = best
                cfg_of[j] = k
                break
    free[:] = fr
    return node_of, cfg_of


# ------------------------------------------------------------------------------------------ RG


def greedy(inst: Instance, cfg: RGConfig = RGConfig()) -> Schedule:
    """Iteration 0 of RG: deterministic CONSTRUCT of the pressure order L0."""
    lists, n_d, _ = config_lists(inst, cfg.deadline_strict)
    node_of, cfg_of = construct(inst, pressure_order(inst), inst.node_gpus.copy(), lists, n_d)
    f, E, T, W = _terms(inst, node_of, cfg_of, cfg.proxy_variant)
    return Schedule(node_of, cfg_of, f, E, T, W, f_greedy=f)


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
    U = rng.random((its - 1, max(n - 1, 0)))
    n_dbar = np.isfinite(inst.times).sum(axis=1) - n_d
    deterministic = (
        cfg.config_rule == "rcl"
        and cfg.node_rule == "best_fit"
        and max(int(n_d.max(initial=0)), int(n_dbar.max(initial=0))) < 30
    )
    if deterministic and f0 <= 0.0 and not (inst.node_cost < 0).any():
        # f_OBJ >= 0 (costs, weights, lateness are all >= 0) and only a strictly lower f is kept, so no
        # iteration can win (e.g. a free energy price and no deadlines); the random stream is drawn above
        # all the same, so later calls see the same numbers.
        return best
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
