"""SJF: shortest job first with oracle durations, non-preemptive.

Pending jobs are taken in order of their oracle run time (``Job.duration`` when the trace gives it,
else work over the best consolidated rate in the cluster); a job that does not fit is skipped so that
shorter ones behind it may start. Placement as FIFO. Waiting jobs live in a
:class:`~gpuweave.cluster.policies.pending_index.PendingIndex` keyed by (oracle, arrival, id): a call costs
O((S + C) log P) for S jobs started and C start classes that could fit, O(log P) per arrival.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import NO_CHANGE, Decision, Plan
from gpuweave.cluster.placement import start_on_fastest
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.pending_index import PendingIndex

if TYPE_CHECKING:
    from gpuweave.cluster.state import ClusterView, JobState


@register_policy("sjf")
class SjfPolicy(ClusterPolicy):
    places_tasks = True

    def __init__(self, *, round_length: float | None = None, seed: int = 0) -> None:
        super().__init__(round_length=round_length, seed=seed)
        # the view whose rates the oracle reads (the same object for a policy's whole run)
        self._view: ClusterView | None = None
        self._queue = PendingIndex(self._order)
        # Best consolidated rate per (job type, GPU count), for the profiles it was read from (a live run may swap
        # them): a job's oracle is one lookup, not one rate per GPU model.
        self._best: dict[tuple[str, int, tuple[str, ...] | None], float] = {}
        self._best_of: object = None  # compared by identity only

    def _order(self, js: JobState, _seq: int) -> tuple[float, float, str]:
        return (self._oracle(js), js.job.arrival, js.job.job_id)

    def _oracle(self, js: JobState) -> float:
        job = js.job
        if job.duration is not None:
            return float(job.duration)
        view = self._view
        assert view is not None, "schedule() sets the view before any job is keyed"
        if view.profiles is not self._best_of:
            self._best, self._best_of = {}, view.profiles
        kind = (job.job_type, job.num_gpus, job.allowed_models)
        best = self._best.get(kind)
        if best is None:
            best = self._best[kind] = max((view.model_rate(js, m, True) for m in view.models), default=0.0)
        return job.work / best if best > 0 else float("inf")

    def schedule(self, view: ClusterView) -> Decision:
        self._view = view  # the oracle of jobs taken in now reads its rates
        if not self._queue.ready(view):
            return NO_CHANGE
        plan = Plan(view)
        self._queue.start_in_order(plan.most_free, partial(start_on_fastest, plan))
        return plan.decision
