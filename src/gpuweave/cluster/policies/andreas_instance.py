"""A rescheduling point as an ANDREAS instance: the base of ANDREAS' RG policy and of its fixed-priority baselines.

Problem: run RG (:mod:`gpuweave.cluster.policies.andreas_adapter`) and the first-principle baselines FIFO, EDF and
PS (:mod:`gpuweave.cluster.policies.fixed_priority`, spec andreas.md §8) inside the cluster's drivers, so that
they are judged by the same physics as every other policy and can run on other papers' workloads. What they share
is here: the view turned into an :class:`~gpuweave.andreas.model.Instance` and back into a decision, the trigger
options, spread jobs and call records; neither optimizer is.

* Work is in the job's own units (ANDREAS jobs: epochs); the remaining time of job j on configuration
  k = (GPU model, g) is ``remaining_j / rate(job_type, model, g)`` from the run's profile store (a missing
  or zero profile = configuration absent; no extrapolation, spec A27).
* GPU counts: a job with ``attrs["moldable"]`` may take any profiled count (ANDREAS chooses g per job at
  each rescheduling; the simulator's opt-in moldable rule accepts it); other jobs only ``num_gpus``.
* Jobs larger than any node (other papers' traces, e.g. 8 GPUs on 4-GPU nodes) have no ANDREAS
  configuration; :class:`SpreadPlanner` places them across nodes of one GPU model (fewest nodes,
  unconsolidated rate) and the optimizer plans the rest on the remaining GPUs, so no job starves.
* With a restart delay (> 0), RG's plan is relabelled among interchangeable nodes so that running jobs stay
  put (:func:`keep_nodes`; same f_OBJ). Jobs without a deadline have no tardiness term (d = inf, Δ = -inf).
* Costs: ``cost_model`` ``auto`` uses the ANDREAS table when it prices every node, else GPU power x price
  x PUE (:func:`gpuweave.andreas.catalog.cost_catalog_for`). Jobs without a deadline have d = inf.
* Triggers (spec §1, §7, A13): event-driven by default (arrivals and completions, H_wc = 0);
  ``period=H`` adds ticks every H seconds (H_wc = H in f_OBJ); ``periodic_only=True`` calls the optimizer
  on ticks only (the ARMIDA prototype: every 300 s).

With ``record=True`` every call is recorded in ``self.calls`` (time, queue size, plan, proxy terms, optimizer wall
time), which the reproduction uses for the optimizer time per call and the ARMIDA trace
(:func:`gpuweave.repro.andreas.simulate.run_policy` turns it on). It is off by default: a record holds the whole
plan, so a long run (or the service) would keep one plan per call, O(calls x queue) memory (1.1 GB at 10,000
generated jobs, 20,000 calls). Cost per call: O(|Q|·K) to
build the instance plus the optimizer's own cost.
"""

from __future__ import annotations

import math
import time
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuweave.andreas.catalog import cost_catalog_for
from gpuweave.andreas.model import RHO, Instance, NodeSpec, catalogue_configs
from gpuweave.andreas.randomized_greedy import Schedule
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.placement import spread
from gpuweave.errors import MissingProfileError

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Set as AbstractSet

    import numpy.typing as npt

    from gpuweave.cluster.state import ClusterView, JobState, Placement
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.job import Job

    # free GPUs per node as a spread placer reads and takes them: the policy's list, or fpm_schedule's array
    FreeCounts = list[int] | npt.NDArray[np.int64]
    # what a baseline hands its optimizer for the spread jobs: (order key, place(free GPUs per node)) pairs
    SpreadOthers = list[tuple[tuple[Any, ...], Callable[[FreeCounts], None]]]


@dataclass(slots=True)
class CallRecord:
    time: float
    queue: int
    plan: dict[str, tuple[str, int]]  # job id -> (node name, GPUs); absent = postponed
    f: float
    energy: float
    tardiness: float
    postpone: float
    f_greedy: float
    iterations: int
    opt_seconds: float  # optimizer only (the paper's "time per optimizer call")
    call_seconds: float  # whole schedule() call including the view -> instance conversion
    extra: dict[str, Any] = field(default_factory=dict)


class ViewAdapter:
    """Builds an :class:`Instance` from a ClusterView; caches nodes, configurations and rate vectors."""

    def __init__(self, cost_model: str = "auto", rho: float = RHO) -> None:
        self.cost_model = cost_model
        self.rho = rho
        self._ready = False

    def _setup(self, view: ClusterView) -> None:
        nodes = view.nodes
        self.costs = cost_catalog_for(nodes, self.cost_model)
        self.node_specs = [NodeSpec(nd.name, nd.gpu_model, nd.num_gpus) for nd in nodes]
        self.configs = catalogue_configs(self.node_specs, self.costs)
        types = sorted({nd.gpu_model for nd in nodes})
        tindex = {t: i for i, t in enumerate(types)}
        self.types = types
        self.node_type = np.array([tindex[nd.gpu_model] for nd in nodes], dtype=np.int64)
        self.node_gpus = np.array([nd.num_gpus for nd in nodes], dtype=np.int64)
        gmax = int(self.node_gpus.max())
        self.node_cost = np.full((len(nodes), gmax + 1), np.nan)
        for i, nd in enumerate(nodes):
            self.node_cost[i, : nd.num_gpus + 1] = self.costs.table(nd.gpu_model, nd.num_gpus)
        self.cfg_type = np.array([tindex[t] for t, _ in self.configs], dtype=np.int64)
        self.cfg_g = np.array([g for _, g in self.configs], dtype=np.int64)
        self.cfg_cost = np.array([self.costs.cost(t, g) for t, g in self.configs], dtype=float)
        self.kindex = {k: i for i, k in enumerate(self.configs)}
        self._rates: dict[tuple[object, ...], Any] = {}  # rate rows (arrays) and, under ("spread", ...), model lists
        # Job id -> (job, rate row, spread models): a call reads a known job's facts with one lookup.
        self._of_job: dict[str, tuple[Job, np.ndarray, list[str]]] = {}
        self._ready = True

    def _facts(self, view: ClusterView, js: JobState) -> tuple[Job, np.ndarray, list[str]]:
        """(job, rate row, spread models) of ``js``'s job, looked up once per job (both depend only on the job and
        the cluster); the cache is emptied when it holds far more jobs than the view, so it follows the queue."""
        job = js.job
        hit = self._of_job.get(job.job_id)
        if hit is None or hit[0] is not job:
            if len(self._of_job) > 4 * (len(view.running) + len(view.pending)) + 1024:
                self._of_job = {}
            hit = self._of_job[job.job_id] = (job, self._rate_row(view, js), self._spread_models(view, js))
        return hit

    def rates(self, view: ClusterView, js: JobState) -> np.ndarray:
        """Rate of the job of ``js`` (a JobState) on every configuration (0 = not allowed / not profiled)."""
        return self._facts(view, js)[1]

    def spread_models(self, view: ClusterView, js: JobState) -> list[str]:
        """GPU models on which a job with no single-node configuration can run across nodes (see
        :meth:`_spread_models`)."""
        return self._facts(view, js)[2]

    def _rate_row(self, view: ClusterView, js: JobState) -> np.ndarray:
        """Rate of the job of ``js`` (a JobState) on every configuration (0 = not allowed / not profiled).

        A fixed-count job (not moldable) has only its ``num_gpus`` configurations, rated by the simulator's
        profile store (``view.model_rate``, in the store's work units); moldable jobs read every allowed count."""
        job = js.job
        moldable = job.attrs.get("moldable") if job.attrs else None
        allowed = None if moldable is True else (tuple(sorted(moldable)) if moldable else (job.num_gpus,))  # type: ignore[call-overload]  # moldable: True or GPU counts
        key = (job.job_type, allowed, job.allowed_models)
        r: np.ndarray | None = self._rates.get(key)
        if r is None:
            r = np.zeros(len(self.configs))
            fixed = allowed == (job.num_gpus,)
            for i, (model, g) in enumerate(self.configs):
                if (allowed is not None and g not in allowed) or (
                    job.allowed_models is not None and model not in job.allowed_models
                ):
                    continue
                if fixed:  # the simulator's own (cached, non-strict) lookup: 0 = not profiled
                    r[i] = float(view.model_rate(js, model, True))
                    continue
                try:
                    r[i] = float(view.profiles.rate(job.job_type, model, g, True))
                except MissingProfileError:
                    r[i] = 0.0
            self._rates[key] = r
        return r

    def _spread_models(self, view: ClusterView, js: JobState) -> list[str]:
        """GPU models on which a job with no single-node configuration can run across nodes (unconsolidated
        rate > 0, enough GPUs of the model, at least two nodes); empty for every other job. Cached per
        (job type, GPU count, allowed models)."""
        job = js.job
        key = ("spread", job.job_type, job.num_gpus, job.allowed_models)
        cached: list[str] | None = self._rates.get(key)
        if cached is not None:
            return cached
        if True:
            found: list[str] = []
            if not self._rate_row(view, js).any():
                by_model = view.nodes_by_model
                for model in view.models:
                    idx = by_model[model]
                    if len(idx) < 2 or sum(view.nodes[i].num_gpus for i in idx) < job.num_gpus:
                        continue
                    if view.model_rate(js, model, False) > 0:
                        found.append(model)
            self._rates[key] = found
        return found

    def instance(
        self,
        view: ClusterView,
        h_wc: float,
        include_running: bool = True,
        exclude: AbstractSet[str] = frozenset(),
        reserved: np.ndarray | None = None,
    ) -> Instance:
        """The Instance of the jobs in the view, less ``exclude`` (jobs spread over several nodes, which the
        policy places itself). ``reserved`` (GPUs per node held by those jobs) shrinks the nodes; a node's
        cost is then the marginal cost on top of the reserved GPUs, c(r + u) - c(r)."""
        if not self._ready:
            self._setup(view)
        states = (
            list(view.running.values()) + list(view.pending.values())
            if include_running
            else list(view.pending.values())
        )
        if exclude:
            states = [js for js in states if js.job.job_id not in exclude]
        node_gpus, node_cost = self.node_gpus, self.node_cost
        if reserved is not None and reserved.any():
            node_gpus = self.node_gpus - reserved
            node_cost = np.full_like(self.node_cost, np.nan)
            for i, r in enumerate(reserved.tolist()):
                row = self.node_cost[i, r : self.node_gpus[i] + 1]
                node_cost[i, : row.size] = np.maximum(0.0, row - row[0])
        n = len(states)
        K = len(self.configs)
        run_node = np.full(n, -1, dtype=np.int64)
        run_cfg = np.full(n, -1, dtype=np.int64)
        facts = self._facts
        rates = np.array([facts(view, js)[1] for js in states], dtype=float).reshape(n, K)
        rem = np.array([view.remaining(js) for js in states], dtype=float)
        with np.errstate(divide="ignore"):  # the same division per entry as one job at a time
            times = np.where(rates > 0, rem[:, None] / np.where(rates > 0, rates, 1.0), np.inf)
        due = np.array([math.inf if js.job.deadline is None else float(js.job.deadline) for js in states], dtype=float)
        for j, js in enumerate(states):
            if js.placement is not None:
                if len(js.placement) != 1:
                    raise ValueError(f"job {js.job.job_id} spans several nodes; ANDREAS runs a job on one node")
                node, g = js.placement[0]
                run_node[j] = node
                run_cfg[j] = self.kindex[(view.nodes[node].gpu_model, g)]
        inst = Instance(
            now=float(view.now),
            nodes=self.node_specs,
            types=self.types,
            node_type=self.node_type,
            node_gpus=node_gpus,
            node_cost=node_cost,
            configs=self.configs,
            cfg_type=self.cfg_type,
            cfg_g=self.cfg_g,
            cfg_cost=self.cfg_cost,
            job_ids=[js.job.job_id for js in states],
            submission=np.array([js.job.arrival for js in states], dtype=float),
            due=due,
            weight=np.array([float(js.job.priority) for js in states], dtype=float),
            times=times,
            run_node=run_node,
            run_cfg=run_cfg,
            h_wc=h_wc,
            rho=self.rho,
        )
        return inst


def keep_nodes(view: ClusterView, wanted: dict[str, Placement], reserved: np.ndarray) -> dict[str, Placement]:
    """Relabel a single-node plan among interchangeable nodes (same GPU model, GPU count and GPUs held by
    spread jobs, hence the same cost table) so that as many GPUs as possible stay where they run now.

    RG re-plans from empty nodes, so a job may be planned on a twin of the node it already holds; the plan's
    f_OBJ is the same under any such relabelling, but a move costs the simulator's restart delay. Applied only
    when that delay is > 0 (ANDREAS' own simulator, A11, has none and keeps RG's labels). Greedy matching of
    planned node contents to nodes by GPUs kept: the (planned node, current node) pairs of a class, most GPUs
    kept first (ties: lower planned node, then lower current node), each node matched once; the unmatched
    planned nodes take the unmatched nodes in order. O(jobs + nodes + pairs log pairs) per call: one pass over the
    plan collects the pairs of all classes (a pair never crosses classes, so one sort and one matching serve
    them all)."""
    if not wanted:
        return wanted
    running = view.running
    classes, class_of = _node_classes(view.nodes, reserved)
    kept: dict[tuple[int, int], int] = {}  # (planned node, node it runs on now) -> GPUs that would stay
    for jid, p in wanted.items():
        js = running.get(jid)
        if js is None:
            continue
        now: Placement = js.placement  # type: ignore[assignment]  # a running job has a placement
        if len(now) == 1 and now[0][1] == p[0][1]:
            b, node = p[0][0], now[0][0]
            c = class_of[b]
            if c >= 0 and c == class_of[node]:
                kept[b, node] = kept.get((b, node), 0) + now[0][1]
    pairs = sorted((-gpus, b, node) for (b, node), gpus in kept.items())
    remap: dict[int, int] = {}
    used_n: set[int] = set()
    for _neg, b, node in pairs:
        if b not in remap and node not in used_n:
            remap[b] = node
            used_n.add(node)
    for members in classes:
        rest_n = iter([nd for nd in members if nd not in used_n])  # as many as the unmatched planned nodes
        for b in members:
            if b not in remap:
                remap[b] = next(rest_n)
    if all(remap.get(p[0][0], p[0][0]) == p[0][0] for p in wanted.values()):
        return wanted
    return {jid: ((remap.get(p[0][0], p[0][0]), p[0][1]),) for jid, p in wanted.items()}


def _node_classes(nodes: list[Node], reserved: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """The classes of interchangeable nodes with at least two members (node indices in order, classes in the order
    of their first node) and each node's class (-1: a node without a twin). O(nodes)."""
    held = reserved.tolist()
    groups: dict[tuple[str, int, int], list[int]] = {}
    for nd in nodes:
        groups.setdefault((nd.gpu_model, nd.num_gpus, held[nd.index]), []).append(nd.index)
    classes = [members for members in groups.values() if len(members) >= 2]
    class_of = [-1] * len(nodes)
    for c, members in enumerate(classes):
        for i in members:
            class_of[i] = c
    return classes, class_of


def _spread_on(
    view: ClusterView, model: str, n: int, cap: list[int], prefer: list[int] | None = None
) -> Placement | None:
    """n GPUs of ``model`` taken from ``cap`` (GPUs usable per node) on as few nodes as possible: nodes with the
    most usable GPUs first (then, when ``prefer`` is given, the most ``prefer`` GPUs, e.g. free ones; then
    index). None if the model has fewer than n usable GPUs."""
    return spread(view.nodes_by_model[model], cap, n, prefer)


class SpreadPlanner:
    """Jobs larger than any node (e.g. 8 GPUs on 4-GPU nodes, other papers' traces): ANDREAS' model runs a
    job on one node, so such a job has no configuration. The policy places it itself, across nodes of one
    GPU model (as few nodes as possible, the unconsolidated rate ``view.rate``), and the optimizer plans the
    other jobs on what is left (:meth:`ViewAdapter.instance` with ``reserved``). A placed spread job keeps its
    placement until it completes.

    The model is chosen by ANDREAS' configuration rule: the cheapest energy (marginal node cost x time) among
    the placements that meet the due date, else the fastest; ties by time, then cluster order. A spread job
    that fits nowhere waits, except the first one in the policy's order when no other waiting job comes
    before it: RG then places it on the nodes with the most free GPUs, preempting what runs there (RG
    re-plans those jobs); the non-preemptive baselines reserve those nodes' free GPUs for it instead, so it
    starts once they drain. Either way no job waits forever.
    """

    def __init__(self, adapter: ViewAdapter, view: ClusterView) -> None:
        self.adapter = adapter
        self.view = view
        nodes = view.nodes
        self.avail = [nd.num_gpus for nd in nodes]  # GPUs not held by spread jobs
        self.reserved = np.zeros(len(nodes), dtype=np.int64)
        self.placed: dict[str, tuple[tuple[int, int], ...]] = {}
        self.ids: set[str] = set()
        self.waiting: list[JobState] = []
        self.forced = False
        for js in view.running.values():
            if adapter.spread_models(view, js):
                self.ids.add(js.job.job_id)
                self._hold(js, js.placement, None)  # type: ignore[arg-type]  # a running job has a placement
        for js in view.pending.values():
            if adapter.spread_models(view, js):
                self.ids.add(js.job.job_id)
                self.waiting.append(js)

    def _hold(self, js: JobState, placement: Placement, free: FreeCounts | None) -> None:
        self.placed[js.job.job_id] = placement
        for i, k in placement:
            self.avail[i] -= k
            self.reserved[i] += k
            if free is not None:
                free[i] = max(0, int(free[i]) - k)

    def _key(self, js: JobState, placement: Placement, free: FreeCounts) -> tuple[int, float, float] | None:
        view = self.view
        rate = view.rate(js, placement)
        if not rate > 0:
            return None
        t = view.remaining(js) / rate
        due = math.inf if js.job.deadline is None else float(js.job.deadline)
        if view.now + t < due:
            cost = self.adapter.node_cost
            gpus = self.adapter.node_gpus
            e = 0.0
            for i, k in placement:
                used = int(gpus[i]) - int(free[i])
                e += float(cost[i, min(used + k, gpus[i])] - cost[i, used])
            return (0, e * t, t)
        return (1, t, t)

    def fit(self, js: JobState, free: FreeCounts) -> bool:
        """Place ``js`` on free GPUs only (``free``: per-node free GPUs, updated); False if it fits nowhere."""
        best = None
        for order, model in enumerate(self.adapter.spread_models(self.view, js)):
            p = _spread_on(self.view, model, js.job.num_gpus, [min(int(f), a) for f, a in zip(free, self.avail)])
            if p is None:
                continue
            key = self._key(js, p, free)
            if key is not None and (best is None or key + (order,) < best[0]):
                best = (key + (order,), p)
        if best is None:
            return False
        self._hold(js, best[1], free)
        return True

    def target(self, js: JobState, free: FreeCounts) -> Placement | None:
        """The nodes to clear for ``js``: GPUs not held by spread jobs, as few nodes as possible, the ones with
        the most free GPUs first; the model needing the fewest GPUs cleared (ties: the configuration rule)."""
        best = None
        for order, model in enumerate(self.adapter.spread_models(self.view, js)):
            p = _spread_on(self.view, model, js.job.num_gpus, self.avail, [int(f) for f in free])
            if p is None:
                continue
            busy = sum(max(0, k - int(free[i])) for i, k in p)
            key = self._key(js, p, [min(int(free[i]), self.avail[i]) for i in range(len(free))])
            if key is not None and (best is None or (busy,) + key + (order,) < best[0]):
                best = ((busy,) + key + (order,), p)
        return None if best is None else best[1]


class AndreasPolicyBase(ClusterPolicy):
    """Shared trigger options, instance building, decision diffing and call recording.

    Triggers: event-driven unless a round length is given (``round_length``, or ``period`` as old configs
    spell it); with one, the policy is also called on events unless ``periodic_only``."""

    preemptive = True

    def __init__(
        self,
        period: float | None = None,
        periodic_only: bool = False,
        cost_model: str = "auto",
        rho: float = RHO,
        proxy_variant: str = "code",
        record: bool = False,
        *,
        round_length: float | None = None,
        seed: int = 0,
    ) -> None:
        if period is not None and not period > 0:
            raise ValueError("period must be > 0 seconds")
        if period is not None and round_length is not None and float(period) != float(round_length):
            raise ValueError(f"period ({period}) and round_length ({round_length}) disagree")
        length = round_length if round_length is not None else period
        if length is None and periodic_only:
            raise ValueError("periodic_only needs a period")
        super().__init__(round_length=length, seed=seed, reacts_to_events=not periodic_only)
        if proxy_variant not in ("code", "paper"):
            raise ValueError(f"proxy_variant must be 'code' or 'paper', got {proxy_variant!r}")
        self.proxy_variant = proxy_variant
        self.adapter = ViewAdapter(cost_model, rho)
        self.record = record
        self.calls: list[CallRecord] = []

    @property
    def h_wc(self) -> float:
        """Horizon of the postponement term: the period in periodic modes, 0 when event-driven (spec §5)."""
        return float(self.round_length or 0.0)

    @abstractmethod
    def optimize(self, inst: Instance, others: SpreadOthers | None = None) -> Schedule:
        """The plan for one rescheduling point: RG (preemptive) or a fixed-priority baseline."""

    def _plan_spread(self, view: ClusterView, planner: SpreadPlanner) -> SpreadOthers | None:
        """Place the waiting spread jobs (see :class:`SpreadPlanner`) the policy's way (:meth:`_place_spread`);
        None when none waits."""
        if not planner.waiting:
            return None
        return self._place_spread(view, planner)

    @abstractmethod
    def _place_spread(self, view: ClusterView, planner: SpreadPlanner) -> SpreadOthers | None:
        """Place the waiting spread jobs (at least one waits); returns what :meth:`optimize` takes as ``others``."""

    def schedule(self, view: ClusterView) -> Decision:
        if not view.pending and not (self.preemptive and view.running):
            return Decision()
        t0 = time.perf_counter()
        if not self.adapter._ready:
            self.adapter._setup(view)
        planner = SpreadPlanner(self.adapter, view)
        others = self._plan_spread(view, planner)
        inst = self.adapter.instance(view, self.h_wc, exclude=planner.ids, reserved=planner.reserved)
        t1 = time.perf_counter()
        sched = self.optimize(inst, others) if others else self.optimize(inst)
        t2 = time.perf_counter()
        wanted: dict[str, tuple[tuple[int, int], ...]] = {}
        for j in np.flatnonzero(sched.node_of >= 0):
            wanted[inst.job_ids[j]] = ((int(sched.node_of[j]), int(inst.cfg_g[sched.cfg_of[j]])),)
        if self.preemptive and view.restart_delay > 0:
            wanted = keep_nodes(view, wanted, planner.reserved)
        wanted.update(planner.placed)
        decision = Decision.from_allocation(view, wanted)
        t3 = time.perf_counter()
        if self.record:
            names = [nd.name for nd in view.nodes]
            opt_seconds = sched.extra.pop("opt_seconds", t2 - t1)
            extra = dict(sched.extra)
            if planner.placed:
                extra["spread"] = {jid: [(names[i], k) for i, k in p] for jid, p in planner.placed.items()}
            self.calls.append(
                CallRecord(
                    time=inst.now,
                    queue=inst.n,
                    plan={jid: (names[p[0][0]], p[0][1]) for jid, p in wanted.items() if jid not in planner.placed},
                    f=sched.f,
                    energy=sched.energy,
                    tardiness=sched.tardiness,
                    postpone=sched.postpone,
                    f_greedy=sched.f_greedy,
                    iterations=sched.iterations,
                    opt_seconds=opt_seconds,
                    call_seconds=t3 - t0,
                    extra=extra,
                )
            )
        return decision
