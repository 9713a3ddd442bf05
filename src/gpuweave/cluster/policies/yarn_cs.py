"""YARN-CS: Apache YARN's capacity scheduler as used as a baseline by Tiresias and Hadar.

FIFO by (arrival, job id), non-preemptive, heterogeneity-unaware: a job takes one GPU type chosen
without looking at throughput (a seeded uniform choice among the types with enough free GPUs, as spec
hadar.md §4.2-4.3 prescribe for Tiresias and YARN-CS; ``type_choice="fixed"`` takes the first in the
cluster's order), consolidated on one node when it fits in one, else on as few whole nodes as
possible. A job that does not fit is skipped and later jobs may start (``strict=False``, spec hadar.md
§4.3); ``strict=True`` gives head-of-line blocking. Event-driven; waiting jobs live in a
:class:`~gpuweave.cluster.policies.pending_index.PendingIndex`: O((S + C) log P) per call for S jobs started and
C start classes that could fit.
"""

from __future__ import annotations

import random

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import NO_CHANGE, Decision, Plan
from gpuweave.cluster.placement import place_on_model
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.pending_index import PendingIndex, arrival_order
from gpuweave.cluster.state import ClusterView, JobState


@register_policy("yarn-cs")
class YarnCapacityPolicy(ClusterPolicy):
    places_tasks = True

    def __init__(
        self, strict: bool = False, type_choice: str = "random", *, round_length: float | None = None, seed: int = 0
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
        if type_choice not in ("fixed", "random"):
            raise ValueError("type_choice must be 'fixed' or 'random'")
        self.strict = strict
        self.type_choice = type_choice
        self._rng = random.Random(seed)
        self._largest: dict[str, int] = {}
        self._queue = PendingIndex(arrival_order, strict=strict)

    def _largest_node(self, view: ClusterView, model: str) -> int:
        size = self._largest.get(model)
        if size is None:
            size = self._largest[model] = max(view.nodes[i].num_gpus for i in view.nodes_by_model[model])
        return size

    def schedule(self, view: ClusterView) -> Decision:
        if not self._queue.ready(view):
            return NO_CHANGE
        plan = Plan(view)
        # Most free GPUs on one node, per model, read when a job first asks about the model and forgotten when a
        # start takes GPUs there: a job that must sit on one node skips a model without a scan.
        max_free: dict[str, int] = {}
        self._queue.start_in_order(plan.most_free, lambda js: self._try_start(view, plan, max_free, js))
        return plan.decision

    def _try_start(self, view: ClusterView, plan: Plan, max_free: dict[str, int], js: JobState) -> bool:
        """Start the job on a GPU type with room (seeded choice among them); False if none has."""
        n = js.job.num_gpus
        candidates = []
        free = plan.free
        for model in view.models:
            if plan.free_by_model[model] < n:
                continue
            one_node = n <= self._largest_node(view, model)
            if one_node:
                most = max_free.get(model)
                if most is None:
                    most = max_free[model] = max(map(free.__getitem__, view.nodes_by_model[model]))
                if most < n:
                    continue
            # Consolidated: one node when the job fits in one, else as few nodes as possible.
            placement = place_on_model(plan, js, model, allow_spread=not one_node)
            if placement is not None and view.rate(js, placement) > 0:
                candidates.append(placement)
        if not candidates:
            return False
        chosen = candidates[0] if self.type_choice == "fixed" else self._rng.choice(candidates)
        plan.start(js, chosen)
        for node, _ in chosen:
            max_free.pop(view.nodes[node].gpu_model, None)
        return True
