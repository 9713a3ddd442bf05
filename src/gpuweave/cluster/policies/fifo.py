"""FIFO: first come, first served, non-preemptive, heterogeneity-aware placement.

Jobs start strictly in arrival order (head-of-line blocking); each goes to the fastest GPU model with
room, on as few nodes as possible. Event-driven. Cost per call: O(jobs started + 1) placements, each
O(nodes of a model).
"""

from __future__ import annotations

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.cluster.placement import fastest_models, place_on_model
from gpuweave.cluster.policies import register_policy


@register_policy("fifo")
class FifoPolicy(ClusterPolicy):
    def __init__(self, strict: bool = True, *, round_length: float | None = None, seed: int = 0) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self.strict = strict

    def schedule(self, view) -> Decision:
        if not view.pending:
            return Decision()
        plan = Plan(view)
        for js in view.pending.values():
            placed = False
            if sum(plan.free_by_model.values()) >= js.job.num_gpus:
                for model in fastest_models(view, js):
                    placement = place_on_model(plan, js, model)
                    if placement is not None:
                        plan.start(js, placement)
                        placed = True
                        break
            if not placed and self.strict:
                break
        return plan.decision
