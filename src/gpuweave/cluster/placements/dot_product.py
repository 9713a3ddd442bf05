"""FGD's DotProd baseline: the node whose free resources align least with the task's request.

Source: FGD's simulator (hkust-adsl/kubernetes-scheduler-simulator@8f3d641), ``pkg/simulator/plugin/
dot_product_score.go`` with the experiment's settings (GPU dimension merged, normalised by the largest node): free
vector (CPU left / 128 cores, idle milli-GPUs / 8 GPUs), request vector (CPU / 128 cores, milli-GPUs / 8 GPUs);
score = int(100 x (1 - dot / 2)), before placement, no rescaling. So it favours the node with the least free
resources weighted by what the task asks. GPUs within the node: best fit. O(candidates) per task.
"""

from __future__ import annotations

import numpy as np

from gpuweave.cluster.placements import TaskPlacement, register_placement
from gpuweave.cluster.sharing.state import MAX_SPEC_CPU_MILLI, MAX_SPEC_GPU_MILLI, TaskRequest


@register_placement("dotprod")
class DotProduct(TaskPlacement):
    """FGD's DotProd: the node with the smallest dot product of its free resources and the task's request."""

    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        nodes = self.nodes
        cpu_left = nodes.cpu_free[candidates] / MAX_SPEC_CPU_MILLI
        idle = nodes.idle_milli()[candidates] / MAX_SPEC_GPU_MILLI
        dot = cpu_left * (task.cpu_milli / MAX_SPEC_CPU_MILLI) + idle * (task.gpu_request_milli / MAX_SPEC_GPU_MILLI)
        score: np.ndarray = (100.0 * (1.0 - dot / 2.0)).astype(np.int64)  # truncated toward zero, as Go's int64()
        return score
