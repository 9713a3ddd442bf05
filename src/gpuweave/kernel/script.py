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

from collections.abc import Mapping
from dataclasses import dataclass

from gpuweave.engine import EventLoop
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


# Event kinds of the replay loop; script entries sort before timers of the same instant (order 0 < 1).
_REGISTER, _REQUEST, _UNREGISTER, _TIMER = range(4)
_SCRIPT_KINDS = {"register": _REGISTER, "request": _REQUEST, "unregister": _UNREGISTER}


def replay(
    script: list[tuple],
    profiles: Mapping[str, Profile | None],
    config: SchedulerConfig | None = None,
    core: SchedulerCore | None = None,
) -> list[GoRecord]:
    """Feed ``script`` to a core (new unless given) on the event core and return every GO in order."""
    core = core or SchedulerCore(config)
    loop = EventLoop()
    gos: list[GoRecord] = []

    def apply(actions: list) -> None:
        for a in actions:
            if a.__class__ is Go:
                r = a.request
                gos.append(GoRecord(a.time, r.task, r.seq, r.kid, a.filler))
            else:
                loop.push(a.time, _TIMER, None, order=1)

    def on_register(t: float, entry: tuple) -> None:
        mode = entry[4] if len(entry) > 4 else "share"
        core.register(entry[2], entry[3], profiles.get(entry[2]), mode, t)

    loop.on(_REGISTER, on_register)
    loop.on(_REQUEST, lambda t, e: apply(core.request(e[2], e[3], e[4], t)))
    loop.on(_UNREGISTER, lambda t, e: apply(core.unregister(e[2], t)[0]))
    loop.on(_TIMER, lambda t, _: apply(core.timer(t)))
    for entry in script:
        kind = _SCRIPT_KINDS.get(entry[0])
        if kind is None:
            raise InputError(f"unknown script entry {entry[0]!r}", field="kind")
        loop.push(float(entry[1]), kind, entry, order=0)
    loop.run()
    return gos
