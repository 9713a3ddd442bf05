"""FGD's experiment: tasks placed one by one at arrival, never removed, until the arrived GPU requests reach a share
of the cluster's GPU capacity; allocation and fragmentation as functions of the arrived load.

Problem (Weng et al., USENIX ATC'23, sec. 5; FGD's simulator hkust-adsl/kubernetes-scheduler-simulator@8f3d641,
``pkg/simulator/core.go``, ``simulator.go``, ``scripts/analysis.py`` and ``experiments/analysis/merge_*_discrete.py``):

1. Workload ("tune"): the pod list sorted by name is shuffled (seeded); while the arrived GPU request is below
   ``tune`` x capacity, tasks drawn uniformly with replacement from the sorted list are appended (CPU-only ones too;
   the stop test adds the drawn task's per-GPU share while the total adds all its GPUs, as FGD does); a list already
   above the target loses randomly drawn tasks until it is not.
2. Nodes get a seeded priority order: among equal best scores the node first in it wins (FGD's simulator renames
   nodes with a random prefix and its scheduler takes the smallest name).
3. Each task in turn: the nodes that can hold it (CPU, memory, GPUs, model, at most 1,001 tasks per node); none ->
   it fails and is gone, its GPU request still counts as arrived; one -> it; else the placement's integer scores.
4. After every task: arrived and allocated milli-GPUs (fractions counted), the cluster's fragment and fragment
   ratio against the workload's typical tasks (:mod:`.fragmentation`).
5. ``sharing="whole"`` asks what the same tasks would do on a cluster that cannot share a GPU: the workload and its
   arrivals are the same (tuned on the tasks' own requests), but each share of a GPU is placed as the whole GPU.
   ``asked_milli`` then counts what the placed tasks asked, ``used_milli`` what they hold. ``sharing="mig"`` needs
   a node table whose nodes run MIG (a cluster spec of MIG-capable GPUs): each task gets a MIG instance
   (:mod:`.mig_slots`), the node chosen by the placement, the GPU and instance by where the most room is left.
   A task naming a MIG profile (``3g.20gb``) runs only on the models that have it, as exactly that instance on a
   MIG node and as its share elsewhere (:mod:`.profiles`).
6. Curves at arrived load k = 0..130 % (:func:`discrete_curves`): the mean over the events whose arrived load rounds
   to k (else those within k +- 1), as FGD's analysis computes them.

Random numbers come from numpy's PCG64 seeded with the seed, not Go's generator: seed-for-seed equality with FGD's
runs is not the aim, their means over seeds are (the tests and ``crosscheck fgd`` compare means).

Complexity: O(tasks x nodes) numpy work for the feasibility masks and scores, plus what the placement adds
(FGD: the nodes changed since a task shape was last scored, see :mod:`gpuweave.cluster.placements.fgd`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpuweave.cluster.placements import make_task_placement
from gpuweave.cluster.sharing.fragmentation import NodeFragments, typical_tasks
from gpuweave.cluster.sharing.occupancy import Occupancy, OccupancyRecorder
from gpuweave.cluster.sharing.profiles import resolve_mig_profiles
from gpuweave.cluster.sharing.state import SharedNodes, check_tasks_fit, task_request
from gpuweave.errors import InputError
from gpuweave.hardware.node_resources import NodeTable
from gpuweave.limits import check_limit
from gpuweave.workload.tasks import FULL_GPU_MILLI, TaskTable

FGD_TUNE = 1.3  # FGD's experiments fill to 130 % of the cluster's GPUs
SHARING_MODES = ("fraction", "whole", "mig")
FGD_MAX_TASKS_PER_NODE = 1001  # the node list's pod capacity in FGD's simulator
LOAD_POINTS = tuple(range(0, 131))


@dataclass(slots=True)
class FillEvents:
    """One entry per submitted task, in order: cumulative arrived and allocated milli-GPUs, the cluster's fragment
    (milli-GPUs) and fragment ratio (% of idle, rounded to 2 decimals as FGD logs it), where it went (-1: it
    fitted nowhere) and what the placed tasks asked (equal to ``used_milli`` unless shares were rounded up)."""

    arrived_milli: np.ndarray
    used_milli: np.ndarray
    fragment_milli: np.ndarray
    fragment_ratio: np.ndarray
    node: np.ndarray
    task_rows: np.ndarray
    asked_milli: np.ndarray


@dataclass(slots=True)
class FillResult:
    placement: str
    seed: int
    tune: float
    sharing: str
    total_gpus: int
    events: FillEvents
    nodes: SharedNodes  # the cluster at the end
    curves: dict[str, list[float | None]] = field(default_factory=dict)
    occupancy: dict[int, Occupancy] = field(default_factory=dict)  # the GPUs at the reported loads (.occupancy)

    @property
    def submitted(self) -> int:
        return len(self.events.node)

    @property
    def failed(self) -> int:
        return int((self.events.node < 0).sum())


def check_fill_size(tasks: TaskTable, capacity_milli: int, tune: float) -> None:
    """Limits before work: the cluster's GPUs (``cluster_gpus``) and the tasks the tuning is expected to submit
    (``trace_jobs``): the target over the mean GPU request of a drawn task, which is what the draws with
    replacement converge to. A pod list whose tasks ask no GPU at all cannot reach any target."""

    check_limit("cluster_gpus", capacity_milli / FULL_GPU_MILLI, "GPUs of the node list", field="nodes")
    request = tasks.gpu_request_milli
    total = int(request.sum())
    target = tune * capacity_milli
    if total < target:
        mean = float(request.mean()) if len(request) else 0.0
        if mean <= 0:
            raise InputError("no task asks for a GPU: the arrived load can never reach the target", field="pods")
        expected = len(tasks) + (target - total) / mean
        check_limit("trace_jobs", expected, "tasks the fill would submit (expected)", field="to")


def tuned_order(tasks: TaskTable, capacity_milli: int, tune: float, rng: np.random.Generator) -> np.ndarray:
    """The rows of ``tasks`` in submission order after FGD's workload tuning (module docstring, step 1)."""
    by_name = np.array(sorted(range(len(tasks)), key=tasks.names.__getitem__), dtype=np.int64)
    order = list(by_name[rng.permutation(len(by_name))].tolist())
    request = tasks.gpu_request_milli
    total = int(request.sum())
    target = tune * capacity_milli
    if total < target:
        per_gpu = tasks.gpu_milli
        while True:
            row = int(by_name[int(rng.integers(len(by_name)))])
            if total + int(per_gpu[row]) > target:  # FGD's stop test: the per-GPU share, not the whole request
                break
            total += int(request[row])
            order.append(row)
    else:
        while total > target:
            position = int(rng.integers(len(order)))
            total -= int(request[order.pop(position)])
    return np.array(order, dtype=np.int64)


def run_fill(
    node_table: NodeTable,
    tasks: TaskTable,
    placement: str,
    *,
    seed: int,
    tune: float = FGD_TUNE,
    max_tasks_per_node: int | None = FGD_MAX_TASKS_PER_NODE,
    sharing: str = "fraction",
    progress: Callable[[int, int], None] | None = None,
) -> FillResult:
    """FGD's experiment of one placement and seed (see module docstring); ``progress(done, total)`` now and then."""

    if sharing not in SHARING_MODES:
        raise InputError(f"sharing must be one of {', '.join(SHARING_MODES)}, got {sharing!r}", field="sharing")
    if sharing == "mig" and (node_table.mig is None or not all(node_table.mig)):
        raise InputError(
            "sharing mig needs a cluster whose nodes all run MIG (a cluster spec: --cluster)", field="sharing"
        )
    rule = make_task_placement(placement)
    tasks = resolve_mig_profiles(node_table, tasks)  # a MIG profile: only the models that have it (.profiles)
    check_tasks_fit(node_table, tasks)
    placed_as = tasks.as_whole_gpus() if sharing == "whole" else tasks
    rng = np.random.default_rng(seed)
    check_fill_size(tasks, node_table.total_gpus * FULL_GPU_MILLI, tune)
    nodes = SharedNodes(node_table, max_tasks_per_node=max_tasks_per_node)
    order = tuned_order(tasks, nodes.gpu_capacity_milli, tune, rng)
    priority = rng.permutation(len(nodes))
    # one fragment tracker for the run: the events' cluster fragment and FGD's scores read the same one
    fragments = NodeFragments(typical_tasks(placed_as, nodes.models), nodes)
    rule.bind(nodes, fragments, rng)
    total = len(order)
    arrived = np.zeros(total, dtype=np.int64)
    used = np.zeros(total, dtype=np.int64)
    fragment = np.zeros(total, dtype=np.float64)
    ratio = np.zeros(total, dtype=np.float64)
    where = np.full(total, -1, dtype=np.int64)
    asked = np.zeros(total, dtype=np.int64)
    requests = [task_request(placed_as, row) for row in range(len(tasks))]
    own = tasks.gpu_request_milli.tolist()
    arrived_milli = asked_milli = 0
    recorder = OccupancyRecorder(node_table.total_gpus)
    for i, row in enumerate(order.tolist()):
        task = requests[row]
        arrived_milli += own[row]
        recorder.arrive(arrived_milli, nodes)
        candidates = np.flatnonzero(nodes.fits(task))
        if len(candidates) == 1:
            node = int(candidates[0])
        elif len(candidates) > 1:
            score = rule.scores(task, candidates)
            best = np.flatnonzero(score == score.max())
            node = int(candidates[best[np.argmin(priority[candidates[best]])]])
        else:
            node = -1
        if node >= 0:
            # a MIG node's GPU and instance: where the most slices stay usable (the rules choose among shares)
            gpus = nodes.best_fit_gpus(task, node) if nodes.mig_node[node] else rule.gpus(task, node)
            nodes.assign(task, node, gpus)
            asked_milli += own[row]
        where[i] = node
        asked[i] = asked_milli
        arrived[i] = arrived_milli
        used[i] = nodes.gpu_used_milli
        fragment[i] = float(fragments.current().sum())
        idle = nodes.gpu_capacity_milli - nodes.gpu_used_milli
        ratio[i] = round(100.0 * fragment[i] / idle, 2) if idle > 0 else 0.0
        if progress is not None and (i % 1000 == 0 or i == total - 1):
            progress(i + 1, total)
    events = FillEvents(arrived, used, fragment, ratio, where, order, asked)
    total_gpus = node_table.total_gpus
    curves = discrete_curves(events, total_gpus)
    return FillResult(placement, seed, tune, sharing, total_gpus, events, nodes, curves, recorder.finish(nodes))


def discrete_curves(
    events: FillEvents, total_gpus: int, points: tuple[int, ...] = LOAD_POINTS
) -> dict[str, list[float | None]]:
    """FGD's discrete curves (module docstring, step 6): per load point k, ``allocation`` (% of the GPUs held,
    counting fractions), ``asked`` (% of the GPUs the placed tasks asked: less than held under whole GPUs),
    ``fragment`` (% of the GPUs) and ``fragment_ratio`` (% of the idle GPUs); None where no event is within k +- 1.
    Python's own ``round`` (half to even on the binary value), as FGD's scripts use it."""
    arrived = [round(a / total_gpus / 10, 0) for a in events.arrived_milli.tolist()]
    allocation = [round(u / total_gpus / 10, 2) for u in events.used_milli.tolist()]
    asked = [round(u / total_gpus / 10, 2) for u in events.asked_milli.tolist()]
    fragment = events.fragment_milli.tolist()
    ratio = events.fragment_ratio.tolist()
    by_point: dict[float, list[int]] = {}
    for i, a in enumerate(arrived):
        by_point.setdefault(a, []).append(i)
    curves: dict[str, list[float | None]] = {"load": [float(k) for k in points]}
    curves.update(allocation=[], asked=[], fragment=[], fragment_ratio=[])
    for k in points:
        chosen = by_point.get(float(k)) or [i for a in (k - 1, k, k + 1) for i in by_point.get(float(a), [])]
        if not chosen:
            for name in ("allocation", "asked", "fragment", "fragment_ratio"):
                curves[name].append(None)
            continue
        n = len(chosen)
        curves["allocation"].append(round(sum(allocation[i] for i in chosen) / n, 2))
        curves["asked"].append(round(sum(asked[i] for i in chosen) / n, 2))
        curves["fragment"].append(round(100 * (sum(fragment[i] for i in chosen) / n) / FULL_GPU_MILLI / total_gpus, 2))
        curves["fragment_ratio"].append(sum(ratio[i] for i in chosen) / n)
    return curves
