"""FAR: Family of Allocations and Repartitioning (Villarrubia et al., JPDC 204 (2025) 105128).

Problem. Minimise the makespan of a batch of moldable tasks on one or several MIG GPUs, where a task
may run on an instance of any size with a profiled time, instances are created and destroyed one
at a time with the times of the paper's Table 1, and instances alive together must form a valid
partition (paper Sec. 2.2; spec §1.4).

FAR(t, G) = REFINE(PHASE2(t, PHASE1(t, C_G), G)) (spec §2.5):

1. :mod:`gpuweave.mig.phase1` -- the family of allocations (Sec. 3.1);
2. :mod:`gpuweave.mig.phase2` -- LPT + list scheduling on the repartitioning tree with sequential
   reconfiguration (Sec. 3.2, Alg. 1), best member kept;
3. :mod:`gpuweave.mig.far_refine` -- moves and swaps (Sec. 3.3, Alg. 2), then exact times
   (:func:`gpuweave.mig.tree.recompute_times`).

Guarantee (Sec. 5, without reconfiguration cost): 7/4 on A30, 2 on A100/H100 against the moldable
optimum. Complexity: O(n^2 log n) for phases 1-2 in the worst case (pruned, usually ~n log n times
a few members), O(iterations * #nodes * n) for phase 3.

[R] The optional "never worse" guard (spec §2.4, §7.5): Phase 3 works on estimated slice ends, so
after recomputation the makespan can rarely exceed the Phase-2 one; with ``guard=True`` (default)
the Phase-2 schedule is kept then, and ``guard_fired`` says so. ``guard=False`` is the paper's
algorithm; ``regressed`` tells whether the guard would have fired.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuweave.mig.far_refine import MOVE_EPS, RefineStats, refine
from gpuweave.mig.phase2 import Phase2Result, best_allocation
from gpuweave.mig.problem import MigProblem, lower_bound
from gpuweave.mig.registry import register_planner
from gpuweave.mig.schedule import Schedule
from gpuweave.mig.tree import Forest, forest_to_schedule, recompute_times


@dataclass(frozen=True, slots=True)
class FarOptions:
    refine: bool = True
    max_iters: int = 100
    guard: bool = True
    prune: bool = True
    eps: float = MOVE_EPS


@dataclass(slots=True)
class FarResult:
    schedule: Schedule
    forest: Forest
    phase2: Phase2Result
    makespan_noref: float
    makespan: float
    lower_bound: float
    stats: RefineStats
    regressed: bool  # refinement made the exact makespan worse
    guard_fired: bool  # ... and the guard restored the Phase-2 schedule

    @property
    def rho(self) -> float:
        return self.makespan / self.lower_bound

    @property
    def p_ref(self) -> float:
        """(w_noref / w_ref - 1) * 100 (paper Sec. 6.1)."""
        return (self.makespan_noref / self.makespan - 1.0) * 100.0


def far(problem: MigProblem, options: FarOptions = FarOptions()) -> FarResult:
    """Run FAR on a batch; returns the schedule and the per-phase numbers."""
    p2 = best_allocation(problem, prune=options.prune)
    forest = p2.forest
    ms_noref = p2.makespan
    stats = RefineStats()
    regressed = guard_fired = False
    ms = ms_noref
    if options.refine:
        snapshot = forest.copy_lists()
        ops = list(forest.ops)
        stats = refine(forest, max_iters=options.max_iters, eps=options.eps)
        if stats.moves or stats.swaps:
            ms = recompute_times(forest, problem)
            if ms > ms_noref:
                regressed = True
                if options.guard:
                    forest.restore_lists(snapshot, ops)
                    ms = ms_noref
                    guard_fired = True
    lb = lower_bound(problem)
    info = {
        "family_size": p2.family_size,
        "allocations_evaluated": p2.evaluated,
        "best_allocation": p2.best_index,
        "makespan_phase2": ms_noref,
        "refine_iterations": stats.iterations,
        "moves": stats.moves,
        "swaps": stats.swaps,
        "guard_fired": guard_fired,
    }
    schedule = forest_to_schedule(forest, problem, "far", lb, info)
    return FarResult(schedule, forest, p2, ms_noref, ms, lb, stats, regressed, guard_fired)


@register_planner(
    "far", help="FAR: family of allocations, repartitioning tree, moves and swaps (the paper's algorithm)"
)
def far_planner(problem: MigProblem, arg: str | None) -> Schedule:
    return far(problem).schedule
