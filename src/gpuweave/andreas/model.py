"""The ANDREAS rescheduling problem at one rescheduling point, as numpy arrays.

Problem (spec andreas.md §2, paper Sec. IV-A): at time ``now`` a queue Q of jobs (waiting and running:
ANDREAS re-plans everything, so every running job may be kept, migrated, resized or preempted) must be
assigned to nodes. Node n has a GPU type, ``G_n`` GPUs and an energy cost ``c(type_n, u)`` [€/h] with u
GPUs in use (``c(., 0) = 0``). A configuration k = (type, g) runs a job on g GPUs of one node of that
type; job j has a remaining-time table ``t_j(k)`` (inf where k is not profiled), a due date ``d_j``
(absolute; inf = none) and a tardiness weight ``omega_j`` [€/s]. A job runs on a single node; GPUs are
dedicated (a node may host several jobs on disjoint GPUs).

:class:`Instance` holds these as arrays so that the proxy objective, Randomized Greedy, the baselines,
the exact MILP and the brute force all read the same data. Configurations are the cost-catalogue rows
with ``g`` at most the largest node of their type, sorted by (type, g): that order is the spec's
lexicographic tie-break (§6.2) and their GPU total is RG's ``G_cat`` (§6.1).

:func:`build_instance` validates user-facing input (bad input raises one-line
:class:`~gpuweave.errors.InputError`). Complexity: O(|Q|·K + N·G_max) to build.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpuweave.andreas.catalog import CostCatalog, config_label
from gpuweave.errors import InputError

RHO = 100.0  # postponement penalty coefficient (paper Sec. V-B; spec §6.1)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: name, canonical GPU type, number of GPUs."""

    name: str
    gpu_type: str
    num_gpus: int


@dataclass(slots=True)
class QueueJob:
    """A job of the queue at a rescheduling point.

    ``times`` maps a configuration (type, g) to the remaining execution time in seconds on it;
    ``running`` is the (node index, (type, g)) the job holds now, or None.
    """

    job_id: str
    submission: float
    due: float  # absolute due date; math.inf = none
    weight: float  # omega_j, EUR/s
    times: dict[tuple[str, int], float]
    running: tuple[int, tuple[str, int]] | None = None


@dataclass(slots=True)
class Instance:
    now: float
    nodes: list[NodeSpec]
    types: list[str]  # distinct GPU types, sorted
    node_type: np.ndarray  # (N,) index into types
    node_gpus: np.ndarray  # (N,)
    node_cost: np.ndarray  # (N, Gmax+1) EUR/h with u GPUs in use (nan beyond G_n)
    configs: list[tuple[str, int]]  # K configurations, sorted by (type, g)
    cfg_type: np.ndarray  # (K,) index into types
    cfg_g: np.ndarray  # (K,)
    cfg_cost: np.ndarray  # (K,) c(type, g) EUR/h: the job considered alone on a node
    job_ids: list[str]
    submission: np.ndarray  # (n,)
    due: np.ndarray  # (n,)
    weight: np.ndarray  # (n,)
    times: np.ndarray  # (n, K) remaining seconds, inf where not profiled
    run_node: np.ndarray  # (n,) node held now, -1 if waiting
    run_cfg: np.ndarray  # (n,) configuration held now, -1 if waiting
    h_wc: float = 0.0  # horizon of the postponement term: 0 event-driven, H periodic (spec §5)
    rho: float = RHO
    _derived: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.job_ids)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def g_cat(self) -> int:
        """Sum of g over the catalogue rows (spec §6.1): 4 in scenario 1, 13 in scenario 2."""
        return int(self.cfg_g.sum())

    def min_time(self) -> np.ndarray:
        """m_j: the fastest remaining time (inf if the job has no configuration)."""
        return self.times.min(axis=1) if self.times.size else np.zeros(0)

    def max_time(self) -> np.ndarray:
        """M_j: the slowest finite remaining time ("maximum execution time", spec §2.3)."""
        if not self.times.size:
            return np.zeros(0)
        finite = np.where(np.isfinite(self.times), self.times, -np.inf)
        return finite.max(axis=1)

    def pressure(self) -> np.ndarray:
        """Delta_j = now + m_j - d_j, unweighted (paper Sec. IV-B; spec A9). A job without a deadline
        (d_j = inf) has Delta_j = -inf, also when it has no configuration (m_j = inf: inf - inf, not NaN)."""
        with np.errstate(invalid="ignore"):
            delta = self.now + self.min_time() - self.due
        return np.where(np.isnan(delta), -np.inf, delta)

    def postpone_cost(self) -> np.ndarray:
        """rho * omega_j * max(0, now + H_wc + M_j - d_j): the W term of a postponed job (spec §5)."""
        w = self._derived.get("postpone")
        if w is None:
            with np.errstate(invalid="ignore"):
                late = np.maximum(0.0, self.now + self.h_wc + self.max_time() - self.due)
            late = np.where(np.isnan(late), 0.0, late)
            w = self.rho * self.weight * late
            self._derived["postpone"] = w
        return w

    def label(self, k: int) -> str:
        t, g = self.configs[k]
        return config_label(t, g)

    def cfg_index(self, gpu: str, g: int) -> int | None:
        try:
            return self.configs.index((gpu, g))
        except ValueError:
            return None


def catalogue_configs(nodes: list[NodeSpec], costs: CostCatalog) -> list[tuple[str, int]]:
    """The configurations of a cluster: priced (type, g) with g <= the largest node of that type."""
    largest: dict[str, int] = {}
    for node in nodes:
        largest[node.gpu_type] = max(largest.get(node.gpu_type, 0), node.num_gpus)
    return [(t, g) for t, g, _ in costs.rows(largest)]


def build_instance(
    now: float,
    nodes: list[NodeSpec],
    jobs: list[QueueJob],
    costs: CostCatalog,
    *,
    h_wc: float = 0.0,
    rho: float = RHO,
    configs: list[tuple[str, int]] | None = None,
) -> Instance:
    """Arrays of one rescheduling point; InputError on nodes without GPUs, unpriced node sizes, bad jobs."""
    if not nodes:
        raise InputError("the cluster has no nodes", field="nodes")
    _check_nodes(nodes, costs)
    types = sorted({n.gpu_type for n in nodes})
    tindex = {t: i for i, t in enumerate(types)}
    gmax = max(n.num_gpus for n in nodes)
    node_cost = np.full((len(nodes), gmax + 1), np.nan)
    for i, node in enumerate(nodes):
        node_cost[i, : node.num_gpus + 1] = costs.table(node.gpu_type, node.num_gpus)
    if configs is None:
        configs = catalogue_configs(nodes, costs)
    kindex = {k: i for i, k in enumerate(configs)}
    n = len(jobs)
    times = np.full((n, len(configs)), np.inf)
    run_node = np.full(n, -1, dtype=np.int64)
    run_cfg = np.full(n, -1, dtype=np.int64)
    seen: set[str] = set()
    for j, job in enumerate(jobs):
        _check_job(job, seen)
        for k, t in job.times.items():
            col = kindex.get(k)
            if col is None:
                continue  # a profiled configuration no node offers (e.g. TESLA x2 on 1-GPU nodes only)
            if not (t >= 0):
                raise InputError(
                    f"job {job.job_id}: remaining time on {config_label(*k)} must be >= 0, got {t}", field="times"
                )
            times[j, col] = t
        if job.running is not None:
            node_index, k = job.running
            if not (0 <= node_index < len(nodes)) or k not in kindex or nodes[node_index].gpu_type != k[0]:
                raise InputError(
                    f"job {job.job_id}: runs on an invalid node/configuration {job.running}", field="running"
                )
            run_node[j] = node_index
            run_cfg[j] = kindex[k]
    return Instance(
        now=float(now),
        nodes=list(nodes),
        types=types,
        node_type=np.array([tindex[nd.gpu_type] for nd in nodes], dtype=np.int64),
        node_gpus=np.array([nd.num_gpus for nd in nodes], dtype=np.int64),
        node_cost=node_cost,
        configs=list(configs),
        cfg_type=np.array([tindex.get(t, -1) for t, _ in configs], dtype=np.int64),
        cfg_g=np.array([g for _, g in configs], dtype=np.int64),
        cfg_cost=np.array([costs.cost(t, g) for t, g in configs], dtype=float),
        job_ids=[jb.job_id for jb in jobs],
        submission=np.array([jb.submission for jb in jobs], dtype=float),
        due=np.array([jb.due for jb in jobs], dtype=float),
        weight=np.array([jb.weight for jb in jobs], dtype=float),
        times=times,
        run_node=run_node,
        run_cfg=run_cfg,
        h_wc=float(h_wc),
        rho=float(rho),
    )


def _check_nodes(nodes: list[NodeSpec], costs: CostCatalog) -> None:
    """Every node has GPUs, a unique name, and a priced cost for each GPU count it can have in use."""
    names = set()
    for node in nodes:
        if node.num_gpus < 1:
            raise InputError(f"node {node.name} has {node.num_gpus} GPUs; every node needs at least 1", field="nodes")
        if node.name in names:
            raise InputError(f"node name {node.name!r} is used twice", field="nodes")
        names.add(node.name)
        for u in range(1, node.num_gpus + 1):
            if not costs.has(node.gpu_type, u):
                raise InputError(
                    f"no energy cost for {u} GPU(s) in use on node {node.name} ({node.gpu_type}); the cost table "
                    f"must price every GPU count a node can have in use",
                    file=costs.source,
                )


def _check_job(job: QueueJob, seen: set[str]) -> None:
    """A job's id is new (it is added to ``seen``), its weight finite and >= 0, its due date a number."""
    if job.job_id in seen:
        raise InputError(f"duplicate job id {job.job_id!r}", field="jobs")
    seen.add(job.job_id)
    if not (job.weight >= 0 and math.isfinite(job.weight)):
        raise InputError(
            f"job {job.job_id}: tardiness weight must be a finite number >= 0, got {job.weight}", field="weight"
        )
    if math.isnan(job.due):
        raise InputError(f"job {job.job_id}: due date is not a number", field="due")
