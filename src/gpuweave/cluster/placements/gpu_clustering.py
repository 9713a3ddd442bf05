"""FGD's GpuClustering baseline: put tasks of one kind together (fractions with fractions, 2-GPU with 2-GPU...).

Source: FGD's simulator (hkust-adsl/kubernetes-scheduler-simulator@8f3d641), ``pkg/simulator/plugin/
gpu_clustering_score.go``. A task's kind is ``share`` (a fraction of one GPU) or ``<n>-gpu``; a node's kinds are
those of the GPU tasks on it. Score = floor(25 x (8000 - idle milli-GPUs) / 8000) plus 75 if the node holds only
this kind, 50 if this kind and others, 25 if no GPU task, 0 if only other kinds. A CPU-only task scores 0
everywhere (the priority order decides). GPUs within the node: best fit. O(candidates x kinds) per task.
"""

from __future__ import annotations

import numpy as np

from gpuweave.cluster.placements import TaskPlacement, register_placement
from gpuweave.cluster.sharing.state import MAX_SPEC_GPU_MILLI, TaskRequest


@register_placement("gpu-clustering")
class GpuClustering(TaskPlacement):
    """FGD's GpuClustering: prefer nodes that hold only tasks of the same kind (share or n-GPU)."""

    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        if task.num_gpus == 0:
            return np.zeros(len(candidates), dtype=np.int64)
        nodes = self.nodes
        column = nodes.kind_column(task.kind)
        present = nodes.kind_counts[candidates] > 0
        kinds = present.sum(axis=1)
        same = present[:, column]
        bonus = np.where(same, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        spec = int(MAX_SPEC_GPU_MILLI)
        base = 25 * (spec - nodes.idle_milli()[candidates]) // spec
        score: np.ndarray = (base + bonus).astype(np.int64)
        return score
