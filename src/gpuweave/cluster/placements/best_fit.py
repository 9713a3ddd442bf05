"""FGD's BestFit baseline: the node left with the least free CPU and GPU after the task.

Source: FGD's simulator (hkust-adsl/kubernetes-scheduler-simulator@8f3d641), ``pkg/simulator/plugin/
best_fit_score.go``: x = (CPU left - CPU asked) / 128 cores x 0.5 + (idle milli-GPUs - milli-GPUs asked) / 8 GPUs x
0.5, score = int((1 - x) x 100). Its min-max rescale to 0..100 keeps the order of integer scores that span at most
100, so it cannot change the choice and is left out. Memory is not scored. GPUs within the node: best fit.
O(candidates) per task.
"""

from __future__ import annotations

import numpy as np

from gpuweave.cluster.placements import TaskPlacement, register_placement
from gpuweave.cluster.sharing.state import MAX_SPEC_CPU_MILLI, MAX_SPEC_GPU_MILLI, TaskRequest


@register_placement("best-fit")
class BestFit(TaskPlacement):
    """FGD's BestFit: the node with the least CPU and GPU left after the task (equal weights)."""

    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        nodes = self.nodes
        cpu_left = (nodes.cpu_free[candidates] - task.cpu_milli) / MAX_SPEC_CPU_MILLI * 0.5
        gpu_left = (nodes.idle_milli()[candidates] - task.gpu_request_milli) / MAX_SPEC_GPU_MILLI * 0.5
        # the same float operations in the same order as FGD's Go code: truncation ties depend on them
        score: np.ndarray = ((1.0 - (cpu_left + gpu_left)) * 100.0).astype(np.int64)
        return score
