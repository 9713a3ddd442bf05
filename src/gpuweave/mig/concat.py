"""Multi-batch concatenation of FAR schedules (FAR paper Sec. 4; spec §2.8, §5.1).

Problem. Batches arrive one after another; each is scheduled offline by FAR, and consecutive
schedules are joined online so that they overlap where the slices allow it.

* Trivial concatenation: B2 starts when B1's last task ends, w = M1 + M2.
* Reverse batch (Sec. 4.2): B2 runs time-mirrored (leaves first, instances merge), so its first start
  on slice s is M2 - e2[s]; offset d = max(0, max_{s used by B2} e1[s] - (M2 - e2[s])) (slice by
  slice, keep the largest), w_rev = max(M1, d + M2).
* Move/swap for overlap (Sec. 4.3): Phase 3 (:func:`gpuweave.mig.far_refine.refine`) on B2's tree with
  slice ends initialised to e1[s] + e2[s] and an iteration cap of 20; then exact times, reverse and
  place again (w_ms); [R] if w_ms > w_rev the reversed-only result is kept.

Like the paper and the authors' code, the junction's reconfiguration and the create/destroy role
swap inside a reversed batch are ignored in these numbers (spec §7.18); :func:`chain_schedule` is the
[R] "exact" mode that replays the joined plan with sequential reconfiguration
(:mod:`gpuweave.mig.replay`) and returns a schedule the validator accepts.

Metrics (Sec. 6.1): p_rev = (w_trivial / w_rev - 1) 100, p_ms = (w_trivial / w_ms - 1) 100;
p_multi-batch as the authors computed it (sum of the 1000 pair makespans of 1001 batches over the
sum of all lower bounds: every batch counted twice, spec §7.17) and as a true chain
(:func:`chain_makespan`, orientations alternating; [R] move/swap only at reversed junctions, where
leaves meet leaves -- at forward junctions a batch ending with merged instances meets one starting
with them).

Complexity: O(#slices) per placement, plus one Phase-3 run (O(20 * #nodes * n)) per junction.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuweave.mig.far import FarResult
from gpuweave.mig.far_refine import refine
from gpuweave.mig.problem import MigProblem
from gpuweave.mig.replay import Incarnation, replay
from gpuweave.mig.schedule import Schedule, ScheduledTask
from gpuweave.mig.tree import Forest, recompute_times, slice_ends

CONCAT_MAX_ITERS = 20


def first_starts(forest: Forest) -> list[float]:
    """Per slice, the first task start of any node whose occupancy contains it (inf if unused)."""
    out = [float("inf")] * forest.num_slices
    for n in forest.nodes:
        if n.tasks:
            s0 = n.starts[0]
            for s in n.occ:
                if s0 < out[s]:
                    out[s] = s0
    return out


def reversed_offset(e1: list[float], e2: list[float], m2: float) -> float:
    """d = max(0, max over slices used by B2 of e1[s] - (M2 - e2[s]))."""
    d = 0.0
    for a, b in zip(e1, e2):
        if b > 0.0:
            x = a - (m2 - b)
            if x > d:
                d = x
    return d


@dataclass(slots=True)
class PairResult:
    m1: float
    m2: float
    trivial: float
    rev: float
    ms: float  # after move/swap (never worse than rev)
    moves: int
    swaps: int
    iterations: int
    kept_reversed: bool  # move/swap did not improve on reversal

    @property
    def p_rev(self) -> float:
        return (self.trivial / self.rev - 1.0) * 100.0

    @property
    def p_ms(self) -> float:
        return (self.trivial / self.ms - 1.0) * 100.0

    @property
    def overlap(self) -> float:
        """Relative overlap 1 - w_ms / (M1 + M2)."""
        return 1.0 - self.ms / self.trivial


def concat_pair(
    b1: FarResult, b2: FarResult, problem2: MigProblem, *, max_iters: int = CONCAT_MAX_ITERS, move_swap: bool = True
) -> PairResult:
    """Join B1 (forward) and B2 (reversed); B2's forest is left unchanged."""
    e1 = slice_ends(b1.forest)
    m1 = max(e1)
    forest2 = b2.forest
    e2 = slice_ends(forest2)
    m2 = max(e2)
    trivial = m1 + m2
    rev = max(m1, reversed_offset(e1, e2, m2) + m2)
    if not move_swap:
        return PairResult(m1, m2, trivial, rev, rev, 0, 0, 0, True)
    snap = forest2.copy_lists()
    ops = list(forest2.ops)
    stats = refine(forest2, base=e1, max_iters=max_iters)
    ms = rev
    kept = True
    if stats.moves or stats.swaps:
        recompute_times(forest2, problem2)
        e2b = slice_ends(forest2)
        m2b = max(e2b)
        cand = max(m1, reversed_offset(e1, e2b, m2b) + m2b)
        if cand <= rev:
            ms, kept = cand, False
    forest2.restore_lists(snap, ops)
    return PairResult(m1, m2, trivial, rev, ms, stats.moves, stats.swaps, stats.iterations, kept)


def p_multi_batch_paper(pairs: list[PairResult], lower_bounds: list[float]) -> float:
    """(sum of pair makespans / sum of all batches' lower bounds - 1) * 100, as the authors computed."""
    return (sum(p.ms for p in pairs) / sum(lower_bounds) - 1.0) * 100.0


@dataclass(slots=True)
class ChainPlacement:
    offset: float
    reversed: bool
    makespan: float  # the batch's own makespan after any junction refinement
    lists: list[tuple[list[int], list[float], list[float]]]  # the forest lists used


def chain_makespan(
    results: list[FarResult], problems: list[MigProblem], *, move_swap: bool = True, max_iters: int = CONCAT_MAX_ITERS
) -> tuple[float, list[ChainPlacement]]:
    """The true chained makespan: batch k is reversed when k is odd, placed at its minimal offset."""
    slices = results[0].forest.num_slices
    busy = [0.0] * slices
    placements: list[ChainPlacement] = []
    prev_offset = 0.0
    for k, (res, prob) in enumerate(zip(results, problems)):
        forest = res.forest
        snap = forest.copy_lists()
        ops = list(forest.ops)
        reverse = k % 2 == 1
        if reverse and move_swap and k > 0:
            base = [max(0.0, b - prev_offset) for b in busy]
            e = slice_ends(forest)
            m = max(e)
            before = reversed_offset(base, e, m) + m
            stats = refine(forest, base=base, max_iters=max_iters)
            if stats.moves or stats.swaps:
                recompute_times(forest, prob)
                e_new = slice_ends(forest)
                m_new = max(e_new)
                if reversed_offset(base, e_new, m_new) + m_new > before:
                    forest.restore_lists(snap, ops)
        e = slice_ends(forest)
        f = first_starts(forest)
        m = max(e)
        d = prev_offset
        for s in range(slices):
            if e[s] > 0.0:
                first = (m - e[s]) if reverse else f[s]
                d = max(d, busy[s] - first)
        for s in range(slices):
            if e[s] > 0.0:
                busy[s] = d + ((m - f[s]) if reverse else e[s])
        placements.append(ChainPlacement(d, reverse, m, forest.copy_lists()))
        forest.restore_lists(snap, ops)
        prev_offset = d
    return max(busy), placements


def chain_schedule(
    results: list[FarResult], problems: list[MigProblem], labels: list[str], *, move_swap: bool = True
) -> Schedule:
    """The chained batches as one valid schedule ([R] exact mode: replayed with sequential reconfiguration).

    Task names become ``LABEL/name``. ``info`` holds the paper-model chained makespan beside the
    replayed one.
    """
    est, placements = chain_makespan(results, problems, move_swap=move_swap)
    geometry = problems[0].geometry
    gpus = problems[0].gpus
    plan: list[tuple[float, int, Incarnation]] = []
    names: list[str] = []
    commands: list[str | None] = []
    counter = 0
    for b, (res, prob, pl, label) in enumerate(zip(results, problems, placements, labels)):
        base_id = len(names)
        names.extend(f"{label}/{n}" for n in prob.names)
        commands.extend(prob.commands if prob.commands is not None else [None] * prob.n)
        for node, (tasks, times, starts) in zip(res.forest.nodes, pl.lists):
            if not tasks:
                continue
            placement = geometry.placement(node.size, node.start_slice)
            if pl.reversed:
                first = pl.offset + pl.makespan - (starts[-1] + times[-1])
                inc = Incarnation(node.gpu, placement, [base_id + t for t in reversed(tasks)], list(reversed(times)))
            else:
                first = pl.offset + starts[0]
                inc = Incarnation(node.gpu, placement, [base_id + t for t in tasks], list(times))
            plan.append((first, counter, inc))
            counter += 1
    plan.sort(key=lambda x: (x[0], x[1]))
    rows, ops = replay([inc for _, _, inc in plan], geometry, gpus, reuse=True)
    scheduled = [ScheduledTask(names[i], g, p.size, p.start, s, e, commands[i]) for i, g, p, s, e in rows]
    lb = sum(r.lower_bound for r in results)
    ms = max(t.end for t in scheduled)
    info = {
        "batches": labels,
        "chain_makespan_model": est,
        "orientation": ["reversed" if p.reversed else "forward" for p in placements],
    }
    return Schedule(problems[0].gpu, gpus, ms, lb, scheduled, ops, "table", [], "far-chain", info)
