"""Tasks as resource requests: the rows of a GPU-sharing workload, as arrays.

A :class:`TaskTable` is what a placement on shared GPUs needs of each task: CPU (milli-cores), memory (MiB), the
number of GPUs and the share of each (``gpu_milli``: 1000 = a whole GPU, below 1000 = a share of one GPU, as
Alibaba's openb trace defines it; 0 with ``num_gpus == 0`` = a CPU-only task) and the GPU models it may use
(``allowed_models``; None = any). Times (creation, deletion) are optional: FGD's experiment places tasks at
arrival and never removes them.

A task may name a MIG profile (NVIDIA's ``3g.20gb``, :mod:`gpuweave.hardware.mig_profiles`): ``mig_profiles`` holds
the distinct names, ``mig_profile`` each task's index into them (-1: none; the array is None when no task names
one). Such a task asks one GPU and its ``gpu_milli`` is the profile's share (the readers fill or check it); where it
runs and what instance it gets is the placement's business (:mod:`gpuweave.cluster.sharing.profiles`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FULL_GPU_MILLI = 1000


@dataclass(frozen=True, slots=True)
class TaskTable:
    """One row per task; integer arrays of equal length (see module docstring)."""

    names: tuple[str, ...]
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    num_gpus: np.ndarray
    gpu_milli: np.ndarray
    allowed_models: tuple[tuple[str, ...] | None, ...]
    source: str = ""
    rows: np.ndarray | None = None  # each task's row in its file (header = 0), for errors naming it
    mig_profiles: tuple[str, ...] = ()  # the distinct MIG profiles asked (canonical names)
    mig_profile: np.ndarray | None = None  # per task: index into mig_profiles, -1 = none (None: no task asks one)

    def profile_of(self, index: int) -> str | None:
        """The MIG profile task ``index`` asks for (None: none)."""
        if self.mig_profile is None:
            return None
        k = int(self.mig_profile[index])
        return self.mig_profiles[k] if k >= 0 else None

    def mig_slices_of(self, index: int) -> int:
        """The compute slices of task ``index``'s MIG profile (``3g.20gb``: 3; 0: no profile)."""
        profile = self.profile_of(index)
        return int(profile.split("g.", 1)[0]) if profile else 0

    def row_of(self, index: int) -> int | None:
        """The file row of task ``index`` (None when the table was not read from a file)."""
        return None if self.rows is None else int(self.rows[index])

    def __len__(self) -> int:
        return len(self.names)

    @property
    def gpu_request_milli(self) -> np.ndarray:
        """Each task's GPU request in milli-GPUs (``num_gpus * gpu_milli``)."""
        return self.num_gpus * self.gpu_milli

    def as_whole_gpus(self) -> TaskTable:
        """The same tasks on a cluster that cannot share a GPU: a share of one GPU becomes the whole GPU (a MIG
        profile too: the task keeps its allowed models, not its profile)."""
        whole = np.where(self.num_gpus > 0, FULL_GPU_MILLI, 0).astype(np.int64)
        return TaskTable(
            self.names,
            self.cpu_milli,
            self.memory_mib,
            self.num_gpus,
            whole,
            self.allowed_models,
            self.source,
            self.rows,
        )

    def take(self, rows: np.ndarray) -> TaskTable:
        """The tasks at ``rows`` (in that order, repeats allowed)."""
        index = [int(i) for i in rows]
        return TaskTable(
            names=tuple(self.names[i] for i in index),
            cpu_milli=self.cpu_milli[rows],
            memory_mib=self.memory_mib[rows],
            num_gpus=self.num_gpus[rows],
            gpu_milli=self.gpu_milli[rows],
            allowed_models=tuple(self.allowed_models[i] for i in index),
            source=self.source,
            rows=None if self.rows is None else self.rows[rows],
            mig_profiles=self.mig_profiles,
            mig_profile=None if self.mig_profile is None else self.mig_profile[rows],
        )
