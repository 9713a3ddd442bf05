"""Algorithm 2, BestPrioFit (paper §3.2, Fig. 10; spec §2.4, R-22).

Problem: given the holder's remaining idle budget ``g`` and the waiting queues Q[hp+1..9], pick
the waiting kernel request to place into the gap: (1) the highest priority level that has any
request whose predicted duration ``d ≤ g`` ("does not exceed"), (2) within that level the longest
one that fits (closest to ``g`` from below); ties go to the earlier request (strict ``>``). The
first level with a fit wins even when a lower level has a closer fit (R-22). The chosen request is
removed from its queue. Predicted durations come from each request's own task profile; an ID absent
from the profile has ``d = +∞`` and never fits (R-6). ``best_d`` starts at −∞ so a kernel with
SK = 0 is still selectable (spec [rev]).

Refinement (not in the paper or the spec listing): only the *oldest* waiting request of each task is
a candidate, so a later launch of a task never overtakes an earlier one of the same task (its
stream would run them out of order). With blocking hook clients a task has one waiting request per
thread, and with one waiting request per task this is exactly the spec's Algorithm 2.

Complexity: O(total waiting requests in the scanned levels) per call.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol, Sequence, TypeVar


class Fillable(Protocol):
    task: str
    fill_d: float  # predicted duration as a filler (SK, or +inf when the ID is unknown)


F = TypeVar("F", bound=Fillable)


def best_prio_fit(queues: Sequence[deque[F]], g: float, hp: int) -> tuple[F | None, float]:
    """Return ``(request, d)`` dequeued from the first level below ``hp`` with a fit, or ``(None, 0.0)``."""
    for p in range(hp + 1, len(queues)):
        q = queues[p]
        if not q:
            continue
        best_i = -1
        best_d = float("-inf")
        seen: set[str] = set()
        for i, r in enumerate(q):
            if r.task in seen:
                continue
            seen.add(r.task)
            d = r.fill_d
            if d <= g and d > best_d:
                best_i = i
                best_d = d
        if best_i >= 0:
            r = q[best_i]
            del q[best_i]
            return r, best_d
    return None, 0.0
