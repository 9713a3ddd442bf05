"""Nodes with every resource a placement on shared GPUs needs: CPU, memory and GPUs of one model.

A :class:`NodeTable` is the static side (capacities), one row per node; the free side lives with whoever places
(:mod:`gpuweave.cluster.sharing.state`). GPU model names are kept as the source spells them, so a task's
allowed-model list (openb's ``gpu_spec``) and the nodes' models match exactly (openb's ``V100M16`` and
``V100M32`` are different constraints, and ``G1``..``G3`` are models of their own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_gpu

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import ClusterSpec, Node


@dataclass(frozen=True, slots=True)
class NodeTable:
    """Capacities per node (integer arrays of equal length) and each node's GPU model (empty for a CPU node)."""

    names: tuple[str, ...]
    models: tuple[str, ...]
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpus: np.ndarray
    source: str = ""
    mig: tuple[bool, ...] | None = None  # per node: its GPUs run MIG (None: no node does)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpus(self) -> int:
        return int(self.num_gpus.sum())

    @property
    def model_names(self) -> tuple[str, ...]:
        """The distinct GPU models, sorted (CPU nodes' empty model left out)."""
        return tuple(sorted({m for m in self.models if m}))


UNSTATED_CPU_MILLI = 128_000  # a node without cpu_milli: 128 cores, the largest node FGD's scores scale by
UNSTATED_MEMORY_MIB = 1 << 20  # a node without memory_mib: 1 TiB


def node_table_from_spec(spec: ClusterSpec, *, mig: bool = False) -> NodeTable:
    """One row per node of a cluster spec (canonical model names; a group without ``cpu_milli``/``memory_mib`` gets
    :data:`UNSTATED_CPU_MILLI`/:data:`UNSTATED_MEMORY_MIB`). ``mig``: every node's GPUs run MIG (InputError
    naming a model that cannot); otherwise the groups with ``sharing: mig`` do."""
    nodes = spec.expand()
    if mig:
        lacking = sorted({n.gpu_model for n in nodes if not get_gpu(n.gpu_model).mig_capable})
        if lacking:
            raise InputError(f"MIG on every node needs MIG-capable GPUs; {', '.join(lacking)} are not", field="sharing")
    return node_table_of(nodes, source=spec.name, mig=mig)


def node_table_of(nodes: list[Node], *, source: str = "", mig: bool = False) -> NodeTable:
    """Expanded cluster nodes as a table (the defaults of :func:`node_table_from_spec` for unstated CPU and memory);
    ``mig``: every node runs MIG, else the ``sharing: mig`` ones do (the caller checked the GPUs can)."""
    runs_mig = tuple(mig or n.sharing == "mig" for n in nodes)
    return NodeTable(
        names=tuple(n.name for n in nodes),
        models=tuple(n.gpu_model for n in nodes),
        cpu_milli=np.array([n.cpu_milli or UNSTATED_CPU_MILLI for n in nodes], dtype=np.int64),
        memory_mib=np.array([n.memory_mib or UNSTATED_MEMORY_MIB for n in nodes], dtype=np.int64),
        num_gpus=np.array([n.num_gpus for n in nodes], dtype=np.int64),
        source=source,
        mig=runs_mig if any(runs_mig) else None,
    )
