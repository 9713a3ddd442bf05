"""FAR's working tree: per-node task lists on the repartitioning forest, and its timeline helpers.

Problem. FAR (paper Sec. 3.2-3.3) assigns task lists to the nodes of the repartitioning tree of
:func:`gpuweave.hardware.mig.repartition_tree` (one tree per GPU: a forest). A node's tasks run one
after another on its instance; its children start only after its last task ends and its instance
is destroyed; a node without tasks is never created. This module holds that mutable state
(:class:`Forest`, :class:`Node`) and the two helpers of spec §2.3:

* :func:`slice_ends` (SLICE_ENDS) -- per slice, the end of the last task of any node whose
  *occupancy* contains it (so the 3-slice instance at S0 counts on S3);
* :func:`recompute_times` (RECOMPUTE_TIMES, paper Alg. 2 line 26) -- exact start times of given task
  lists with sequential create/destroy operations, replayed exactly as Alg. 1 does; the operation
  intervals ``[rec - c, rec]`` are recorded.

Multi-GPU [R] (spec §1.5 says only "a forest"): all roots go on one heap; each GPU has its own
sequential reconfiguration clock (NVML operations on different devices do not wait for each other);
a destroy is charged while any task of the batch is still unstarted (spec §2.3, forest-wide).

Complexity: building O(#nodes); slice_ends O(#nodes * #slices); recompute_times O((n + #nodes)
log #nodes).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from gpuweave.hardware.mig import MigGeometry, TreeNode, repartition_tree
from gpuweave.mig.problem import MigProblem
from gpuweave.mig.schedule import Operation, Schedule, ScheduledTask


@dataclass(slots=True, eq=False)
class Node:
    """One node of the forest: an instance (size, first slice) of one GPU and its task list."""

    idx: int  # pre-order index in the forest
    gpu: int
    size: int
    k: int  # index of size in the problem's ascending sizes
    start_slice: int
    occ: tuple[int, ...]  # global slice ids (gpu * slices_per_gpu + s)
    parent: Node | None
    children: list[Node] = field(default_factory=list)
    tasks: list[int] = field(default_factory=list)  # task ids in execution order
    times: list[float] = field(default_factory=list)  # durations, aligned with tasks
    starts: list[float] = field(default_factory=list)  # start times, aligned with tasks
    end: float = 0.0

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def last_end(self) -> float:
        return self.starts[-1] + self.times[-1] if self.tasks else 0.0

    def __repr__(self) -> str:
        return f"Node(gpu={self.gpu}, {self.size}@{self.start_slice}, tasks={self.tasks})"


@dataclass(slots=True)
class Forest:
    """The forest (one repartitioning tree per GPU) with task lists and recorded operations."""

    geometry: MigGeometry
    gpus: int
    roots: list[Node]
    nodes: list[Node]  # pre-order, GPU by GPU
    ops: list[Operation] = field(default_factory=list)

    @property
    def num_slices(self) -> int:
        return self.geometry.num_slices * self.gpus

    def leaves(self) -> list[Node]:
        return [n for n in self.nodes if n.is_leaf]

    def makespan(self) -> float:
        return max((n.last_end() for n in self.nodes if n.tasks), default=0.0)

    def task_count(self) -> int:
        return sum(len(n.tasks) for n in self.nodes)

    def copy_lists(self) -> list[tuple[list[int], list[float], list[float]]]:
        """A snapshot of every node's lists (restored with :meth:`restore_lists`)."""
        return [(n.tasks[:], n.times[:], n.starts[:]) for n in self.nodes]

    def restore_lists(self, snap: list[tuple[list[int], list[float], list[float]]], ops: list[Operation]) -> None:
        for n, (a, b, c) in zip(self.nodes, snap):
            n.tasks, n.times, n.starts = a[:], b[:], c[:]
        self.ops = list(ops)


def build_forest(geometry: MigGeometry, gpus: int, sizes: tuple[int, ...]) -> Forest:
    """A fresh forest with empty task lists: ``gpus`` copies of the geometry's repartitioning tree."""
    template: TreeNode = repartition_tree(geometry)
    per = geometry.num_slices
    nodes: list[Node] = []
    roots: list[Node] = []

    def build(t: TreeNode, gpu: int, parent: Node | None) -> Node:
        node = Node(
            idx=len(nodes),
            gpu=gpu,
            size=t.size,
            k=sizes.index(t.size),
            start_slice=t.start,
            occ=tuple(gpu * per + s for s in sorted(t.occupancy)),
            parent=parent,
        )
        nodes.append(node)
        node.children = [build(c, gpu, node) for c in t.children]
        return node

    for g in range(gpus):
        roots.append(build(template, g, None))
    return Forest(geometry, gpus, roots, nodes)


def slice_ends(forest: Forest) -> list[float]:
    """SLICE_ENDS (spec §2.3): per global slice, the latest end of a node's last task over its occupancy."""
    end = [0.0] * forest.num_slices
    for n in forest.nodes:
        if n.tasks:
            e = n.starts[-1] + n.times[-1]
            for s in n.occ:
                if e > end[s]:
                    end[s] = e
    return end


def recompute_times(forest: Forest, problem: MigProblem) -> float:
    """RECOMPUTE_TIMES (spec §2.3): exact starts and operations for the current task lists.

    Replays Alg. 1's heap order (key: end time, insertion counter). Returns the makespan.
    """
    geom = forest.geometry
    create = [geom.create_s[s] for s in problem.sizes]
    destroy = [geom.destroy_s[s] for s in problem.sizes]
    rec = [0.0] * forest.gpus
    ops: list[Operation] = []
    remaining = forest.task_count()
    heap: list[tuple[float, int, Node]] = []
    counter = 0
    pos: dict[int, int] = {}
    for r in forest.roots:
        r.end = 0.0
        heap.append((0.0, counter, r))
        counter += 1
    for n in forest.nodes:
        n.starts = [0.0] * len(n.tasks)
    while heap:
        _, _, node = heapq.heappop(heap)
        if not node.tasks:
            for c in node.children:
                c.end = node.end
                heapq.heappush(heap, (c.end, counter, c))
                counter += 1
            continue
        p = pos.get(node.idx, 0)
        g = node.gpu
        if p == 0:
            c_t = create[node.k]
            rec[g] = max(rec[g], node.end) + c_t
            ops.append(Operation("create", g, node.size, node.start_slice, rec[g] - c_t, rec[g]))
            node.end = rec[g]
        if p < len(node.tasks):
            node.starts[p] = node.end
            node.end += node.times[p]
            pos[node.idx] = p + 1
            remaining -= 1
            heapq.heappush(heap, (node.end, counter, node))
            counter += 1
        else:
            if remaining > 0:
                d_t = destroy[node.k]
                rec[g] = max(rec[g], node.end) + d_t
                ops.append(Operation("destroy", g, node.size, node.start_slice, rec[g] - d_t, rec[g]))
            for c in node.children:
                c.end = node.end
                heapq.heappush(heap, (c.end, counter, c))
                counter += 1
    forest.ops = ops
    return forest.makespan()


def forest_to_schedule(
    forest: Forest, problem: MigProblem, algo: str, lower_bound: float, info: dict | None = None
) -> Schedule:
    """The plain-data schedule of a forest whose start times are current."""
    tasks = []
    for n in forest.nodes:
        for tid, st, du in zip(n.tasks, n.starts, n.times):
            cmd = problem.commands[tid] if problem.commands is not None else None
            tasks.append(ScheduledTask(problem.names[tid], n.gpu, n.size, n.start_slice, st, st + du, cmd))
    return Schedule(
        gpu=problem.gpu,
        gpus=forest.gpus,
        makespan=forest.makespan(),
        lower_bound=lower_bound,
        tasks=tasks,
        operations=list(forest.ops),
        reconfiguration="table",
        algo=algo,
        info=dict(info or {}),
    )
