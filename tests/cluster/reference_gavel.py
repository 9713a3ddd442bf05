"""Gavel's cluster policy as it was before the per-round arrays (main at 5d4a02c), kept as the oracle that
tests/cluster/test_round_policies_reference.py compares the optimised policy with: per-job dicts, every type's
queue sorted every round, O(M R log M) per round plus the LP solve at a recompute. Not registered; not used by
the package. The mechanics and options are those described in :mod:`gpuweave.cluster.policies.gavel`."""

from __future__ import annotations

import random
import time

import numpy as np

from gpuweave.baselines.gavel import (
    fifo_perf_allocation,
    fraction_priorities,
    gavel_round,
    max_min_fairness_lp,
    min_total_duration_lp,
)
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.placement import CapacityCache, fewest_nodes
from gpuweave.cluster.policies.gavel import DEFAULT_TYPE_ORDER, OBJECTIVES, OLD_SPELLINGS, UNAWARE, GavelPolicy
from gpuweave.cluster.rate_table import RateTableCache


class ReferenceGavel(ClusterPolicy):
    """Gavel (OSDI'20): heterogeneity-aware allocation LPs realised by Gavel's round-based priority mechanism."""

    default_round_length = 360.0

    def __init__(
        self,
        type_order: tuple[str, ...] | list[str] = DEFAULT_TYPE_ORDER,
        reset_interval: float = 1920.0,
        policy: str = "max_min_fairness_perf",
        recompute: str = "gavel",
        time_prior: float | None = None,
        deficit: str = "cumulative",
        shuffle_types: bool | None = None,
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
        policy = OLD_SPELLINGS.get(policy, policy)
        if policy not in OBJECTIVES:
            raise ValueError(
                f"policy must be one of {', '.join(OBJECTIVES)} (old spellings: {', '.join(OLD_SPELLINGS)})"
            )
        if recompute not in ("gavel", "on_change"):
            raise ValueError("recompute must be 'gavel' or 'on_change'")
        if deficit not in ("cumulative", "per_round"):
            raise ValueError("deficit must be 'cumulative' or 'per_round'")
        self.policy = policy
        self.type_order = tuple(type_order)
        self.reset_interval = float(reset_interval)
        self.recompute = recompute
        self.deficit_rule = deficit
        L = self.round_length or self.default_round_length
        self.time_prior = 0.5 * L if time_prior is None else float(time_prior)
        shuffle = policy in UNAWARE if shuffle_types is None else bool(shuffle_types)
        self._shuffler = random.Random(seed + 5) if shuffle else None
        self._rates = RateTableCache()
        self._capacity = CapacityCache()
        self._rows_of: tuple = (None, None, None)  # what the cached rate rows were computed from
        self._rows: dict[tuple[str, int], list[float]] = {}  # (job type, GPU count) -> whole-job rate per type
        self.horizons: list[float] = []  # min_total_duration: the T of every re-solve
        self.lp_solves = 0
        # Per-job state, keyed by job id: allocation row, time on each type since the last reset, deficit.
        self._alloc: dict[str, np.ndarray] = {}
        self._job_time: dict[str, np.ndarray] = {}
        self._deficit: dict[str, np.ndarray] = {}
        self._type_time: np.ndarray | None = None
        self._last_reset = 0.0
        self._changed = False
        self._known: set[str] = set()
        self._active_key: frozenset[str] | None = None
        self._last_call: float | None = None
        self._last_running: dict[str, tuple[object, int]] = {}
        # finish_time_fairness_perf keeps the cumulative isolated time of each job across recomputes.
        self._isolated_time: dict[str, float] = {}
        self._prev_remaining: dict[str, float] = {}
        self._prev_isolated_rate: dict[str, float] = {}

    # ------------------------------------------------------------------ bookkeeping
    def _charge_last_round(self, now: float, R: int) -> None:
        """Add the time since the last call to the type each job ran on (to its end, for jobs that finished)."""
        if self._type_time is None:
            self._type_time = np.zeros(R)
        if self._last_call is not None:
            for job_id, (js, r) in self._last_running.items():
                until = js.end if js.end is not None else now
                dt = until - self._last_call
                if dt > 0:
                    if job_id in self._job_time:
                        self._job_time[job_id][r] += dt
                    self._type_time[r] += dt
        self._last_call = now

    def _sync_jobs(self, ids: list[str], R: int) -> None:
        """Register arrivals (time prior, zero deficit) and forget finished jobs; note any change."""
        current = set(ids)
        for job_id in ids:
            if job_id not in self._known:
                self._job_time[job_id] = np.full(R, self.time_prior)
                self._deficit[job_id] = np.zeros(R)
                self._changed = True
        for job_id in self._known - current:
            self._job_time.pop(job_id, None)
            self._deficit.pop(job_id, None)
            self._changed = True
        self._known = current

    def _reset(self, now: float) -> None:
        """Gavel's reset: fold the time each job received into its deficit, then restart every counter."""
        elapsed = now - self._last_reset
        R = self._type_time.size
        self._type_time = np.zeros(R)
        for job_id, received in self._job_time.items():
            should = self._alloc[job_id] * elapsed if job_id in self._alloc else 0.0
            self._deficit[job_id] += should - (received - self.time_prior)
            self._job_time[job_id] = np.full(R, self.time_prior)
            self._type_time += self.time_prior
        self._last_reset = now

    def _needs_recompute(self, now: float, key: frozenset[str]) -> bool:
        if self.recompute == "on_change":
            return key != self._active_key
        due = now - self._last_reset >= self.reset_interval or self._last_reset == 0.0
        return self._changed and due

    # ------------------------------------------------------------------ allocation
    def _throughputs(self, view, active, models) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T, scale, workers): whole-job rate of each job on each type (0 = cannot run there)."""
        table = self._rates.of(view)
        capacity = self._capacity.refresh(view)
        source = (table, capacity.largest_node, view.ideal_placement)
        if any(a is not b for a, b in zip(source, self._rows_of)):  # rates or nodes changed: rows are stale
            self._rows_of, self._rows = source, {}
        rows = self._rows
        scale = np.array([js.job.num_gpus for js in active], dtype=float)
        T = np.zeros((len(active), len(models)))
        for i, js in enumerate(active):
            key = (js.job.job_type, js.job.num_gpus)
            row = rows.get(key)
            if row is None:
                row = rows[key] = self._rate_row(view, table, capacity.largest_node, key, models)
            T[i] = row
        workers = np.array([capacity.gpus_by_model[m] for m in models], dtype=float)
        return np.where(scale[:, None] <= workers[None, :], T, 0.0), scale, workers

    @staticmethod
    def _rate_row(view, table, largest: dict[str, int], key: tuple[str, int], models: list[str]) -> list[float]:
        """Whole-job rate of one (job type, GPU count) on each type: consolidated where one node holds the job (or
        placement is ideal), else spread."""
        job_type, n = key
        cons, uncons = table.get(job_type, n)
        return [cons[r] if view.ideal_placement or n <= largest[m] else uncons[r] for r, m in enumerate(models)]

    def _solve(self, view, active, T, scale, workers) -> np.ndarray:
        policy = self.policy
        if policy == "fifo_perf":
            by_name = sorted(range(len(view.models)), key=lambda r: view.models[r].lower())
            return fifo_perf_allocation(T, scale, workers, by_name)
        if policy == "heterogeneity_unaware_las":
            self.lp_solves += 1
            return max_min_fairness_lp(np.ones_like(T), scale, workers, interior=True)
        if policy == "max_min_fairness_perf":
            self.lp_solves += 1
            return max_min_fairness_lp(T, scale, workers, interior=True)
        steps = np.array([view.remaining(js) for js in active])
        if policy == "min_total_duration_perf":
            x, horizon, solves = min_total_duration_lp(T, scale, workers, steps)
            self.horizons.append(horizon)
            self.lp_solves += solves
            return x
        return self._solve_ftf(view, active, T, scale, workers, steps)

    # Finish-time fairness' bookkeeping across recomputes is the package's: the optimisation did not touch it.
    _solve_ftf = GavelPolicy._solve_ftf

    # ------------------------------------------------------------------ round
    def schedule(self, view) -> Decision:
        t0 = time.perf_counter()
        models = list(view.models)
        R = len(models)
        col = {m: i for i, m in enumerate(models)}
        now = view.now
        self._charge_last_round(now, R)
        active = sorted(
            list(view.running.values()) + list(view.pending.values()), key=lambda js: (js.job.arrival, js.job.job_id)
        )
        ids = [js.job.job_id for js in active]
        self._sync_jobs(ids, R)
        T, scale, workers = self._throughputs(view, active, models)
        key = frozenset(ids)
        if self._needs_recompute(now, key):
            if self.recompute == "gavel" or now - self._last_reset >= self.reset_interval:
                self._reset(now)
            x = self._solve(view, active, T, scale, workers)
            self._alloc = {job_id: x[i] for i, job_id in enumerate(ids)}
            self._active_key = key
            self._changed = False
        chosen = self._pass(active, ids, T, scale, workers, models, col)
        wanted = self._place(view, active, chosen, scale, models, col)
        self._last_running = {}
        for js in active:
            placement = wanted.get(js.job.job_id)
            if placement is not None:
                self._last_running[js.job.job_id] = (js, col[view.nodes[placement[0][0]].gpu_model])
        decision = Decision.from_allocation(view, wanted)
        self.decision_times.append((now, len(active), time.perf_counter() - t0))
        return decision

    def _pass(self, active, ids, T, scale, workers, models, col) -> dict[int, int]:
        """Priorities and deficits of this round, then Gavel's greedy pass over the types."""
        M, R = T.shape
        zero = np.zeros(R)
        alloc = np.array([self._alloc.get(j, zero) for j in ids]) if M else np.zeros((0, R))
        in_alloc = np.array([j in self._alloc for j in ids], dtype=bool)
        job_time = np.array([self._job_time[j] for j in ids]) if M else np.zeros((0, R))
        prio = fraction_priorities(alloc, in_alloc, job_time, self._type_time, T > 0)
        if self.deficit_rule == "cumulative":
            deficit = np.array([self._deficit[j] for j in ids]) if M else np.zeros((0, R))
        else:
            total = self._type_time.sum()
            deficit = alloc - ((job_time - self.time_prior) / total if total > 0 else 0.0)
        order = [col[m] for m in self.type_order if m in col] + [
            r for r, m in enumerate(models) if m not in self.type_order
        ]
        if self._shuffler is not None:
            self._shuffler.shuffle(order)
        return gavel_round(
            prio,
            alloc,
            deficit,
            scale.astype(int),
            workers.astype(int),
            order,
            positive_only=self.policy == "fifo_perf",
        )

    def _place(self, view, active, chosen: dict[int, int], scale, models, col) -> dict[str, tuple]:
        """Job id -> placement: kept placements first, then the movers from the largest scale factor down."""
        table = self._rates.of(view)
        scratch = self._capacity.scratch(view)
        wanted: dict[str, tuple] = {}
        movers = []
        for i, r in chosen.items():
            js = active[i]
            if js.job.job_id not in self._alloc:
                continue  # Gavel's pass counts a job without an allocation yet, but gives it no workers
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
            if (cons[r] if len(placement) == 1 or view.ideal_placement else uncons[r]) <= 0:
                continue
            scratch.take(placement)
            wanted[js.job.job_id] = placement
        return wanted
