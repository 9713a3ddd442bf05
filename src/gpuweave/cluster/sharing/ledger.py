"""Shares in the cluster's book: which task holds what share of which GPU, for the time-based simulator.

Problem: replay a trace whose jobs ask a fraction of one GPU, CPU and memory (openb's pods: creation and deletion
times, ``gpu_milli``, ``cpu_milli``, ``memory_mib``) through the ordinary simulator, so that any queue policy that
places through the run's rule (FIFO, SJF, YARN-CS, Tiresias, Gavel's family) composes with any task placement (FGD
and its baselines, :mod:`gpuweave.cluster.placements`), and tasks leave again when they finish or are preempted
(FGD's own experiment never removes a task: :mod:`.experiment`).

:class:`ShareLedger` is what the book (:class:`~gpuweave.cluster.book.ClusterBook`) keeps when the run's placement is
a task placement: the free side of every node as :class:`~.state.SharedNodes` (the arrays FGD's experiment uses),
each running job's :class:`~.state.Assignment`, one fragment tracker (:class:`~.fragmentation.NodeFragments`,
against the trace's typical tasks) that the placement scores with, a seeded node priority order for ties (as in
FGD's simulator), and the fragmentation over time.

How a decision is made and applied:

1. A policy's :class:`~gpuweave.cluster.decision.Plan` asks the run's rule where a job goes; in a shared run the rule
   is :class:`ShareRule`, which weighs every node the task may use (its allowed models with a positive rate: a task
   placement chooses across GPU models, as FGD's scheduler does, not within the model the policy offers) and
   remembers its choice (:meth:`ShareLedger.choose`).
2. ``Plan.start`` takes the share at once (:meth:`ShareLedger.take`, *provisional*), so the next job of the same
   call sees it, and sets the plan's free counts from the ledger. ``Plan.stop`` (a preemption) gives a running
   task's share back at once, provisionally too (:meth:`ShareLedger.unhold`), so the plan's later starts may use it;
   not a MIG instance's, which is free from when the decision applies (its idle instance may be reused or destroyed
   by a start, which a rollback could not undo exactly).
3. ``ClusterBook.apply`` gives back the shares of the tasks the decision preempts (those the plan did not), commits
   the provisional takes it names, takes any it names that were not planned (checked against the free resources),
   and gives back the ones it does not name (:meth:`ShareLedger.settle`). A decision that breaks a rule (a plan's
   stop it does not name among its preemptions included) gives back every provisional take, and takes back every
   share given back, before the error is raised. A running task is never moved: it is preempted, then started.

The book's integer counts mean, in a shared run: ``free[node]`` the GPUs of the node with some share free (a task
of n GPUs needs at least n of them: a necessary condition, which the policies' quick tests read), busy GPUs per
model the GPUs with some share taken. A GPU's power is its idle power plus its share taken times (max - idle), as
time-slicing at those shares would draw; a task's GPU-seconds and energy count its share.

Complexity: a choice is O(nodes x GPU slots) numpy work plus the placement's scores; a take or release O(slots).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.cluster.placements import FreeCapacity, PlacementRule, TaskPlacement
from gpuweave.cluster.sharing.fragmentation import NodeFragments, typical_tasks
from gpuweave.cluster.sharing.mig_slots import held_milli, layout_of
from gpuweave.cluster.sharing.state import NO_GPU, Assignment, SharedNodes, TaskRequest
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.hardware.node_resources import node_table_of
from gpuweave.workload.tasks import FULL_GPU_MILLI, TaskTable

if TYPE_CHECKING:
    from gpuweave.cluster.contract import ClusterPolicy
    from gpuweave.cluster.state import ClusterView, JobState, Placement
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.job import Job

FragmentRow = tuple[float, int, float, float]  # (time, used milli-GPUs, fragment milli-GPUs, fragment ratio %)


def _attr_int(job: Job, name: str, default: int) -> int:
    value = job.attrs.get(name) if job.attrs else None
    if value is None:
        return default
    try:
        return int(value)  # type: ignore[call-overload,no-any-return]  # a number read by the trace schema
    except (TypeError, ValueError):  # an empty cell: NaN or pandas' NA
        return default


def job_request(job: Job, index: int, *, whole: bool = False) -> TaskRequest:
    """A job's request as a task: its trace's ``cpu_milli``, ``memory_mib`` and ``gpu_milli`` (0, 0 and a whole
    GPU where the trace has none; ``whole``: always a whole GPU), its GPUs and allowed models, the slices of its
    ``mig_profile`` (if any and not ``whole``)."""
    if whole or job.num_gpus == 0:
        return TaskRequest(
            index,
            _attr_int(job, "cpu_milli", 0),
            _attr_int(job, "memory_mib", 0),
            job.num_gpus,
            FULL_GPU_MILLI if job.num_gpus else 0,  # a CPU-only task asks no share
            job.allowed_models,
        )
    profile = job.attrs.get("mig_profile") if job.attrs else None
    slices = int(str(profile).split("g.", 1)[0]) if isinstance(profile, str) and "g." in profile else 0
    return TaskRequest(
        index,
        _attr_int(job, "cpu_milli", 0),
        _attr_int(job, "memory_mib", 0),
        job.num_gpus,
        _attr_int(job, "gpu_milli", FULL_GPU_MILLI),
        job.allowed_models,
        slices,
    )


def requests_table(requests: list[TaskRequest]) -> TaskTable:
    """The requests as a task table (what the typical tasks of the fragment measure are read from)."""
    return TaskTable(
        names=tuple(str(r.index) for r in requests),
        cpu_milli=np.array([r.cpu_milli for r in requests], dtype=np.int64),
        memory_mib=np.array([r.memory_mib for r in requests], dtype=np.int64),
        num_gpus=np.array([r.num_gpus for r in requests], dtype=np.int64),
        gpu_milli=np.array([r.gpu_milli for r in requests], dtype=np.int64),
        allowed_models=tuple(r.allowed_models for r in requests),
    )


@dataclass(slots=True)
class _Choice:
    node: int
    gpus: tuple[int, ...]
    version: int  # the node's version the choice was made at


class ShareLedger:
    """The shares of a running simulation (see module docstring)."""

    def __init__(self, nodes: list[Node], jobs: list[Job], placement: TaskPlacement, seed: int) -> None:
        self.placement = placement
        self.table = node_table_of(nodes)
        self.nodes = SharedNodes(self.table)
        # A cluster none of whose groups shares GPUs ('sharing: whole' everywhere, the default) runs the same tasks
        # on whole GPUs: a share is rounded up to the whole GPU, CPU and memory are still asked (FGD's experiment's
        # "whole" mode, over time).
        self.whole = not any(n.sharing in ("fraction", "mig") for n in nodes)
        self.requests: dict[str, TaskRequest] = {
            job.job_id: job_request(job, i, whole=self.whole) for i, job in enumerate(jobs)
        }
        self.fragments = NodeFragments(
            typical_tasks(requests_table(list(self.requests.values())), self.nodes.models), self.nodes
        )
        rng = np.random.default_rng(seed)
        self.priority = rng.permutation(len(nodes))
        placement.bind(self.nodes, self.fragments, rng)
        # a 'sharing: whole' node takes no fraction of a GPU (its GPUs are whole or nothing)
        self.fraction_ok = np.array([n.sharing != "whole" for n in nodes], dtype=bool)
        self.assignments: dict[str, Assignment] = {}
        self.provisional: dict[str, Assignment] = {}  # taken by the current plan, not yet applied
        # running tasks the current plan or decision stops, whose shares are free for its starts (not yet applied)
        self.unheld: dict[str, Assignment] = {}
        self._given_back: set[str] = set()  # stopped by an applied decision, shares given back: release() skips them
        self._choices: dict[str, _Choice] = {}
        self._runnable: dict[tuple[str, int, tuple[str, ...] | None], np.ndarray] = {}
        self.series: list[FragmentRow] = []
        self._empty: SharedNodes | None = None  # the cluster with nothing placed (fitting_models)
        self._fitting: dict[tuple[object, ...], frozenset[str]] = {}

    def add(self, job: Job) -> None:
        """A job handed over while the run goes on (its request; the typical tasks stay those of the start)."""
        self.requests[job.job_id] = job_request(job, len(self.requests), whole=self.whole)

    # ------------------------------------------------------------------ reading
    def open_gpus(self, node: int) -> int:
        """GPUs of ``node`` with some share free (the book's ``free[node]`` in a shared run)."""
        return int((self.nodes.gpu_free[node] > 0).sum())

    def busy_gpus(self, node: int) -> int:
        """GPUs of ``node`` with some share taken."""
        row = self.nodes.gpu_free[node]
        return int(((row >= 0) & (row < FULL_GPU_MILLI)).sum())

    def held_gpus(self, node: int) -> float:
        """The shares of ``node``'s GPUs its tasks hold, in GPUs (two halves of one GPU: 1.0)."""
        row = self.nodes.gpu_free[node]
        return float(np.where(row >= 0, FULL_GPU_MILLI - row, 0).sum()) / FULL_GPU_MILLI

    def start_class(self, job: Job) -> str:
        """The job's type and request: jobs of one GPU count and start class fit exactly where each other does
        (:mod:`gpuweave.cluster.policies.pending_index`)."""
        task = self.requests[job.job_id]
        allowed = "+".join(task.allowed_models) if task.allowed_models else ""
        return f"{job.job_type}|{task.cpu_milli}|{task.memory_mib}|{task.gpu_milli}|{task.mig_slices}|{allowed}"

    def share(self, job_id: str) -> float:
        """The part of each of its GPUs a running job holds: its share, the whole GPU where shares are rounded up,
        its instance's compute slices on a MIG GPU (as the cluster's used share counts them)."""
        held = self.assignments.get(job_id) or self.provisional.get(job_id)
        if held is not None and held.instances:
            model = self.table.models[held.node]
            return held_milli(held.instances[0].size, layout_of(model).num_slices) / FULL_GPU_MILLI
        return self.requests[job_id].gpu_milli / FULL_GPU_MILLI

    def reconfig_delay(self, job_id: str) -> float:
        """Seconds a started task waits for its MIG instances (destroying idle ones in the way, creating its own;
        0 for a reused instance or a task that is not on MIG)."""
        held = self.assignments.get(job_id)
        return held.reconfig_s if held is not None else 0.0

    def asked_share(self, job: Job) -> float:
        """The part of each of its GPUs a job asked for (its work's worth, whatever it held)."""
        return (_attr_int(job, "gpu_milli", FULL_GPU_MILLI) if job.num_gpus else 0) / FULL_GPU_MILLI

    def check_fits(self, jobs: list[Job]) -> None:
        """InputError naming the first job (in arrival order) that no node of the cluster could ever hold: too many
        GPUs, CPU or memory for the largest node it may use, or a fraction with no node that shares GPUs. Checked
        once per distinct request shape, on the empty cluster."""
        empty = SharedNodes(self.table)
        seen: set[tuple[int, int, int, int, tuple[str, ...] | None]] = set()
        for row, job in enumerate(sorted(jobs, key=lambda j: (j.arrival, j.job_id)), start=1):
            task = self.requests[job.job_id]
            shape = (task.cpu_milli, task.memory_mib, task.num_gpus, task.gpu_milli, task.allowed_models)
            if shape in seen:
                continue
            seen.add(shape)
            problem = _fits_nowhere(empty, self.fraction_ok, task, job.job_id, row)
            if problem is not None:
                raise problem

    def fitting_models(self, job_id: str) -> frozenset[str]:
        """The GPU models with a node that could hold the task when empty (its GPUs, CPU, memory, a GPU it may
        share): a policy that chooses the model first (Gavel) offers no other; cached per request shape."""
        task = self.requests[job_id]
        shape = (task.cpu_milli, task.memory_mib, task.num_gpus, task.gpu_milli, task.allowed_models, task.mig_slices)
        models = self._fitting.get(shape)
        if models is None:
            if self._empty is None:
                self._empty = SharedNodes(self.table)
            ok = self._empty.fits(task)
            if task.shares_gpu:
                ok &= self.fraction_ok
            models = self._fitting[shape] = frozenset(self.table.models[i] for i in np.flatnonzero(ok).tolist())
        return models

    # ------------------------------------------------------------------ choosing
    def _runnable_nodes(self, view: ClusterView, js: JobState) -> np.ndarray:
        """Nodes whose model the job may use and has a positive rate on (cached per job type, GPUs, models)."""
        job = js.job
        key = (job.job_type, job.num_gpus, job.allowed_models)
        mask = self._runnable.get(key)
        if mask is None:
            good = {m for m in view.models if view.model_rate(js, m, True) > 0}
            mask = self._runnable[key] = np.array([n.gpu_model in good for n in view.nodes], dtype=bool)
        return mask

    def choose(self, view: ClusterView, js: JobState, model: str | None = None) -> Placement | None:
        """Where the run's task placement puts the job now (its node, remembered with the GPUs for
        :meth:`take`), or None when no node can hold it. ``model``: among that GPU model's nodes only (a policy
        that allocates time per GPU type, Gavel's); None: any model the job may use, as FGD's scheduler weighs."""
        task = self.requests[js.job.job_id]
        nodes = self.nodes
        ok = nodes.fits(task) & self._runnable_nodes(view, js)
        if model is not None:
            ok &= nodes.model_mask((model,))
        if task.shares_gpu:
            ok &= self.fraction_ok
        candidates = np.flatnonzero(ok)
        if len(candidates) == 0:
            return None
        if len(candidates) == 1:
            node = int(candidates[0])
        else:
            score = self.placement.scores(task, candidates)
            best = np.flatnonzero(score == score.max())
            node = int(candidates[best[np.argmin(self.priority[candidates[best]])]])
        gpus = nodes.best_fit_gpus(task, node) if nodes.mig_node[node] else self.placement.gpus(task, node)
        self._choices[js.job.job_id] = _Choice(node, gpus, int(nodes.version[node]))
        return ((node, task.num_gpus),)

    # ------------------------------------------------------------------ taking and giving back
    def _fits_on(self, task: TaskRequest, node: int) -> bool:
        if task.shares_gpu and not self.fraction_ok[node]:
            return False
        return bool(self.nodes.fits(task)[node])

    def take(self, js: JobState, placement: Placement) -> None:
        """A plan starts the job on ``placement``: take its share now, provisionally (see module docstring).
        InvalidDecisionError when it does not fit there or spans nodes."""
        job_id = js.job.job_id
        if len(placement) != 1:
            raise InvalidDecisionError(f"job '{job_id}' is a task on one node; placement {placement} spans nodes")
        node = placement[0][0]
        task = self.requests[job_id]
        choice = self._choices.pop(job_id, None)
        nodes = self.nodes
        if choice is not None and choice.node == node and choice.version == int(nodes.version[node]):
            gpus = choice.gpus
        elif self._fits_on(task, node):
            gpus = nodes.best_fit_gpus(task, node) if nodes.mig_node[node] else self.placement.gpus(task, node)
        else:
            raise InvalidDecisionError(
                f"job '{job_id}' ({task.gpu_milli} milli-GPU x {task.num_gpus}, {task.cpu_milli} milli-CPU, "
                f"{task.memory_mib} MiB) does not fit on node {self.table.names[node]}"
            )
        self.provisional[job_id] = nodes.assign(task, node, gpus)

    def rebind(self, job_id: str, gpus: tuple[int, ...]) -> bool:
        """A running task holds other GPU slots of its node than the ledger chose: the cluster chose them (Slurm
        gives a task's shards from the first GPU with room, where the placement picked another); the books follow,
        so later choices see what really holds what. False, changing nothing, when the slots are the same, the task
        is on a MIG instance, or the slots cannot hold it (the books then disagree with the cluster elsewhere)."""
        held = self.assignments.get(job_id)
        if held is None or held.gpus == gpus or held.instances or job_id in self.unheld:
            return False
        task = self.requests[job_id]
        nodes = self.nodes
        nodes.release(task, held)
        free = nodes.gpu_free[held.node]
        slots = range(free.shape[0])
        fits = len(gpus) == len(held.gpus) and len(set(gpus)) == len(gpus) and all(
            g in slots and free[g] >= (task.gpu_milli if task.shares_gpu else FULL_GPU_MILLI) for g in gpus
        )
        self.assignments[job_id] = nodes.assign(task, held.node, gpus if fits else held.gpus)
        return fits

    def unhold(self, job_id: str) -> None:
        """A plan stops a running task: its share, CPU and memory are free at once for the plan's later starts,
        provisionally (see module docstring; a task on a MIG instance keeps it until the decision applies)."""
        held = self.assignments.get(job_id)
        if held is None or held.instances or job_id in self.unheld:
            return
        self.nodes.release(self.requests[job_id], held)
        self.unheld[job_id] = held

    def settle(self, starts: list[tuple[JobState, Placement]], stops: Sequence[str]) -> None:
        """Apply a decision's preemptions and starts: give back the stopped tasks' shares (but MIG instances, freed
        when the book vacates them), commit the provisional takes it names (taking the others now, checked) and give
        back the provisional takes it does not name. On an error every provisional take is given back and every
        share given back taken again."""
        stopping = set(stops)
        unnamed = next((job_id for job_id in self.unheld if job_id not in stopping), None)
        if unnamed is not None:
            self.rollback()
            raise InvalidDecisionError(f"the plan stopped job '{unnamed}', which the decision does not preempt")
        for job_id in stops:
            self.unhold(job_id)
        try:
            for js, placement in starts:
                job_id = js.job.job_id
                held = self.provisional.get(job_id)
                if held is None or held.node != placement[0][0] or len(placement) != 1:
                    if held is not None:
                        self.nodes.release(self.requests[job_id], self.provisional.pop(job_id))
                    self.take(js, placement)
        except InvalidDecisionError:
            self.rollback()
            raise
        named = {js.job.job_id for js, _ in starts}
        for job_id in [j for j in self.provisional if j not in named]:
            self.nodes.release(self.requests[job_id], self.provisional.pop(job_id))
        self._given_back.update(self.unheld)  # the book vacates them next (release)
        self.unheld.clear()
        self.assignments.update(self.provisional)
        self.provisional.clear()
        self._choices.clear()  # the plan's choices are spent (a later plan chooses anew)

    def rollback(self) -> None:
        """Give back every provisional take (a plan that was not applied), last taken first, then take back the
        shares of the tasks it stopped (on the GPU slots they held: the exact inverse, no MIG instance among them)."""
        for job_id in reversed(list(self.provisional)):
            self.nodes.release(self.requests[job_id], self.provisional.pop(job_id))
        for job_id, held in self.unheld.items():
            self.nodes.assign(self.requests[job_id], held.node, held.gpus)
        self.unheld.clear()
        self._choices.clear()

    def lose_node(self, index: int) -> None:
        """A node that left the cluster (its tasks were sent back): nothing fits there from now on."""
        nodes = self.nodes
        nodes.cpu_free[index] = -1  # below any request: fits() masks it out
        nodes.gpu_capacity_milli -= FULL_GPU_MILLI * int(nodes.has_gpu[index].sum())
        nodes.gpu_free[index] = NO_GPU  # its GPUs are gone: no share is free or idle there
        nodes.has_gpu[index] = False
        nodes.version[index] += 1

    def release(self, job_id: str) -> Assignment:
        """A running job leaves its GPUs: its share, CPU and memory are free again (given back already when an
        applied decision preempted it: :meth:`settle`)."""
        assignment = self.assignments.pop(job_id)
        if job_id in self._given_back:
            self._given_back.discard(job_id)
        else:
            self.nodes.release(self.requests[job_id], assignment)
        return assignment

    # ------------------------------------------------------------------ records
    def record(self, now: float) -> None:
        """The cluster's used share, fragment and fragment ratio now (one row per instant)."""
        nodes = self.nodes
        fragment = float(self.fragments.current().sum())
        idle = nodes.gpu_capacity_milli - nodes.gpu_used_milli
        row = (now, nodes.gpu_used_milli, fragment, round(100.0 * fragment / idle, 2) if idle > 0 else 0.0)
        series = self.series
        if series and series[-1][0] == now:
            series[-1] = row
        elif not series or series[-1][1:] != row[1:]:
            series.append(row)


def shared_run(
    nodes: list[Node], jobs: list[Job], policy: ClusterPolicy, placement: TaskPlacement
) -> tuple[ShareLedger, ShareRule]:
    """A shared run's ledger and the rule its policy places by (the simulator's and the live runtime's); InputError
    unless ``policy`` places through the run's rule (``places_tasks``), so the task placement can choose the nodes.
    Ties between nodes follow an order seeded with the policy's seed."""
    if not policy.places_tasks:
        from gpuweave.cluster.policies import POLICIES

        able = [name for name, entry in POLICIES.entries().items() if getattr(entry.impl, "places_tasks", False)]
        raise InputError(
            f"policy '{policy.name}' places jobs by its own rule, so task placement '{placement.name}' cannot choose "
            f"their nodes; with shared GPUs use one of: {', '.join(able)}",
            field="policy",
        )
    if policy.gpu_tasks_only:
        for job in jobs:
            if job.num_gpus == 0:
                raise InputError(
                    f"job '{job.job_id}' asks no GPU (a CPU-only task): policy '{policy.name}' allocates GPU time "
                    "only; replay such tasks with fifo, sjf, yarn-cs or tiresias, or drop them (trace convert "
                    "without --cpu-tasks)",
                    field="num_gpus",
                )
    ledger = ShareLedger(nodes, jobs, placement, policy.seed)
    return ledger, ShareRule(ledger)


def _fits_nowhere(
    empty: SharedNodes, fraction_ok: np.ndarray, task: TaskRequest, job_id: str, row: int | None
) -> InputError | None:
    """The error of a task no node of the empty cluster ``empty`` can hold (None: some node can)."""
    ok = empty.fits(task)
    if task.shares_gpu:
        ok &= fraction_ok
    if ok.any():
        return None
    return InputError(
        (f"job '{job_id}'" if job_id else "the job")
        + f" ({task.num_gpus} GPU(s) of {task.gpu_milli} milli, {task.cpu_milli} "
        f"milli-CPU, {task.memory_mib} MiB) fits on no node of the cluster"
        + (f" of the models it allows ({'+'.join(task.allowed_models)})" if task.allowed_models else "")
        + (" that shares GPUs" if task.shares_gpu else ""),
        row=row,
        field="gpu_milli" if task.shares_gpu else "num_gpus" if task.num_gpus else "cpu_milli",
    )


def task_fits_somewhere(nodes: list[Node], job: Job) -> InputError | None:
    """Why ``job``'s request fits on no node of an empty cluster of ``nodes`` (the service's admission check of a
    shared run's job), or None. O(nodes x GPU slots)."""
    whole = not any(n.sharing in ("fraction", "mig") for n in nodes)
    fraction_ok = np.array([n.sharing != "whole" for n in nodes], dtype=bool)
    return _fits_nowhere(SharedNodes(node_table_of(nodes)), fraction_ok, job_request(job, 0, whole=whole), "", None)


class ShareRule(PlacementRule):
    """The gang contract over a :class:`ShareLedger`: the node the run's task placement chooses (any model the job
    may use), or None. Only a :class:`~gpuweave.cluster.decision.Plan` of a shared run calls it."""

    name = "shares"

    def __init__(self, ledger: ShareLedger) -> None:
        self.ledger = ledger

    def place(self, capacity: FreeCapacity, js: JobState, model: str, *, allow_spread: bool = True) -> Placement | None:
        return self.ledger.choose(capacity.view, js)
