"""Placement helpers shared by policies and placement rules: where on one GPU model a gang of n GPUs goes.

The run's rule (:mod:`gpuweave.cluster.placements`) is what :func:`place_on_model` and :func:`start_on_fastest`
apply; the helpers below are its building blocks and those of the policies that place by their own rule.

All helpers read the scratch free counts of a :class:`~gpuweave.cluster.decision.Plan` (or a capacity scratch). Best
fit on one node reads a plan's free index (:mod:`gpuweave.cluster.free_index`): O(GPUs per node + nodes the plan
changed); a capacity scratch has none and is scanned, O(nodes of that model), as is a spread. Consolidated means
one node; spreading takes the fullest-free nodes first, so a job lands on as few nodes as possible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuweave.cluster.decision import Plan
from gpuweave.cluster.state import Placement

if TYPE_CHECKING:
    from gpuweave.cluster.free_index import FreeIndex
    from gpuweave.cluster.placements import FreeCapacity
    from gpuweave.cluster.state import ClusterView, JobState


def single_node(plan: FreeCapacity, n: int, model: str) -> Placement | None:
    """Best fit: the node of ``model`` with the fewest free GPUs that still holds all n (lowest index on ties)."""
    index = plan.free_index
    if index is not None and model in index.buckets:
        node = index.best_fit(n, model, plan.free, plan.touched)
        return ((node, n),) if node >= 0 else None
    free = plan.free
    best = -1
    best_free = 1 << 30
    for node in plan.view.nodes_by_model[model]:
        f = free[node]
        if n <= f < best_free:
            best, best_free = node, f
            if f == n:
                break
    return ((best, n),) if best >= 0 else None


def fewest_nodes(plan: FreeCapacity, n: int, model: str, *, allow_spread: bool = True) -> Placement | None:
    """One node if possible, else (if ``allow_spread``) the fewest nodes of ``model``, fullest-free first."""
    if plan.free_by_model.get(model, 0) < n:
        return None
    one = single_node(plan, n, model)
    if one is not None or not allow_spread:
        return one
    return spread(plan.view.nodes_by_model[model], plan.free, n)


def spread(nodes: list[int], cap: list[int], n: int, prefer: list[int] | None = None) -> Placement | None:
    """n GPUs from ``cap`` (usable GPUs per node) over ``nodes`` (ascending, as ``nodes_by_model`` lists them) on as
    few nodes as possible: most usable GPUs first, then (when given) most ``prefer`` GPUs, then lowest index. None if
    they hold fewer than n."""
    placement: list[tuple[int, int]] = []
    left = n
    if prefer is None:
        # A stable sort on the usable GPUs alone, keyed by the list's own C-level __getitem__ (no tuple or Python call
        # per node): descending, ties keep the ascending node order. Nodes without usable GPUs come last.
        for node in sorted(nodes, key=cap.__getitem__, reverse=True):
            c = cap[node]
            if c <= 0:
                return None
            take = c if c < left else left
            placement.append((node, take))
            left -= take
            if left == 0:
                placement.sort()
                return tuple(placement)
        return None
    # Only nodes with usable GPUs, sorted as tuples (a Python key function per node cost more than the sort).
    order = sorted([(-cap[i], -prefer[i], i) for i in nodes if cap[i] > 0])
    for entry in order:
        node = entry[-1]
        take = min(-entry[0], left)
        placement.append((node, take))
        left -= take
        if left == 0:
            return tuple(sorted(placement))
    return None


def fastest_models(view: ClusterView, js: JobState) -> list[str]:
    """The cluster's GPU models on which the job can run, fastest (consolidated rate) first; ties keep cluster
    order. The driver caches the list per (job type, GPU count); callers must not mutate it."""
    return view.fastest_models(js)


def place_on_model(plan: Plan, js: JobState, model: str, *, allow_spread: bool = True) -> Placement | None:
    """A placement of the whole gang on ``model`` by the run's placement rule (``plan.view.placement``; the
    default: one node if possible) on which the job can actually run; None at once when the model has too few
    free GPUs."""
    if plan.free_by_model.get(model, 0) < js.job.num_gpus:
        return None
    return plan.view.placement.place(plan, js, model, allow_spread=allow_spread)


def runnable_spread(plan: FreeCapacity, js: JobState, model: str) -> Placement | None:
    """The gang spread over ``model``'s nodes (fewest nodes, fullest-free first), or None if the model lacks the
    GPUs or the job cannot run spread there. The spread rate is read before the spread is built (no spread is built
    for a job whose spread rate is 0); only a profile source that rates each split needs the placement itself."""
    view = plan.view
    known_rate = view.spread_rate(js, model)
    if known_rate is not None and not known_rate > 0:
        return None
    placement = spread(view.nodes_by_model[model], plan.free, js.job.num_gpus)
    if placement is None or (known_rate is None and len(placement) > 1 and not view.rate(js, placement) > 0):
        return None
    return placement


def start_on_fastest(plan: Plan, js: JobState) -> bool:
    """Start the job in ``plan`` on the fastest GPU model where the run's placement rule finds room for its gang;
    False if none has."""
    n = js.job.num_gpus
    free_by_model = plan.free_by_model
    place = plan.view.placement.place
    for model in plan.view.fastest_models(js):
        if free_by_model[model] < n:  # the common miss, without a call
            continue
        placement = place(plan, js, model)
        if placement is not None:
            plan.start(js, placement)
            return True
    return False


class CapacityScratch:
    """A Plan-like scratch (free GPUs per node and per model) over the *whole* capacity, for policies that
    re-place every active job each round (Tiresias, Gavel) and so ignore what currently runs."""

    __slots__ = ("view", "free", "free_by_model")
    # No free index: a scratch over the whole capacity is not the book's free counts (best fit scans).
    free_index: FreeIndex | None = None
    touched: frozenset[int] = frozenset()

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.free = [n.num_gpus for n in view.nodes]
        self.free_by_model = {m: sum(view.nodes[i].num_gpus for i in idx) for m, idx in view.nodes_by_model.items()}

    @classmethod
    def now_free(cls, view: ClusterView) -> "CapacityScratch":
        """A scratch over what is free now (the whole capacity minus what runs)."""
        scratch = cls.__new__(cls)
        scratch.view, scratch.free, scratch.free_by_model = view, list(view.free), dict(view.free_by_model)
        return scratch

    def copy(self) -> "CapacityScratch":
        other = CapacityScratch.__new__(CapacityScratch)
        other.view, other.free, other.free_by_model = self.view, list(self.free), dict(self.free_by_model)
        return other

    def take(self, placement: Placement) -> None:
        nodes = self.view.nodes
        for node, k in placement:
            self.free[node] -= k
            self.free_by_model[nodes[node].gpu_model] -= k

    def give_back(self, placement: Placement) -> None:
        nodes = self.view.nodes
        for node, k in placement:
            self.free[node] += k
            self.free_by_model[nodes[node].gpu_model] += k

    def fits(self, placement: Placement) -> bool:
        free = self.free
        for node, k in placement:
            if free[node] < k:
                return False
        return True


class CapacityCache:
    """Whole-capacity facts of the cluster a round policy looks at, rebuilt only when its nodes change: a
    :class:`CapacityScratch` template (copied per round, O(nodes) in C instead of a Python scan), GPUs per model,
    the largest node per model and each node's model."""

    __slots__ = ("_key", "_template", "gpus_by_model", "largest_node", "node_models")

    def __init__(self) -> None:
        self._key: tuple[int, ...] = ()
        self._template: CapacityScratch | None = None
        self.gpus_by_model: dict[str, int] = {}
        self.largest_node: dict[str, int] = {}
        self.node_models: list[str] = []  # each node's GPU model, by node index

    def refresh(self, view: ClusterView) -> "CapacityCache":
        key = (id(view), *map(id, view.nodes))
        if key != self._key:
            self._key = key
            self._template = CapacityScratch(view)
            self.gpus_by_model = dict(self._template.free_by_model)
            nodes = view.nodes
            self.largest_node = {m: max(nodes[i].num_gpus for i in idx) for m, idx in view.nodes_by_model.items()}
            self.node_models = [n.gpu_model for n in nodes]
        return self

    def scratch(self, view: ClusterView) -> CapacityScratch:
        """A fresh scratch over the whole capacity of ``view``'s nodes."""
        return self.refresh(view)._template.copy()  # type: ignore[union-attr]  # refresh() sets it
