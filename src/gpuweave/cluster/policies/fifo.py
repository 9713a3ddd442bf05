"""FIFO: first come, first served, non-preemptive, heterogeneity-aware placement.

Jobs start strictly in arrival order (head-of-line blocking); each goes to the fastest GPU model with
room, on as few nodes as possible. Event-driven. Waiting jobs live in a
:class:`~gpuweave.cluster.policies.pending_index.PendingIndex`: a call costs O((S + C) log P) for S jobs
started and C start classes, plus O(nodes of a model) per placement; nothing is built when no job fits.
"""

from __future__ import annotations

from functools import partial

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import NO_CHANGE, Decision, Plan
from gpuweave.cluster.placement import start_on_fastest
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.pending_index import PendingIndex, arrival_order
from gpuweave.cluster.state import ClusterView


@register_policy("fifo")
class FifoPolicy(ClusterPolicy):
    places_tasks = True

    def __init__(self, strict: bool = True, *, round_length: float | None = None, seed: int = 0) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self.strict = strict
        self._queue = PendingIndex(arrival_order, strict=strict)

    def schedule(self, view: ClusterView) -> Decision:
        if not self._queue.ready(view):
            return NO_CHANGE
        plan = Plan(view)
        self._queue.start_in_order(plan.most_free, partial(start_on_fastest, plan))
        return plan.decision
