"""Nodes with every resource a placement on shared GPUs needs: CPU, memory and GPUs of one model.

A :class:`NodeTable` is the static side (capacities), one row per node; the free side lives with whoever places
(:mod:`gpuweave.cluster.sharing.state`). GPU model names are kept as the source spells them, so a task's
allowed-model list (openb's ``gpu_spec``) and the nodes' models match exactly (openb's ``V100M16`` and
``V100M32`` are different constraints, and ``G1``..``G3`` are models of their own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class NodeTable:
    """Capacities per node (integer arrays of equal length) and each node's GPU model (empty for a CPU node)."""

    names: tuple[str, ...]
    models: tuple[str, ...]
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpus: np.ndarray
    source: str = ""

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpus(self) -> int:
        return int(self.num_gpus.sum())

    @property
    def model_names(self) -> tuple[str, ...]:
        """The distinct GPU models, sorted (CPU nodes' empty model left out)."""
        return tuple(sorted({m for m in self.models if m}))
