"""A minimal discrete-event queue.

Events are ``(time, order, seq, kind, payload)`` tuples on a binary heap: ``order`` ranks event kinds that
share a timestamp (e.g. completions before arrivals before round ticks) and ``seq`` keeps insertion order, so
runs are deterministic. Push and pop are O(log E). Stale events (e.g. a completion whose job was moved) are
skipped by the caller with a version number in the payload rather than deleted from the heap.
"""

from __future__ import annotations

import heapq
from typing import Any


class EventQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._seq = 0

    def push(self, time: float, order: int, kind: int, payload: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, order, self._seq, kind, payload))

    def pop(self) -> tuple[float, int, Any]:
        time, _order, _seq, kind, payload = heapq.heappop(self._heap)
        return time, kind, payload

    def peek_time(self) -> float:
        return self._heap[0][0]

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
