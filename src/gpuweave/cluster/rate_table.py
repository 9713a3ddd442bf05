"""Per-job throughput vectors over a cluster's GPU models, shared by the Hadar, HadarE, Gavel and Tiresias policies
(and Hadar's snapshot planner).

Problem: the policies of this family look up, for a job of type ``m`` with ``W`` GPUs, the whole-job rate
``T(m, W, r)`` on every GPU model ``r`` of the cluster, consolidated (one server) and unconsolidated
(spread over servers). The profile store raises :class:`~gpuweave.errors.MissingProfileError` for an
absent entry; spec hadar.md Appendix A ("—" entries, e.g. ResNet-50 bs64 on K80 unconsolidated) says to
treat an absent entry as infeasible, so here it becomes ``0.0`` (= must not be used).

Complexity: O(R) profile lookups per (job type, W), cached for the life of the object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpuweave.errors import MissingProfileError

if TYPE_CHECKING:
    from gpuweave.workload.job import Job
    from gpuweave.workload.profile_source import ProfileSource


class RatedView(Protocol):
    """What a table is built from: a view's profile source and GPU models (a ``ClusterView``, a snapshot's view)."""

    @property
    def profiles(self) -> ProfileSource: ...

    @property
    def models(self) -> list[str]: ...


class RateTable:
    """``cons(job_type, W)`` / ``uncons(job_type, W)``: float arrays over ``models`` (0 = infeasible). With
    ``allowed`` (a job's ``allowed_models``), the models it may not use read 0 too."""

    __slots__ = ("profiles", "models", "_cache")

    def __init__(self, profiles: ProfileSource, models: list[str]) -> None:
        self.profiles = profiles
        self.models = list(models)
        self._cache: dict[tuple[str, int, tuple[str, ...] | None], tuple[np.ndarray, np.ndarray]] = {}

    def _lookup(self, job_type: str, num_gpus: int, consolidated: bool, model: str) -> float:
        try:
            value = float(self.profiles.rate(job_type, model, num_gpus, consolidated))
        except MissingProfileError:
            return 0.0
        return value if value > 0 else 0.0

    def get(
        self, job_type: str, num_gpus: int, allowed: tuple[str, ...] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        key = (job_type, num_gpus, allowed)
        hit = self._cache.get(key)
        if hit is None and allowed is not None:
            cons, uncons = self.get(job_type, num_gpus)
            mask = np.array([m in allowed for m in self.models])
            hit = self._cache[key] = (np.where(mask, cons, 0.0), np.where(mask, uncons, 0.0))
        if hit is None:
            cons = np.array([self._lookup(job_type, num_gpus, True, m) for m in self.models])
            if num_gpus == 1:
                uncons = cons.copy()
            else:
                uncons = np.array([self._lookup(job_type, num_gpus, False, m) for m in self.models])
            hit = (cons, uncons)
            self._cache[key] = hit
        return hit

    def cons(self, job_type: str, num_gpus: int, allowed: tuple[str, ...] | None = None) -> np.ndarray:
        return self.get(job_type, num_gpus, allowed)[0]

    def uncons(self, job_type: str, num_gpus: int, allowed: tuple[str, ...] | None = None) -> np.ndarray:
        return self.get(job_type, num_gpus, allowed)[1]

    def of_job(self, job: Job) -> tuple[np.ndarray, np.ndarray]:
        """(cons, uncons) of a :class:`~gpuweave.workload.job.Job` with all its GPUs, its constraint applied."""
        return self.get(job.job_type, job.num_gpus, job.allowed_models)


class RateTableCache:
    """The :class:`RateTable` of the cluster a policy is looking at, rebuilt only when the profiles or the GPU
    models change (one per policy object)."""

    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: RateTable | None = None

    def of(self, view: RatedView) -> RateTable:
        """The table for ``view`` (anything with ``profiles`` and ``models``)."""
        table = self._table
        if table is None or table.profiles is not view.profiles or table.models != list(view.models):
            table = self._table = RateTable(view.profiles, list(view.models))
        return table
