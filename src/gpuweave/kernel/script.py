"""Replay a timed script of scheduler inputs through a SchedulerCore (spec §4.5, twin test).

Problem: drive the pure :class:`~gpuweave.kernel.sched.SchedulerCore` with an explicit list of
inputs (register, request, unregister at given times), firing the timers it asks for, and return
the resulting GO sequence. The kernel simulator records exactly such a script of the inputs it fed
its core (:attr:`SimResult.core_inputs`); replaying that script through the UDP server's handler
with a fake clock must give the identical GO sequence.

Script entries (tuples, times in ms)::

    ("register", t, task, priority[, mode])
    ("request", t, task, kid, seq)
    ("unregister", t, task)

Complexity: O((S + T) log(S + T)) for S script entries and T timers.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from gpuweave.errors import InputError
from gpuweave.kernel.profile import Profile
from gpuweave.kernel.sched import Go, SchedulerConfig, SchedulerCore


@dataclass(frozen=True, slots=True)
class GoRecord:
    time: float
    task: str
    seq: int
    kid: str
    filler: bool


def replay(
    script: list[tuple],
    profiles: dict[str, Profile | None],
    config: SchedulerConfig | None = None,
    core: SchedulerCore | None = None,
) -> list[GoRecord]:
    """Feed ``script`` to a core (new unless given) and return every GO in order."""
    core = core or SchedulerCore(config)
    heap: list[tuple] = []
    for i, entry in enumerate(script):
        heapq.heappush(heap, (float(entry[1]), 0, i, entry))
    n = len(script)
    gos: list[GoRecord] = []

    def apply(actions: list, k: int) -> int:
        for a in actions:
            if a.__class__ is Go:
                r = a.request
                gos.append(GoRecord(a.time, r.task, r.seq, r.kid, a.filler))
            else:
                k += 1
                heapq.heappush(heap, (a.time, 1, n + k, ("timer", a.time)))
        return k

    k = 0
    while heap:
        t, _, _, entry = heapq.heappop(heap)
        kind = entry[0]
        if kind == "register":
            mode = entry[4] if len(entry) > 4 else "share"
            core.register(entry[2], entry[3], profiles.get(entry[2]), mode, t)
        elif kind == "request":
            k = apply(core.request(entry[2], entry[3], entry[4], t), k)
        elif kind == "unregister":
            k = apply(core.unregister(entry[2], t)[0], k)
        elif kind == "timer":
            k = apply(core.timer(t), k)
        else:
            raise InputError(f"unknown script entry {kind!r}", field="kind")
    return gos
