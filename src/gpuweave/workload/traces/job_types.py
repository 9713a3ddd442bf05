"""Seeded job-type assignment for traces that carry no model (Philly, Alibaba, Tiresias).

Gavel turned Philly into runnable traces by drawing each job's type uniformly from its job templates
(``traces/msr``; Narayanan et al., OSDI'20). Its MSR traces drew from all 26 templates regardless of the GPU
count, which gives e.g. 8-GPU A3C jobs that have no throughput entry. gpuweave keeps the uniform draw but
restricts it to types that can run at that size:

* the candidates for a job of ``n`` GPUs are the profile store's job types with a **positive** consolidated
  throughput on the reference GPU (V100) at scale ``s``, where ``s`` is ``n`` if profiled, else the largest
  profiled count below ``n`` (3 -> 2, 7 -> 4, 12/16/32/64 -> 8 with Gavel's 1/2/4/8);
* one uniform number per job, drawn in row order from ``numpy.random.default_rng(seed)``, picks the
  candidate (sorted by name), so the result depends only on the seed and the GPU counts in row order.

Every assigned job gets a note saying so; see :data:`ASSIGNED_NOTE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.errors import InputError
from gpuweave.workload.profile_source import ProfileSource
from gpuweave.workload.profiles import load_profiles

if TYPE_CHECKING:
    import pandas as pd

ASSIGNED_NOTE = (
    "job_type drawn uniformly at random (seed {seed}) from the profiled job types runnable at scale {scale}; "
    "the source has no model"
)


def candidate_scale(store: ProfileSource, num_gpus: int) -> int:
    """The profiled scale used to pick job types for a job of ``num_gpus`` GPUs."""
    scales = sorted(
        {scale for job_type in store.job_types() for scale in store.scale_factors(job_type) if scale <= num_gpus}
    )
    if not scales:
        raise InputError(f"no job type is profiled for {num_gpus} GPU(s) or fewer", field="num_gpus")
    return scales[-1]


def candidates(store: ProfileSource, scale: int, reference_gpu: str = "V100") -> list[str]:
    """Job types with a positive consolidated throughput on ``scale`` x ``reference_gpu``, sorted."""
    return [
        job_type
        for job_type in store.job_types()
        if store.has(job_type, reference_gpu, scale, True) and store.rate(job_type, reference_gpu, scale, True) > 0
    ]


def assign_job_types(
    num_gpus: Sequence[int] | np.ndarray,
    seed: int,
    profiles: ProfileSource | None = None,
    reference_gpu: str = "V100",
) -> tuple[list[str], list[str]]:
    """Return ``(job_types, notes)``, one per job, by the seeded rule in the module docstring."""
    store = profiles if profiles is not None else load_profiles()
    counts = np.asarray(num_gpus, dtype=np.int64)
    draws = np.random.default_rng(seed).random(len(counts))
    by_count: dict[int, tuple[list[str], str]] = {}
    job_types: list[str] = []
    notes: list[str] = []
    for count, draw in zip(counts.tolist(), draws.tolist()):
        entry = by_count.get(count)
        if entry is None:
            scale = candidate_scale(store, count)
            names = candidates(store, scale, reference_gpu)
            if not names:
                raise InputError(
                    f"no job type has a positive throughput on {scale} x {reference_gpu}", field="job_type"
                )
            entry = (names, ASSIGNED_NOTE.format(seed=seed, scale=scale))
            by_count[count] = entry
        names, note = entry
        job_types.append(names[int(draw * len(names))])
        notes.append(note)
    return job_types, notes


def insert_job_types(
    frame: "pd.DataFrame", seed: int, profiles: ProfileSource | None, reference_gpu: str, source: str
) -> list[str]:
    """:func:`assign_job_types` for a converter's frame: ``job_type`` inserted as its fourth column and a ``note``
    per row, ``"<source>; <how the type was drawn>"``. Returns the drawing notes (for converters that add more)."""
    job_types, notes = assign_job_types(frame["num_gpus"].to_numpy(), seed, profiles, reference_gpu)
    frame.insert(3, "job_type", job_types)
    frame["note"] = [f"{source}; {note}" for note in notes]
    return notes


def run_time_work(
    types: list[str],
    counts: list[int],
    models: Sequence[str | None],
    elapsed: list[float],
    store: ProfileSource,
    reference: str,
) -> tuple[list, list[float], int]:
    """Iterations done on the GPUs each job got, and the run time they take on the reference GPU.

    A job that ran ``t`` s on ``n`` GPUs of a profiled model did ``t x rate(model, n)`` iterations (the
    simulator's work); its duration on the reference GPU is that over ``rate(reference, n)``, so a job that ran on
    a K80 is not replayed as if that time had been spent on a V100. Jobs without a profiled model (``""`` or None:
    unknown or several) keep their run time as the reference duration and no work (the reader derives it).
    Returns ``(work, duration, converted)``: per job, and how many were converted. O(jobs), rates cached."""
    work: list = []
    duration: list[float] = []
    converted = 0
    cache: dict[tuple[str, int, str | None], list[float]] = {}
    for job_type, n, model, seconds in zip(types, counts, models, elapsed):
        rates = cache.get((job_type, n, model))
        if rates is None:
            rates = cache[(job_type, n, model)] = [
                store.rate(job_type, gpu, n, True) if gpu and store.has(job_type, gpu, n, True) else 0.0
                for gpu in (model, reference)
            ]
        if rates[0] > 0 and rates[1] > 0:
            work.append(round(seconds * rates[0], 3))
            duration.append(round(seconds * rates[0] / rates[1], 3))
            converted += 1
        else:
            work.append(None)
            duration.append(float(seconds))
    return work, duration, converted
