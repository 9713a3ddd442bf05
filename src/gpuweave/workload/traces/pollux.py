"""Reader for Pollux's workload CSVs (petuum/adaptdl, branch osdi21-artifact, ``simulator/workloads/*.csv``).

One job per row, header ``name,time,application,num_replicas,batch_size``: ``time`` is the submission second,
``num_replicas`` the GPUs and ``batch_size`` the global batch Pollux's Tiresias runs the job with (its
"TunedJobs" setting). Mapping to the schema: ``job_id = name``, ``arrival = time``, ``num_gpus = num_replicas``,
``job_type = "<application> (batch size <batch_size>)"``, ``submit_order`` = the row (1, 2, ...: Pollux's simulator
breaks ties between jobs submitted in the same second by it) and ``work`` = the job's steps under Pollux's job model
(:mod:`gpuweave.workload.pollux`), which needs the applications' traces: the ``profiles`` given when they are a
Pollux job model, else the ``traces/`` directory beside the workload's folder (Pollux's own layout,
``<dir>/workloads/<file>.csv`` next to ``<dir>/traces/<app>/``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.checks import GPUS, MAX_SECONDS, Range, parse
from gpuweave.errors import InputError
from gpuweave.workload.job import Job
from gpuweave.workload.pollux import PolluxJobModel, is_pollux_traces, job_type_name, load_pollux_job_model
from gpuweave.workload.profile_source import ProfileSource
from gpuweave.workload.traces._tables import ROW, read_csv_strings

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
# The job's row among the workload's jobs: Pollux's simulator takes jobs submitted in the same second in row order
# (its queues and Optimus' hand-out), where the schema's order is (arrival, job id). Read by the policies that
# reproduce it (tiresias' pollux preset, optimus) through Job.attrs.
SUBMIT_ORDER = "submit_order"


def submit_order(job: Job) -> float:
    """The job's row among the jobs of its Pollux workload (0 for a job of any other trace)."""
    order = job.attrs.get(SUBMIT_ORDER, 0) if job.attrs else 0
    return order if isinstance(order, (int, float)) else 0


def traces_beside(workload: str | Path) -> Path:
    """Where Pollux's layout keeps the applications' traces for ``workload``: ``<dir>/traces``."""
    return Path(workload).resolve().parent.parent / "traces"


def job_model_for(workload: str | Path, profiles: ProfileSource | None = None) -> PolluxJobModel:
    """``profiles`` when it is a Pollux job model, else the one in the traces folder beside ``workload``."""
    if isinstance(profiles, PolluxJobModel):
        return profiles
    folder = traces_beside(workload)
    if not is_pollux_traces(folder):
        raise InputError(
            f"no Pollux application traces at {folder}; pass the traces directory as the profiles (--profiles)",
            file=workload,
        )
    return load_pollux_job_model(folder)


def _integer(text: str, *, file: Path, row: int, field: str, least: int) -> int:
    """A whole number >= ``least`` (``inf``, ``nan``, ``1e300`` and fractions refused, naming the cell)."""
    kind = GPUS if field == "num_replicas" else Range("", least, MAX_SECONDS if field == "time" else 1e9, integer=True)
    return int(parse(text, kind, file=file, row=row, field=field))


def read_pollux_workload(
    path: str | Path, profiles: ProfileSource | None = None, *, fractional_time: bool = False
) -> "pd.DataFrame":
    """Read a Pollux workload into a schema frame with ``work`` from the job model. ``fractional_time``: a
    submission may be a fraction of a second (Sia's ``newtrace`` workloads; Pollux's are whole seconds)."""
    import pandas as pd

    file = Path(path)
    raw = read_csv_strings(file)
    for column in COLUMNS:
        if column not in raw.columns:
            raise InputError(
                f"missing column '{column}' (expected {', '.join(COLUMNS)})", file=file, row=0, field=column
            )
    model = job_model_for(file, profiles)
    records: list[dict[str, object]] = []
    for record in raw.to_dict("records"):
        row = int(record[ROW])
        app = record["application"].strip()
        if app not in model.apps:
            raise InputError(
                f"unknown application {app!r} (traces for: {', '.join(sorted(model.apps))})",
                file=file,
                row=row,
                field="application",
            )
        gpus = _integer(record["num_replicas"], file=file, row=row, field="num_replicas", least=1)
        batch = _integer(record["batch_size"], file=file, row=row, field="batch_size", least=1)
        if fractional_time:
            arrival = parse(record["time"], Range("", 0, MAX_SECONDS), file=file, row=row, field="time")
        else:
            arrival = _integer(record["time"], file=file, row=row, field="time", least=0)
        job_type = job_type_name(app, batch)
        try:
            work = model.work(job_type, gpus)
        except InputError as exc:
            raise InputError(exc.message, file=file, row=row, field="batch_size") from None
        records.append(
            {
                "job_id": record["name"].strip(),
                "arrival": float(arrival),
                "num_gpus": gpus,
                "job_type": job_type,
                "work": work,
                "note": f"from Pollux workload {file.name}",
                SUBMIT_ORDER: len(records) + 1,
                ROW: row,
            }
        )
    if not records:
        raise InputError("the workload has no jobs", file=file)
    return pd.DataFrame.from_records(records)
