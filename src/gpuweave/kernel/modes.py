"""Arbitration modes of the kernel simulator, as code: one class per mode, registered by name (spec §4.3).

Problem: services share one GPU; a *mode* decides when a task may start (task admission), what a host launch
does (enqueue at once, or ask the FIKIT scheduler core and wait for GO) and which device arbitration picks the
next kernel among the streams with ready heads. The contract is :class:`KernelMode`; the device arbitration is
:class:`Arbiter`. ``--mode NAME`` (kernel CLI, YAML ``mode:``, experiments, the fikit reproduction) looks the
name up in :data:`MODES`; ``device:`` looks up :data:`ARBITERS`.

Modes: ``exclusive`` (a task-level lock granted in submission order; for one service this is "alone"),
``share_timeslice`` / ``share_fifo`` / ``share_rr_kernel`` (Nvidia default sharing modelled by the arbitration of
the same name, R-12), ``fikit`` (the :class:`~gpuweave.kernel.sched.SchedulerCore` decides which launch is
released; the device arbitration is the config's ``device``).

Arbiters: ``share_timeslice`` (the current context keeps the GPU while it has ready work and its slice
``quantum`` has not expired, else round-robin; switches at kernel boundaries), ``share_fifo`` (earliest enqueued
head), ``share_rr_kernel`` (one kernel per context in turn). A pick is O(S) for S services; every other mode
hook is O(1) plus the scheduler core's own work.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from gpuweave.kernel.sched import Action, CoreStats, Go, SchedulerCore
from gpuweave.kernel.sim_state import GO, LAUNCH, REQ, TIMER, ServiceState, SimHost
from gpuweave.registry import Registry

EventHandler = Callable[[float, Any], None]  # the payload's type depends on the event kind


class Arbiter(ABC):
    """Device arbitration: which service's stream head the device runs next."""

    def __init__(self, svcs: list[ServiceState], quantum: float) -> None:
        self.svcs = svcs
        self.quantum = quantum

    @abstractmethod
    def pick(self, t: float) -> int:
        """The index of the service whose head kernel starts at ``t``, or -1 when every stream is empty."""


ARBITERS: Registry[type[Arbiter]] = Registry("device arbitration", field="device")


@ARBITERS.register("share_timeslice", options=())
class TimeSliceArbiter(Arbiter):
    """Time slicing: keep the current context while it has work and its quantum lasts, else round-robin."""

    def __init__(self, svcs: list[ServiceState], quantum: float) -> None:
        super().__init__(svcs, quantum)
        self.cur = -1
        self.slice_start = -math.inf

    def pick(self, t: float) -> int:
        svcs = self.svcs
        c = self.cur
        if c >= 0 and svcs[c].stream and t - self.slice_start < self.quantum:
            return c
        n = len(svcs)
        for k in range(1, n + 1):
            j = (c + k) % n
            if svcs[j].stream:
                self.cur = j
                self.slice_start = t
                return j
        return -1


@ARBITERS.register("share_fifo", options=())
class FifoArbiter(Arbiter):
    """First in, first out: the head enqueued earliest runs next."""

    def pick(self, t: float) -> int:
        best = -1
        best_t = math.inf
        for j, v in enumerate(self.svcs):
            st = v.stream
            if st and st[0][0] < best_t:
                best_t = st[0][0]
                best = j
        return best


@ARBITERS.register("share_rr_kernel", options=())
class RoundRobinKernelArbiter(Arbiter):
    """Round-robin by kernel: one kernel per context in turn."""

    def __init__(self, svcs: list[ServiceState], quantum: float) -> None:
        super().__init__(svcs, quantum)
        self.cur = -1

    def pick(self, t: float) -> int:
        svcs = self.svcs
        n = len(svcs)
        c = self.cur
        for k in range(1, n + 1):
            j = (c + k) % n
            if svcs[j].stream:
                self.cur = j
                return j
        return -1


class KernelMode(ABC):
    """What the kernel simulator asks of an arbitration mode. One instance per run; it may hold state."""

    #: the device arbitration this mode runs on (a name in :data:`ARBITERS`)
    arbitration = "share_timeslice"

    def __init__(self, host: SimHost, device: str) -> None:
        self.host = host
        self.core_inputs: list[tuple[Any, ...]] = []  # the scheduler inputs of the run (replayable, spec §4.5)

    def arbiter(self, quantum: float) -> Arbiter:
        return ARBITERS.get(self.arbitration).impl(self.host.svcs, quantum)

    @abstractmethod
    def submit(self, v: ServiceState, now: float) -> None:
        """A task of ``v`` was submitted (it is queued in ``v.queue``): start it now or later."""

    @abstractmethod
    def release(self, v: ServiceState, t: float) -> None:
        """``v``'s task ended at ``t``, before its workload submits the next one."""

    @abstractmethod
    def next_task(self, v: ServiceState, t: float) -> None:
        """After ``v``'s task ended and its workload had its say: start what may start."""

    def launch(self, t: float, v: ServiceState) -> None:
        """``v``'s host launches its current kernel at ``t`` (the handler of LAUNCH events): by default the
        kernel goes into its stream at once."""
        self.host.enqueue(t, v)

    def handlers(self) -> dict[int, EventHandler]:
        """The handlers of LAUNCH and of the event kinds only this mode pushes (FIKIT: requests, GOs, timers).
        By default a launch is the enqueue itself, bound directly: it is the simulator's hot path."""
        return {LAUNCH: self.host.enqueue}

    def core_stats(self) -> CoreStats | None:
        """The scheduler core's statistics, for modes that have one."""
        return None


MODES: Registry[type[KernelMode]] = Registry("mode", field="mode")


@MODES.register("exclusive", options=())
class ExclusiveMode(KernelMode):
    """Exclusive use: a task-level lock granted in submission order (for one service: running alone)."""

    def __init__(self, host: SimHost, device: str) -> None:
        super().__init__(host, device)
        self.lock_owner = -1
        self.lock_wait: list[tuple[float, int, int]] = []

    def submit(self, v: ServiceState, now: float) -> None:
        heapq.heappush(self.lock_wait, (v.queue[-1], v.idx, v.submitted))
        self._grant(now)

    def release(self, v: ServiceState, t: float) -> None:
        self.lock_owner = -1

    def next_task(self, v: ServiceState, t: float) -> None:
        self._grant(t)

    def _grant(self, t: float) -> None:
        if self.lock_owner == -1 and self.lock_wait:
            _, idx, _ = heapq.heappop(self.lock_wait)
            self.lock_owner = idx
            self.host.start_task(self.host.svcs[idx], t)


class SharedMode(KernelMode):
    """Default sharing: every service runs its tasks at once; the device arbitration alone decides."""

    def submit(self, v: ServiceState, now: float) -> None:
        if not v.running:
            self.host.start_task(v, now)

    def release(self, v: ServiceState, t: float) -> None:
        """Nothing is held between tasks."""

    def next_task(self, v: ServiceState, t: float) -> None:
        if v.queue:
            self.host.start_task(v, t)


@MODES.register("share_timeslice", options=())
class ShareTimesliceMode(SharedMode):
    """Default sharing modelled as time slicing (R-12)."""

    arbitration = "share_timeslice"


@MODES.register("share_fifo", options=())
class ShareFifoMode(SharedMode):
    """Default sharing modelled as FIFO over stream heads."""

    arbitration = "share_fifo"


@MODES.register("share_rr_kernel", options=())
class ShareRoundRobinKernelMode(SharedMode):
    """Default sharing modelled as one kernel per context in turn."""

    arbitration = "share_rr_kernel"


@MODES.register("fikit", options=())
class FikitMode(SharedMode):
    """FIKIT: each launch asks the scheduler core and waits for GO (plus the IPC round trip)."""

    def __init__(self, host: SimHost, device: str) -> None:
        super().__init__(host, device)
        self.arbitration = device
        self.core = SchedulerCore(host.scheduler_config())
        for i, v in enumerate(host.svcs):
            self.core.register(v.name, v.prio, host.profile_of(i), "share", 0.0)
        self.core_inputs = [("register", 0.0, v.name, v.prio) for v in host.svcs]
        # bound once: launch, request and GO run once per kernel, the simulator's hottest path
        self._half_rtt = host.ipc_rtt / 2
        self._push = host.push

    def launch(self, t: float, v: ServiceState) -> None:
        v.seq += 1
        if self._half_rtt > 0:
            self._push(t + self._half_rtt, REQ, (v, v.seq))
        else:
            self._request(v, v.seq, t)

    def handlers(self) -> dict[int, EventHandler]:
        return {LAUNCH: self.launch, REQ: self._on_request, GO: self.host.enqueue, TIMER: self._on_timer}

    def core_stats(self) -> CoreStats | None:
        return self.core.stats

    def _on_request(self, t: float, payload: tuple[ServiceState, int]) -> None:
        v, seq = payload
        kid = v.kids[v.op]
        self.core_inputs.append(("request", t, v.name, kid, seq))
        self._apply(self.core.request(v.name, kid, seq, t), t)

    def _on_timer(self, t: float, payload: object) -> None:
        self._apply(self.core.timer(t), t)

    def _request(self, v: ServiceState, seq: int, t: float) -> None:
        kid = v.kids[v.op]
        self.core_inputs.append(("request", t, v.name, kid, seq))
        self._apply(self.core.request(v.name, kid, seq, t), t)

    def _apply(self, actions: list[Action], t: float) -> None:
        host = self.host
        half_rtt = self._half_rtt
        for a in actions:
            if a.__class__ is Go:
                w = host.by_name[a.request.task]
                w.go_filler = a.filler
                if host.log_on:
                    host.log.append(f"{t!r} go {w.name} {a.request.seq} {'F' if a.filler else 'H'}")
                    host.go_log.append((t, w.name, a.request.seq, a.request.kid, a.filler))
                if half_rtt > 0:
                    self._push(t + half_rtt, GO, w)
                else:
                    host.enqueue(t, w)
            else:
                self._push(a.time, TIMER)
