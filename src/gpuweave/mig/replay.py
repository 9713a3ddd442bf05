"""Timeline replay: exact times for a plan of instance lifetimes, with sequential reconfiguration.

Problem. A *plan* is an ordered list of incarnations (GPU, instance placement, ordered tasks). Give
every task a start time and every instance its create/destroy operations such that the schedule
obeys the model of spec §1.4: before incarnation M is created, every live instance whose occupancy
overlaps M's is destroyed (after its last task, earliest-finishing first); operations of one GPU run
one at a time, in plan order; tasks of an incarnation run back to back after its create. With
``reuse=True`` an incarnation on the same placement as a live one continues it (no destroy/create),
which is how a reversed batch reuses the instances the previous batch ends with (paper Sec. 4.2).

Used by MISO-opt with charged reconfiguration (spec §7.13) and by the "exact" concatenation mode
(spec §7.18). Greedy list scheduling in plan order: feasible by construction, not optimal.
Complexity: O(L * A + n) for L incarnations and at most A live instances per GPU (A <= 7).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuweave.hardware.mig import MigGeometry, Placement
from gpuweave.mig.schedule import Operation


@dataclass(slots=True)
class Incarnation:
    gpu: int
    placement: Placement
    tasks: list[int] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    not_before: float = 0.0  # earliest start of its first task (e.g. a batch offset)
    starts: list[float] = field(default_factory=list)
    finish: float = 0.0


def replay(
    plan: list[Incarnation], geometry: MigGeometry, gpus: int, *, reuse: bool = True, free: bool = False
) -> tuple[list[tuple[int, int, Placement, float, float]], list[Operation]]:
    """Replay ``plan``; returns ``(task, gpu, placement, start, end)`` per task and the operations."""
    rec = [0.0] * gpus
    alive: list[list[Incarnation]] = [[] for _ in range(gpus)]
    ops: list[Operation] = []
    out: list[tuple[int, int, Placement, float, float]] = []
    for inc in plan:
        g = inc.gpu
        p = inc.placement
        host = None
        if reuse:
            host = next((a for a in alive[g] if a.placement == p), None)
        if host is None:
            conflicts = sorted((a for a in alive[g] if a.placement.overlaps(p)), key=lambda a: a.finish)
            for a in conflicts:
                d = 0.0 if free else geometry.destroy_s[a.placement.size]
                rec[g] = max(rec[g], a.finish) + d
                ops.append(Operation("destroy", g, a.placement.size, a.placement.start, rec[g] - d, rec[g]))
                alive[g].remove(a)
            c = 0.0 if free else geometry.create_s[p.size]
            begin = max(rec[g], inc.not_before - c)
            rec[g] = begin + c
            ops.append(Operation("create", g, p.size, p.start, begin, rec[g]))
            t = rec[g]
            host = inc
            alive[g].append(inc)
        else:
            t = host.finish
        t = max(t, inc.not_before)
        for tid, d in zip(inc.tasks, inc.durations):
            out.append((tid, g, p, t, t + d))
            t += d
        host.finish = t
    return out, ops
