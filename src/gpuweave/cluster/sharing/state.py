"""The free side of a cluster whose GPUs tasks may share: free CPU, memory and milli-GPUs per GPU, as arrays.

Problem: answer "which nodes can hold this task" and "what is left after it" for every node at once, so that
a placement scores the whole cluster with a few numpy operations per task instead of a Python loop over nodes.
Layout: ``gpu_free[node, slot]`` is the free milli-GPU of each GPU (1000 = idle); a node with fewer GPUs than the
widest node has its missing slots at :data:`NO_GPU` (-1), which no request fits and no sum counts.
A node whose GPUs run MIG (``NodeTable.mig``) gives each task a MIG instance instead of a share
(:mod:`.mig_slots`; a task naming a MIG profile gets that profile's slices, :mod:`.profiles`):
``mig_busy[node, slot]`` holds the slices of the GPU's running instances as a bit mask, ``gpu_free`` its free
compute slices in milli-GPUs (what the scores read), and the instance's slices are what the task holds. A task that
ends leaves its instance behind, idle (``mig_idle``, ``idle_instances``): the next task of that size reuses it at no
cost; one of another size is created on free slices, or, where idle instances block every place, after they are
destroyed (FAR's repartitioning of an idle part of the GPU), at the geometry's create and destroy times (FAR paper
Table 1, :class:`~gpuweave.hardware.mig.MigGeometry`), charged to the task as ``Assignment.reconfig_s``.
Complexity: a feasibility mask is O(nodes x slots) (plus O(MIG nodes x slots x placements of the size)); an
assignment is O(slots).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuweave.cluster.sharing.mig_slots import best_place, held_milli, layout_of, occupancy_mask
from gpuweave.errors import InputError
from gpuweave.hardware.mig import Placement
from gpuweave.hardware.node_resources import NodeTable
from gpuweave.workload.tasks import FULL_GPU_MILLI, TaskTable

NO_GPU = -1
# The largest node FGD's simulator scales CPU and GPU by in its scores (open-gpu-share/utils/const.go: MaxSpecCpu,
# MaxSpecGpu): 128 cores and 8 GPUs, whatever the node's own capacity.
MAX_SPEC_CPU_MILLI = 128_000.0
MAX_SPEC_GPU_MILLI = 8_000.0


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One task's request, as plain ints (the hot loop reads these, not the table's arrays)."""

    index: int
    cpu_milli: int
    memory_mib: int
    num_gpus: int
    gpu_milli: int
    allowed_models: tuple[str, ...] | None
    mig_slices: int = 0  # the compute slices of the MIG profile the task names (0: none; see mig_size)

    @property
    def shares_gpu(self) -> bool:
        """A fraction of one GPU (not a whole one, not CPU-only)."""
        return self.num_gpus == 1 and self.gpu_milli < FULL_GPU_MILLI

    @property
    def gpu_request_milli(self) -> int:
        return self.num_gpus * self.gpu_milli

    @property
    def kind(self) -> str:
        """What FGD's GpuClustering groups by: ``cpu``, ``share`` or ``<n>-gpu``."""
        if self.num_gpus == 0:
            return "cpu"
        return "share" if self.shares_gpu else f"{self.num_gpus}-gpu"


def task_request(tasks: TaskTable, row: int) -> TaskRequest:
    """Row ``row`` of a task table as plain ints."""
    return TaskRequest(
        row,
        int(tasks.cpu_milli[row]),
        int(tasks.memory_mib[row]),
        int(tasks.num_gpus[row]),
        int(tasks.gpu_milli[row]),
        tasks.allowed_models[row],
        tasks.mig_slices_of(row),
    )


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where a task went: the node, the GPU slots it holds (empty for a CPU-only task) and, on a MIG node, the
    instance it got on each of them."""

    node: int
    gpus: tuple[int, ...]
    instances: tuple[Placement, ...] = ()
    reconfig_s: float = 0.0  # MIG: seconds to destroy idle instances in the way and create this one (0: reused)


class SharedNodes:
    """Capacities (a :class:`NodeTable`) and the free resources left on each node (see module docstring)."""

    def __init__(self, table: NodeTable, *, max_tasks_per_node: int | None = None) -> None:
        self.table = table
        n = len(table)
        self.models: tuple[str, ...] = table.model_names
        model_ids = {m: i for i, m in enumerate(self.models)}
        self.model_id = np.array([model_ids.get(m, -1) for m in table.models], dtype=np.int64)
        width = max(1, int(table.num_gpus.max()) if n else 1)
        slots = np.arange(width)[None, :]
        self.has_gpu = slots < table.num_gpus[:, None]
        self.gpu_free = np.where(self.has_gpu, FULL_GPU_MILLI, NO_GPU).astype(np.int64)
        self.cpu_free = table.cpu_milli.astype(np.int64).copy()
        self.memory_free = table.memory_mib.astype(np.int64).copy()
        self.gpu_capacity_milli = int(table.num_gpus.sum()) * FULL_GPU_MILLI
        self.gpu_used_milli = 0
        self.tasks_on = np.zeros(n, dtype=np.int64)
        self.max_tasks_per_node = max_tasks_per_node
        # GPU tasks per node and kind (share, 1-gpu, 2-gpu, ...): a column per kind seen so far
        self.kinds: dict[str, int] = {}
        self.kind_counts = np.zeros((n, 0), dtype=np.int64)
        # bumped whenever a node's free resources change: caches keyed by node stay valid while it is unchanged
        self.version = np.zeros(n, dtype=np.int64)
        self._model_masks: dict[tuple[str, ...] | None, np.ndarray] = {}
        # MIG: which nodes run it, their GPUs' occupied slices, and the instances on each GPU
        self.mig_node = np.array(table.mig if table.mig is not None else [False] * n, dtype=bool)
        self.any_mig = bool(self.mig_node.any())
        self.mig_busy = np.zeros(self.gpu_free.shape, dtype=np.int64)
        self.instances: dict[tuple[int, int], list[Placement]] = {}
        self.instances_created = 0
        # instances whose task ended, kept for reuse (their slices as a mask, and the instances per GPU)
        self.mig_idle = np.zeros(self.gpu_free.shape, dtype=np.int64)
        self.idle_instances: dict[tuple[int, int], list[Placement]] = {}
        self.instances_destroyed = 0
        self.reconfig_seconds = 0.0
        # the MIG nodes of each model (one geometry each), found once: fits() reads them per task
        groups: dict[str, list[int]] = {}
        for i in np.flatnonzero(self.mig_node).tolist():
            groups.setdefault(table.models[i], []).append(i)
        self._mig_groups = {model: np.array(rows, dtype=np.int64) for model, rows in groups.items()}

    def __len__(self) -> int:
        return len(self.table)

    def model_mask(self, allowed: tuple[str, ...] | None) -> np.ndarray:
        """Nodes whose GPU model a constraint allows (every GPU node when None); cached per constraint."""
        mask = self._model_masks.get(allowed)
        if mask is None:
            if allowed is None:
                mask = self.model_id >= 0
            else:
                ids = [self.models.index(m) for m in allowed if m in self.models]
                mask = np.isin(self.model_id, ids)
            self._model_masks[allowed] = mask
        return mask

    def kind_column(self, kind: str) -> int:
        """The column of ``kind_counts`` for a task kind (added on first use)."""
        column = self.kinds.get(kind)
        if column is None:
            column = self.kinds[kind] = len(self.kinds)
            self.kind_counts = np.hstack([self.kind_counts, np.zeros((len(self), 1), dtype=np.int64)])
        return column

    def idle_milli(self) -> np.ndarray:
        """Free milli-GPUs per node (missing slots not counted)."""
        idle: np.ndarray = np.where(self.has_gpu, self.gpu_free, 0).sum(axis=1)
        return idle

    def fitting_gpus(self, task: TaskRequest, node: int) -> list[int]:
        """Slots of ``node`` with at least the task's share free."""
        return [slot for slot, free in enumerate(self.gpu_free[node].tolist()) if free >= task.gpu_milli]

    def best_fit_gpus(self, task: TaskRequest, node: int) -> tuple[int, ...]:
        """A fraction: the fitting GPU with the least free share (lowest slot on ties); whole GPUs: the lowest
        idle slots; a CPU-only task: none. On a MIG node: the GPU where the instance leaves the most room."""
        if task.num_gpus == 0:
            return ()
        if self.mig_node[node]:
            return self._mig_gpus(task, node)
        free = self.gpu_free[node].tolist()
        if task.shares_gpu:
            fitting = [slot for slot, f in enumerate(free) if f >= task.gpu_milli]
            return (min(fitting, key=lambda slot: (free[slot], slot)),)
        idle = [slot for slot, f in enumerate(free) if f == FULL_GPU_MILLI]
        return tuple(idle[: task.num_gpus])

    def fits(self, task: TaskRequest, model_ok: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask of nodes that can hold ``task`` now (CPU, memory, GPUs, model)."""
        ok = (self.cpu_free >= task.cpu_milli) & (self.memory_free >= task.memory_mib)
        if self.max_tasks_per_node is not None:
            ok &= self.tasks_on < self.max_tasks_per_node
        if task.num_gpus == 0:
            return ok
        ok &= self.model_mask(task.allowed_models) if model_ok is None else model_ok
        if task.shares_gpu:
            gpu_ok = (self.gpu_free >= task.gpu_milli).any(axis=1)
        else:
            gpu_ok = (self.gpu_free == FULL_GPU_MILLI).sum(axis=1) >= task.num_gpus
        if self.any_mig:
            gpu_ok = np.where(self.mig_node, self._mig_fits(task), gpu_ok)
        ok &= gpu_ok
        return ok

    # ----------------------------------------------------------------------- MIG
    def mig_size(self, task: TaskRequest, model: str) -> int | None:
        """The instance size a GPU task needs on a MIG GPU of ``model``: its MIG profile's slices when it names one
        (None where the geometry has no such size), else the smallest covering its share (the full GPU for whole
        GPUs)."""
        layout = layout_of(model)
        if task.mig_slices:
            return task.mig_slices if task.mig_slices in layout.by_size else None
        return layout.size_for(task.gpu_milli) if task.shares_gpu else layout.num_slices

    def _mig_fits(self, task: TaskRequest) -> np.ndarray:
        """Per node: a MIG node has room for the task's instance(s) (False on other nodes)."""
        fits = np.zeros(len(self), dtype=bool)
        for model, nodes in self._mig_groups.items():
            size = self.mig_size(task, model)
            if size is None:
                continue
            busy, real = self.mig_busy[nodes], self.has_gpu[nodes]
            free_slot = np.zeros(busy.shape, dtype=bool)
            for _, mask in layout_of(model).by_size.get(size, ()):
                free_slot |= (busy & mask) == 0
            free_slot &= real
            fits[nodes] = free_slot.any(axis=1) if task.shares_gpu else free_slot.sum(axis=1) >= task.num_gpus
        return fits

    def _mig_gpus(self, task: TaskRequest, node: int) -> tuple[int, ...]:
        model = self.table.models[node]
        size = self.mig_size(task, model)
        assert size is not None  # fits() said the node can hold it
        real = int(self.table.num_gpus[node])
        busy = self.mig_busy[node, :real].tolist()
        if not task.shares_gpu:  # whole GPUs: the lowest GPUs with nothing running on them
            return tuple([slot for slot, b in enumerate(busy) if b == 0][: task.num_gpus])
        reusable = [slot for slot in range(real) if self._idle_of_size(node, slot, size)]
        if reusable:  # an idle instance of the size: no reconfiguration (the fullest such GPU, then the lowest)
            return (max(reusable, key=lambda slot: (bin(busy[slot]).count("1"), -slot)),)
        both = [b | i for b, i in zip(busy, self.mig_idle[node, :real].tolist())]
        chosen = best_place(model, both, size) or best_place(model, busy, size)  # free slices, else idle ones
        assert chosen is not None
        return (chosen[0],)

    def _idle_of_size(self, node: int, slot: int, size: int) -> list[Placement]:
        return [p for p in self.idle_instances.get((node, slot), ()) if p.size == size]

    def _take_instance(self, task: TaskRequest, node: int, slot: int) -> tuple[Placement, float]:
        """The task's instance on one GPU of a MIG node and the seconds its reconfiguration takes: an idle instance of
        the size (0 s), else a new one where it leaves the most room, on free slices if it can, else on slices of idle
        instances, which are destroyed first (module docstring)."""
        model = self.table.models[node]
        size = self.mig_size(task, model)
        assert size is not None
        key = (node, slot)
        same = self._idle_of_size(node, slot, size)
        seconds = 0.0
        if same:
            placement = min(same, key=lambda p: p.start)
            mask = self._drop_idle(key, [placement])
        else:
            busy, idle = int(self.mig_busy[node, slot]), int(self.mig_idle[node, slot])
            chosen = best_place(model, [busy | idle], size) or best_place(model, [busy], size)
            assert chosen is not None  # the caller picked a slot with room
            _, placement, mask = chosen
            geometry = layout_of(model).geometry
            in_the_way = [p for p in self.idle_instances.get(key, ()) if occupancy_mask(p) & mask]
            self._drop_idle(key, in_the_way)
            self.instances_destroyed += len(in_the_way)
            seconds = sum(geometry.destroy_time(p.size) for p in in_the_way) + geometry.create_time(size)
            self.instances_created += 1
        self.mig_busy[node, slot] |= mask
        self.instances.setdefault(key, []).append(placement)
        self.reconfig_seconds += seconds
        self._set_mig_free(node, slot)
        return placement, seconds

    def _drop_idle(self, key: tuple[int, int], gone: list[Placement]) -> int:
        """Take idle instances off a GPU's idle list (reused or destroyed); returns the last one's mask."""
        mask = 0
        for placement in gone:
            self.idle_instances[key].remove(placement)
            mask = occupancy_mask(placement)
            self.mig_idle[key] &= ~mask
        return mask

    def _set_mig_free(self, node: int, slot: int) -> None:
        """A MIG GPU's free share: its slices no instance computes on, in milli-GPUs (what the scores read)."""
        k = layout_of(self.table.models[node]).num_slices
        held = sum(p.size for p in self.instances.get((node, slot), ()))
        before = int(self.gpu_free[node, slot])
        after = FULL_GPU_MILLI - held_milli(held, k)
        self.gpu_free[node, slot] = after
        self.gpu_used_milli += before - after

    def assign(self, task: TaskRequest, node: int, gpus: tuple[int, ...]) -> Assignment:
        """Take the task's resources on ``node`` (GPU slots ``gpus``); the caller checked it fits."""
        self.cpu_free[node] -= task.cpu_milli
        self.memory_free[node] -= task.memory_mib
        instances: tuple[Placement, ...] = ()
        reconfig_s = 0.0
        if self.mig_node[node]:
            taken = [self._take_instance(task, node, slot) for slot in gpus]
            instances = tuple(placement for placement, _ in taken)
            reconfig_s = sum(seconds for _, seconds in taken)  # the driver runs MIG operations one at a time
        else:
            for slot in gpus:
                self.gpu_free[node, slot] -= task.gpu_milli
            self.gpu_used_milli += task.gpu_milli * len(gpus)
        self.tasks_on[node] += 1
        if task.num_gpus:
            column = self.kind_column(task.kind)  # may widen kind_counts: read it after
            self.kind_counts[node, column] += 1
        self.version[node] += 1
        return Assignment(node, gpus, instances, reconfig_s)

    def release(self, task: TaskRequest, assignment: Assignment) -> None:
        """Give back what :meth:`assign` took."""
        node = assignment.node
        self.cpu_free[node] += task.cpu_milli
        self.memory_free[node] += task.memory_mib
        if assignment.instances:  # each instance stays, idle, for the next task of its size (module docstring)
            for slot, placement in zip(assignment.gpus, assignment.instances):
                self.instances[(node, slot)].remove(placement)
                mask = occupancy_mask(placement)
                self.mig_busy[node, slot] &= ~mask
                self.mig_idle[node, slot] |= mask
                self.idle_instances.setdefault((node, slot), []).append(placement)
                self._set_mig_free(node, slot)
        else:
            for slot in assignment.gpus:
                self.gpu_free[node, slot] += task.gpu_milli
            self.gpu_used_milli -= task.gpu_milli * len(assignment.gpus)
        self.tasks_on[node] -= 1
        if task.num_gpus:
            column = self.kind_column(task.kind)
            self.kind_counts[node, column] -= 1
        self.version[node] += 1


def check_tasks_fit(nodes: NodeTable, tasks: TaskTable) -> None:
    """InputError naming the first task (file, row, field) that no node of the cluster could ever hold: none of
    its allowed models on any node, or more CPU, memory or GPUs than the largest node has. (A task that fits
    some node but none of its allowed models, as openb's own data has a few, is not an error: it fails to be
    placed, as in FGD's simulator.) Checked once per distinct request shape, before any work."""

    table = SharedNodes(nodes)
    seen: set[tuple[int, int, int, tuple[str, ...] | None]] = set()
    for i in range(len(tasks)):
        task = task_request(tasks, i)
        shape = (task.cpu_milli, task.memory_mib, task.num_gpus, task.allowed_models)
        if shape in seen:
            continue
        seen.add(shape)
        file, row = tasks.source or None, tasks.row_of(i)
        eligible = table.model_mask(task.allowed_models) if task.num_gpus else np.ones(len(nodes), dtype=bool)
        if not eligible.any():
            known = ", ".join(table.models)
            raise InputError(
                f"no node has a GPU model this task allows ({'|'.join(task.allowed_models or ())}; nodes: {known})",
                file=file,
                row=row,
                field="gpu_spec",
            )
        for field, need, have in (
            ("num_gpu", task.num_gpus, nodes.num_gpus),
            ("cpu_milli", task.cpu_milli, nodes.cpu_milli),
            ("memory_mib", task.memory_mib, nodes.memory_mib),
        ):
            if need > int(have.max()):
                raise InputError(
                    f"the task asks {need} but the largest node of the cluster has {int(have.max())}",
                    file=file,
                    row=row,
                    field=field,
                )
