"""HadarE's job forking rules, the one place the simulator, the HadarE policy and the emulation take them from.

Problem (paper §V, Figs. 6-7; spec hadar.md §3.2-3.4, §3.7): HadarE forks every job into copies that the
Hadar scheduler places like ordinary jobs (at most one per node); each round the Job Tracker splits the
job's remaining steps among its scheduled copies in proportion to their nodes' estimated throughputs and
the job is complete once the copies' steps add up to ``phi * E_j``.

* A forked placement (:func:`is_forked`): at least two copies, every node holding whole copies of the job's
  ``W`` GPUs; its rate (:func:`forked_rate`) is the sum of the copies' consolidated rates, since the copies'
  steps add up.
* Copies of a job (:func:`copy_count`): one per node when the job fits on the largest node, else one.
  A running forked job's copies keep their nodes (:func:`copy_nodes`); the copies' allocations merge back
  into one placement per job (:func:`merge_copies`).

* Copy id (Fig. 7): ``max_job_count * i + parent`` for copy ``i = 1..n``; requires
  ``0 <= parent < max_job_count``, so ``parent = id % max_job_count`` and ``i = id // max_job_count``.
* Split (spec §3.7 step 2 [rev]): ``s_i = round(S * X_i / sum X)``; the rounding remainder (positive or
  negative) goes to the fastest node (lowest node id on ties), so the split sums to ``S`` exactly.
* One step = one mini-batch; a job needs ``phi * E_j`` steps (spec §3.4 [rev]).

Complexity: O(n) per job and round for n copies.
"""

from __future__ import annotations

from typing import Callable, Hashable, Mapping

Placement = tuple[tuple[int, int], ...]  # sorted (node, GPUs) pairs


def is_forked(num_gpus: int, placement: Placement, total: int) -> bool:
    """A forked placement: at least two copies, every node holding whole copies of ``num_gpus`` GPUs."""
    return total > num_gpus and all(k % num_gpus == 0 for _, k in placement)


def forked_rate(num_gpus: int, placement: Placement, consolidated_rate: Callable[[int], float]) -> float:
    """The job's rate on a forked placement: the sum of its copies' rates (``consolidated_rate(node)`` is one
    copy's rate on that node)."""
    return sum((k // num_gpus) * consolidated_rate(node) for node, k in placement)


def copy_count(num_gpus: int, largest_node: int, max_copies: int) -> int:
    """Copies HadarE plans for a job: ``max_copies`` when the job fits on one node (and more than one copy is
    allowed), else 1 (a job wider than any node cannot fork)."""
    return max_copies if num_gpus <= largest_node and max_copies > 1 else 1


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


def copy_id(parent: int, index: int, max_job_count: int) -> int:
    if not (0 <= parent < max_job_count):
        raise ValueError(f"parent job id {parent} must be in [0, {max_job_count})")
    if index < 1:
        raise ValueError("copy index starts at 1")
    return max_job_count * index + parent


def parent_of(job_id: int, max_job_count: int) -> tuple[int, int]:
    """(parent id, copy index) of a copy id."""
    return job_id % max_job_count, job_id // max_job_count


def split_steps(remaining: int, rates: dict[int, float]) -> dict[int, int]:
    """Split ``remaining`` steps over nodes in proportion to ``rates``; sums to ``remaining`` exactly."""
    if not rates:
        return {}
    total = sum(rates.values())
    if total <= 0:
        raise ValueError("the nodes' estimated rates must add up to a positive number")
    share = {node: int(round(remaining * r / total)) for node, r in rates.items()}
    fastest = min(rates, key=lambda node: (-rates[node], node))
    share[fastest] += remaining - sum(share.values())
    return share
