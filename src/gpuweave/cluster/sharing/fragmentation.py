"""FGD's fragmentation measure: how much of a node's idle GPU share the expected tasks could not use.

Problem (Weng et al., "Beware of Fragmentation", USENIX ATC'23, sec. 3-4; FGD's simulator, ``pkg/utils/frag.go``):
given the workload's *typical tasks* (the most common request shapes and their popularity), a node's fragment is
the popularity-weighted amount of its idle milli-GPUs that each typical task could not use there:

* a CPU-only typical task uses no GPU: all the node's idle GPU share counts;
* a task whose allowed models exclude the node's model, or that the node cannot hold (too few GPUs with its share
  free, or too little CPU): all of it counts;
* a task the node can hold: only the idle share on GPUs with less free than the task asks counts.

The cluster's fragment is the sum over nodes; its ratio is fragment / idle. Typical tasks (FGD's
``GetTypicalPods`` with CPU tasks involved and a 95 % popularity threshold): tasks keyed by (CPU, GPU share, GPU
count, allowed models), most frequent first (ties: the larger key first), taken until they cover 95 % of the tasks,
weights renormalised over those taken. Memory is not part of the measure, as in FGD.

Complexity: O(M x S x T) for M nodes of S GPU slots against T typical tasks, as a few numpy operations.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from gpuweave.cluster.sharing.state import SharedNodes
from gpuweave.workload.tasks import TaskTable

POPULARITY_THRESHOLD = 0.95  # FGD's typicalPodsConfig.podPopularityThreshold (95 %)


@dataclass(frozen=True, slots=True)
class TypicalTasks:
    """The typical tasks as arrays (one entry per shape) and, per shape, which node models it may use."""

    cpu_milli: np.ndarray
    gpu_milli: np.ndarray
    num_gpus: np.ndarray
    weight: np.ndarray
    # access[m, t]: shape t may run on model id m; the last row (model id -1, a CPU node) is never allowed
    access: np.ndarray

    def __len__(self) -> int:
        return len(self.weight)


def typical_tasks(tasks: TaskTable, models: tuple[str, ...], threshold: float = POPULARITY_THRESHOLD) -> TypicalTasks:
    """The typical tasks of ``tasks`` (see module docstring); ``models`` names the node model ids."""
    keys = Counter(
        (int(c), int(g), int(n), "|".join(a) if a else "")
        for c, g, n, a in zip(
            tasks.cpu_milli.tolist(), tasks.gpu_milli.tolist(), tasks.num_gpus.tolist(), tasks.allowed_models
        )
    )
    ordered = sorted(keys.items(), key=lambda item: (item[1], item[0]), reverse=True)
    total, covered, taken = len(tasks), 0, 0
    while taken < len(ordered) and covered < threshold * total:
        covered += ordered[taken][1]
        taken += 1
    chosen = ordered[:taken]
    access = np.zeros((len(models) + 1, taken), dtype=bool)
    for t, ((_, _, _, spec), _) in enumerate(chosen):
        allowed = set(spec.split("|")) if spec else None
        for m, model in enumerate(models):
            access[m, t] = allowed is None or model in allowed
    return TypicalTasks(
        cpu_milli=np.array([k[0] for k, _ in chosen], dtype=np.int64),
        gpu_milli=np.array([k[1] for k, _ in chosen], dtype=np.int64),
        num_gpus=np.array([k[2] for k, _ in chosen], dtype=np.int64),
        weight=np.array([count / covered for _, count in chosen], dtype=np.float64),
        access=access,
    )


def node_fragment(
    typical: TypicalTasks, cpu_free: np.ndarray, gpu_free: np.ndarray, model_id: np.ndarray
) -> np.ndarray:
    """Fragment (milli-GPUs) of each node given its free CPU, free milli per GPU slot (last axis; a missing slot is
    negative) and model id. ``cpu_free`` and ``model_id`` have the shape of ``gpu_free`` without its last axis (a
    node under several hypothetical placements: add an axis to all three).

    All typical tasks at once: a (..., T, S) comparison, then one weighted sum per node over a C-contiguous last
    axis, which numpy reduces row by row with the same pairwise order whatever the number of rows. So equal inputs
    give bit-equal fragments in any batch: FGD's score truncates a sigmoid of a difference, and "no change" must
    be exactly 0 (score 50), not a rounding error either side of it (``tests/cluster/test_sharing.py``)."""
    free = np.maximum(gpu_free, 0)[..., None, :]  # (..., 1, S)
    idle = free.sum(axis=-1)  # (..., 1)
    wants = typical.gpu_milli[:, None]  # (T, 1)
    fits_gpu = (free >= wants).sum(axis=-1) >= typical.num_gpus  # (..., T)
    holds = fits_gpu & (cpu_free[..., None] >= typical.cpu_milli) & typical.access[model_id]
    holds &= typical.gpu_milli > 0  # a CPU-only typical task can use none of the idle share
    too_small = np.where(free < wants, free, 0).sum(axis=-1)  # (..., T)
    lost = np.ascontiguousarray(np.where(holds, too_small, idle) * typical.weight)
    fragment: np.ndarray = lost.sum(axis=-1)
    return fragment


class NodeFragments:
    """Each node's fragment, kept current as nodes change: only nodes whose ``SharedNodes.version`` moved since the
    last call are recomputed (one per placed task in FGD's experiment)."""

    def __init__(self, typical: TypicalTasks, nodes: SharedNodes) -> None:
        self.typical = typical
        self.nodes = nodes
        self._fragment = node_fragment(typical, nodes.cpu_free, nodes.gpu_free, nodes.model_id)
        self._version = nodes.version.copy()

    def current(self) -> np.ndarray:
        """Fragment per node (milli-GPUs), read-only: the caller must not change it."""
        nodes = self.nodes
        stale = np.flatnonzero(self._version != nodes.version)
        if len(stale):
            self._fragment[stale] = node_fragment(
                self.typical, nodes.cpu_free[stale], nodes.gpu_free[stale], nodes.model_id[stale]
            )
            self._version[stale] = nodes.version[stale]
        return self._fragment
