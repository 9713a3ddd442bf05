"""ANDREAS' first-principle baselines (FIFO, EDF, PS; spec andreas.md §8) as cluster policies: the class that
``andreas-fifo``, ``edf`` and ``priority`` register with their order.

Problem: the paper compares RG with fixed-priority baselines that see the same rescheduling point as RG (the
ANDREAS instance built by :mod:`gpuweave.cluster.policies.andreas_instance`: configurations, costs, due dates,
weights) and plan it with :func:`gpuweave.andreas.fpm.fpm_schedule`: started jobs keep their node and GPUs, the
waiting ones are taken in the method's order (:func:`~gpuweave.andreas.fpm.fpm_key`). Jobs larger than any node
are merged into that order as (key, place) pairs; at its turn such a job takes free GPUs, or, when it fits
nowhere, reserves its target nodes' free GPUs so that it starts once they drain. What the baselines share with
RG (triggers, view -> instance, spread jobs, decision diff, call records) is
:class:`~gpuweave.cluster.policies.andreas_instance.AndreasPolicyBase`; nothing of RG (RG's adapter,
:mod:`gpuweave.cluster.policies.andreas_adapter`, is not imported).

Complexity: O(W log W + W·K·N) per call for W waiting jobs, plus building the instance.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gpuweave.andreas.fpm import fpm_key, fpm_schedule
from gpuweave.andreas.model import Instance
from gpuweave.andreas.randomized_greedy import Schedule
from gpuweave.cluster.policies.andreas_instance import AndreasPolicyBase, SpreadPlanner

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpuweave.cluster.policies.andreas_instance import FreeCounts, SpreadOthers
    from gpuweave.cluster.state import ClusterView, JobState


class FpmPolicy(AndreasPolicyBase):
    """FIFO / EDF / PS of spec §8: non-preemptive, ANDREAS configuration and best-fit placement rules."""

    method = "fifo"
    preemptive = False

    def _place_spread(self, view: ClusterView, planner: SpreadPlanner) -> SpreadOthers:
        """The baselines return (key, place) pairs that :func:`~gpuweave.andreas.fpm.fpm_schedule` merges into
        its order."""
        method = self.method

        def placer(js: JobState) -> Callable[[FreeCounts], None]:
            def place(free: FreeCounts) -> None:
                if planner.fit(js, free) or planner.forced:
                    return
                p = planner.target(js, free)
                if p is not None:  # reserve the target nodes' free GPUs: nothing else starts there
                    planner.forced = True
                    for i, k in p:
                        free[i] = max(0, int(free[i]) - k)

            return place

        others: SpreadOthers = []
        for js in planner.waiting:
            job = js.job
            due = math.inf if job.deadline is None else float(job.deadline)
            others.append((fpm_key(method, job.arrival, due, float(job.priority), job.job_id), placer(js)))
        return others

    def optimize(self, inst: Instance, others: SpreadOthers | None = None) -> Schedule:
        return fpm_schedule(inst, self.method, self.proxy_variant, others)
