"""HadarE's job forking bookkeeping: copy ids, per-round step split, aggregation, consolidation.

Problem (paper §V, Figs. 6-7; spec hadar.md §3.2-3.4, §3.7): HadarE forks every job into copies that the
Hadar scheduler places like ordinary jobs (at most one per node); each round the Job Tracker splits the
job's remaining steps among its scheduled copies in proportion to their nodes' estimated throughputs,
sums the steps the copies completed, declares the job complete once the sum reaches ``phi * E_j`` and
consolidates the copies' model parameters by a step-weighted average (FedAvg-style, spec A12).

* Copy id (Fig. 7): ``max_job_count * i + parent`` for copy ``i = 1..n``; requires
  ``0 <= parent < max_job_count``, so ``parent = id % max_job_count`` and ``i = id // max_job_count``.
* Split (spec §3.7 step 2 [rev]): ``s_i = round(S * X_i / sum X)``; the rounding remainder (positive or
  negative) goes to the fastest node (lowest node id on ties), so the split sums to ``S`` exactly.
* One step = one mini-batch; a job needs ``phi * E_j`` steps (spec §3.4 [rev]).

Complexity: O(n) per job and round for n copies; consolidation O(n * parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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


def consolidate(params: list[np.ndarray], steps: list[float], weighted: bool = True) -> np.ndarray:
    """Step-weighted (or plain) average of the copies' parameter vectors."""
    if not params:
        raise ValueError("no copies to consolidate")
    stack = np.stack([np.asarray(p, dtype=float) for p in params])
    w = np.asarray(steps, dtype=float) if weighted else np.ones(len(params))
    if w.sum() <= 0:
        w = np.ones(len(params))
    return np.tensordot(w / w.sum(), stack, axes=1)


@dataclass
class JobTracker:
    """Registers a job's copies, aggregates their steps each round, and says when the job is done."""

    target_steps: int
    done_steps: int = 0
    history: list[dict[int, int]] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return max(0, self.target_steps - self.done_steps)

    @property
    def complete(self) -> bool:
        return self.done_steps >= self.target_steps

    def aggregate(self, executed: dict[int, int]) -> int:
        """Add one round's executed steps per node; returns the job's new total."""
        self.history.append(dict(executed))
        self.done_steps += int(sum(executed.values()))
        return self.done_steps
