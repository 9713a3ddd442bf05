"""FGD's GpuPacking baseline: fill partly used GPUs first, then partly used nodes, then idle nodes.

Source: FGD's simulator (hkust-adsl/kubernetes-scheduler-simulator@8f3d641), ``pkg/simulator/plugin/
gpu_packing_score.go``. For a GPU task on a node with F idle GPUs: all of the node's GPUs idle -> max(33 - F, F);
else the GPUs the task would take, walking the node's GPUs from least to most free among those with enough free
share: if u > 0 of them are idle -> max(50 - u, 33), else max(100 - floor(sum of floor(free x 100 / 1000) / 10),
50). A CPU-only task scores 0 everywhere. Whole-GPU tasks always take idle GPUs (u = their count); a fraction takes
the least-free fitting GPU. GPUs within the node: best fit. O(candidates x GPU slots) per task.
"""

from __future__ import annotations

import numpy as np

from gpuweave.cluster.placements import TaskPlacement, register_placement
from gpuweave.cluster.sharing.state import TaskRequest
from gpuweave.workload.tasks import FULL_GPU_MILLI


@register_placement("gpu-packing")
class GpuPacking(TaskPlacement):
    """FGD's GpuPacking: partly used GPUs first, then nodes with some idle GPUs, then idle nodes."""

    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        if task.num_gpus == 0:
            return np.zeros(len(candidates), dtype=np.int64)
        nodes = self.nodes
        free = nodes.gpu_free[candidates]
        idle = (free == FULL_GPU_MILLI).sum(axis=1)
        all_idle = idle == nodes.table.num_gpus[candidates]
        if task.shares_gpu:
            taken = np.where(free >= task.gpu_milli, free, FULL_GPU_MILLI + 1).min(axis=1)
            uses_idle = taken == FULL_GPU_MILLI
            partial = np.maximum(100 - (taken * 100 // FULL_GPU_MILLI) // 10, 50)
            score = np.where(uses_idle, max(50 - 1, 33), partial)
        else:  # whole GPUs: every GPU taken is idle
            score = np.full(len(candidates), max(50 - task.num_gpus, 33), dtype=np.int64)
        return np.where(all_idle, np.maximum(33 - idle, idle), score).astype(np.int64)
