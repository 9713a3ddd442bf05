"""Converter for Alibaba's PAI 2020 GPU trace (``cluster-trace-gpu-v2020``: task and job tables, machine list).

Source: alibaba/clusterdata ``cluster-trace-gpu-v2020`` (Weng et al., NSDI'22, "MLaaS in the Wild"; CC BY 4.0):
two months of a 6,500-GPU production cluster, about 1.2 M jobs. The tables are CSV files **without a header line**
(their column names are in separate ``.header`` files); a file with the header on top is read as well. Per the
trace's README:

* ``pai_task_table.csv``: ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,
  gpu_type``, one row per task (a role such as ``worker`` or ``ps``) of a job; ``inst_num`` instances each ask for
  ``plan_gpu`` percent of a GPU (50 = half a GPU), ``plan_cpu`` percent of a core, ``plan_mem`` GB;
  ``start_time``/``end_time`` the task's launch and completion; ``gpu_type`` the GPU type the task was given
  (``MISC`` = older generations: K40m, K80, M60);
* ``pai_job_table.csv``: ``job_name,inst_id,user,status,start_time,end_time``; here ``start_time`` is the job's
  **submission**, so the gap to its first task's launch is its wait;
* ``pai_machine_spec.csv``: ``machine,gpu_type,cap_cpu,cap_mem,cap_gpu``, one row per machine.

Times are seconds on a shifted clock (the README: the same time of day in UTC+8 as the original).

Mapping to the schema (:func:`read_pai_tasks`; complexity O(task rows + job rows), vectorised, one group-by):

* one trace row per ``job_name`` of the task table;
* ``num_gpus`` = the sum over its tasks of ``inst_num x ceil(plan_gpu / 100)``: gpuweave places whole GPUs, and an
  instance that asked for half a GPU held one (shared with others in PAI); the exact request, ``inst_num x
  plan_gpu / 100`` summed, is kept as ``gpu_request``. An empty ``plan_gpu`` is a task without GPUs;
* ``arrival`` = the job table's submission, in seconds since the earliest kept one; without a job table beside
  the task table, or for a job missing from it, the first task's launch (a note counts them: their wait is not
  in the trace); ``start``/``end`` = first task launch and last task end, so ``trace info`` shows PAI's own
  schedule;
* ``run_time`` = ``end - start``; ``pai_gpu_type`` = the GPU type of its GPU tasks as PAI spells it (``V100M32``;
  types joined by ``|`` when they differ); ``work`` = ``run_time`` x the profile's rate of its job type on that
  GPU (canonical: ``V100M32`` -> ``V100``) and ``duration`` = that work on the reference GPU, as for Slurm
  (:func:`~gpuweave.workload.traces.job_types.run_time_work`); a job on a GPU type without a profile (``T4`` and
  ``MISC`` with the bundled Gavel table) or on several keeps ``duration`` = ``run_time`` (a note counts them). The
  GPU type is what PAI gave, not what the job asked for, so it is not a ``gpu_model`` constraint;
* ``user`` and ``state`` (``Terminated``, ``Failed``, ``Running``, ``Waiting``) from the job table (``state`` from
  the tasks when there is none: ``Failed`` if one failed, else the last task's); ``cpu_num`` (cores), ``mem_gb``,
  ``tasks``, ``instances`` summed over the job's tasks;
* ``job_type``: PAI names no model (its group-tag table names a workload for 9% of instances), so the seeded uniform
  rule of :mod:`~gpuweave.workload.traces.job_types` assigns one, recorded in ``note``.

Left out, and counted in the frame's notes: jobs without a GPU task, jobs whose tasks never launched (no
``start_time``) or have no ``end_time``, and jobs that ran for 0 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave.checks import GPUS, MAGNITUDE, MAX_SECONDS
from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore, load_profiles
from gpuweave.workload.traces._tables import ROW, counted, numeric_column, read_csv_strings, require_values
from gpuweave.workload.traces.alibaba import cluster_description, group_nodes
from gpuweave.workload.traces.gpu_names import canonical_gpu_model
from gpuweave.workload.traces.job_types import assign_job_types, run_time_work

if TYPE_CHECKING:
    import pandas as pd

TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
MACHINE_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
JOB_TABLE = "pai_job_table.csv"
SOURCE = "alibaba/clusterdata cluster-trace-gpu-v2020 (PAI, Weng et al., NSDI'22; CC BY 4.0)"


def read_pai_tasks(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
    job_table: str | Path | None = None,
) -> "pd.DataFrame":
    """Convert a PAI ``pai_task_table.csv`` (and the ``pai_job_table.csv`` beside it, or ``job_table``) to a schema
    frame, one row per job in order of its first task row; ``read_trace`` sorts."""
    import numpy as np
    import pandas as pd

    file = Path(path)
    jobs = _jobs_of_tasks(_task_rows(file), file)  # the task table's frames are freed before the job table is read
    notes: list[str] = []
    keep = _kept(jobs, notes, file)
    jobs = jobs[keep].reset_index(drop=True)
    submitted, users, states = _job_table_facts(jobs, file, job_table, notes)
    launch = jobs["start"].to_numpy()
    arrival = np.where(np.isnan(submitted), launch, np.minimum(submitted, launch))
    late = int((submitted > launch).sum())
    if late:
        notes.append(f"{counted(late, 'job')} submitted after the first task launched: arrival = the launch")
    origin = float(arrival.min())
    store = profiles if profiles is not None else load_profiles()
    counts = jobs["gpus"].to_numpy().astype("int64")
    job_types, type_notes = assign_job_types(counts, seed, store, reference_gpu)
    run_time = (jobs["end"] - jobs["start"]).to_numpy()
    pai_types = jobs["gpu_type"].tolist()
    canonical = {types: _canonical_or_none(types) for types in set(pai_types)}  # a handful of distinct values
    models = [canonical[types] for types in pai_types]
    work, duration, converted = run_time_work(
        job_types, counts.tolist(), models, run_time.tolist(), store, reference_gpu
    )
    if converted < len(jobs):
        notes.append(
            f"{counted(len(jobs) - converted, 'job')} on a GPU type without a profile (or several types): their run "
            f"time is taken as {reference_gpu} time"
        )
    frame = pd.DataFrame(
        {
            "job_id": jobs["job"].to_numpy(),
            "arrival": arrival - origin,
            "num_gpus": counts,
            "job_type": job_types,
            "work": work,
            "duration": duration,
            "run_time": run_time,
            "user": users,
            "note": [f"PAI job ({file.name}); {note}" for note in type_notes],
            "state": np.where(states == "", jobs["status"].to_numpy(), states),
            "start": jobs["start"].to_numpy() - origin,
            "end": jobs["end"].to_numpy() - origin,
            "gpu_request": jobs["request"].round(6).to_numpy(),
            "pai_gpu_type": jobs["gpu_type"].to_numpy(),
            "cpu_num": jobs["cpu"].round(6).to_numpy(),
            "mem_gb": jobs["mem"].round(6).to_numpy(),
            "tasks": jobs["tasks"].to_numpy().astype("int64"),
            "instances": jobs["instances"].to_numpy().astype("int64"),
            ROW: jobs[ROW].to_numpy(),
        }
    )
    if all(user is None for user in users):
        frame = frame.drop(columns=["user"])
    notes.append(f"trace start = PAI time {origin:,.0f} s = arrival 0 s")
    frame.attrs["notes"] = notes
    return frame


def _task_rows(file: Path) -> "pd.DataFrame":
    """The task table as checked numbers per task: GPUs (whole and requested), cores, GB, instances, times, status
    and GPU type."""
    import numpy as np
    import pandas as pd

    tasks = _read_table(file, TASK_COLUMNS, "a PAI task table (pai_task_table.csv)", what="task rows")
    instances = numeric_column(tasks, "inst_num", file=file, unit="instances", integer=True, minimum=1.0)
    plan_gpu = numeric_column(
        tasks, "plan_gpu", file=file, unit="percent of a GPU", required=False, minimum=0.0, maximum=100.0 * GPUS.hi
    ).fillna(0.0)
    plan_cpu = numeric_column(tasks, "plan_cpu", file=file, unit="percent of a core", required=False, minimum=0.0)
    plan_mem = numeric_column(tasks, "plan_mem", file=file, unit="GB", required=False, minimum=0.0)
    start, end = (
        numeric_column(tasks, name, file=file, unit="seconds", required=False, minimum=0.0, maximum=MAX_SECONDS)
        for name in ("start_time", "end_time")
    )
    names = tasks["job_name"].str.strip()
    on_gpu = (plan_gpu > 0).to_numpy()
    gpu_type = tasks["gpu_type"].str.strip().where(on_gpu, "")
    _check_gpu_types(tasks, gpu_type, file)
    return pd.DataFrame(
        {
            "job": names.to_numpy(),
            "gpus": (instances * np.ceil(plan_gpu / 100.0)).to_numpy(),
            "request": (instances * plan_gpu / 100.0).to_numpy(),
            "cpu": (instances * plan_cpu.fillna(0.0) / 100.0).to_numpy(),
            "mem": (instances * plan_mem.fillna(0.0)).to_numpy(),
            "instances": instances.to_numpy(),
            "start": start.to_numpy(),
            "end": end.to_numpy(),
            "no_end": end.isna().to_numpy(),
            "failed": (tasks["status"].str.strip() == "Failed").to_numpy(),
            "status": tasks["status"].str.strip().to_numpy(),
            "gpu_type": gpu_type.to_numpy(),
            ROW: tasks[ROW].to_numpy(),
        }
    )


def _read_table(file: Path, columns: tuple[str, ...], table: str, **options) -> "pd.DataFrame":
    """One PAI table, with or without its header line (a first line of another width names ``table``: the tables
    differ in width, 10 task fields, 6 job fields, 5 machine fields)."""
    raw = read_csv_strings(file, header=columns, table=table, **options)
    require_values(raw, (columns[0],), file=file, message="empty value")
    return raw


def _check_gpu_types(tasks: "pd.DataFrame", gpu_type: "pd.Series", file: Path) -> None:
    """Every GPU type named by a GPU task is one the converters know; the first unknown one is an error naming its
    row. An empty type is allowed: PAI assigns the type at launch, so a task that never launched has none."""
    import numpy as np

    values = gpu_type.to_numpy()
    for text in sorted(set(values.tolist()) - {""}):
        try:
            canonical_gpu_model(text)
        except InputError:
            position = int(np.flatnonzero(values == text)[0])
            canonical_gpu_model(text, file=str(file), row=int(tasks[ROW].iloc[position]), field="gpu_type")


def _jobs_of_tasks(per_task: "pd.DataFrame", file: Path) -> "pd.DataFrame":
    """One row per job: summed requests, first launch, last end, its tasks' GPU types and its first row."""
    grouped = per_task.groupby("job", sort=False)
    jobs = grouped.agg(
        gpus=("gpus", "sum"),
        request=("request", "sum"),
        cpu=("cpu", "sum"),
        mem=("mem", "sum"),
        instances=("instances", "sum"),
        tasks=("gpus", "size"),
        start=("start", "min"),
        end=("end", "max"),
        no_end=("no_end", "any"),
        failed=("failed", "any"),
        status=("status", "last"),
        **{ROW: (ROW, "min")},
    )
    jobs["gpu_type"] = _gpu_types(per_task).reindex(jobs.index).fillna("").to_numpy()
    jobs["status"] = jobs["status"].where(~jobs["failed"], "Failed")
    big = (jobs["gpus"] > GPUS.hi).to_numpy()
    if big.any():
        position = int(big.nonzero()[0][0])
        raise InputError(
            f"job {jobs.index[position]!r} asks for {jobs['gpus'].iloc[position]:,.0f} GPUs over its tasks "
            f"(inst_num x ceil(plan_gpu/100)); at most {GPUS.hi:,}",
            file=file,
            row=int(jobs[ROW].iloc[position]),
            field="plan_gpu",
        )
    return jobs.reset_index(names="job")


def _gpu_types(per_task: "pd.DataFrame") -> "pd.Series":
    """Per job with a typed GPU task: its GPU types, sorted and joined by ``|`` (one type for almost every job, so
    the join runs only for the few with several)."""
    import pandas as pd

    pairs = per_task.loc[per_task["gpu_type"] != "", ["job", "gpu_type"]].drop_duplicates()
    several = pairs["job"].duplicated(keep=False).to_numpy()
    one = pairs[~several].set_index("job")["gpu_type"]
    if not several.any():
        return one
    joined = pairs[several].groupby("job")["gpu_type"].agg(lambda types: "|".join(sorted(types)))
    return pd.concat((one, joined))


def _kept(jobs: "pd.DataFrame", notes: list[str], file: Path):
    """Mask of the jobs to keep (GPU jobs that launched, ended and ran > 0 s); notes count the others."""
    on_gpu = (jobs["gpus"] > 0).to_numpy()
    launched = jobs["start"].notna().to_numpy()
    ended = launched & ~jobs["no_end"].to_numpy()
    ran = ended & (jobs["end"] > jobs["start"]).to_numpy()
    for mask, why in (
        (~on_gpu, "without a GPU task (plan_gpu empty or 0)"),
        (on_gpu & ~launched, "on GPUs whose tasks never launched (no start_time)"),
        (on_gpu & launched & ~ended, "on GPUs with a task without end_time (still running at the trace's end)"),
        (on_gpu & ended & ~ran, "on GPUs that ran for 0 s"),
    ):
        if mask.any():
            notes.append(f"left out {counted(int(mask.sum()), 'job')} {why}")
    keep = on_gpu & ran
    if not keep.any():
        raise InputError("no GPU job that launched and ended in the task table", file=file, field="plan_gpu")
    return keep


def _job_table_facts(jobs: "pd.DataFrame", tasks_file: Path, job_table: str | Path | None, notes: list[str]):
    """Submission time, user and job status per kept job from the job table (NaN, None, "" where it has none)."""
    import numpy as np
    import pandas as pd

    table = Path(job_table) if job_table is not None else tasks_file.with_name(JOB_TABLE)
    empty = (np.full(len(jobs), np.nan), [None] * len(jobs), np.full(len(jobs), "", dtype=object))
    if job_table is None and (table == tasks_file or not table.is_file()):
        notes.append(
            f"no {JOB_TABLE} beside the task table: arrival = the first task's launch (the wait is not in the tasks)"
        )
        return empty
    raw = _read_table(table, JOB_COLUMNS, "a PAI job table (pai_job_table.csv)", what="job rows")
    submit = numeric_column(
        raw, "start_time", file=table, unit="seconds", required=False, minimum=0.0, maximum=MAX_SECONDS
    )
    names = raw["job_name"].str.strip()
    repeated = names.duplicated().to_numpy()
    if repeated.any():
        position = int(np.flatnonzero(repeated)[0])
        raise InputError(
            f"job {names.iloc[position]!r} is in the job table twice",
            file=table,
            row=int(raw[ROW].iloc[position]),
            field="job_name",
        )
    found = pd.Index(names.to_numpy()).get_indexer(jobs["job"].to_numpy())
    pick = np.where(found >= 0, found, len(raw))  # a job not in the table picks the appended blank entry
    submitted = np.append(submit.to_numpy(), np.nan)[pick]
    missing = int(np.isnan(submitted).sum())
    if missing:
        notes.append(
            f"{counted(missing, 'job')} without a submission time in {table.name}: arrival = the first task's launch"
        )
    user_text = np.append(raw["user"].str.strip().to_numpy(dtype=object), "")[pick]
    users = [user or None for user in user_text.tolist()]
    states = np.append(raw["status"].str.strip().to_numpy(dtype=object), "")[pick]
    return submitted, users, states


def _canonical_or_none(types: str) -> str | None:
    """The catalog name of a job's one GPU type; None for several types or none."""
    if not types or "|" in types:
        return None
    return canonical_gpu_model(types)


# --------------------------------------------------------------------------- the machine list: a cluster description
def read_pai_machines(
    path: str | Path,
    *,
    name: str = "alibaba-pai-2020",
    price_per_kwh: float | None = None,
    pue: float | None = None,
    catalog_only: bool = False,
    gpu_map: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Cluster description of ``pai_machine_spec.csv``: one node group per (GPU type, GPUs per machine); CPU
    machines (``cap_gpu`` 0) are left out and counted in ``description``. ``V100M32`` joins ``V100`` (one catalog
    model); ``MISC`` (K40m, K80, M60 mixed) is kept as is, left out with ``catalog_only``, or taken as a catalog
    model of the caller's choice with ``gpu_map={"MISC": "K80"}``. O(machines)."""
    file = Path(path)
    raw = _read_table(
        file, MACHINE_COLUMNS, "a PAI machine list (pai_machine_spec.csv)", limit_name="cluster_gpus", what="machines"
    )
    for column, unit in (("cap_cpu", "cores"), ("cap_mem", "GB")):
        numeric_column(raw, column, file=file, unit=unit, minimum=0.0, maximum=MAGNITUDE)
    cluster = cluster_description(
        name,
        group_nodes(raw, "gpu_type", "cap_gpu", file=file),
        file=file,
        source=f"{SOURCE}, {file.name}",
        price_per_kwh=price_per_kwh,
        pue=pue,
        catalog_only=catalog_only,
        gpu_map=gpu_map,
    )
    gpus = numeric_column(raw, "cap_gpu", file=file, unit="GPUs per node")
    types = raw["gpu_type"].str.strip()
    cpu_only, merged = int((gpus == 0).sum()), int(((types == "V100M32") & (gpus > 0)).sum())
    if cpu_only:
        cluster["description"] += f"; {counted(cpu_only, 'machine')} without GPUs left out"
    if merged:
        cluster["description"] += f"; {counted(merged, 'V100M32 machine')} (32 GB V100s) counted as V100"
    return cluster
