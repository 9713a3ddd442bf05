"""FGD (Fragmentation Gradient Descent): the node, and for a fraction the GPU, whose fragment grows least.

Source: Weng et al., "Beware of Fragmentation", USENIX ATC'23, sec. 4 (Alg. 1); FGD's simulator
(hkust-adsl/kubernetes-scheduler-simulator@8f3d641), ``pkg/simulator/plugin/fgd_score.go``. F is FGD's fragment of
a node against the workload's typical tasks (:mod:`gpuweave.cluster.sharing.fragmentation`). For a fraction of a GPU,
every GPU with enough free share is tried: score_k = int(100 x sigmoid((F_before - F_after_k) / 1000)); the node's
score is the best, its GPU the first slot reaching that integer. Any other task: the hypothetical node without the
task's CPU and with its share taken from the lowest idle GPUs (CPU-only: CPU alone). No rescaling.

Speed: a node's score for a task shape (CPU, share, GPU count) changes only when the node changes, so scores are
kept per shape and recomputed only for the nodes placed on since the shape was last scored (``SharedNodes.version``):
O(changed nodes x GPU slots^2 x typical tasks) per task instead of O(all nodes x ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuweave.cluster.placements import TaskPlacement, register_placement
from gpuweave.cluster.sharing.fragmentation import NodeFragments, TypicalTasks, node_fragment
from gpuweave.cluster.sharing.state import SharedNodes, TaskRequest
from gpuweave.workload.tasks import FULL_GPU_MILLI

NO_SCORE = -1


@dataclass(slots=True)
class _ShapeScores:
    """Per node: the score of one task shape, its GPU slot (fractions) and the node version they were made at."""

    score: np.ndarray
    gpu: np.ndarray
    version: np.ndarray


def _scaled_sigmoid(difference: np.ndarray) -> np.ndarray:
    """int(100 x sigmoid(difference / 1000)), truncated toward zero as Go's int64() does."""
    return (1.0 / (1.0 + np.exp(-(difference / 1000.0))) * 100.0).astype(np.int64)


@register_placement("fgd")
class FragmentationGradientDescent(TaskPlacement):
    """FGD (ATC'23): the node and GPU that increase the cluster's fragmentation least."""

    typical: TypicalTasks

    def bind(self, nodes: SharedNodes, fragments: NodeFragments, rng: np.random.Generator) -> None:
        super().bind(nodes, fragments, rng)
        self.typical = fragments.typical
        self._shapes: dict[tuple[int, int, int], _ShapeScores] = {}

    def _fresh(self, task: TaskRequest, among: np.ndarray) -> _ShapeScores:
        """The task shape's scores, made current for the nodes ``among``."""
        nodes = self.nodes
        key = (task.cpu_milli, task.gpu_milli, task.num_gpus)
        entry = self._shapes.get(key)
        if entry is None:
            n = len(nodes)
            entry = self._shapes[key] = _ShapeScores(
                np.full(n, NO_SCORE, dtype=np.int64), np.full(n, NO_SCORE, dtype=np.int64), np.full(n, -1)
            )
        stale = among[entry.version[among] != nodes.version[among]]
        if len(stale):
            score, gpu = self._score_nodes(task, stale)
            entry.score[stale] = score
            entry.gpu[stale] = gpu
            entry.version[stale] = nodes.version[stale]
        return entry

    def _score_nodes(self, task: TaskRequest, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nodes = self.nodes
        before = self.fragments.current()[where]
        cpu_after = nodes.cpu_free[where] - task.cpu_milli
        free = nodes.gpu_free[where]
        model = nodes.model_id[where]
        if task.shares_gpu:
            slots = free.shape[1]
            options = free[:, None, :] - task.gpu_milli * np.eye(slots, dtype=np.int64)[None, :, :]
            after = node_fragment(
                self.typical,
                np.broadcast_to(cpu_after[:, None], (len(where), slots)),
                options,
                np.broadcast_to(model[:, None], (len(where), slots)),
            )
            score = np.where(free >= task.gpu_milli, _scaled_sigmoid(before[:, None] - after), NO_SCORE)
            best = score.argmax(axis=1)  # the first slot reaching the best integer score
            return score[np.arange(len(where)), best], best
        taken = free.copy()
        if task.num_gpus:
            idle = taken == FULL_GPU_MILLI
            first_idle = idle & (np.cumsum(idle, axis=1) <= task.num_gpus)
            taken[first_idle] -= task.gpu_milli
        after = node_fragment(self.typical, cpu_after, taken, model)
        return _scaled_sigmoid(before - after), np.full(len(where), NO_SCORE, dtype=np.int64)

    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        score: np.ndarray = self._fresh(task, candidates).score[candidates]
        return score

    def gpus(self, task: TaskRequest, node: int) -> tuple[int, ...]:
        if not task.shares_gpu:
            return super().gpus(task, node)
        return (int(self._fresh(task, np.array([node])).gpu[node]),)
