"""HadarE's own forking rules: how many copies of a job, copy ids, the split of a job's steps among its copies.

Problem (paper §V, Figs. 6-7; spec hadar.md §3.2-3.4, §3.7): HadarE forks every job into copies that the
Hadar scheduler places like ordinary jobs (at most one per node); each round the Job Tracker splits the
job's remaining steps among its scheduled copies in proportion to their nodes' estimated throughputs and
the job is complete once the copies' steps add up to ``phi * E_j``. The physical-cluster emulation
(:mod:`gpuweave.hadar.emulation`) and the HadarE cluster policy use these; how the cluster grain holds, rates and
merges forked placements is :mod:`gpuweave.cluster.forking`.

* Copies of a job (:func:`copy_count`): one per node when the job fits on the largest node, else one.
* Copy id (Fig. 7): ``max_job_count * i + parent`` for copy ``i = 1..n``; requires
  ``0 <= parent < max_job_count``, so ``parent = id % max_job_count`` and ``i = id // max_job_count``.
* Split (spec §3.7 step 2 [rev]): ``s_i = round(S * X_i / sum X)``; the rounding remainder (positive or
  negative) goes to the fastest node (lowest node id on ties), so the split sums to ``S`` exactly.
* One step = one mini-batch; a job needs ``phi * E_j`` steps (spec §3.4 [rev]).

Complexity: O(n) per job and round for n copies.
"""

from __future__ import annotations


def copy_count(num_gpus: int, largest_node: int, max_copies: int) -> int:
    """Copies HadarE plans for a job: ``max_copies`` when the job fits on one node (and more than one copy is
    allowed), else 1 (a job wider than any node cannot fork)."""
    return max_copies if num_gpus <= largest_node and max_copies > 1 else 1


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
