"""SJF: shortest job first with oracle durations, non-preemptive.

Pending jobs are taken in order of their oracle run time (``Job.duration`` when the trace gives it,
else work over the best consolidated rate in the cluster); a job that does not fit is skipped so that
shorter ones behind it may start. Placement as FIFO. O(P log P) per call for P pending jobs.
"""

from __future__ import annotations

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.cluster.placement import fastest_models, place_on_model
from gpuweave.cluster.policies import register_policy


@register_policy("sjf")
class SjfPolicy(ClusterPolicy):
    def __init__(self, *, round_length: float | None = None, seed: int = 0) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self._duration: dict[str, float] = {}

    def _oracle(self, view, js) -> float:
        d = self._duration.get(js.job.job_id)
        if d is None:
            if js.job.duration is not None:
                d = float(js.job.duration)
            else:
                best = max((view.model_rate(js, m, True) for m in view.models), default=0.0)
                d = js.job.work / best if best > 0 else float("inf")
            self._duration[js.job.job_id] = d
        return d

    def schedule(self, view) -> Decision:
        if not view.pending:
            return Decision()
        plan = Plan(view)
        order = sorted(view.pending.values(), key=lambda js: (self._oracle(view, js), js.job.arrival, js.job.job_id))
        for js in order:
            if sum(plan.free_by_model.values()) < js.job.num_gpus:
                continue
            for model in fastest_models(view, js):
                placement = place_on_model(plan, js, model)
                if placement is not None:
                    plan.start(js, placement)
                    break
        return plan.decision
