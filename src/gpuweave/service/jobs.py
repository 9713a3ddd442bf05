"""From a submission to the runtime's job: allowed GPU types, programs, and whether a job can ever fit.

Allowed GPU types reach every policy without changing any: the job's type becomes ``TYPE @only:A+B`` and
:class:`RestrictedProfiles` answers 0 (the profile store's "cannot run there") for other GPU types, so a policy
never places it there and the book rejects a decision that tries.
"""

from __future__ import annotations

import json
import shlex

from gpuweave.errors import InputError, MissingProfileError
from gpuweave.live.config import BUILTIN_PROGRAMS, program_argv
from gpuweave.workload.job import Job

ONLY = " @only:"


def restricted_type(job_type: str, gpu_types: list[str] | None) -> str:
    return job_type if not gpu_types else f"{job_type}{ONLY}{'+'.join(sorted(gpu_types))}"


class RestrictedProfiles:
    """A profile store that honours ``TYPE @only:A+B`` job types (see module docstring). O(1) per look-up."""

    def __init__(self, base) -> None:
        self._base = base

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        base_type, sep, allowed = job_type.partition(ONLY)
        if sep and gpu_model not in allowed.split("+"):
            return 0.0
        return self._base.rate(base_type, gpu_model, num_gpus, consolidated)

    def __getattr__(self, name: str):
        return getattr(self._base, name)


def is_builtin(program: str) -> bool:
    try:
        words = shlex.split(program)
    except ValueError:
        return False
    return bool(words) and words[0] in BUILTIN_PROGRAMS


def check_program(program: str) -> list[str]:
    """The program's command line; InputError naming ``program`` when it cannot run."""
    try:
        return program_argv(program)
    except InputError as exc:
        raise InputError(exc.message, field="program") from None


def never_fits(nodes: list, profiles, job_type: str, gpus: int, gpu_types: list[str] | None) -> InputError | None:
    """Why a job can never run on this cluster (the simulator's feasibility rule), or None when it can."""
    models: dict[str, list[int]] = {}
    for node in nodes:
        models.setdefault(node.gpu_model, []).append(node.num_gpus)
    if gpu_types:
        unknown = sorted(set(gpu_types) - set(models))
        if unknown:
            return InputError(
                f"GPU type(s) {', '.join(unknown)} not in the cluster (it has {', '.join(models)})", field="gpu_types"
            )
    if job_type not in getattr(profiles, "job_types", lambda: ())():
        known = getattr(profiles, "job_types", lambda: ())()
        return InputError(f"unknown job type {job_type!r} (known: {', '.join(known)})", field="job_type")
    for model, sizes in models.items():
        if gpu_types and model not in gpu_types or gpus > sum(sizes):
            continue
        for consolidated in (True, False) if gpus <= max(sizes) else (False,):
            try:
                if profiles.rate(job_type, model, gpus, consolidated) > 0:
                    return None
            except MissingProfileError:
                continue
    where = ", ".join(f"{m}: {sum(s)} GPUs, at most {max(s)} per node" for m, s in models.items())
    allowed = f" of the allowed types {', '.join(gpu_types)}" if gpu_types else ""
    return InputError(f"{gpus} GPUs of {job_type!r} can never run on any node{allowed} ({where})", field="gpus")


def runtime_job(row, origin: float, time_scale: float) -> Job:
    """The runtime's Job for a database row (ids are the row's id as text; times simulated)."""
    gpu_types = json.loads(row.gpu_types) if row.gpu_types else None
    submitted = (row.submitted_at - origin) * time_scale
    deadline = submitted + row.deadline_s if row.deadline_s else None
    arrival = max(0.0, row.arrival or 0.0)
    return Job(
        job_id=str(row.id),
        arrival=arrival,
        num_gpus=row.gpus,
        work=row.steps,
        job_type=restricted_type(row.job_type, gpu_types),
        priority=row.priority,
        deadline=deadline if deadline is None else max(deadline, arrival + 1e-9),
        attrs={"user": row.user_id, "name": row.name},
    )
