"""MISO-opt baseline (MISO, SoCC'22, as re-implemented for the FAR paper Sec. 6.1; spec §5.2).

Problem. Tasks in FIFO order; with T_k the next unscheduled task, choose the partition
P = (I_0, ..., I_{|P|-1}) of the ordered list of maximal partitions (paper Fig. 1) that maximises
sum_{i < min(|P|, n-k)} speedup_{k+i}(|I_i|) (strict >, first wins); task k+i goes to instance I_i
(positional, no permutation search, as the authors' 2025 code); each instance starts when its own
slices (occupancy) are free; then k += |P|. Partition decisions are independent, which leaves idle
gaps -- the weakness FAR's repartitioning tree avoids.

[R] speedup_i(m) = t_i(m_0) / t_i(m) with m_0 the smallest size the task can run on (t_i(1) unless
that is ``inf``); an instance the task cannot use scores -inf.
[R] Reconfiguration: not charged by default (authors' code; the schedule declares the ``"free"``
model, operations of zero length); ``charge_reconfig=True`` replays the same plan with the table's
sequential create/destroy times (:mod:`gpuweave.mig.replay`).
[R] Several GPUs: window w goes to GPU w mod #GPUs.

Complexity: O(n * #partitions * |P|) = O(19 * 7 * n) on A100.
"""

from __future__ import annotations

import math

from gpuweave.errors import InputError
from gpuweave.hardware.mig import Placement, partition_label, partitions
from gpuweave.mig.problem import MigProblem, lower_bound
from gpuweave.mig.registry import register_planner
from gpuweave.mig.replay import Incarnation, replay
from gpuweave.mig.schedule import Operation, Schedule, ScheduledTask


def miso_opt(problem: MigProblem, *, charge_reconfig: bool = False) -> Schedule:
    """MISO-opt schedule (see module docstring)."""
    parts = partitions(problem.geometry)
    kidx = {s: k for k, s in enumerate(problem.sizes)}
    times = problem.times
    ref = [next(t for t in row if not math.isinf(t)) for row in times]
    per = problem.geometry.num_slices
    free = [0.0] * problem.num_slices
    n = problem.n
    k = 0
    window = 0
    placed: list[tuple[int, int, Placement, float, float]] = []
    plan: list[Incarnation] = []
    chosen: list[str] = []
    while k < n:
        best, best_score = None, -math.inf
        for part in parts:
            score = 0.0
            for i in range(min(len(part), n - k)):
                t = times[k + i][kidx[part[i].size]]
                if math.isinf(t):
                    score = -math.inf
                    break
                score += ref[k + i] / t
            if score > best_score:
                best, best_score = part, score
        if best is None:
            raise InputError(f"MISO-opt: task {problem.names[k]!r} and its window fit no partition")
        g = window % problem.gpus
        chosen.append(partition_label(best))
        for i in range(min(len(best), n - k)):
            pl = best[i]
            t = times[k + i][kidx[pl.size]]
            occ = [g * per + s for s in pl.occupancy]
            start = max(free[s] for s in occ)
            end = start + t
            for s in occ:
                free[s] = end
            placed.append((k + i, g, pl, start, end))
            plan.append(Incarnation(g, pl, [k + i], [t], not_before=start))
        k += len(best)
        window += 1
    cmd = problem.commands
    info = {"partitions": chosen, "charge_reconfig": charge_reconfig}
    if charge_reconfig:
        for inc in plan:
            inc.not_before = 0.0
        rows, ops = replay(plan, problem.geometry, problem.gpus, reuse=True)
        tasks = [
            ScheduledTask(problem.names[i], g, p.size, p.start, s, e, cmd[i] if cmd else None) for i, g, p, s, e in rows
        ]
        ms = max(t.end for t in tasks)
        return Schedule(problem.gpu, problem.gpus, ms, lower_bound(problem), tasks, ops, "table", [], "miso-opt", info)
    free_tasks: list[ScheduledTask] = []
    free_ops: list[Operation] = []
    for j, gpu, place, begin, end in placed:
        command = cmd[j] if cmd else None
        free_tasks.append(ScheduledTask(problem.names[j], gpu, place.size, place.start, begin, end, command))
        free_ops.append(Operation("create", gpu, place.size, place.start, begin, begin))
        free_ops.append(Operation("destroy", gpu, place.size, place.start, end, end))
    ms = max(t.end for t in free_tasks)
    return Schedule(
        problem.gpu, problem.gpus, ms, lower_bound(problem), free_tasks, free_ops, "free", [], "miso-opt", info
    )


@register_planner(
    "miso-opt", help="MISO-opt: FIFO windows, best-speedup partition per window (no reconfiguration cost)"
)
def miso_planner(problem: MigProblem, arg: str | None) -> Schedule:
    return miso_opt(problem)


@register_planner("miso-opt-charged", help="MISO-opt with the Table 1 reconfiguration times charged (spec 7.13 flag)")
def miso_charged_planner(problem: MigProblem, arg: str | None) -> Schedule:
    sched = miso_opt(problem, charge_reconfig=True)
    sched.algo = "miso-opt-charged"
    return sched
