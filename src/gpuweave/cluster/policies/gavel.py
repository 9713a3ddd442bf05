"""Gavel as a cluster policy: the LAS / min-total-duration LPs and the round mechanism of
:mod:`gpuweave.baselines.gavel`, fed from a ClusterView.

Each round of ``round_length`` (360 s) the LP is re-solved when the set of active jobs changes, priorities are
computed from the time each job received on each GPU type and the greedy pass picks a type per job; placement
goes from the largest scale factor to the smallest, all of a job's GPUs on one type, consolidated when one node
holds them; a job that keeps its type keeps its placement (no restart). See the baseline module for the LPs,
the mechanism and their complexity.
"""

from __future__ import annotations

import time

import numpy as np

from gpuweave.baselines.gavel import gavel_priorities, gavel_round, max_min_fairness_lp, min_total_duration_lp
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.placement import CapacityScratch, fewest_nodes
from gpuweave.cluster.policies import register_policy
from gpuweave.hadar.throughput import RateTableCache

DEFAULT_TYPE_ORDER = ("V100", "P100", "K80")


@register_policy("gavel")
class GavelPolicy(ClusterPolicy):
    default_round_length = 360.0

    POLICIES = ("max_min_fairness", "min_total_duration")

    def __init__(
        self,
        type_order: tuple[str, ...] | list[str] = DEFAULT_TYPE_ORDER,
        reset_interval: float = 1920.0,
        policy: str = "max_min_fairness",
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self._rates = RateTableCache()
        aliases = {
            "las": "max_min_fairness",
            "max_min_fairness_perf": "max_min_fairness",
            "makespan": "min_total_duration",
            "min_total_duration_perf": "min_total_duration",
        }
        policy = aliases.get(policy, policy)
        if policy not in self.POLICIES:
            raise ValueError(f"policy must be one of {self.POLICIES} (or las, makespan)")
        self.policy = policy
        self.horizons: list[float] = []  # min_total_duration: the T of every re-solve
        self.type_order = tuple(type_order)
        self.reset_interval = float(reset_interval)
        self._active_key: frozenset[str] | None = None
        self._alloc: dict[str, np.ndarray] = {}
        self._received: dict[str, np.ndarray] = {}
        self._type_total: np.ndarray | None = None
        self._last_reset = -np.inf
        self._last_call: float | None = None
        self.lp_solves = 0

    def _account(self, view, R: int, col: dict[str, int]) -> None:
        """Charge the time since the last call to each running job's GPU type."""
        if self._type_total is None:
            self._type_total = np.zeros(R)
        if self._last_call is not None:
            dt = view.now - self._last_call
            if dt > 0:
                for job_id, js in view.running.items():
                    r = col[view.nodes[js.placement[0][0]].gpu_model]
                    rec = self._received.setdefault(job_id, np.zeros(R))
                    rec[r] += dt
                    self._type_total[r] += dt
        self._last_call = view.now

    def schedule(self, view) -> Decision:
        t0 = time.perf_counter()
        models = list(view.models)
        R = len(models)
        col = {m: i for i, m in enumerate(models)}
        table = self._rates.of(view)
        self._account(view, R, col)
        active = sorted(
            list(view.running.values()) + list(view.pending.values()), key=lambda js: (js.job.arrival, js.job.job_id)
        )
        ids = [js.job.job_id for js in active]
        key = frozenset(ids)
        M = len(active)
        scale = np.array([js.job.num_gpus for js in active], dtype=float)
        largest = {m: max(view.nodes[i].num_gpus for i in idx) for m, idx in view.nodes_by_model.items()}
        T = np.zeros((M, R))
        for i, js in enumerate(active):
            cons, uncons = table.get(js.job.job_type, js.job.num_gpus)
            for r, m in enumerate(models):
                # The job runs consolidated where one node holds it, else spread (unconsolidated rate).
                T[i, r] = cons[r] if js.job.num_gpus <= largest[m] else uncons[r]
        workers = np.array([sum(view.nodes[i].num_gpus for i in view.nodes_by_model[m]) for m in models], dtype=float)
        T = np.where(scale[:, None] <= workers[None, :], T, 0.0)
        if key != self._active_key:
            if self.policy == "min_total_duration":
                steps = np.array([view.remaining(js) for js in active])
                x, horizon, solves = min_total_duration_lp(T, scale, workers, steps)
                self.horizons.append(horizon)
                self.lp_solves += solves
            else:
                x = max_min_fairness_lp(T, scale, workers)
                self.lp_solves += 1
            self._alloc = {job_id: x[i] for i, job_id in enumerate(ids)}
            self._active_key = key
            if view.now - self._last_reset >= self.reset_interval:
                self._received = {}
                self._type_total = np.zeros(R)
                self._last_reset = view.now
        alloc = np.array([self._alloc[j] for j in ids]) if M else np.zeros((0, R))
        received = np.array([self._received.get(j, np.zeros(R)) for j in ids]) if M else np.zeros((0, R))
        feasible = T > 0
        prio = gavel_priorities(alloc, received, self._type_total, feasible)
        total_time = self._type_total.sum()
        deficit = alloc - (received / total_time if total_time > 0 else 0.0)
        order = [col[m] for m in self.type_order if m in col] + [
            r for r, m in enumerate(models) if m not in self.type_order
        ]
        chosen = gavel_round(prio, alloc, deficit, scale.astype(int), workers.astype(int), order)
        # Placement: kept placements first, then largest scale factor first.
        scratch = CapacityScratch(view)
        wanted: dict[str, tuple] = {}
        movers = []
        for i, r in chosen.items():
            js = active[i]
            p = js.placement
            if p is not None and col[view.nodes[p[0][0]].gpu_model] == r and scratch.fits(p):
                scratch.take(p)
                wanted[js.job.job_id] = p
            else:
                movers.append((i, r))
        movers.sort(key=lambda ir: (-scale[ir[0]], ir[0]))
        for i, r in movers:
            js = active[i]
            placement = fewest_nodes(scratch, js.job.num_gpus, models[r])
            if placement is None:
                continue
            cons, uncons = table.get(js.job.job_type, js.job.num_gpus)
            if (cons[r] if len(placement) == 1 else uncons[r]) <= 0:
                continue
            scratch.take(placement)
            wanted[js.job.job_id] = placement
        decision = Decision.from_allocation(view, wanted)
        self.decision_times.append((view.now, M, time.perf_counter() - t0))
        return decision
