"""ANDREAS' Randomized Greedy as a cluster policy: RG's optimizer on the instance of each rescheduling point.

Problem (spec andreas.md §6): at every trigger, plan the queue with RG on the ANDREAS instance that
:mod:`gpuweave.cluster.policies.andreas_instance` builds from the view (configurations, costs, due dates,
weights), with preemption, migration and resizing allowed; waiting jobs wider than any node are placed before the
optimizer runs. ``exact_gap_max_queue`` also solves the exact MILP on small queues for RG's optimality gap. Cost
per call: O(|Q|·K) to build the instance plus RG's own (spec §6).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuweave.andreas.milp import exact_optimum
from gpuweave.andreas.model import Instance
from gpuweave.andreas.randomized_greedy import RGConfig, Schedule, randomized_greedy
from gpuweave.cluster.policies.andreas_instance import AndreasPolicyBase, SpreadPlanner

if TYPE_CHECKING:
    from gpuweave.cluster.policies.andreas_instance import SpreadOthers
    from gpuweave.cluster.state import ClusterView, JobState


class RGPolicy(AndreasPolicyBase):
    """ANDREAS' Randomized Greedy (spec §6) as a policy; a seeded numpy Generator serves all calls.

    ``exact_gap_max_queue`` > 0 also solves the exact MILP at every call with at most that many queued
    jobs and stores its optimum in the call record (``extra["f_opt"]``), for RG's optimality gap."""

    def __init__(
        self,
        max_it: int = 1000,
        cap_iterations: bool = True,
        pi_swap: float = 0.05,
        alpha_cfg: float = 0.05,
        swap_rule: str = "code",
        config_rule: str = "rcl",
        node_rule: str = "best_fit",
        postprocessing: bool = False,
        exact_gap_max_queue: int = 0,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)  # round_length, seed and the trigger options
        self.exact_gap_max_queue = int(exact_gap_max_queue)
        self.config = RGConfig(
            max_it=max_it,
            cap_iterations=cap_iterations,
            pi_swap=pi_swap,
            alpha_cfg=alpha_cfg,
            proxy_variant=self.proxy_variant,
            swap_rule=swap_rule,
            config_rule=config_rule,
            node_rule=node_rule,
            postprocessing=bool(postprocessing),
        )
        self.rng = np.random.default_rng(self.seed)

    def _place_spread(self, view: ClusterView, planner: SpreadPlanner) -> None:
        """RG (preemptive) places the waiting spread jobs before the optimizer, in (due date, arrival, id) order, on
        free GPUs, or forced when no waiting job comes first."""

        def key(js: JobState) -> tuple[float, float, str]:
            job = js.job
            return (math.inf if job.deadline is None else float(job.deadline), job.arrival, job.job_id)

        head = min((key(js) for jid, js in view.pending.items() if jid not in planner.ids), default=None)
        free = list(view.free)
        for js in sorted(planner.waiting, key=key):
            if planner.fit(js, free) or planner.forced or (head is not None and head < key(js)):
                continue
            p = planner.target(js, free)
            if p is not None:
                planner.forced = True
                planner._hold(js, p, free)
        return None

    def optimize(self, inst: Instance, others: SpreadOthers | None = None) -> Schedule:
        t0 = time.perf_counter()
        sched = randomized_greedy(inst, self.rng, self.config)
        sched.extra["opt_seconds"] = time.perf_counter() - t0  # the exact solve below is not RG's time
        if 0 < inst.n <= self.exact_gap_max_queue:
            sched.extra["f_opt"] = exact_optimum(inst, variant=self.proxy_variant).f
        return sched
