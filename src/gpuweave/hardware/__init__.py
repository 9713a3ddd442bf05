"""Hardware as data: the GPU catalog (``gpus.toml``), MIG geometry and cluster specs.

* :mod:`gpuweave.hardware.catalog` -- :class:`GpuModel`, :func:`get_gpu`, :func:`all_gpus`.
* :mod:`gpuweave.hardware.mig` -- :class:`MigGeometry`, :class:`Placement`, :func:`partitions`,
  :func:`repartition_tree`, :func:`is_valid_partition` (FAR paper Sec. 1.2 / 3.2).
* :mod:`gpuweave.hardware.cluster_spec` -- :class:`ClusterSpec`, :class:`Node`,
  :func:`load_cluster`, :func:`make_cluster`, :func:`bundled_clusters`.

Names are exported lazily (PEP 562): ``import gpuweave.cli.gpus`` (done for ``gpuweave --help``)
does not load pydantic or YAML until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "catalog": (
        "CANONICAL_NAMES",
        "GpuModel",
        "all_gpus",
        "canonical_gpu_name",
        "get_gpu",
        "get_mig_geometry",
        "gpu_from_nvml_name",
        "mig_geometries",
    ),
    "cluster_spec": ("ClusterSpec", "Node", "NodeGroup", "bundled_clusters", "load_cluster", "make_cluster"),
    "mig": (
        "MigGeometry",
        "Placement",
        "TreeNode",
        "get_partition",
        "is_valid_partition",
        "partition_label",
        "partitions",
        "repartition_tree",
    ),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:
    from gpuweave.hardware.catalog import (
        CANONICAL_NAMES,
        GpuModel,
        all_gpus,
        canonical_gpu_name,
        get_gpu,
        get_mig_geometry,
        gpu_from_nvml_name,
        mig_geometries,
    )
    from gpuweave.hardware.cluster_spec import (
        ClusterSpec,
        Node,
        NodeGroup,
        bundled_clusters,
        load_cluster,
        make_cluster,
    )
    from gpuweave.hardware.mig import (
        MigGeometry,
        Placement,
        TreeNode,
        get_partition,
        is_valid_partition,
        partition_label,
        partitions,
        repartition_tree,
    )


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'gpuweave.hardware' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gpuweave.hardware.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_WHERE))


__all__ = [
    "CANONICAL_NAMES",
    "ClusterSpec",
    "GpuModel",
    "MigGeometry",
    "Node",
    "NodeGroup",
    "Placement",
    "TreeNode",
    "all_gpus",
    "bundled_clusters",
    "canonical_gpu_name",
    "get_gpu",
    "get_mig_geometry",
    "get_partition",
    "gpu_from_nvml_name",
    "is_valid_partition",
    "load_cluster",
    "make_cluster",
    "mig_geometries",
    "partition_label",
    "partitions",
    "repartition_tree",
]
