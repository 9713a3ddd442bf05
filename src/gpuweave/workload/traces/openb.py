"""openb (Alibaba, FGD ATC'23) at the grain of resources: pod lists as :class:`~gpuweave.workload.tasks.TaskTable`
and node lists as :class:`~gpuweave.hardware.node_resources.NodeTable`, every task kept (CPU-only ones too).

Problem: FGD's experiment and the GPU-sharing placements need each pod's CPU, memory, GPU count, GPU share and
allowed models, and each node's CPU, memory, GPU count and model, exactly as the files state them (model names not
canonicalised: a constraint ``V100M32`` must not match a ``V100M16`` node). Complexity: O(rows).

Pod lists (``openb_pod_list_*.csv``): ``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` required; ``gpu_spec``
(models joined by ``|``, empty = any) optional; times are not read here. Rules, one line and the row on a breach:
``gpu_milli`` in 1..1000 for a GPU task and 0 for a CPU-only one; a share below 1000 only on a 1-GPU task.
Not in openb's own files, for hand-made pod lists: ``mig_profile`` (NVIDIA's ``3g.20gb``, empty = none; rules in
:mod:`.mig_column`: one GPU, ``gpu_milli`` the profile's share or empty).
Node lists (``openb_node_list_*.csv``): ``sn, cpu_milli, memory_mib, gpu, model``; a node with GPUs needs a model;
``gpu`` at most 1,024 (:data:`gpuweave.checks.MAX_GPUS_PER_NODE`, as a cluster spec).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpuweave.checks import GPUS, MAX_GPUS_PER_NODE
from gpuweave.errors import InputError
from gpuweave.hardware.node_resources import NodeTable
from gpuweave.workload.tasks import FULL_GPU_MILLI, TaskTable
from gpuweave.workload.traces._tables import ROW, numeric_column, read_csv_strings, require_columns
from gpuweave.workload.traces.mig_column import read_pod_shares

TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
MAX_CPU_MILLI = 10**9  # a million cores: a typo guard, not a physical claim
MAX_MEMORY_MIB = 10**12


def _first_bad(raw, mask: np.ndarray, file: Path, field: str, message: str) -> None:
    if mask.any():
        position = int(np.flatnonzero(mask)[0])
        raise InputError(message, file=file, row=int(raw[ROW].iloc[position]), field=field)


def read_openb_tasks(path: str | Path) -> TaskTable:
    """Every pod of an openb pod list as a task (see module docstring for the columns and rules)."""
    file = Path(path)
    raw = read_csv_strings(file, what="pods")
    require_columns(raw, TASK_COLUMNS, file=file, what="an openb pod list")
    cpu = numeric_column(
        raw, "cpu_milli", file=file, unit="milli-CPU", integer=True, minimum=0.0, maximum=MAX_CPU_MILLI
    )
    memory = numeric_column(raw, "memory_mib", file=file, unit="MiB", integer=True, minimum=0.0, maximum=MAX_MEMORY_MIB)
    gpus = numeric_column(raw, "num_gpu", file=file, unit="GPUs", integer=True, minimum=0.0, maximum=GPUS.hi)
    num_gpus = gpus.to_numpy().astype(np.int64)
    profiles, profile_index, milli_values = read_pod_shares(raw, file=file, num_gpus=num_gpus)
    gpu_milli = milli_values.astype(np.int64)
    gpu_task = num_gpus > 0
    _first_bad(
        raw,
        gpu_task & ((gpu_milli < 1) | (gpu_milli > FULL_GPU_MILLI)),
        file,
        "gpu_milli",
        "a GPU task's share must be 1..1000 milli-GPU (1000 = a whole GPU)",
    )
    _first_bad(raw, ~gpu_task & (gpu_milli != 0), file, "gpu_milli", "a task with num_gpu 0 must have gpu_milli 0")
    _first_bad(
        raw,
        (num_gpus > 1) & (gpu_milli != FULL_GPU_MILLI),
        file,
        "gpu_milli",
        "a fraction of a GPU (gpu_milli < 1000) is for 1-GPU tasks only",
    )
    allowed: list[tuple[str, ...] | None] = [None] * len(raw)
    if "gpu_spec" in raw.columns:
        shared: dict[str, tuple[str, ...] | None] = {}
        for i, cell in enumerate(raw["gpu_spec"].tolist()):
            text = str(cell).strip()
            if text not in shared:
                models = tuple(sorted({m.strip() for m in text.split("|") if m.strip()}))
                shared[text] = models or None
            allowed[i] = shared[text]
    return TaskTable(
        names=tuple(str(n).strip() for n in raw["name"].tolist()),
        cpu_milli=cpu.to_numpy().astype(np.int64),
        memory_mib=memory.to_numpy().astype(np.int64),
        num_gpus=num_gpus,
        gpu_milli=gpu_milli,
        allowed_models=tuple(allowed),
        source=str(file),
        rows=raw[ROW].to_numpy().astype(np.int64),
        mig_profiles=profiles,
        mig_profile=profile_index,
    )


def read_openb_node_table(path: str | Path) -> NodeTable:
    """Every node of an openb node list with its capacities (CPU nodes kept, model empty)."""
    file = Path(path)
    raw = read_csv_strings(file, limit_name="cluster_gpus", what="nodes")
    require_columns(raw, NODE_COLUMNS, file=file, what="an openb node list")
    cpu = numeric_column(
        raw, "cpu_milli", file=file, unit="milli-CPU", integer=True, minimum=0.0, maximum=MAX_CPU_MILLI
    )
    memory = numeric_column(raw, "memory_mib", file=file, unit="MiB", integer=True, minimum=0.0, maximum=MAX_MEMORY_MIB)
    # a node's GPUs: at most a cluster spec's per node (FGD's placement is O(GPUs^2) per node: 10^5 took all memory)
    gpus = numeric_column(raw, "gpu", file=file, unit="GPUs", integer=True, minimum=0.0, maximum=MAX_GPUS_PER_NODE)
    num_gpus = gpus.to_numpy().astype(np.int64)
    models = [str(m).strip() for m in raw["model"].tolist()]
    _first_bad(
        raw, (num_gpus > 0) & np.array([not m for m in models], dtype=bool), file, "model", "a GPU node needs a model"
    )
    if len(raw) == 0:
        raise InputError("no node in the node list", file=file, field="sn")
    return NodeTable(
        names=tuple(str(n).strip() for n in raw["sn"].tolist()),
        models=tuple(m if g > 0 else "" for m, g in zip(models, num_gpus.tolist())),
        cpu_milli=cpu.to_numpy().astype(np.int64),
        memory_mib=memory.to_numpy().astype(np.int64),
        num_gpus=num_gpus,
        source=file.name,
    )
