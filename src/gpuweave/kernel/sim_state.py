"""The kernel simulator's run state that its arbitration modes see (spec §4.3).

:class:`ServiceState` is one service during a run (its trace as arrays, the task it serves, its stream);
:class:`SimHost` is what a :class:`~gpuweave.kernel.modes.KernelMode` may ask of the simulator; the event kinds
are the handler indices of the simulator's :class:`~gpuweave.engine.loop.EventLoop`. They live here, apart from
:mod:`gpuweave.kernel.sim`, so that the modes depend on this contract and not on the simulator.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpuweave.kernel.profile import Profile
from gpuweave.kernel.sched import SchedulerConfig

if TYPE_CHECKING:
    from gpuweave.kernel.sim import TaskRecord, Workload

# Event kinds, in the order of the handler table. REQ carries a (service, seq) pair; TIMER carries nothing; the
# others carry the service (a KEND's duration is the service's ``kdur``: the device runs one kernel at a time,
# so it needs no tuple of its own on the hot path).
KEND, LAUNCH, FREE, TIMER, REQ, GO, SUBMIT = range(7)
KIND_NAMES = ("kend", "launch", "free", "timer", "req", "go", "submit")


class ServiceState:
    """One service during a run. Plain slots, no methods: it sits on the simulator's hot path."""

    __slots__ = (
        "idx",
        "name",
        "prio",
        "kids",
        "base_dur",
        "base_cpu",
        "syncs",
        "n_ops",
        "rng",
        "total",
        "workload",
        "submitted",
        "queue",
        "running",
        "cur_submit",
        "cur_start",
        "op",
        "task_no",
        "durs",
        "cpus",
        "stream",
        "outstanding",
        "waiting_sync",
        "blocked",
        "seq",
        "done",
        "records",
        "last_end",
        "go_filler",
        "finite",
        "busy",
        "kdur",
    )

    idx: int
    name: str
    prio: int
    kids: list[str]
    base_dur: np.ndarray
    base_cpu: np.ndarray
    syncs: list[bool]
    n_ops: int
    rng: np.random.Generator
    total: int | None  # tasks to serve; None: runs continuously
    workload: Workload
    submitted: int
    queue: deque[float]  # submission times of the tasks not started yet
    running: bool
    cur_submit: float
    cur_start: float
    op: int
    task_no: int
    durs: list[float]  # the current task's kernel durations and CPU gaps (noise drawn per task)
    cpus: list[float]
    stream: deque[tuple[float, float, int, bool]]  # (enqueued at, duration, op, filler)
    outstanding: int
    waiting_sync: bool
    blocked: bool
    seq: int
    done: int
    records: list[TaskRecord]
    last_end: float
    go_filler: bool
    finite: bool
    busy: float
    kdur: float


class SimHost(Protocol):
    """What a kernel mode may ask of the simulator."""

    svcs: list[ServiceState]
    by_name: dict[str, ServiceState]
    log: list[str]
    go_log: list[tuple[float, str, int, str, bool]]
    log_on: bool
    ipc_rtt: float

    def push(self, t: float, kind: int, payload: object = None) -> None:
        """Schedule an event of ``kind`` at ``t``."""

    def start_task(self, v: ServiceState, t: float) -> None:
        """``v`` starts its next queued task at ``t``."""

    def enqueue(self, t: float, v: ServiceState) -> None:
        """``v``'s host enqueues its current kernel into its stream at ``t``."""

    def profile_of(self, index: int) -> Profile:
        """The SK/SG profile of service ``index`` (given, or measured in a run alone)."""

    def scheduler_config(self) -> SchedulerConfig:
        """The FIKIT scheduler settings of this run."""
