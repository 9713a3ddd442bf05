"""The cluster job model shared by every cluster policy and the simulator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(slots=True)
class Job:
    """One DL training job of a cluster trace.

    ``work`` is the total amount of work in iterations (steps); a job's speed on a resource comes
    from the profile store in iterations per second, so its run time there is ``work / rate``.
    ``duration`` is an optional oracle run time (seconds on the reference GPU) used by SJF-style
    policies and trace generators; the simulator never uses it for progress. ``allowed_models`` (None: any) is a
    GPU-type constraint, sorted: the job runs only on these GPU models (the service's ``gpu_types``); every driver
    reads the others as "cannot run there". ``num_gpus`` 0 is a CPU-only task (openb's), which asks ``cpu_milli`` in
    ``attrs`` and runs only in a shared run (a task placement); every other driver refuses it by name.
    """

    job_id: str
    arrival: float
    num_gpus: int
    work: float
    job_type: str
    priority: float = 1.0
    deadline: float | None = None
    duration: float | None = None
    attrs: dict[str, object] = field(default_factory=dict)
    allowed_models: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.num_gpus < 0:  # 0: a CPU-only task, which only a shared run places (gpuweave.cluster.sharing.ledger)
            raise ValueError(f"job {self.job_id}: num_gpus must be >= 0, got {self.num_gpus}")
        if not (self.work > 0 and math.isfinite(self.work)):
            raise ValueError(f"job {self.job_id}: work must be a positive number, got {self.work}")
        if self.arrival < 0:
            raise ValueError(f"job {self.job_id}: arrival must be >= 0, got {self.arrival}")
