"""From a submission to the runtime's job: allowed GPU types, programs, and whether a job can ever fit.

Allowed GPU types reach every policy without changing any: they become the job's ``allowed_models``, which the
cluster's book reads as "cannot run there" (rate 0) for every other GPU type, so a policy never places it there and
the book rejects a decision that tries.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from gpuweave.cluster.feasibility import capacity_by_model, fits_somewhere
from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import Node
from gpuweave.live.agents import ADAPTIVE_COLUMNS, batch_limits
from gpuweave.live.config import BUILTIN_PROGRAMS, program_argv
from gpuweave.live.local import LIMITS_ATTR, WorkerLimits
from gpuweave.workload.job import Job
from gpuweave.workload.profile_source import ProfileSource

if TYPE_CHECKING:
    from sqlalchemy.engine import Row


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


def never_fits(
    nodes: list[Node],
    profiles: ProfileSource,
    job_type: str,
    gpus: int,
    gpu_types: list[str] | None,
    ideal_placement: bool = False,
) -> InputError | None:
    """Why a job can never run on this cluster (the book's feasibility rule,
    :func:`gpuweave.cluster.feasibility.fits_somewhere`), or None when it can."""
    capacity = capacity_by_model(nodes)
    if gpu_types:
        unknown = sorted(set(gpu_types) - set(capacity))
        if unknown:
            return InputError(
                f"GPU type(s) {', '.join(unknown)} not in the cluster (it has {', '.join(capacity)})",
                field="gpu_types",
            )
    known = profiles.job_types()
    if job_type not in known:
        return InputError(f"unknown job type {job_type!r} (known: {', '.join(known)})", field="job_type")
    ok, _missing = fits_somewhere(job_type, gpus, capacity, profiles.rate, ideal_placement, gpu_types)
    if ok:
        return None
    where = ", ".join(f"{m}: {c.gpus} GPUs, at most {c.largest_node} per node" for m, c in capacity.items())
    allowed = f" of the allowed types {', '.join(gpu_types)}" if gpu_types else ""
    return InputError(f"{gpus} GPUs of {job_type!r} can never run on any node{allowed} ({where})", field="gpus")


#: a user's columns that reach the slurm executor through the job's attributes (``sbatch --account``, ``--qos``)
SLURM_FIELDS = ("slurm_account", "slurm_qos")

#: what a job of a service with a task placement may ask beside its GPUs (the trace schema's resource columns)
SHARE_FIELDS = ("gpu_milli", "cpu_milli", "memory_mib")


def never_fits_shares(nodes: list[Node], spec: Any, shared: bool) -> InputError | None:
    """Why a job's shares can never be held (a service without a task placement takes none; a request larger than
    every node of its allowed types), or None. Checked on the empty cluster, as the run's ledger checks a trace."""
    asked = {name: getattr(spec, name) for name in SHARE_FIELDS if getattr(spec, name) is not None}
    if not asked:
        return None
    if not shared:
        return InputError(
            f"{', '.join(asked)}: this service places whole GPUs; shares need a task placement (gpuweave serve "
            "--placement-rule best-fit, fgd, ...)",
            field=next(iter(asked)),
        )
    from gpuweave.cluster.sharing.ledger import task_fits_somewhere

    allowed = tuple(sorted(set(spec.gpu_types))) if spec.gpu_types else None
    job = Job("admission", 0.0, spec.gpus, 1.0, spec.job_type, attrs=asked, allowed_models=allowed)
    return task_fits_somewhere(nodes, job)


#: an adaptive job's fields (the trace schema's columns, :mod:`gpuweave.live.agents`): the batch limits its agent
#: picks within, and its most GPUs (the trace's ``moldable``)
ADAPTIVE_FIELDS = (*ADAPTIVE_COLUMNS, "max_gpus")


def adaptive_attrs(source: Any) -> dict[str, int]:
    """The adaptive fields a submission or a row gives, as a trace job's attributes (``max_gpus``: ``moldable``)."""
    out = {}
    for name in ADAPTIVE_FIELDS:
        value = getattr(source, name, None)
        if value is not None:
            out["moldable" if name == "max_gpus" else name] = value
    return out


def adaptive_problem(spec: Any) -> InputError | None:
    """Why a submission's adaptive fields cannot give its job an agent (a partial set, limits out of order, as a
    trace's are checked; ``max_gpus`` below its GPUs, or without the batch limits), or None."""
    attrs = adaptive_attrs(spec)
    if not attrs:
        return None
    if set(attrs) == {"moldable"}:
        return InputError(
            f"max_gpus: only an adaptive job may grow; give {', '.join(ADAPTIVE_COLUMNS)} too", field="max_gpus"
        )
    if attrs.get("moldable", spec.gpus) < spec.gpus:
        return InputError(f"max_gpus {attrs['moldable']} is below the job's {spec.gpus} GPUs", field="max_gpus")
    try:
        batch_limits(Job("submitted", 0.0, spec.gpus, 1.0, spec.job_type, attrs=dict(attrs)))
    except InputError as exc:
        return InputError(exc.message.replace("job submitted: ", "", 1), field=exc.field)
    return None


def runtime_job(row: Row[Any], origin: float, time_scale: float, limits: WorkerLimits | None = None) -> Job:
    """The runtime's Job for a database row (ids are the row's id as text; times simulated). ``limits``: what each
    of its workers may take on its host (the service's quota for a user who is not an admin; local executor)."""
    gpu_types = json.loads(row.gpu_types) if row.gpu_types else None
    submitted = (row.submitted_at - origin) * time_scale
    deadline = submitted + row.deadline_s if row.deadline_s else None
    arrival = max(0.0, row.arrival or 0.0)
    return Job(
        job_id=str(row.id),
        arrival=arrival,
        num_gpus=row.gpus,
        work=row.steps,
        job_type=row.job_type,
        priority=row.priority,
        deadline=deadline if deadline is None else max(deadline, arrival + 1e-9),
        attrs={
            "user": row.user_id,
            "name": row.name,
            **({LIMITS_ATTR: limits} if limits is not None else {}),
            **{name: getattr(row, name) for name in SHARE_FIELDS if getattr(row, name, None) is not None},
            **adaptive_attrs(row),  # an adaptive job's batch limits: its agent (pollux, sia) picks its batch
            # the user's Slurm account and QoS (read with the job's row; the slurm executor submits with them)
            **{name: getattr(row, name) for name in SLURM_FIELDS if getattr(row, name, None)},
        },
        allowed_models=tuple(sorted(gpu_types)) if gpu_types else None,
    )
