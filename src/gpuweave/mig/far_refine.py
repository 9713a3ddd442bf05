"""FAR Phase 3: refinement by task moves and swaps (FAR paper Sec. 3.3, Algorithm 2; spec §2.4).

Problem. Shorten the makespan of a Phase-2 forest without changing any task's size. Critical slices
are those whose estimated end equals the makespan. From the critical leaves (slice order) the search
walks toward the root breadth-first; at each node I it takes A, the other node of the same size that
ends first, and the margin m = makespan - end(A), then

* MOVE: a task T of I with T.time < m - eps, the one closest to m/2 (ties: the longer), goes to A;
* else SWAP: tasks K of I and J of A with 0 < K.time - J.time < m, difference closest to m/2
  (ties: larger K, then larger J), are exchanged;
* else I's parent is queued (once per iteration: "unless previously opened").

Task lists stay sorted by decreasing time (sorted inserts after equal times). Slice ends are
*estimates* updated by +-T.time on the nodes' occupancies; the iteration ends when the queue is
empty, the whole search stops when it reaches a root (some critical slice cannot be reduced) or
after ``max_iters`` iterations (100 for a batch, 20 for concatenation, as the authors' code).
The caller then recomputes exact times (:func:`gpuweave.mig.tree.recompute_times`).

For multi-batch concatenation (paper Sec. 4.3, spec §2.8) ``base`` adds the previous batch's per-slice
ends, so that the critical ("limiting") slices are those of e1[s] + e2[s].

Deviations from the authors' code, as the spec resolves: |.| distance (their binary search has a
sign bug), a per-iteration opened-set, occupancy semantics for the 3-slice instance at S0.

Complexity: O(#nodes * n) per iteration (each visited node: O(len) move scan, O(len log len) swap).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass

from gpuweave.mig.tree import Forest, Node, slice_ends

MOVE_EPS = 1e-5  # spec §2: eps applies to the move-fit test only
CRITICAL_TOL = 1e-9


@dataclass(slots=True)
class RefineStats:
    iterations: int = 0
    moves: int = 0
    swaps: int = 0


def _insert_sorted(node: Node, tid: int, t: float) -> None:
    """Insert keeping decreasing times, after equal times."""
    pos = bisect_right(node.times, -t, key=lambda x: -x)
    node.tasks.insert(pos, tid)
    node.times.insert(pos, t)
    node.starts.insert(pos, 0.0)


def _remove(node: Node, pos: int) -> tuple[int, float]:
    tid = node.tasks.pop(pos)
    t = node.times.pop(pos)
    node.starts.pop(pos)
    return tid, t


def pick_move(times: list[float], margin: float, eps: float = MOVE_EPS) -> int | None:
    """Index of the task to move: time < margin - eps, closest to margin/2, ties -> the longer."""
    limit = margin - eps
    half = margin / 2.0
    best, best_d = None, 0.0
    for idx, t in enumerate(times):  # decreasing: the first of equal distances is the longer
        if t < limit:
            d = abs(t - half)
            if best is None or d < best_d:
                best, best_d = idx, d
            if t < half:  # later entries are shorter, hence further from half
                break
    return best


def pick_swap(times_i: list[float], times_a: list[float], margin: float) -> tuple[int, int] | None:
    """Indices (k in I, j in A) with 0 < K - J < margin, K - J closest to margin/2; ties -> larger K, J."""
    if not times_i or not times_a:
        return None
    asc = times_a[::-1]
    n_a = len(asc)
    half = margin / 2.0
    best: tuple[int, int] | None = None
    best_d = 0.0
    for ki, kt in enumerate(times_i):
        target = kt - half
        pos = bisect_left(asc, target)
        cand = None
        if pos < n_a:
            cand = asc[pos]
            d = cand - target
            if pos > 0 and target - asc[pos - 1] < d:
                cand = asc[pos - 1]
                d = target - cand
        else:
            cand = asc[pos - 1]
            d = target - cand
        diff = kt - cand
        if not (0.0 < diff < margin):
            continue
        if best is None or d < best_d:
            j_dec = n_a - bisect_right(asc, cand)  # first occurrence in the decreasing list
            best, best_d = (ki, j_dec), d
    return best


def _first_ending_peer(node: Node, same_size: list[Node], end: list[float]) -> tuple[Node | None, float]:
    """A: the other node of the node's size whose slices end first, and that end."""
    target, target_end = None, 0.0
    for cand in same_size:
        if cand is node:
            continue
        e = max(end[s] for s in cand.occ)
        if target is None or e < target_end:
            target, target_end = cand, e
    return target, target_end


def _shift_ends(end: list[float], source: Node, target: Node, amount: float) -> None:
    """Estimated slice ends after ``amount`` of work went from ``source`` to ``target``."""
    for s in source.occ:
        end[s] -= amount
    for s in target.occ:
        end[s] += amount


def _move_or_swap(node: Node, target: Node, margin: float, end: list[float], stats: RefineStats, eps: float) -> bool:
    """MOVE a task of ``node`` to ``target``, else SWAP a pair; False when neither applies (or margin <= 0)."""
    if margin <= 0:
        return False
    pos = pick_move(node.times, margin, eps)
    if pos is not None:
        tid, t = _remove(node, pos)
        _insert_sorted(target, tid, t)
        _shift_ends(end, node, target, t)
        stats.moves += 1
        return True
    pair = pick_swap(node.times, target.times, margin)
    if pair is None:
        return False
    ki, ji = pair
    k_tid, k_t = _remove(node, ki)
    j_tid, j_t = _remove(target, ji)
    _insert_sorted(node, j_tid, j_t)
    _insert_sorted(target, k_tid, k_t)
    _shift_ends(end, node, target, k_t - j_t)
    stats.swaps += 1
    return True


def refine(
    forest: Forest, *, base: list[float] | None = None, max_iters: int = 100, eps: float = MOVE_EPS
) -> RefineStats:
    """REFINE (spec §2.4) in place on the forest's task lists; returns iterations, moves, swaps."""
    stats = RefineStats()
    nodes = forest.nodes
    by_size: dict[int, list[Node]] = {}
    for n in nodes:
        by_size.setdefault(n.size, []).append(n)
    leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.occ[0])
    end = slice_ends(forest)
    if base is not None:
        end = [a + b for a, b in zip(end, base)]
    omega = max(end)
    stop = False
    while not stop and stats.iterations < max_iters:
        stats.iterations += 1
        queue = deque(leaf for leaf in leaves if abs(end[leaf.occ[0]] - omega) <= CRITICAL_TOL)
        opened = {leaf.idx for leaf in queue}
        while queue:
            node = queue.popleft()
            if node.parent is None:
                stop = True
                break
            target, target_end = _first_ending_peer(node, by_size[node.size], end)
            if target is not None and node.tasks and _move_or_swap(node, target, omega - target_end, end, stats, eps):
                continue
            parent = node.parent
            if parent.idx not in opened:
                opened.add(parent.idx)
                queue.append(parent)
        omega = max(end)
    return stats
