"""Converter for SenseTime's Helios job logs (``cluster_log.csv`` of Venus, Earth, Saturn and Uranus).

Source format: the ``cluster_log.csv`` of each cluster in S-Lab-System-Group/HeliosData (Hu et al., SC'21,
"Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters"; CC BY 4.0, "for
academic purposes"), as its README describes it: ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,
start_time,end_time,duration,queue``, one row per Slurm job, times ``YYYY-MM-DD HH:MM:SS``, ``duration`` = end -
start and ``queue`` = start - submit in seconds, ``state`` one of COMPLETED, CANCELLED, FAILED, TIMEOUT,
NODE_FAIL (SUSPENDED once in Uranus). 3,362,981 jobs over six months, 1,580,464 of them on GPUs.

Mapping to the schema (complexity O(rows), vectorised):

* ``job_id`` as is (Slurm's id, unique per cluster; it follows the submission order);
* ``arrival`` = seconds since the earliest kept ``submit_time``; ``start``/``end`` the same for ``start_time`` and
  ``end_time`` (empty where the log has none), so a replay can be set beside what Helios' own Slurm did;
* ``num_gpus`` = ``gpu_num``; ``duration`` = the log's ``duration``, taken as the run time on the reference GPU (the
  log records no GPU model);
* ``user``, ``vc``, ``state`` kept as they are, ``cpu_num`` and ``node_num`` as extra columns (``Job.attrs``);
* ``job_type``: Helios has no model, so the seeded uniform rule of :mod:`~gpuweave.workload.traces.job_types`
  assigns one, as for Philly, recorded in ``note``.

Left out, and counted in the frame's notes: jobs without GPUs (``gpu_num`` 0: over half of Helios' jobs) and jobs
that ran for 0 s (a job cancelled before it started, or one that failed at once). Jobs of every final state are kept
(a cancelled or failed job held its GPUs for its ``duration`` as much as a completed one); filter on ``state`` to
replay only some.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave.checks import GPUS, MAX_SECONDS
from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces._tables import (
    ROW,
    counted,
    numeric_column,
    read_csv_strings,
    require_columns,
    require_values,
    time_column,
)
from gpuweave.workload.traces.gpu_names import canonical_gpu_model
from gpuweave.workload.traces.job_types import insert_job_types

if TYPE_CHECKING:
    import pandas as pd

HELIOS_COLUMNS = ("job_id", "gpu_num", "state", "submit_time", "start_time", "end_time", "duration")
HELIOS_OPTIONAL = ("user", "vc", "cpu_num", "node_num")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
SHOWN = "'YYYY-MM-DD HH:MM:SS'"


def read_helios_jobs(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
) -> "pd.DataFrame":
    """Convert a Helios ``cluster_log.csv`` to a schema frame (rows in file order; ``read_trace`` sorts)."""
    import pandas as pd

    file = Path(path)
    raw = read_csv_strings(file)
    require_columns(raw, HELIOS_COLUMNS, file=file, what="a Helios job log")
    require_values(raw, ("job_id", "state"), file=file, message="empty value")
    gpus = numeric_column(raw, "gpu_num", file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=0.0)
    duration = numeric_column(raw, "duration", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    submit = time_column(raw, "submit_time", file=file, time_format=TIME_FORMAT, shown=SHOWN)
    start, end = (
        time_column(raw, name, file=file, time_format=TIME_FORMAT, shown=SHOWN, blanks=("",))
        for name in ("start_time", "end_time")
    )
    extras = {
        name: numeric_column(raw, name, file=file, unit=unit, integer=True, minimum=0.0)
        for name, unit in (("cpu_num", "CPUs"), ("node_num", "nodes"))
        if name in raw.columns
    }
    on_gpus = (gpus > 0).to_numpy()
    ran = (duration > 0).to_numpy()
    keep = on_gpus & ran
    notes: list[str] = []
    if not on_gpus.all():
        notes.append(f"left out {counted(int((~on_gpus).sum()), 'job')} without GPUs (gpu_num 0)")
    if not (ran | ~on_gpus).all():
        notes.append(f"left out {counted(int((on_gpus & ~ran).sum()), 'job')} on GPUs that ran for 0 s")
    if not keep.any():
        raise InputError("no GPU job that ran for more than 0 s in the log", file=file, field="gpu_num")
    origin = submit[keep].min()
    frame = pd.DataFrame(
        {
            "job_id": raw["job_id"].str.strip().to_numpy(),
            "arrival": (submit - origin).dt.total_seconds().to_numpy(dtype="float64"),
            "num_gpus": gpus.to_numpy().astype("int64"),
            "duration": duration.to_numpy(),
        }
    )
    for name in HELIOS_OPTIONAL[:2]:
        if name in raw.columns:
            frame[name] = raw[name].str.strip().to_numpy()
    frame["state"] = raw["state"].str.strip().str.upper().to_numpy()
    for name, times in (("start", start), ("end", end)):
        seconds = (times - origin).dt.total_seconds()
        frame[name] = seconds.astype(object).where(seconds.notna(), None).to_numpy()
    for name, values in extras.items():
        frame[name] = values.to_numpy().astype("int64")
    frame[ROW] = raw[ROW].to_numpy()
    frame = frame[keep].reset_index(drop=True)
    insert_job_types(frame, seed, profiles, reference_gpu, f"Helios job ({file.name})")
    notes.append(f"trace start {origin:%Y-%m-%d %H:%M:%S} = arrival 0 s")
    frame.attrs["notes"] = notes
    return frame


# --------------------------------------------------------------------------- the VC file: a cluster description
def read_helios_vcs(
    path: str | Path,
    *,
    gpu: str | None,
    date: str | None = None,
    gpus_per_node: int = 8,
    name: str | None = None,
    price_per_kwh: float | None = None,
    pue: float | None = None,
) -> dict:
    """Cluster description of a Helios ``cluster_gpu_number.csv`` (``date``, one column of GPUs per VC, ``total``)
    on one day (default: the last row): one node group per VC with GPUs, its nodes named after the VC.

    The file gives counts, not hardware: ``gpu`` (a catalog model) must be given, and nodes have ``gpus_per_node``
    GPUs (8 in Helios' servers; a VC whose count is not a multiple gets one smaller node). O(days x VCs).
    """
    file = Path(path)
    if gpu is None:
        raise InputError(
            "a Helios VC file does not say which GPU its nodes have; pass --gpu MODEL (a catalog name, e.g. V100)",
            file=file,
            field="gpu",
        )
    model = canonical_gpu_model(gpu, field="gpu")
    if not (isinstance(gpus_per_node, int) and 1 <= gpus_per_node <= GPUS.hi):
        raise InputError(
            f"--gpus-per-node must be an integer in 1..{GPUS.hi}, got {gpus_per_node}", field="gpus_per_node"
        )
    raw = read_csv_strings(file, limit_name="cluster_gpus", what="days")
    require_columns(raw, ("date",), file=file, what="a Helios VC file")
    vcs = [column for column in raw.columns if column not in ("date", "total", ROW)]
    if not vcs:
        raise InputError("no VC column beside date and total", file=file, row=0)
    dates = raw["date"].str.strip()
    if raw.empty:
        raise InputError("the file has no day", file=file)
    position = len(raw) - 1 if date is None else _day(dates, date, file)
    row = raw.iloc[[position]]
    groups: list[dict[str, Any]] = []
    for vc in vcs:
        count = int(numeric_column(row, vc, file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=0.0).iloc[0])
        whole, rest = divmod(count, gpus_per_node)
        if whole:
            groups.append({"count": whole, "gpu": model, "gpus_per_node": gpus_per_node, "name_prefix": f"{vc}-"})
        if rest:
            groups.append({"count": 1, "gpu": model, "gpus_per_node": rest, "name_prefix": f"{vc}-part-"})
    if not groups:
        raise InputError(f"no VC has a GPU on {dates.iloc[position]}", file=file, row=int(row[ROW].iloc[0]))
    total = sum(g["count"] * g["gpus_per_node"] for g in groups)
    if "total" in raw.columns:
        stated = numeric_column(row, "total", file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=0.0)
        if int(stated.iloc[0]) != total:
            raise InputError(
                f"the VC columns add up to {total} GPUs but total says {int(stated.iloc[0])}",
                file=file,
                row=int(row[ROW].iloc[0]),
                field="total",
            )
    for group in groups:
        for key, value in (("price_per_kwh", price_per_kwh), ("pue", pue)):
            if value is not None:
                group[key] = value
    day = dates.iloc[position]
    return {
        "name": name or f"helios-{file.parent.name.lower() or 'cluster'}-{day}",
        "description": (
            f"{total} {model} GPUs (the model given with --gpu: the file has none) in "
            f"{sum(g['count'] for g in groups)} nodes of up to {gpus_per_node}, "
            f"{len({g['name_prefix'].split('-')[0] for g in groups})} VCs, as on {day}, from {file.name}"
        ),
        "source": "S-Lab-System-Group/HeliosData cluster_gpu_number.csv (Hu et al., SC'21; CC BY 4.0, academic use)",
        "nodes": groups,
    }


def _day(dates: "pd.Series", date: str, file: Path) -> int:
    matches = (dates == date.strip()).to_numpy().nonzero()[0]
    if not len(matches):
        raise InputError(
            f"no row for the day {date!r}: the file covers {dates.iloc[0]} .. {dates.iloc[-1]}", file=file, field="date"
        )
    return int(matches[0])
