"""The cluster job model shared by every cluster policy and the simulator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuweave.checks import MAX_SECONDS
from gpuweave.errors import InputError


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


def scale_arrivals(jobs: list[Job], scale: float) -> None:
    """Compress (``scale`` < 1) or stretch (> 1) a trace's arrivals in place: the run config's ``arrival_scale``.

    Problem: "what if the same jobs arrived twice as fast" asks for the same jobs, each with the same work (and
    ``duration``), on a denser clock of arrivals. Every arrival becomes ``first + (arrival - first) * scale``,
    ``first`` the trace's earliest arrival, so the run starts at the same moment and 0.5 halves every gap (twice
    the load). A deadline keeps its slack after the arrival (``deadline - arrival``), as a run time does; the
    order of arrivals, ties included, is kept. ``scale`` 1 leaves every job untouched (no float is recomputed).
    InputError (field ``arrival_scale``) when the last arrival would pass ``checks.MAX_SECONDS``. O(jobs).
    """
    if scale == 1.0 or not jobs:
        return
    first = min(job.arrival for job in jobs)
    last = first + (max(job.arrival for job in jobs) - first) * scale
    if not last <= MAX_SECONDS:
        raise InputError(
            f"expected a scale that keeps the last arrival within {MAX_SECONDS:g} s, got {scale:g} (the last "
            f"arrival at {last:.3g} s)",
            field="arrival_scale",
        )
    for job in jobs:
        arrival = first + (job.arrival - first) * scale
        if job.deadline is not None:
            job.deadline = arrival + (job.deadline - job.arrival)
        job.arrival = arrival
