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
from gpuweave.andreas.rg import Schedule, _terms, config_lists, construct, initial_free

ORDERS = ("fifo", "edf", "priority")


def fpm_order(inst: Instance, waiting: np.ndarray, method: str) -> list[int]:
    if method not in ORDERS:
        raise ValueError(f"unknown first-principle method {method!r} ({', '.join(ORDERS)})")
    S, ids = inst.submission, inst.job_ids
    if method == "fifo":
        key = lambda j: (S[j], ids[j])  # noqa: E731
    elif method == "edf":
        key = lambda j: (inst.due[j], S[j], ids[j])  # noqa: E731
    else:
        key = lambda j: (-inst.weight[j], S[j], ids[j])  # noqa: E731
    return sorted((int(j) for j in waiting), key=key)


def fpm_schedule(inst: Instance, method: str, variant: str = "code") -> Schedule:
    """Keep running jobs, then CONSTRUCT the waiting ones in the method's order from the free GPUs."""
    running = np.flatnonzero(inst.run_node >= 0)
    waiting = np.flatnonzero(inst.run_node < 0)
    lists, n_d, _ = config_lists(inst)
    free = initial_free(inst, running)
    node_of, cfg_of = construct(inst, fpm_order(inst, waiting, method), free, lists, n_d)
    node_of[running] = inst.run_node[running]
    cfg_of[running] = inst.run_cfg[running]
    f, E, T, W = _terms(inst, node_of, cfg_of, variant)
    return Schedule(node_of, cfg_of, f, E, T, W, f_greedy=f)
