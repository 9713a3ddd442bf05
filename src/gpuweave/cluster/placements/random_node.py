"""FGD's Random baseline: a node drawn uniformly among those that can hold the task.

Source: FGD's simulator (hkust-adsl/kubernetes-scheduler-simulator@8f3d641), ``pkg/simulator/plugin/random_score.go``:
its pre-score draws one of the feasible nodes, which scores 100 and every other 0; with one feasible node nothing is
drawn. A fraction of a GPU goes to a GPU drawn uniformly among those with enough free share (the "random" GPU
selection the experiment scripts give this policy); whole GPUs to the lowest idle slots. O(candidates) per task.
"""

from __future__ import annotations

import numpy as np

from gpuweave.cluster.placements import TaskPlacement, register_placement
from gpuweave.cluster.sharing.state import TaskRequest


@register_placement("random")
class RandomNode(TaskPlacement):
    """FGD's Random: a uniformly drawn node that can hold the task; a fraction on a random fitting GPU."""

    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        score = np.zeros(len(candidates), dtype=np.int64)
        score[int(self.rng.integers(len(candidates)))] = 100
        return score

    def gpus(self, task: TaskRequest, node: int) -> tuple[int, ...]:
        if not task.shares_gpu:
            return super().gpus(task, node)
        fitting = self.nodes.fitting_gpus(task, node)
        return (fitting[int(self.rng.integers(len(fitting)))],)
