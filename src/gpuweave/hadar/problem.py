"""The numeric problem one Hadar round solves: servers with typed, counted GPUs and a queue of jobs.

Kept free of the simulator so that the DP can be unit-tested, brute-forced (spec A6) and benchmarked on
its own. Servers hold one GPU type each (spec §5.1 [R]); a placement is a sorted tuple of
``(server, gpus)`` pairs, as the cluster simulator writes placements.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class QueuedJob:
    """One entry of Q. Rates are whole-job iterations/s on ``W`` GPUs of each type (0 = infeasible)."""

    key: object
    num_gpus: int
    cons: np.ndarray
    uncons: np.ndarray
    remaining: float
    total_work: float
    arrival_slot: int = 0
    prev: tuple | None = None  # current placement of a running job (KEEP candidate, no restart delay)
    started: bool = False  # has run before: a new placement costs the restart delay
    packed_only: bool = False  # HadarE copies: one server only


@dataclass(slots=True)
class RoundProblem:
    server_type: np.ndarray  # (H,) type index per server
    capacity: np.ndarray  # (H,) GPUs per server
    free: np.ndarray  # (H,) GPUs the DP may hand out (capacity in replan mode)
    num_types: int
    jobs: list[QueuedJob]
    round_length: float = 360.0
    now_slot: int = 0
    restart_delay: float = 10.0
    utility: str = "raw"
    kappa: float = 1.0
    type_names: list[str] = field(default_factory=list)

    @property
    def total_gpus(self) -> int:
        return int(np.sum(self.capacity))
