"""First-principle methods (FPM): FIFO, EDF and Priority Scheduling as ANDREAS compares them (spec §8).

Problem: the same rescheduling point as RG, solved the way the paper's baselines do it ("as in [1]",
Amaral et al.): a job that has started keeps its node and configuration until it completes (no
preemption, migration or resizing, paper Sec. V-B); the waiting jobs are taken in the method's order and
each gets the same configuration and placement rule as RG's CONSTRUCT (cheapest configuration that meets
the due date, else the fastest, with the suboptimal fallbacks; best-fit node), deterministically. A job
that does not fit is skipped (later jobs may still start).

Orders (ties: submission, then job id): FIFO by submission; EDF by due date ascending; PS (``priority``)
by tardiness weight descending. Complexity: O(W log W + W·K·N) for W waiting jobs.
"""

from __future__ import annotations

import numpy as np

from gpuweave.andreas.model import Instance
from gpuweave.andreas.randomized_greedy import Schedule, _terms, config_lists, construct, initial_free

ORDERS = ("fifo", "edf", "priority")


def fpm_key(method: str, submission: float, due: float, weight: float, job_id: str) -> tuple:
    """The sort key of a waiting job under ``method`` (ties: submission, then id)."""
    if method == "fifo":
        return (submission, job_id)
    if method == "edf":
        return (due, submission, job_id)  # no deadline = inf: after every job with one, by arrival
    if method == "priority":
        return (-weight, submission, job_id)
    raise ValueError(f"unknown first-principle method {method!r} ({', '.join(ORDERS)})")


def fpm_order(inst: Instance, waiting: np.ndarray, method: str) -> list[int]:
    if method not in ORDERS:
        raise ValueError(f"unknown first-principle method {method!r} ({', '.join(ORDERS)})")
    S, D, w, ids = inst.submission.tolist(), inst.due.tolist(), inst.weight.tolist(), inst.job_ids
    return sorted((int(j) for j in waiting), key=lambda j: fpm_key(method, S[j], D[j], w[j], ids[j]))


def fpm_schedule(inst: Instance, method: str, variant: str = "code", others=None) -> Schedule:
    """Keep running jobs, then CONSTRUCT the waiting ones in the method's order from the free GPUs.

    ``others``: optional (key, place) pairs for jobs outside the instance (jobs spread over several nodes,
    placed by the caller), merged into the order by their :func:`fpm_key`; ``place(free)`` is called at the
    job's turn with the per-node free GPUs and takes what it uses from them (in place)."""
    running = np.flatnonzero(inst.run_node >= 0)
    waiting = np.flatnonzero(inst.run_node < 0)
    lists, n_d, _ = config_lists(inst)
    free = initial_free(inst, running)
    order = fpm_order(inst, waiting, method)
    if not others:
        node_of, cfg_of = construct(inst, order, free, lists, n_d)
    else:
        node_of = np.full(inst.n, -1, dtype=np.int64)
        cfg_of = np.full(inst.n, -1, dtype=np.int64)
        S, D, w, ids = inst.submission.tolist(), inst.due.tolist(), inst.weight.tolist(), inst.job_ids
        items = [(fpm_key(method, S[j], D[j], w[j], ids[j]), 0, j) for j in order]
        items += [(key, 1, i) for i, (key, _place) in enumerate(others)]
        items.sort(key=lambda it: (it[0], it[1]))
        run: list[int] = []

        def flush() -> None:
            if run:
                nd, cf = construct(inst, run, free, lists, n_d)
                sel = nd >= 0
                node_of[sel] = nd[sel]
                cfg_of[sel] = cf[sel]
                run.clear()

        for _key, kind, x in items:
            if kind == 0:
                run.append(x)
            else:
                flush()
                others[x][1](free)
        flush()
    node_of[running] = inst.run_node[running]
    cfg_of[running] = inst.run_cfg[running]
    f, E, T, W = _terms(inst, node_of, cfg_of, variant)
    return Schedule(node_of, cfg_of, f, E, T, W, f_greedy=f)
