"""The cluster grain's rules for forked jobs (HadarE), the one place the simulator, the HadarE policy and the live
runtime take them from.

Problem (paper §V, Figs. 6-7; spec hadar.md §3.2-3.4): HadarE forks every job into copies that the Hadar scheduler
places like ordinary jobs; the copies' steps add up. In the cluster grain a forked job holds several whole copies
in one placement:

* A forked placement (:func:`is_forked`): at least two copies, every node holding whole copies of the job's
  ``W`` GPUs; its rate (:func:`forked_rate`) is the sum of the copies' consolidated rates, since the copies'
  steps add up.
* A running forked job's copies keep their nodes (:func:`copy_nodes`); the copies' allocations merge back
  into one placement per job (:func:`merge_copies`).

How many copies HadarE plans, copy ids and the split of steps among copies are the paper's own rules, in
:mod:`gpuweave.hadar.forking` (the physical-cluster emulation uses them too).

Complexity: O(n) per job and round for n copies.
"""

from __future__ import annotations

from typing import Callable, Hashable, Mapping

from gpuweave.cluster.state import Placement


def is_forked(num_gpus: int, placement: Placement, total: int) -> bool:
    """A forked placement: at least two copies, every node holding whole copies of ``num_gpus`` GPUs."""
    return total > num_gpus and all(k % num_gpus == 0 for _, k in placement)


def forked_rate(num_gpus: int, placement: Placement, consolidated_rate: Callable[[int], float]) -> float:
    """The job's rate on a forked placement: the sum of its copies' rates (``consolidated_rate(node)`` is one
    copy's rate on that node)."""
    return sum((k // num_gpus) * consolidated_rate(node) for node, k in placement)


def copy_nodes(placement: Placement | None, num_gpus: int) -> list[int]:
    """The node of each copy of a running job, in placement order (a node holding c copies appears c times);
    empty for an unforked job spread over several nodes, or one that is not running."""
    if placement is None:
        return []
    if sum(c for _, c in placement) == num_gpus:
        return [placement[0][0]] if len(placement) == 1 else []
    return [node for node, c in placement for _ in range(c // num_gpus)]


def merge_copies(plan: Mapping[tuple[Hashable, int], Placement]) -> dict[Hashable, Placement]:
    """{(job, copy index): placement} -> {job: one placement adding up its copies' GPUs per node}."""
    merged: dict[Hashable, dict[int, int]] = {}
    for (job, _index), alloc in plan.items():
        slot = merged.setdefault(job, {})
        for node, c in alloc:
            slot[node] = slot.get(node, 0) + c
    return {job: tuple(sorted(counts.items())) for job, counts in merged.items()}
