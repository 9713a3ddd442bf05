"""Sia (Jayaram Subramanya et al., SOSP'23): heterogeneity-aware goodput-optimised allocation, one integer program
per round, as Sia's simulator runs it (siasosp23/artifacts@aaf7a0d, ``sia-simulator/sia.py``, sec. 4 of the paper).

Problem: every ``round_length`` (60 s) give each active job at most one configuration (GPU type, nodes, GPUs) so
as to minimise Sia's objective (:mod:`gpuweave.baselines.sia_mip`: a ``p``-power of normalised goodputs, with a
penalty ``lambda_n`` per job left without GPUs); a job in its checkpoint-restore keeps its configuration. A job's
goodput on a configuration comes from its own agent (:mod:`gpuweave.workload.pollux_agent`: the throughput model it
fitted on that GPU type and its gradient statistics; the batch it would pick, at most the trace's batch): on a type
it has not run on yet, from a type it has, scaled by the ratio of the two types' one-GPU throughputs
(``project_throughputs``); before any measurement, one GPU of any type. Its largest configuration is twice the
most GPUs it was measured on (the largest over types with ``share_max_replicas``), at most 64 and its largest
batch over the smallest local batch. Goodputs are normalised to the job's smallest, every configuration but its
current one is multiplied by Pollux's re-allocation factor (restart penalties per application as Sia sets them:
imagenet 250 s, bert 120 s, yolov3 45 s, deepspeech2 25 s, others 30 s), raised to ``p`` and rounded to two
decimals. Placement: Sia's fast placement per type (whole nodes first, round-robin).

Live (:mod:`gpuweave.live.agents`; ``decides_on_agents``), the agents are the adaptive jobs' own, fitted per GPU
type on what their workers measure (``fits_per_gpu_type``), and Sia's tables give way to the run's: a job's batch
limits on every type (its trace's), its largest batch (``max_batch_size``), the nodes of each type in the cluster
and their GPUs, and, for the projection, the ratio of the profile source's one-GPU rates of the job's type
(:class:`_LiveTables`).

The jobs' progress follows Sia's job model on the agents' clock (:mod:`gpuweave.workload.sia`,
:mod:`gpuweave.cluster.adaptive_clock`): each job picks its batch on its placement (up to its application's
largest), measures and refits per GPU type.

Not reproduced: Sia's rigid and ``scale-gpus`` job categories (a workload's ``category`` column; Sia's own
workloads have none) and pipeline-parallel jobs (``gpt_pmp``). ``lambda_a`` is accepted and, as in Sia's code,
unused.

Complexity per round, J active jobs and K configurations (19 on Sia's cluster): goodput rows O(J K x 50 batch
sizes) (cached per job, type, fit and gradient statistics), the MILP (J K binaries), placement O(J x nodes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuweave.baselines.sia_mip import (
    ZERO_ALLOC_GAIN,
    configurations,
    fast_placement,
    power_matrix,
    realloc_factor,
    solve_allocation,
)
from gpuweave.checks import Range, number
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.policies import register_policy
from gpuweave.errors import InputError
from gpuweave.workload.goodput_model import GoodputModel
from gpuweave.workload.sia import SiaJobModel
from gpuweave.workload.traces.pollux import submit_order

if TYPE_CHECKING:
    from gpuweave.cluster.state import ClusterView, JobState, Placement
    from gpuweave.workload.pollux import BatchLimits, PolluxApp
    from gpuweave.workload.pollux_agent import AgentState

# sia.py's get_restart_penalty: matched against the job's name, in this order
RESTART_PENALTIES = (("deepspeech", 25.0), ("imagenet", 250.0), ("cifar", 30.0), ("bert", 120.0), ("yolov3", 45.0))
DEFAULT_PENALTY = 30.0
MAX_REPLICAS = 64  # Sia's simulator: "simulator can't handle more"
P_RANGE = Range("", -10.0, 10.0)
LAMBDA_RANGE = Range("", -1e6, 1e6)


def restart_penalty(job_id: str) -> float:
    for part, seconds in RESTART_PENALTIES:
        if part in job_id:
            return seconds
    return DEFAULT_PENALTY


class _SimTables:
    """What the program reads of Sia's job model (simulated runs): each application's tables per GPU type."""

    def __init__(self, model: SiaJobModel) -> None:
        self.model = model

    def app(self, js: JobState, agent: AgentState, gpu_type: str) -> PolluxApp | BatchLimits:
        return self.model.app_on(js.job.job_type, gpu_type)[0]

    def largest_batch(self, js: JobState, agent: AgentState) -> int:
        return self.model.app_of(js.job.job_type)[1]

    def max_nodes(self, gpu_type: str, in_cluster: int) -> int:
        return min(in_cluster, self.model.max_nodes(gpu_type))

    def per_node(self, gpu_type: str, view: ClusterView) -> int:
        return self.model.per_node[gpu_type]

    def ratio(self, js: JobState, app_name: str, gpu_type: str, source: str, view: ClusterView) -> float:
        """One-GPU throughput on ``gpu_type`` over ``source`` (Sia's ``compute_throughput_ratios``)."""
        return self.model.atomic_throughput(app_name, gpu_type) / self.model.atomic_throughput(app_name, source)


class _LiveTables:
    """The same questions answered by a live run (module docstring): the job's own batch limits on every type, the
    cluster's nodes, and the run's profile source for the projection's ratio."""

    def app(self, js: JobState, agent: AgentState, gpu_type: str) -> PolluxApp | BatchLimits:
        return agent.app

    def largest_batch(self, js: JobState, agent: AgentState) -> int:
        return agent.app.max_batch_size

    def max_nodes(self, gpu_type: str, in_cluster: int) -> int:
        return in_cluster

    def per_node(self, gpu_type: str, view: ClusterView) -> int:
        return view.nodes[view.nodes_by_model[gpu_type][0]].num_gpus

    def ratio(self, js: JobState, app_name: str, gpu_type: str, source: str, view: ClusterView) -> float:
        rates = [view.profiles.rate(js.job.job_type, t, 1, True) for t in (gpu_type, source)]
        return rates[0] / rates[1] if rates[0] > 0 and rates[1] > 0 else 1.0


@register_policy("sia")
class SiaPolicy(ClusterPolicy):
    """Sia's goodput ILP per round on heterogeneous GPUs, on Sia's job model (module docstring)."""

    default_round_length = 60.0
    needs = "sia"  # Sia's job model and adaptive jobs: not a policy for any trace
    decides_on_agents = True  # live: the adaptive jobs' measured agents (gpuweave.live.agents)
    fits_per_gpu_type = True
    fixed_batches = ()  # the jobs pick their batches (the simulator runs their agents)

    def __init__(
        self,
        *,
        p: float = -0.5,
        lambda_n: float = 1.1,
        lambda_a: float = 0.01,
        project_throughputs: bool = True,
        share_max_replicas: bool = True,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self.p = number(p, P_RANGE, field="p")
        if self.p == 0:
            raise InputError("sia: p must not be 0 (Sia's runs use -0.5)", field="p")
        self.lambda_n = number(lambda_n, LAMBDA_RANGE, field="lambda_n")
        self.lambda_a = number(lambda_a, LAMBDA_RANGE, field="lambda_a")
        self.project = bool(project_throughputs)
        self.share = bool(share_max_replicas) or self.project  # Sia: projecting implies sharing
        self._prev: dict[str, int | None] = {}
        self._goodputs: dict[tuple[object, ...], np.ndarray] = {}

    def schedule(self, view: ClusterView) -> Decision:
        jobs = sorted(
            [*view.running.values(), *view.pending.values()], key=lambda js: (submit_order(js.job), js.job.arrival)
        )
        if not jobs:
            return Decision()
        agents = [view.job_agent(js) for js in jobs]
        model = view.profiles
        tables: _SimTables | _LiveTables
        if isinstance(model, SiaJobModel):
            tables = _SimTables(model)
        elif all(agent is not None for agent in agents):  # a live run's adaptive jobs (gpuweave.live.agents)
            tables = _LiveTables()
        else:
            raise InputError("sia needs Sia's job model as profiles (a Sia traces directory)", field="profiles")
        types = view.models
        nodes = {t: view.nodes_by_model[t] for t in types}
        configs = [  # Sia plans with at most its tables' nodes of a type (max_physical_nodes)
            (r, n, g)
            for r, t in enumerate(types)
            for n, g in configurations(view.nodes[nodes[t][0]].num_gpus, tables.max_nodes(t, len(nodes[t])))
        ]
        now = view.now
        G = np.vstack([self._row(tables, js, agent, types, configs, view) for js, agent in zip(jobs, agents)])
        pinned = {}
        for i, (js, agent) in enumerate(zip(jobs, agents)):
            assert agent is not None
            prev = self._prev.get(js.job.job_id)
            if prev is None:
                continue
            factor = realloc_factor(now - js.job.arrival, agent.restarts or 0, restart_penalty(js.job.job_id))
            keep = G[i, prev]
            G[i, :] *= np.float32(factor)
            G[i, prev] = keep
            if js.job.job_id in view.running and agent.busy_until > now:
                pinned[i] = prev
        capacity = [sum(view.nodes[n].num_gpus for n in nodes[t]) for t in types]
        # p < 0: minimise sum A X + lambda_n x (jobs left out); p > 0: maximise it (Sia's two branches)
        sign = 1.0 if self.p < 0 else -1.0
        choice = solve_allocation(
            sign * power_matrix(G, self.p),
            [g for _, _, g in configs],
            [r for r, _, _ in configs],
            capacity,
            pinned,
            sign * self.lambda_n,
        )
        self._prev = {js.job.job_id: k for js, k in zip(jobs, choice)}
        wanted: dict[str, Placement] = {}
        for r, t in enumerate(types):
            allocs = [
                (js.job.job_id, configs[k][2]) for js, k in zip(jobs, choice) if k is not None and configs[k][0] == r
            ]
            if not allocs:
                continue
            placed = fast_placement(allocs, [view.nodes[n].num_gpus for n in nodes[t]])
            for job_id, local in placed.items():
                counts: dict[int, int] = {}
                for node in local:
                    counts[nodes[t][node]] = counts.get(nodes[t][node], 0) + 1
                wanted[job_id] = tuple(sorted(counts.items()))
        return Decision.from_allocation(view, wanted)

    def _row(
        self,
        tables: _SimTables | _LiveTables,
        js: JobState,
        agent: AgentState | None,
        types: list[str],
        configs: list[tuple[int, int, int]],
        view: ClusterView,
    ) -> np.ndarray:
        """The job's goodput per configuration, normalised to its smallest (sia.py's ``optimize_mip``, float32)."""
        assert agent is not None
        apps = {t: tables.app(js, agent, t) for t in types}
        batch = tables.largest_batch(js, agent)
        fits = {t: agent.perf_on(t) if agent.grad is not None else None for t in types}
        most = {
            t: min(
                max(2 * agent.profiled_replicas_on(t), 1), MAX_REPLICAS, apps[t].max_batch_size // apps[t].min_local_bsz
            )
            for t in types
        }
        row = np.full(len(configs), ZERO_ALLOC_GAIN, dtype=np.float32)
        unknown: set[int] = set()
        source = next((t for t in types if fits[t] is not None), None)
        for r, t in enumerate(types):
            top = max(most.values()) if self.share else most[t]
            if fits[t] is None and (not self.project or source is None):
                unknown.add(r)
                continue
            idx = [k for k, (rr, _, g) in enumerate(configs) if rr == r and 1 <= g <= top]
            if not idx:
                unknown.add(r)
                continue
            gpus = np.array([configs[k][2] for k in idx], dtype=float)
            nodes = np.array([configs[k][1] for k in idx], dtype=float)
            if fits[t] is not None:
                values = self._goodput(js, agent, t, apps[t], batch, nodes, gpus)
            else:
                assert source is not None
                per_node = tables.per_node(source, view)
                translated = np.ceil(gpus / per_node)
                ratio = tables.ratio(js, apps[t].name, t, source, view)
                values = self._goodput(js, agent, source, apps[source], batch, translated, gpus) * np.float32(ratio)
            row[idx] = values.astype(np.float32)
        known = [row[[k for k, c in enumerate(configs) if c[0] == r]] for r in range(len(types)) if r not in unknown]
        lows = [v[v > ZERO_ALLOC_GAIN].min() for v in known if np.any(v > ZERO_ALLOC_GAIN)]
        least = np.float32(min(lows)) if lows else np.float32(1.0)
        row *= np.float32(1.0 / least)
        for r in unknown:  # no goodput known there: one GPU counts as 1
            row[[k for k, c in enumerate(configs) if c[0] == r and c[2] == 1]] = 1.0
        row[row <= ZERO_ALLOC_GAIN] = ZERO_ALLOC_GAIN
        return row

    def _goodput(
        self,
        js: JobState,
        agent: AgentState,
        gpu_type: str,
        app: PolluxApp | BatchLimits,
        batch: int,
        nodes: np.ndarray,
        gpus: np.ndarray,
    ) -> np.ndarray:
        """The job's best goodput per (nodes, GPUs) on ``gpu_type`` with batches up to its trace's (Sia's speedup
        function), cached per job, type, fit and gradient statistics."""
        perf = agent.perf_on(gpu_type)
        assert perf is not None and agent.grad is not None
        key = (js.job.job_id, gpu_type, perf, agent.grad, tuple(nodes), tuple(gpus))
        found = self._goodputs.get(key)
        if found is None:
            goodput = GoodputModel(
                perf, agent.grad[0], agent.grad[1], app.init_batch_size, batch, app.min_local_bsz, app.max_local_bsz
            )
            found = self._goodputs[key] = goodput.optimize_arrays(nodes, gpus)[0]
        return found
