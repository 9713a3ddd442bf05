"""The one event core: a heap of timestamped events dispatched to one handler per event kind.

Every discrete-event model in gpuweave runs on it (the cluster simulator, the kernel-level simulator, the Hadar
physical-cluster emulation). Events are ``(time, order, seq, kind, payload)`` tuples on a binary heap: ``order``
ranks kinds that share a timestamp (e.g. completions before arrivals before round ticks), ``seq`` keeps insertion
order, so runs are deterministic. ``kind`` is a small int indexing the handler table, so dispatch is one list
lookup, not an ``if kind ==`` chain. Stale events (a completion whose job was moved) are skipped by their handler
with a version number in the payload rather than deleted from the heap; such a handler returns :data:`STALE`.

:meth:`EventLoop.run` pops every event of one instant, then calls ``after_instant(t)`` once (the cluster
simulator asks its policy there), unless every event of the instant was stale: nothing happened then. Under a
round policy that moves jobs every round most completions go stale (over 90% of a Gavel run's events).
Push and pop are O(log E); a run is O(E log E) plus the handlers' own work.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Callable

from gpuweave.engine.gc_pause import TIDY_EVERY, old_objects_left_alone, tidy

Handler = Callable[[float, Any], Any]
# What a handler returns for an event that changed nothing (e.g. a completion of a job that has moved since).
STALE = object()

_heappush = heapq.heappush  # module globals: one lookup fewer per event than heapq.<name>
_heappop = heapq.heappop


class EventLoop:
    __slots__ = ("_heap", "_seq", "_handlers", "now", "events", "_stopped")

    def __init__(self, handlers: list[Handler] | tuple[Handler, ...] = ()) -> None:
        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._seq = itertools.count(1)  # next() is cheaper than an attribute += on this hot path
        self._handlers: list[Handler] = list(handlers)
        self.now = 0.0
        self.events = 0  # events dispatched so far
        self._stopped = False

    def on(self, kind: int, handler: Handler) -> None:
        """Set the handler of ``kind`` (kinds are 0..K-1)."""
        while len(self._handlers) <= kind:
            self._handlers.append(_unhandled)
        self._handlers[kind] = handler

    def push(self, time: float, kind: int, payload: Any = None, order: int = 0) -> None:
        _heappush(self._heap, (time, order, next(self._seq), kind, payload))

    def raw_queue(self) -> tuple[list, Callable[[], int]]:
        """The heap and the sequence counter, for a model's innermost loop: pushing
        ``heapq.heappush(heap, (time, order, seq(), kind, payload))`` inline is :meth:`push` without its call
        (the kernel simulator pushes two events per kernel; the call was a sixth of its time)."""
        return self._heap, self._seq.__next__

    def handlers(self) -> list[Handler]:
        """The handler table by kind (for a model that dispatches :meth:`raw_queue` itself)."""
        return self._handlers

    def advanced(self, events: int, now: float) -> None:
        """A model that dispatched ``events`` events itself, up to time ``now``, brings the counters up to date."""
        self.events += events
        self.now = now

    def pop(self) -> tuple[float, int, Any]:
        time, _order, _seq, kind, payload = heapq.heappop(self._heap)
        return time, kind, payload

    def stop(self) -> None:
        """Called from a handler: :meth:`run` returns after the current event."""
        self._stopped = True

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def run(
        self,
        *,
        until: float = math.inf,
        before_instant: Callable[[float], None] | None = None,
        after_instant: Callable[[float], None] | None = None,
    ) -> None:
        """Dispatch events in (time, order, seq) order until the heap is empty, the next event is later than
        ``until``, or a handler calls :meth:`stop`. ``before_instant(t)`` runs before the first event of each
        instant, ``after_instant(t)`` after its last unless all its handlers returned :data:`STALE`. The cyclic
        collector leaves the run's old objects alone meanwhile (:mod:`gpuweave.engine.gc_pause`)."""
        with old_objects_left_alone():
            self._run(until, before_instant, after_instant)

    def _run(self, until: float, before_instant, after_instant) -> None:
        heap = self._heap
        handlers = self._handlers
        pop = heapq.heappop
        self._stopped = False
        if before_instant is None and after_instant is None:
            self._run_plain(until)
            return
        instants = done = 0  # events counted locally (an attribute update fewer per event), added on the way out
        try:
            while heap:
                t = heap[0][0]
                if t > until:
                    return
                instants += 1
                if not instants % TIDY_EVERY:
                    tidy()
                self.now = t
                if before_instant is not None:
                    before_instant(t)
                acted = False
                while heap and heap[0][0] == t:
                    _, _, _, kind, payload = pop(heap)
                    done += 1
                    if handlers[kind](t, payload) is not STALE:
                        acted = True
                    if self._stopped:
                        return
                if acted and after_instant is not None:
                    after_instant(t)
                if self._stopped:
                    return
        finally:
            self.events += done

    def _run_plain(self, until: float) -> None:
        """:meth:`run` without instant hooks: one pop per event, no per-instant bookkeeping. The kernel
        simulator dispatches millions of events with one or two per instant; this path keeps it as fast as
        its former hand-written loop. Same order and ``stop`` semantics; ``events`` and ``now`` are brought up
        to date when it returns (handlers get the time as their argument). A handler that raises leaves them
        as they were at the start of the run: the run is over anyway."""
        heap = self._heap
        handlers = self._handlers
        pop = _heappop
        done = 0  # counted locally, added to ``events`` on the way out
        t = self.now
        while heap and heap[0][0] <= until:
            t, _, _, kind, payload = pop(heap)
            done += 1
            if not done % TIDY_EVERY:
                tidy()
            handlers[kind](t, payload)
            if self._stopped:
                break
        self.events += done
        self.now = t


def _unhandled(time: float, payload: Any) -> None:
    raise RuntimeError(f"event at t={time} has no handler (payload {payload!r})")
