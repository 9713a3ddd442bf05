"""Registry of the trace formats gpuweave reads, and format detection from a file's name and header.

Each format maps to one reader module; every reader returns a frame in the schema of
:mod:`gpuweave.workload.traces.schema`, which :func:`load_trace_frame` then validates. The header columns and file
names that give a format away are :mod:`gpuweave.workload.traces.signatures`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces._tables import read_text
from gpuweave.workload.traces.alibaba import read_openb_pods, read_spot_jobs
from gpuweave.workload.traces.gavel import read_gavel_trace
from gpuweave.workload.traces.helios import read_helios_jobs
from gpuweave.workload.traces.pai import read_pai_tasks
from gpuweave.workload.traces.philly import read_philly_jobs
from gpuweave.workload.traces.pollux import read_pollux_workload
from gpuweave.workload.traces.schema import read_table, validate_frame
from gpuweave.workload.traces.signatures import _PAI_JOBS, format_of_columns, format_of_name
from gpuweave.workload.traces.slurm import looks_like_sacct, read_sacct
from gpuweave.workload.traces.tiresias import read_tiresias_trace

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True)
class TraceFormat:
    """A readable trace format: its CLI name, a one-line description and its reader."""

    name: str
    description: str
    read: Callable[[Path, int, ProfileStore | None], "pd.DataFrame"]


def _schema(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_table(path)


def _gavel(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_gavel_trace(path)


def _alibaba_pods(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_openb_pods(path, seed=seed, profiles=profiles)


def _alibaba_jobs(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_spot_jobs(path, seed=seed, profiles=profiles)


def _tiresias(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_tiresias_trace(path, seed=seed, profiles=profiles)


def _philly(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_philly_jobs(path, seed=seed, profiles=profiles)


def _helios(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_helios_jobs(path, seed=seed, profiles=profiles)


def _pai(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_pai_tasks(path, seed=seed, profiles=profiles)


def _slurm(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_sacct(path, seed=seed, profiles=profiles)


def _pollux(path: Path, seed: int, profiles: ProfileStore | None) -> "pd.DataFrame":
    return read_pollux_workload(path, profiles)


FORMATS: dict[str, TraceFormat] = {
    f.name: f
    for f in (
        TraceFormat("schema", "gpuweave trace schema, CSV or Parquet (docs/trace-schema.md)", _schema),
        TraceFormat("gavel", "Gavel tab-separated trace, 10-, 7- (MSR) or 9-field (packing) layout", _gavel),
        TraceFormat("alibaba-pods", "Alibaba openb 2023 pod list (openb_pod_list_*.csv)", _alibaba_pods),
        TraceFormat("alibaba-jobs", "Alibaba 2026 spot-GPU job table (job_info_df.csv)", _alibaba_jobs),
        TraceFormat("tiresias", "Tiresias simulator job CSV (e.g. 60_job.csv)", _tiresias),
        TraceFormat("philly", "flattened Philly job list (timestamp,duration,num_gpus,gpu_time,cluster)", _philly),
        TraceFormat("helios", "SenseTime Helios job log (cluster_log.csv of HeliosData, SC'21)", _helios),
        TraceFormat(
            "pai", "Alibaba PAI 2020 task table (pai_task_table.csv; the pai_job_table.csv beside it is read too)", _pai
        ),
        TraceFormat("pollux", "Pollux simulator workload (name,time,application,num_replicas,batch_size)", _pollux),
        TraceFormat("slurm", "Slurm job history: sacct --parsable2 with AllocTRES/ReqTRES (docs/slurm.md)", _slurm),
    )
}

_SCHEMA_REQUIRED = frozenset({"job_id", "arrival", "num_gpus", "job_type"})


def detect_format(path: str | Path) -> str:
    """Guess a trace's format from its suffix and first line; InputError when nothing matches."""
    file = Path(path)
    if file.suffix.lower() == ".parquet":
        return "schema"
    by_name = format_of_name(file)
    if by_name is not None:
        return by_name
    if file.name.lower().startswith(_PAI_JOBS):
        raise InputError(
            "a PAI job table has no GPU counts: convert the task table (pai_task_table.csv); the job table beside it "
            "gives the submission times",
            file=file,
        )
    text = read_text(file)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if file.suffix.lower() == ".trace" or first.count("\t") >= 6:
        return "gavel"
    if "|" in first:
        if looks_like_sacct(first):
            return "slurm"
    header = {name.strip() for name in first.split(",")}
    known = format_of_columns(header)
    if known is not None:
        return known
    # A schema file with a column missing is still a schema file: let the validator name the column.
    if len(header & _SCHEMA_REQUIRED) >= 2:
        return "schema"
    raise InputError(
        f"cannot tell the trace format from the header {first[:80]!r}; pass --format ({', '.join(FORMATS)})",
        file=file,
        row=0,
    )


def load_trace_frame(
    path: str | Path,
    fmt: str = "auto",
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    max_gpus: int | None = None,
    cpu_tasks: bool = False,
) -> "pd.DataFrame":
    """Read ``path`` in format ``fmt`` (``auto`` = detect) and return the validated schema frame.

    Job types are checked against ``profiles`` when given. ``work`` is left as the source gives it (see
    :func:`gpuweave.workload.traces.schema.fill_work`). ``cpu_tasks``: an openb pod list's CPU-only pods are kept
    (``alibaba-pods`` only).
    """
    file = Path(path)
    name = detect_format(file) if fmt == "auto" else fmt
    if name not in FORMATS:
        raise InputError(f"unknown trace format {fmt!r}; expected auto or one of {', '.join(FORMATS)}", field="format")
    if cpu_tasks and name != "alibaba-pods":
        raise InputError(f"--cpu-tasks keeps an openb pod list's CPU-only pods; {file.name} is {name}", field="format")
    raw = (
        read_openb_pods(file, seed=seed, profiles=profiles, cpu_tasks=True)
        if cpu_tasks
        else FORMATS[name].read(file, seed, profiles)
    )
    frame = validate_frame(raw, file=file, profiles=profiles, max_gpus=max_gpus)
    frame.attrs["format"] = name
    frame.attrs["notes"] = list(raw.attrs.get("notes", []))
    return frame
