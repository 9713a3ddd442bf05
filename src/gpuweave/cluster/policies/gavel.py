"""Gavel as a cluster policy: Gavel's allocation policies and the round mechanism of its simulator
(stanford-futuredata/gavel@c4fa400, ``scheduler/scheduler.py``), fed from a ClusterView.

Problem: each round of ``round_length`` (360 s) pick, for every active job, one GPU type to run on (or none) so
that over time each job receives the time fractions ``x[m, r]`` of an allocation policy
(:mod:`gpuweave.baselines.gavel` has the LPs and their complexity).

Mechanics, faithful to Gavel's simulator by default (each deliberate departure is an option):

- **When the allocation is recomputed** (``recompute="gavel"``): only at a round where a job arrived or completed
  since the last recompute *and* ``reset_interval`` (1,920 s) has passed since the last reset, or the last reset
  was at time 0. The recompute first resets the per-job time counters. Until then the old allocation stays and a
  job that arrived since gets priority 0: the greedy pass may still pick it (it then takes up room in that round)
  but, as in Gavel, it gets no GPUs until the next recompute.
  ``recompute="on_change"`` re-solves whenever the set of active jobs changes and resets the counters at most every
  ``reset_interval`` (this package's earlier rule). A live run's first round is one poll after time 0, so under
  Gavel's rule its first change after that round waits ``reset_interval`` where a simulation starting at 0 would
  re-solve at once (docs/live.md).
- **Time prior**: a job's time on each type starts at ``time_prior`` (default half a round, Gavel's value) when it
  arrives and at every reset, so ``priority = x / (job time on r / all jobs' time on r)``; ``time_prior=0`` gives
  ``x * 1e9`` to every type a job has not tried (the earlier rule).
- **Deficit** (second sort key): accumulated across resets as ``x * elapsed - time received``
  (``deficit="cumulative"``); ``deficit="per_round"`` recomputes it each round from the current counters.
- **Type order**: the greedy pass visits V100, P100, K80 (``type_order``); Gavel shuffles that order every round
  for its heterogeneity-unaware policies (``shuffle_types``, seeded as Gavel's ``seed + 5``).

Allocation policies (``policy``): ``max_min_fairness_perf`` (default; ``max_min_fairness`` and ``las`` are its
old spellings here), ``min_total_duration_perf`` (old: ``min_total_duration``, ``makespan``),
``finish_time_fairness_perf``, ``fifo_perf`` and ``heterogeneity_unaware_las`` (Gavel's ``max_min_fairness``).
The last four are also registered under their own names: ``gavel-min-total-duration``, ``gavel-ftf``,
``fifo-perf`` and ``gavel-las``.

POP (ours, a named option; Narayanan et al., SOSP'21): ``partitions=k`` > 1 splits the max-min LP (of
``max_min_fairness_perf`` and ``heterogeneity_unaware_las``) into k LPs over about M/k jobs and 1/k of every type's
GPUs (:func:`gpuweave.baselines.gavel.max_min_fairness_pop`); the round mechanism is unchanged. Default 1 (the
whole LP). Its speed and quality loss: ``gpuweave bench pop`` and docs/round-policies.md.

LP solver (``lp``, for the max-min LPs): ``"interior"`` (default) is HiGHS' interior point without crossover, which
like Gavel's ECOS ends near the centre of the optimal face. ``"warm-simplex"`` (ours, a named variant) is dual
simplex started from the previous re-solve's basis (:class:`gpuweave.baselines.gavel.WarmMaxMinLP`): the same
optimal objective at a fraction of the cost, but a vertex, so the allocations and decisions differ; its figures
are in docs/round-policies.md. Not combined with ``partitions`` > 1.

Placement: all of a job's GPUs on one type, largest scale factor first, consolidated when one node holds them; a
job that keeps its type keeps its placement.

Shared GPUs (ours: Gavel allocates whole GPUs; :mod:`gpuweave.cluster.sharing.ledger`): a task's scale factor is
its share of each GPU times its GPUs, so the LPs and the greedy pass count milli-GPUs per type; a type where no
node could hold the task (its CPU, memory or GPUs on one node) has rate 0 for it; a running task on the type the
pass chose keeps its share, every other one is preempted (a task is never moved), and the chosen waiting tasks,
largest share first, go where the run's task placement puts them among that type's nodes. CPU-only tasks have
no row in the LPs and are refused before the run (``gpu_tasks_only``).

Cost per round, for M active jobs: the per-job state lives in arrays in (arrival, id) order that change only when
a job arrives or finishes (then O(M), mostly in C); whether the active set changed is read from the driver's queue
write counts in O(1), or one set comparison after a round that moved jobs. A round charges the time each job ran
(numpy), and its greedy pass sorts a type's queue only when more jobs are eligible there than it has room for (else
every eligible job takes it, in any order) and fills it with a cumulative sum, so a round where nothing is contested
is O(M) numpy plus O(M) Python reads of the jobs' placements. Moved jobs find their best-fit nodes in bucketed heaps
on what is free once the jobs that leave have given theirs back, and the decision lists only the jobs that change.
Plus the LP solve at a recompute. The decisions are those of the straightforward form
(tests/cluster/test_round_policies_reference.py).
"""

from __future__ import annotations

import heapq
import random
import time
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.baselines.gavel import (
    WarmMaxMinLP,
    fifo_perf_allocation,
    finish_time_fairness_lp,
    fraction_priorities,
    max_min_fairness_lp,
    max_min_fairness_pop,
    max_min_objective,
    min_total_duration_lp,
)
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision, Plan
from gpuweave.cluster.placement import CapacityCache, CapacityScratch, spread
from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.rate_table import RateTableCache
from gpuweave.workload.tasks import FULL_GPU_MILLI

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpuweave.cluster.rate_table import RateTable
    from gpuweave.cluster.sharing.ledger import ShareLedger
    from gpuweave.cluster.state import ClusterView, JobState, Placement
    from gpuweave.workload.job import Job

    Kind = tuple[str, int, tuple[str, ...] | None]  # (job type, GPUs, allowed models): what a rate row is for
    QueueStamp = tuple[ClusterView, int, int]  # the view and its running and pending queues' write counts

DEFAULT_TYPE_ORDER = ("V100", "P100", "K80")
OBJECTIVES = (
    "max_min_fairness_perf",
    "min_total_duration_perf",
    "finish_time_fairness_perf",
    "fifo_perf",
    "heterogeneity_unaware_las",
)
OLD_SPELLINGS = {
    "max_min_fairness": "max_min_fairness_perf",
    "las": "max_min_fairness_perf",
    "min_total_duration": "min_total_duration_perf",
    "makespan": "min_total_duration_perf",
}
# The allocation policies whose LP the ``partitions`` option (POP) splits.
POP_OBJECTIVES = ("max_min_fairness_perf", "heterogeneity_unaware_las")
LP_SOLVERS = ("interior", "warm-simplex")
# Gavel's simulator shuffles the type order each round for policies without "Perf" in their name.
UNAWARE = ("heterogeneity_unaware_las",)


@register_policy("gavel")
class GavelPolicy(ClusterPolicy):
    """Gavel (OSDI'20): heterogeneity-aware allocation LPs realised by Gavel's round-based priority mechanism."""

    default_round_length = 360.0
    places_tasks = True  # in a shared run: time on GPU types by each task's share, tasks placed by the run's rule
    gpu_tasks_only = True  # its LPs allocate GPU time: a CPU-only task has no row

    def __init__(
        self,
        type_order: tuple[str, ...] | list[str] = DEFAULT_TYPE_ORDER,
        reset_interval: float = 1920.0,
        policy: str = "max_min_fairness_perf",
        recompute: str = "gavel",
        time_prior: float | None = None,
        deficit: str = "cumulative",
        shuffle_types: bool | None = None,
        partitions: int = 1,
        lp: str = "interior",
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
        if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
            raise ValueError(f"partitions must be an integer >= 1, got {partitions!r}")
        if partitions > 1 and policy not in POP_OBJECTIVES:
            raise ValueError(f"partitions > 1 (POP) applies to {' and '.join(POP_OBJECTIVES)}, not {policy}")
        self.partitions = int(partitions)
        if lp not in LP_SOLVERS:
            raise ValueError(f"lp must be one of {', '.join(LP_SOLVERS)}, got {lp!r}")
        if lp != "interior" and (policy not in POP_OBJECTIVES or self.partitions > 1):
            raise ValueError(
                f"lp={lp!r} applies to the whole max-min LP of {' and '.join(POP_OBJECTIVES)} (partitions = 1)"
            )
        self.lp = lp
        self._warm_lp = WarmMaxMinLP() if lp == "warm-simplex" else None
        self.audit_pop = False  # set by `gpuweave bench pop`: also solve the whole LP and record both objectives
        self.pop_objectives: list[tuple[int, float, float]] = []  # (jobs, partitioned objective, whole objective)
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
        self._rows_of: tuple[object, object, object] = (None, None, None)  # what the cached rows were computed from
        self._rows: dict[Kind, list[float]] = {}  # (job type, GPU count, allowed models) -> whole-job rate per type
        self.horizons: list[float] = []  # min_total_duration: the T of every re-solve
        self.lp_solves = 0
        self._jobs = _ActiveJobs()
        self._type_time: np.ndarray | None = None
        self._last_reset = 0.0
        self._changed = False
        self._solved_version = -1  # the active set's version at the last re-solve (recompute="on_change")
        self._last_call: float | None = None
        self._last_running: tuple[np.ndarray, np.ndarray, list[JobState]] = (np.zeros(0, int), np.zeros(0, int), [])
        self._source_version = 0  # counts changes of the rates' source (profiles, nodes, placement rule)
        self._rates_key: tuple[int, ...] = ()  # (active set version, source version) the masked rates were built for
        self._masked: tuple[np.ndarray, np.ndarray, np.ndarray] = ()  # type: ignore[assignment]  # set at the first round
        self._node_col_key: tuple[tuple[int, ...], tuple[str, ...]] | None = None  # nodes and models of _node_cols
        self._node_cols: list[int] = []
        # finish_time_fairness_perf keeps the cumulative isolated time of each job across recomputes.
        self._isolated_time: dict[str, float] = {}
        self._prev_remaining: dict[str, float] = {}
        self._prev_isolated_rate: dict[str, float] = {}

    # ------------------------------------------------------------------ bookkeeping
    def _charge_last_round(self, now: float, R: int, same: bool) -> None:
        """Add the time since the last call to the type each job ran on (to its end, for jobs that finished).
        ``same``: the active set is the last call's, so no job ended since and every one ran until now."""
        if self._type_time is None:
            self._type_time = np.zeros(R)
        idx, types, states = self._last_running
        if self._last_call is not None and states and same:
            dt = now - self._last_call  # the value each entry of the general case below would hold
            if dt > 0:
                self._jobs.job_time[idx, types] += dt
                np.add.at(self._type_time, types, dt)
        elif self._last_call is not None and states:
            until = np.array([now if js.end is None else js.end for js in states], dtype=float)
            dts = until - self._last_call
            ran = dts > 0
            if not ran.all():
                idx, types, dts = idx[ran], types[ran], dts[ran]
            self._jobs.job_time[idx, types] += dts  # one entry per job
            np.add.at(self._type_time, types, dts)  # in job order, as one addition after another
        self._last_call = now

    def _sync_jobs(self, view: ClusterView, models: list[str], same: bool) -> list[JobState]:
        """Register arrivals (time prior, zero deficit, rates) and forget finished jobs, noting any change; the
        active jobs' states in (arrival, id) order. ``same``: :meth:`_ActiveJobs.unchanged` said so."""
        table = self._rates.of(view)
        capacity = self._capacity.refresh(view)
        source = (table, capacity.largest_node, view.ideal_placement)
        stale = any(a is not b for a, b in zip(source, self._rows_of))
        if stale:  # rates or nodes changed: every cached row is stale
            self._rows_of, self._rows = source, {}
            self._source_version += 1
        rows = self._rows
        shared = view.shares is not None

        def row_of(kind: Kind) -> list[float]:
            row = rows.get(kind)
            if row is None:
                row = rows[kind] = self._rate_row(view, table, capacity.largest_node, kind, models, shared)
            return row

        task_of = None if view.shares is None else self._task_of(view.shares, models)
        if not same and self._jobs.sync(view, len(models), self.time_prior, row_of, task_of):
            self._changed = True
        elif stale:
            self._jobs.refresh_rows(row_of)
        return self._jobs.states(view)

    @staticmethod
    def _task_of(shares: ShareLedger, models: list[str]) -> Callable[[Job], tuple[float, list[float]]]:
        """A shared run's arrivals: each task's scale factor (its share of each GPU times its GPUs, in GPUs) and
        the types with a node that can hold it (1, else 0: its CPU or memory may fit on no node of a type)."""

        def task_of(job: Job) -> tuple[float, list[float]]:
            fits = shares.fitting_models(job.job_id)
            scale = shares.requests[job.job_id].gpu_milli * job.num_gpus / FULL_GPU_MILLI
            return scale, [1.0 if m in fits else 0.0 for m in models]

        return task_of

    def _reset(self, now: float) -> None:
        """Gavel's reset: fold the time each job received into its deficit, then restart every counter."""
        elapsed = now - self._last_reset
        jobs = self._jobs
        should = np.where(jobs.in_alloc[:, None], jobs.alloc * elapsed, 0.0)
        jobs.deficit += should - (jobs.job_time - self.time_prior)
        jobs.job_time[:] = self.time_prior
        total = 0.0
        for _ in range(len(jobs.ids)):  # the prior added once per job, one addition after another
            total += self.time_prior
        size = self._type_time.size  # type: ignore[union-attr]  # set by the first round
        self._type_time = np.full(size, total) if jobs.ids else np.zeros(size)
        self._last_reset = now

    def _needs_recompute(self, now: float) -> bool:
        if self.recompute == "on_change":
            return self._jobs.version != self._solved_version
        due = now - self._last_reset >= self.reset_interval or self._last_reset == 0.0
        return self._changed and due

    # ------------------------------------------------------------------ allocation
    def _throughputs(self, view: ClusterView, models: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T, scale, workers): whole-job rate of each active job on each type (0 = cannot run there); rebuilt only
        when the active set, the rates or the nodes change."""
        key = (self._jobs.version, self._source_version)
        if key != self._rates_key:
            capacity = self._capacity.refresh(view)
            workers = np.array([capacity.gpus_by_model[m] for m in models], dtype=float)
            scale = self._jobs.scale
            T = np.where(scale[:, None] <= workers[None, :], self._jobs.rows, 0.0)
            if self._jobs.fits is not None:  # a shared run: no type where no node can hold the task
                T = T * self._jobs.fits
            self._masked, self._rates_key = (T, scale, workers), key
        return self._masked

    @staticmethod
    def _rate_row(
        view: ClusterView, table: RateTable, largest: dict[str, int], key: Kind, models: list[str], shared: bool
    ) -> list[float]:
        """Whole-job rate of one (job type, GPU count, allowed models) on each type: consolidated where one node
        holds the job (or placement is ideal), else spread; ``shared``: a task, on one node or none (0)."""
        job_type, n, allowed = key
        cons, uncons = table.get(job_type, n, allowed)
        if shared:
            return [cons[r] if n <= largest[m] else 0.0 for r, m in enumerate(models)]
        return [cons[r] if view.ideal_placement or n <= largest[m] else uncons[r] for r, m in enumerate(models)]

    def _solve(
        self, view: ClusterView, active: list[JobState], T: np.ndarray, scale: np.ndarray, workers: np.ndarray
    ) -> np.ndarray:
        policy = self.policy
        if policy == "fifo_perf":
            by_name = sorted(range(len(view.models)), key=lambda r: view.models[r].lower())
            return fifo_perf_allocation(T, scale, workers, by_name)
        if policy in POP_OBJECTIVES:
            rates = np.ones_like(T) if policy == "heterogeneity_unaware_las" else T
            if self._warm_lp is not None:
                self.lp_solves += 1
                return self._warm_lp.solve(rates, scale, workers, self._jobs.ids)
            if self.partitions == 1:
                self.lp_solves += 1
                return max_min_fairness_lp(rates, scale, workers, interior=True)
            self.lp_solves += min(self.partitions, len(rates))
            x = max_min_fairness_pop(rates, scale, workers, self.partitions, interior=True)
            if self.audit_pop:
                whole = max_min_fairness_lp(rates, scale, workers, interior=True)
                self.pop_objectives.append(
                    (
                        len(rates),
                        max_min_objective(rates, scale, workers, x),
                        max_min_objective(rates, scale, workers, whole),
                    )
                )
            return x
        steps = np.array([view.remaining(js) for js in active])
        if policy == "min_total_duration_perf":
            x, horizon, solves = min_total_duration_lp(T, scale, workers, steps)
            self.horizons.append(horizon)
            self.lp_solves += solves
            return x
        return self._solve_ftf(view, active, T, scale, workers, steps)

    def _solve_ftf(
        self,
        view: ClusterView,
        active: list[JobState],
        T: np.ndarray,
        scale: np.ndarray,
        workers: np.ndarray,
        steps: np.ndarray,
    ) -> np.ndarray:
        ids = [js.job.job_id for js in active]
        for job_id, rem in zip(ids, steps):
            if job_id in self._prev_remaining:
                done = self._prev_remaining[job_id] - rem
                self._isolated_time[job_id] = (
                    self._isolated_time.get(job_id, 0.0) + done / self._prev_isolated_rate[job_id]
                )
        since = np.array([view.now - js.job.arrival for js in active])
        iso = np.array([self._isolated_time.get(j, 0.0) for j in ids])
        x, iso_rate, solves = finish_time_fairness_lp(T, scale, workers, since, steps, iso)
        self.lp_solves += solves
        self._prev_remaining = dict(zip(ids, steps.tolist()))
        self._prev_isolated_rate = dict(zip(ids, iso_rate.tolist()))
        return x

    # ------------------------------------------------------------------ round
    def schedule(self, view: ClusterView) -> Decision:
        t0 = time.perf_counter()
        models = list(view.models)
        R = len(models)
        now = view.now
        same = self._jobs.unchanged(view, R)
        self._charge_last_round(now, R, same)
        active = self._sync_jobs(view, models, same)
        T, scale, workers = self._throughputs(view, models)
        if self._needs_recompute(now):
            if self.recompute == "gavel" or now - self._last_reset >= self.reset_interval:
                self._reset(now)
            self._jobs.set_allocation(self._solve(view, active, T, scale, workers))
            self._solved_version = self._jobs.version
            self._changed = False
        shared = view.shares is not None
        chosen = self._pass(T, scale, workers, models, FULL_GPU_MILLI if shared else 1)
        if shared:
            decision, placed = self._place_shares(view, active, chosen, scale, models)
        else:
            decision, placed = self._place(view, active, chosen, scale, models)
        idx = np.flatnonzero(placed)
        self._last_running = (idx, chosen[idx], [active[i] for i in idx.tolist()])
        self.decision_times.append((now, len(active), time.perf_counter() - t0))
        return decision

    def _node_col(self, view: ClusterView, models: list[str]) -> list[int]:
        """Each node's GPU type as an index into ``models`` (cached with the capacity facts)."""
        key = (self._capacity.refresh(view)._key, tuple(models))
        if self._node_col_key != key:
            col = {m: i for i, m in enumerate(models)}
            self._node_col_key, self._node_cols = key, [col[n.gpu_model] for n in view.nodes]
        return self._node_cols

    def _type_visits(self, models: list[str]) -> list[int]:
        order = [models.index(m) for m in self.type_order if m in models] + [
            r for r, m in enumerate(models) if m not in self.type_order
        ]
        if self._shuffler is not None:
            self._shuffler.shuffle(order)
        return order

    def _pass(
        self, T: np.ndarray, scale: np.ndarray, workers: np.ndarray, models: list[str], unit: int = 1
    ) -> np.ndarray:
        """Gavel's greedy pass over the types (:func:`gpuweave.baselines.gavel.gavel_round`): per job, the type
        index it runs on this round, -1 for none. Sizes and room count ``1/unit`` GPUs (a shared run: milli-GPUs,
        so a task's share takes its part of a type's GPUs).

        Why it is cheaper than sorting every type's queue (same result): a type whose eligible jobs all fit in its
        free GPUs takes them all whatever their order, and for every policy but FIFO_Perf a job is eligible on a
        type exactly when it can run there (its priority is then >= 0), so priorities and deficits are computed
        only when some type has more eligible jobs than room; a sorted queue stops once the type is full."""
        M = T.shape[0]
        chosen = np.full(M, -1, dtype=np.int64)
        free = [int(w) * unit for w in workers]
        sizes = scale.astype(np.int64) if unit == 1 else np.rint(scale * unit).astype(np.int64)
        fifo = self.policy == "fifo_perf"
        keys = self._pass_keys(T) if fifo else None
        for r in self._type_visits(models):
            eligible = keys[0][:, r] > 0.0 if fifo else T[:, r] > 0  # type: ignore[index]  # keys when fifo
            cand = np.flatnonzero(eligible & (chosen < 0))
            if not cand.size:
                continue
            need = int(sizes[cand].sum())
            if need <= free[r]:
                chosen[cand] = r
                free[r] -= need
                continue
            if keys is None:
                keys = self._pass_keys(T)
            prio, deficit, alloc = keys
            queue = cand[np.lexsort((cand, -alloc[cand, r], -deficit[cand, r], -prio[cand, r]))]
            free[r] = _fill_in_order(queue, sizes[queue], free[r], chosen, r)
        return chosen

    def _pass_keys(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(priority, deficit, allocation) of every active job on every type, this round."""
        jobs = self._jobs
        type_time = self._type_time
        assert type_time is not None, "set by the first round"
        prio = fraction_priorities(jobs.alloc, jobs.in_alloc, jobs.job_time, type_time, T > 0)
        if self.deficit_rule == "cumulative":
            deficit = jobs.deficit
        else:
            total = type_time.sum()
            deficit = jobs.alloc - ((jobs.job_time - self.time_prior) / total if total > 0 else 0.0)
        return prio, deficit, jobs.alloc

    def _place(
        self, view: ClusterView, active: list[JobState], chosen: np.ndarray, scale: np.ndarray, models: list[str]
    ) -> tuple[Decision, np.ndarray]:
        """The round's decision (kept placements stay, the movers placed from the largest scale factor down, every
        other running job stopped), and which active jobs run after it.

        A running job that keeps its type keeps its placement. The kept placements are part of what runs now, so
        together they always fit. The decision is :meth:`Decision.from_allocation` of the full allocation (same
        entries in the same order), built from the jobs that change only: a moved job always changes type, so
        its placement differs from the one it leaves."""
        node_col = self._node_col(view, models)
        placements = [js.placement for js in active]
        current = np.array([-1 if p is None else node_col[p[0][0]] for p in placements], dtype=np.int64)
        # Gavel's pass counts a job without an allocation yet, but gives it no workers.
        go = (chosen >= 0) & self._jobs.in_alloc
        keep = go & (current == chosen)
        leaving = np.flatnonzero((current >= 0) & ~keep).tolist()  # running jobs that move or stop
        movers = np.flatnonzero(go & ~keep)
        if not movers.size and not leaving:
            return Decision(), keep
        placed = keep.copy()
        ids = self._jobs.ids
        moved: dict[str, Placement] = {}
        if movers.size:
            # What the kept placements leave free: what is free now plus the GPUs of the running jobs that leave
            # theirs (fewer than the kept ones in a busy round; the same counts as the capacity minus the kept).
            scratch = CapacityScratch.now_free(view)
            for i in leaving:
                scratch.give_back(placements[i])  # type: ignore[arg-type]  # a leaving job runs: placed
            table = self._rates.of(view)
            spread_rate_applies = not view.ideal_placement  # ideal: every placement runs consolidated
            fit = _BestFit(scratch)
            for i in movers[np.lexsort((movers, -scale[movers]))].tolist():
                js = active[i]
                r = int(chosen[i])
                placement = fit.place(js.job.num_gpus, models[r])
                if placement is None:
                    continue
                # The pass chose r only where T[i, r] > 0, and T holds the consolidated rate wherever one node of
                # the type holds the job (or placement is ideal): only a spread placement needs its rate checked.
                if (
                    spread_rate_applies
                    and len(placement) > 1
                    and table.of_job(js.job)[1][r] <= 0
                ):
                    continue
                fit.take(placement)
                moved[ids[i]] = placement
                placed[i] = True
        decision = Decision()
        assign, preempt = decision.assign, decision.preempt
        if leaving:  # in the running jobs' order, as from_allocation lists them
            left = {ids[i] for i in leaving}
            for job_id in view.running:
                if job_id in left:
                    placement = moved.get(job_id)
                    if placement is None:
                        preempt.append(job_id)
                    else:
                        assign[job_id] = placement
        if len(assign) < len(moved):
            running = view.running
            for job_id, placement in moved.items():
                if job_id not in running:
                    assign[job_id] = placement
        return decision, placed

    def _place_shares(
        self, view: ClusterView, active: list[JobState], chosen: np.ndarray, scale: np.ndarray, models: list[str]
    ) -> tuple[Decision, np.ndarray]:
        """A shared run's decision, and which active jobs run after it: a running task on the type the pass chose
        keeps its GPUs; every other running task is preempted (a task is never moved: its share is free at once for
        this decision's starts, :meth:`Plan.stop`); the chosen waiting tasks, largest share first (Gavel's order),
        go where the run's task placement puts them among the nodes of the type chosen for them, or wait."""
        shares = view.shares
        assert shares is not None
        node_col = self._node_col(view, models)
        current = np.array([-1 if js.placement is None else node_col[js.placement[0][0]] for js in active], np.int64)
        go = (chosen >= 0) & self._jobs.in_alloc  # as in _place: no GPUs before a job has an allocation
        keep = go & (current == chosen)
        leaving = (current >= 0) & ~keep
        starters = np.flatnonzero(go & (current < 0))
        placed = keep.copy()
        if not starters.size and not leaving.any():
            return Decision(), placed
        plan = Plan(view)
        if leaving.any():
            left = {self._jobs.ids[i] for i in np.flatnonzero(leaving).tolist()}
            for job_id, js in view.running.items():  # in the running jobs' order, as _place lists them
                if job_id in left:
                    plan.stop(js)
        for i in starters[np.lexsort((starters, -scale[starters]))].tolist():
            js = active[i]
            placement = shares.choose(view, js, models[int(chosen[i])])
            if placement is not None:
                plan.start(js, placement)
                placed[i] = True
        return plan.decision, placed


def _fill_in_order(queue: np.ndarray, sizes: np.ndarray, room: int, chosen: np.ndarray, r: int) -> int:
    """Gavel's greedy fill of one type: walk ``queue`` in order and give type r to each job whose ``sizes`` entry
    still fits in ``room``, until it is full; returns the room left.

    Same choices as the walk, in O(len(queue)) C steps plus one step per job taken after the first that does not
    fit: the leading jobs whose running total fits are taken at once (a cumulative sum), and from then on the room
    is smaller than one job, so each further job is found by a search for the next one small enough."""
    total = np.cumsum(sizes)
    k = int(np.searchsorted(total, room, side="right"))
    chosen[queue[:k]] = r
    if k:
        room -= int(total[k - 1])
    pos = k
    while room > 0 and pos < queue.size:
        fits = np.flatnonzero(sizes[pos:] <= room)
        if not fits.size:
            break
        j = pos + int(fits[0])
        chosen[queue[j]] = r
        room -= int(sizes[j])
        pos = j + 1
    return room


class _BestFit:
    """:func:`gpuweave.cluster.placement.fewest_nodes` on a capacity scratch, with each model's nodes bucketed by
    free GPUs (a heap per count, keyed by the node's position in the model's node list), so a round that moves many
    jobs finds each one's best-fit node (fewest free GPUs that hold the job, first in the list on ties) in O(GPUs
    per node) instead of a scan of the model. Same placements as the scan; jobs that need several nodes use the same
    spreading rule."""

    __slots__ = ("scratch", "nodes", "buckets", "where", "bucket_of")

    def __init__(self, scratch: CapacityScratch) -> None:
        self.scratch = scratch
        self.nodes = scratch.view.nodes
        self.buckets: dict[str, list[list[tuple[int, int]]]] = {}
        self.where: dict[int, int] = {}  # node -> its position in its model's node list
        self.bucket_of: dict[int, list[list[tuple[int, int]]]] = {}  # node -> its model's buckets

    def _model(self, model: str) -> list[list[tuple[int, int]]]:
        b = self.buckets.get(model)
        if b is None:
            idx = self.scratch.view.nodes_by_model[model]
            free = self.scratch.free
            b = [[] for _ in range(max(self.nodes[i].num_gpus for i in idx) + 1)]
            where, bucket_of = self.where, self.bucket_of
            for k, i in enumerate(idx):  # in list order: every bucket starts sorted, i.e. as a heap
                b[free[i]].append((k, i))
                where[i] = k
                bucket_of[i] = b
            self.buckets[model] = b
        return b

    def place(self, n: int, model: str) -> Placement | None:
        scratch = self.scratch
        if scratch.free_by_model.get(model, 0) < n:
            return None
        b = self._model(model)
        for f in range(n, len(b)):
            if b[f]:
                return ((b[f][0][1], n),)
        return spread(scratch.view.nodes_by_model[model], scratch.free, n)

    def take(self, placement: Placement) -> None:
        """Take a placement that :meth:`place` returned (so its model's buckets exist)."""
        free, bucket_of = self.scratch.free, self.bucket_of
        for node, k in placement:
            b = bucket_of[node]
            entry = (self.where[node], node)
            bucket = b[free[node]]
            if bucket[0] == entry:
                heapq.heappop(bucket)
            else:
                bucket.remove(entry)
                heapq.heapify(bucket)
            heapq.heappush(b[free[node] - k], entry)
        self.scratch.take(placement)


def _queue_stamp(view: ClusterView) -> QueueStamp:
    """The view and its queues' write counts. The view itself, not its id: an id can come back for another view
    once the first is gone, the object cannot."""
    return (view, view.running.changes, view.pending.changes)


def _same_stamp(a: QueueStamp, b: QueueStamp | None) -> bool:
    return b is not None and a[0] is b[0] and a[1:] == b[1:]


class _ActiveJobs:
    """Gavel's per-job state as arrays in the order of the active jobs, (arrival, id): allocation row and whether
    the job has one yet, time on each type since the last reset, deficit, GPU count. Rebuilt (O(M)) only when a job
    arrives or finishes; a round without such a change reads and updates the arrays in place."""

    __slots__ = (
        "ids", "keys", "kinds", "pos", "known", "version", "alloc", "in_alloc", "job_time", "deficit",
        "scale", "rows", "fits", "stamp", "_states",
    )

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.keys: list[tuple[float, str]] = []  # (arrival, id): the order of the rows
        self.kinds: list[tuple[str, int, tuple[str, ...] | None]] = []  # (job type, GPUs, allowed models)
        self.pos: dict[str, int] = {}
        self.known: set[str] = set()
        self.version = 0
        self.alloc = np.zeros((0, 0))
        self.in_alloc = np.zeros(0, dtype=bool)
        self.job_time = np.zeros((0, 0))
        self.deficit = np.zeros((0, 0))
        self.scale = np.zeros(0)
        self.rows = np.zeros((0, 0))  # each job's whole-job rate on each type
        self.fits: np.ndarray | None = None  # a shared run's: 1 where a node of the type can hold the task, else 0
        self.stamp: QueueStamp | None = None  # (view, queues' write counts) when the active set was last seen as known
        # (view, version, the active jobs' states)
        self._states: tuple[ClusterView | None, int | None, list[JobState]] = (None, None, [])

    def unchanged(self, view: ClusterView, R: int) -> bool:
        """Whether the view's active set (running and waiting jobs) and its R GPU types are those of the last
        :meth:`sync`: O(1) when neither queue was written since the set was last found equal (the drivers' queues
        count their writes), else O(M) in C. Moves write the running queue without changing its jobs, so a round
        after a busy one compares the sets once."""
        if self.alloc.shape[1:] != (R,):
            return False  # the first call, or the types changed: sync starts over
        running, pending = view.running, view.pending
        stamp = _queue_stamp(view)
        if _same_stamp(stamp, self.stamp):
            return True
        if running.keys() | pending.keys() != self.known:
            return False
        self.stamp = stamp
        return True

    def sync(
        self,
        view: ClusterView,
        R: int,
        prior: float,
        row_of: Callable[[Kind], list[float]],
        task_of: Callable[[Job], tuple[float, list[float]]] | None = None,
    ) -> bool:
        """Follow the view's active set; True when it changed (arrivals or departures). O(M) C steps when nothing
        changed; otherwise finished rows are dropped and arrivals appended in (arrival, id) order (a full re-sort
        only when an arrival sorts before a job already known), mostly in C. ``row_of(kind)``: an arrival's rates;
        ``task_of(job)``: a shared run's scale factor of an arrival (else its GPUs) and the types it fits on."""
        current = view.running.keys() | view.pending.keys()
        if current == self.known and self.alloc.shape[1:] == (R,):
            return False
        if self.alloc.shape[1:] != (R,):  # first call, or the cluster's types changed: start over
            version = self.version
            self.__init__()  # type: ignore[misc]  # resets every slot; this class has no subclass
            self.version = version
            self.alloc, self.job_time, self.deficit, self.rows = (np.zeros((0, R)) for _ in range(4))
        gone = self.known - current
        new = current - self.known
        pending, running = view.pending, view.running
        arriving = sorted((running.get(j) or pending[j] for j in new), key=lambda js: (js.job.arrival, js.job.job_id))
        arrivals = [js.job for js in arriving]
        M = len(self.ids)
        kept = np.delete(np.arange(M), sorted(self.pos[j] for j in gone)) if gone else np.arange(M)
        fresh = [(job.arrival, job.job_id) for job in arrivals]
        if fresh and kept.size and fresh[0] < self.keys[kept[-1]]:  # an arrival sorts before a known job
            order = sorted([(self.keys[i], i) for i in kept.tolist()] + [(k, -1 - n) for n, k in enumerate(fresh)])
            src = np.array([i for _, i in order], dtype=np.int64)
            appended = False
        else:
            src = np.concatenate([kept, -1 - np.arange(len(fresh), dtype=np.int64)])
            appended = True
        self._rebuild(src, arrivals, fresh, prior, row_of, appended, task_of)
        self.known = set(current)
        self.version += 1
        states = self._states
        if appended and states[0] is view and states[1] == self.version - 1:  # the kept jobs' states, then arrivals'
            self._states = (view, self.version, [*map(states[2].__getitem__, kept.tolist()), *arriving])
        self.stamp = _queue_stamp(view)
        return True

    def _rebuild(
        self,
        src: np.ndarray,
        arrivals: list[Job],
        fresh: list[tuple[float, str]],
        prior: float,
        row_of: Callable[[Kind], list[float]],
        appended: bool,
        task_of: Callable[[Job], tuple[float, list[float]]] | None,
    ) -> None:
        """New arrays in the order ``src``: an old row index, or ``-1 - k`` for the k-th arrival (``appended``: the
        kept rows in their order, then the arrivals in theirs)."""
        M = src.size
        was = src >= 0
        old = src[was]
        new = -1 - src[~was]

        def carry(arr: np.ndarray, fill: float, rows: np.ndarray | None = None) -> np.ndarray:
            out = np.full((M, *arr.shape[1:]), fill, dtype=arr.dtype)
            out[was] = arr[old]
            if rows is not None and new.size:
                out[~was] = rows
            return out

        R = self.alloc.shape[1]
        kinds = [(job.job_type, job.num_gpus, job.allowed_models) for job in arrivals]
        added = np.array([row_of(kind) for kind in kinds], dtype=float).reshape(len(kinds), R)[new] if kinds else None
        self.alloc = carry(self.alloc, 0.0)
        self.in_alloc = carry(self.in_alloc, False)
        self.job_time = carry(self.job_time, prior)
        self.deficit = carry(self.deficit, 0.0)
        self.rows = carry(self.rows, 0.0, added)
        if task_of is None:
            self.scale = carry(self.scale, 0.0, np.array([n for _, n, _ in kinds], dtype=float)[new] if kinds else None)
        else:
            tasks = [task_of(job) for job in arrivals]
            sizes = np.array([scale for scale, _ in tasks], dtype=float)[new] if kinds else None
            fits = np.array([row for _, row in tasks], dtype=float).reshape(len(tasks), R)[new] if kinds else None
            self.scale = carry(self.scale, 0.0, sizes)
            self.fits = carry(self.fits if self.fits is not None else np.ones((0, R)), 1.0, fits)
        ids = [job.job_id for job in arrivals]
        if appended:  # the common case, in C: the kept entries, then the arrivals'
            kept = old.tolist()
            self.ids = [*map(self.ids.__getitem__, kept), *ids]
            self.keys = [*map(self.keys.__getitem__, kept), *fresh]
            self.kinds = [*map(self.kinds.__getitem__, kept), *kinds]
        else:
            order = src.tolist()
            self.ids = [self.ids[i] if i >= 0 else ids[-1 - i] for i in order]
            self.keys = [self.keys[i] if i >= 0 else fresh[-1 - i] for i in order]
            self.kinds = [self.kinds[i] if i >= 0 else kinds[-1 - i] for i in order]
        self.pos = dict(zip(self.ids, range(M)))

    def refresh_rows(self, row_of: Callable[[Kind], list[float]]) -> None:
        """Every row's rates again (the rates or the nodes changed)."""
        R = self.alloc.shape[1]
        self.rows = np.array([row_of(kind) for kind in self.kinds], dtype=float).reshape(len(self.ids), R)

    def states(self, view: ClusterView) -> list[JobState]:
        """The active jobs' states in row order; rebuilt only when the active set changed (a job keeps its state
        object for its whole life in a driver)."""
        if self._states[0] is not view or self._states[1] != self.version:
            running, pending = view.running, view.pending
            self._states = (view, self.version, [running.get(j) or pending[j] for j in self.ids])
        return self._states[2]

    def set_allocation(self, x: np.ndarray) -> None:
        self.alloc = np.asarray(x, dtype=float).reshape(len(self.ids), -1)
        self.in_alloc = np.ones(len(self.ids), dtype=bool)


def _fixed(policy_name: str, objective: str, doc: str) -> type[GavelPolicy]:
    """A registered Gavel policy with its allocation policy fixed (the other mechanics stay options)."""

    def __init__(
        self: GavelPolicy,
        type_order: tuple[str, ...] | list[str] = DEFAULT_TYPE_ORDER,
        reset_interval: float = 1920.0,
        recompute: str = "gavel",
        time_prior: float | None = None,
        deficit: str = "cumulative",
        shuffle_types: bool | None = None,
        partitions: int = 1,
        lp: str = "interior",
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        GavelPolicy.__init__(
            self,
            type_order,
            reset_interval,
            objective,
            recompute,
            time_prior,
            deficit,
            shuffle_types,
            partitions,
            lp,
            round_length=round_length,
            seed=seed,
        )

    cls = type(
        policy_name.replace("-", "_").title().replace("_", "") + "Policy", (GavelPolicy,), {"__init__": __init__}
    )
    cls.__doc__ = doc
    cls.__module__ = __name__
    return register_policy(policy_name)(cls)


FifoPerfPolicy = _fixed(
    "fifo-perf",
    "fifo_perf",
    "Gavel's FIFO_Perf: preemptive FIFO re-planned at each Gavel recompute, jobs in arrival order on the fastest "
    "type with room.",
)
GavelLasPolicy = _fixed(
    "gavel-las",
    "heterogeneity_unaware_las",
    "Gavel's heterogeneity-unaware LAS (max_min_fairness): equal time shares, type order shuffled every round.",
)
GavelFtfPolicy = _fixed(
    "gavel-ftf",
    "finish_time_fairness_perf",
    "Gavel's finish_time_fairness_perf: minimise the largest finish-time ratio against an isolated share.",
)
GavelMinTotalDurationPolicy = _fixed(
    "gavel-min-total-duration",
    "min_total_duration_perf",
    "Gavel's min_total_duration_perf: the allocation that finishes every active job soonest (makespan).",
)
