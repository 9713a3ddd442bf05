"""Converter for a Slurm cluster's job history: ``sacct --parsable2`` output with GPU TRES.

Problem: replay a Slurm cluster's own jobs under gpuweave's policies. Source: the text of ::

    sacct --allusers --duplicates --parsable2 --starttime=... \\
          --format=JobID,JobIDRaw,JobName,User,Account,Partition,State,Submit,Start,End,ElapsedRaw,ReqTRES,AllocTRES,NodeList

(:data:`SACCT_FIELDS`; ``gpuweave trace import-slurm`` runs it when given no file). Fields are ``|``-separated
with a header line; ``--parsable``'s trailing ``|`` is accepted. Required: ``JobID``, ``State``, ``Submit``,
``Start``, ``End`` and one of ``AllocTRES``/``ReqTRES``; the others fill optional columns. GPU counts need
Slurm to track GPU TRES (``AccountingStorageTRES=gres/gpu,gres/gpu:<type>,...``), which needs slurmdbd.

Mapping (one trace row per Slurm job; complexity O(lines)):

* step lines (``123.batch``, ``123.0``, ``123.extern``) are skipped; an array task (``123_4``) and a
  heterogeneous-job component (``123+0``) is a job of its own;
* a requeued job appears once per run with ``--duplicates`` (earlier runs in state ``REQUEUED``): its rows make
  one job whose ``arrival`` is the first submission, ``start`` the first start, ``end`` the last run's end,
  ``duration`` the run time of all its runs (``ElapsedRaw`` summed) and ``restarts`` the earlier runs;
* ``num_gpus`` = ``gres/gpu`` of ``AllocTRES`` (what Slurm gave), else of ``ReqTRES`` (what was asked);
  ``slurm_gpu_type`` = the typed entries (``gres/gpu:v100=2`` -> ``v100``), ``gpu_model`` its catalog name
  when there is one type and it is known (``gpu_map`` maps others, e.g. ``a6000=A10``); an unknown type
  leaves ``gpu_model`` empty, with a note;
* ``arrival``/``start``/``end`` are seconds since the earliest kept submission; ``submit_time``, ``start_time``,
  ``end_time`` keep Slurm's timestamps (local time, ``YYYY-MM-DDTHH:MM:SS``); ``vc`` = ``Partition``;
  ``user``, ``account``, ``job_name``, ``state`` (the last run's, first word: ``CANCELLED by 0`` -> ``CANCELLED``);
* ``job_type``: Slurm knows no model, so the seeded uniform rule of :mod:`~gpuweave.workload.traces.job_types`
  assigns one, as for Philly, recorded in ``note``;
* ``run_time`` = the seconds it ran; ``work`` = ``run_time`` x the profile's rate of its job type on the GPUs it
  got (the iterations it did), and ``duration`` = the time that work takes on the reference GPU (V100), so a
  job that ran on a K80 is not replayed as if that time had been spent on a V100. A job on a GPU type without
  a profile (or on several types) keeps ``duration`` = ``run_time`` and no ``work`` (a note counts them).

Left out, and counted in the frame's notes: jobs without GPUs, jobs that never started (pending, cancelled
while pending, a pending array range such as ``123_[5-9]``) and jobs that ran for 0 s. A job not finished
(running, or requeued and waiting again: ``End`` = ``Unknown``) is kept with ``duration`` = its run time so
far, a lower bound (its ``note`` says so).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.checks import GPUS, MAX_SECONDS, Range, parse
from gpuweave.errors import InputError
from gpuweave.files import check_column_count
from gpuweave.limits import check_limit
from gpuweave.workload.profiles import ProfileStore, load_profiles
from gpuweave.workload.traces._tables import ROW, read_text, time_column
from gpuweave.workload.traces.gpu_names import canonical_gpu_model
from gpuweave.workload.traces.job_types import assign_job_types, run_time_work

if TYPE_CHECKING:
    import pandas as pd

SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "State",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "ReqTRES",
    "AllocTRES",
    "NodeList",
)
REQUIRED = ("JobID", "State", "Submit", "Start", "End")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
NO_TIME = ("", "Unknown", "None", "N/A")
# a job in one of these states may have no End yet (a requeued job waiting again is PENDING or REQUEUE_HOLD)
UNFINISHED_STATES = (
    "RUNNING",
    "SUSPENDED",
    "COMPLETING",
    "CONFIGURING",
    "STOPPED",
    "RESIZING",
    "PENDING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
)
_STEP = re.compile(r"\.\w+$")
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() also takes '²' and '١', which int() refuses or reads
#: the GPUs of one TRES entry, or of all of a job's (0: the job asked for none of this type)
GPU_COUNT = Range("GPUs", 0, GPUS.hi, integer=True)


def sacct_command(start: str | None = None, end: str | None = None, partition: str | None = None) -> list[str]:
    """The sacct command line whose output :func:`read_sacct` reads."""
    args = ["sacct", "--allusers", "--duplicates", "--parsable2", f"--format={','.join(SACCT_FIELDS)}"]
    if start:
        args.append(f"--starttime={start}")
    if end:
        args.append(f"--endtime={end}")
    if partition:
        args.append(f"--partition={partition}")
    return args


def looks_like_sacct(first_line: str) -> bool:
    fields = {f.strip() for f in first_line.split("|")}
    return {"JobID", "State", "Submit"} <= fields


def read_sacct(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
    gpu_map: dict[str, str] | None = None,
) -> "pd.DataFrame":
    """A sacct file (``-`` is not accepted here: pass the text to :func:`sacct_frame`) as a schema frame."""
    return sacct_frame(
        read_text(path), source=str(path), seed=seed, profiles=profiles, reference_gpu=reference_gpu, gpu_map=gpu_map
    )


def sacct_frame(
    text: str,
    *,
    source: str,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
    gpu_map: dict[str, str] | None = None,
) -> "pd.DataFrame":
    """``sacct --parsable2`` text as a schema frame (rows in submission order); InputError naming the row."""
    import pandas as pd

    raw, skipped_steps = _split_lines(text, source)
    if not raw[ROW]:  # sacct found no job in its window: an empty frame would have no text columns to check
        what = f"only {skipped_steps} job step line(s)" if skipped_steps else "no job line"
        raise InputError(f"no job with GPUs that ran ({what} after the header)", file=source)
    rows = _job_rows(raw, source)
    jobs, notes = _merge_runs(rows, source)
    if skipped_steps:
        notes.insert(0, f"skipped {skipped_steps} job step line(s) (JobID with a '.')")
    if jobs.empty:
        raise InputError("no job with GPUs that ran (" + "; ".join(notes) + ")", file=source)
    store = profiles if profiles is not None else load_profiles()
    types, type_notes = assign_job_types(jobs["num_gpus"].to_numpy(), seed, store, reference_gpu)
    models, model_notes = _gpu_models(jobs["slurm_gpu_type"], gpu_map)
    notes.extend(model_notes)
    work, duration, converted = run_time_work(
        types, jobs["num_gpus"].tolist(), models, jobs["elapsed"].tolist(), store, reference_gpu
    )
    if converted < len(jobs):
        notes.append(
            f"{len(jobs) - converted} job(s) on a GPU type without a profile (or several types): their run time is "
            f"taken as {reference_gpu} time"
        )
    origin = jobs["submit"].min()
    running = jobs["end"].isna()
    note = [
        f"Slurm job; {t}"
        + ("; not finished when exported: duration is its run time so far (a lower bound)" if r else "")
        for t, r in zip(type_notes, running)
    ]
    frame = pd.DataFrame(
        {
            "job_id": jobs["JobID"].to_numpy(),
            "arrival": _seconds(jobs["submit"], origin),
            "num_gpus": jobs["num_gpus"].to_numpy(),
            "job_type": types,
            "work": work,
            "duration": duration,
            "run_time": jobs["elapsed"].to_numpy(dtype="float64"),
            "user": jobs["User"].to_numpy(),
            "vc": jobs["Partition"].to_numpy(),
            "gpu_model": models,
            "note": note,
            "state": jobs["state"].to_numpy(),
            "start": _seconds(jobs["start"], origin),
            "end": _seconds(jobs["end"], origin),
            "submit_time": jobs["Submit"].to_numpy(),
            "start_time": jobs["Start_first"].to_numpy(),
            "end_time": jobs["End"].where(~running, "").to_numpy(),
            "restarts": jobs["restarts"].to_numpy(),
            "slurm_gpu_type": jobs["slurm_gpu_type"].to_numpy(),
            "account": jobs["Account"].to_numpy(),
            "job_name": jobs["JobName"].to_numpy(),
            ROW: jobs[ROW].to_numpy(),
        }
    )
    notes.append(f"trace start {origin:%Y-%m-%dT%H:%M:%S} (the earliest submission) = arrival 0 s")
    frame.attrs["notes"] = notes
    return frame


def _seconds(times: "pd.Series", origin) -> "pd.Series":
    """Seconds since ``origin`` (None where Slurm gave no time), rounded to milliseconds."""
    seconds = (times - origin).dt.total_seconds().round(3)
    return seconds.astype(object).where(seconds.notna(), None).to_numpy()


def _split_lines(text: str, source: str) -> tuple[dict[str, list], int]:
    """Columns of the non-step lines (strings) with their row numbers; the number of step lines skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise InputError("empty sacct output", file=source)
    header = [h.strip() for h in lines[start].split("|")]
    trailing = header[-1] == ""  # sacct --parsable ends every line with '|'
    if trailing:
        header = header[:-1]
    if len(header) < 2:
        raise InputError("not sacct --parsable2 output: the header has no '|'-separated fields", file=source, row=0)
    check_column_count(len(header), file=source, what="fields in the sacct header")  # before any work per field
    seen: set[str] = set()
    for name in header:  # O(fields): a membership test in the list before each name took minutes at 200,000
        if name in seen:
            raise InputError(f"the column {name!r} appears twice in the header", file=source, row=0, field=name)
        seen.add(name)
    check_limit("trace_jobs", len(lines) - start - 1, "lines of the sacct output", file=source)
    missing = [name for name in REQUIRED if name not in header]
    if missing or not ({"AllocTRES", "ReqTRES"} & set(header)):
        need = missing[0] if missing else "AllocTRES"
        raise InputError(
            f"the sacct header lacks {need!r}; run sacct with --format={','.join(SACCT_FIELDS)}",
            file=source,
            row=0,
            field=need,
        )
    width = len(header) + trailing
    columns: dict[str, list] = {name: [] for name in header}
    numbers: list[int] = []
    steps = 0
    job_index = header.index("JobID")
    for row, line in enumerate(lines[start + 1 :], start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != width:
            raise InputError(
                f"expected {len(header)} '|'-separated fields like the header, got {len(fields) - trailing}",
                file=source,
                row=row,
            )
        if _STEP.search(fields[job_index]):
            steps += 1
            continue
        for name, value in zip(header, fields):
            columns[name].append(value)
        numbers.append(row)
    columns[ROW] = numbers
    return columns, steps


def _job_rows(raw: dict[str, list], source: str) -> "pd.DataFrame":
    """One row per job run: parsed times, GPU TRES, elapsed seconds."""
    import pandas as pd

    frame = pd.DataFrame(raw)
    for name in ("User", "Partition", "Account", "JobName", "ElapsedRaw", "AllocTRES", "ReqTRES"):
        if name not in frame:
            frame[name] = ""
    for name in ("JobID", "State"):
        empty = frame[name].str.strip() == ""
        if empty.any():
            raise InputError("empty value", file=source, row=int(frame[ROW][empty].iloc[0]), field=name)
    for name in ("Submit", "Start", "End"):
        frame[name.lower()] = time_column(
            frame,
            name,
            file=source,
            time_format=TIME_FORMAT,
            shown="YYYY-MM-DDTHH:MM:SS (or Unknown/None)",
            blanks=NO_TIME,
        )
    bad_submit = frame["submit"].isna()
    if bad_submit.any():
        row = int(frame[ROW][bad_submit].iloc[0])
        raise InputError("every job has a submission time", file=source, row=row, field="Submit")
    _check_order(frame, source)
    seen: dict[str, tuple[int, str]] = {}  # TRES strings repeat: parse each distinct one once
    alloc = [gpu_tres(t, source, r, "AllocTRES", seen) for t, r in zip(frame["AllocTRES"], frame[ROW])]
    req = [gpu_tres(t, source, r, "ReqTRES", seen) for t, r in zip(frame["ReqTRES"], frame[ROW])]
    chosen = [a if a[0] > 0 else q for a, q in zip(alloc, req)]
    frame["num_gpus"] = [c[0] for c in chosen]
    frame["slurm_gpu_type"] = [c[1] for c in chosen]
    frame["elapsed"] = _elapsed(frame, source)
    frame["state"] = frame["State"].str.split().str[0].str.upper()
    return frame


def gpu_tres(text: str, source: str, row: int, field: str, seen: dict[str, tuple[int, str]]) -> tuple[int, str]:
    """(GPUs, '+'-joined types with a count) of a TRES list such as ``cpu=1,gres/gpu:v100=2,gres/gpu=2``."""
    if "gres/gpu" not in text:
        return 0, ""
    known = seen.get(text)
    if known is not None:
        return known
    total = None
    typed: dict[str, int] = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        if not _DIGITS.fullmatch(value):
            raise InputError(f"expected a GPU count in {item!r}", file=source, row=row, field=field)
        gpus = int(parse(value, GPU_COUNT, file=source, row=row, field=field))  # 10^23 GPUs: one line, no overflow
        if key == "gres/gpu":
            total = gpus
        elif gpus > 0:
            typed[key[len("gres/gpu:") :]] = gpus
    count = (
        total if total is not None else int(parse(sum(typed.values()), GPU_COUNT, file=source, row=row, field=field))
    )
    seen[text] = (count, "+".join(sorted(typed)))
    return seen[text]


def _elapsed(frame: "pd.DataFrame", source: str) -> "pd.Series":
    """Run seconds of each run: ElapsedRaw where given, else End - Start (0 when it never started)."""
    import pandas as pd

    by_times = (frame["end"] - frame["start"]).dt.total_seconds()
    raw = frame["ElapsedRaw"].str.strip()
    numeric = pd.to_numeric(raw, errors="coerce")
    bad = numeric.isna() & (raw != "")
    if bad.any():
        row = int(frame[ROW][bad].iloc[0])
        raise InputError(f"expected whole seconds, got {raw[bad].iloc[0]!r}", file=source, row=row, field="ElapsedRaw")
    # a run time is 0 to 317 years: NaN, inf, negative and 1e300 s are not one (the range of checks.SECONDS)
    out_of_range = numeric.notna() & ~numeric.between(0, MAX_SECONDS)
    if out_of_range.any():
        row = int(frame[ROW][out_of_range].iloc[0])
        shown = raw[out_of_range].iloc[0]
        raise InputError(
            f"expected whole seconds from 0 to {MAX_SECONDS:g}, got {shown!r}", file=source, row=row, field="ElapsedRaw"
        )
    return numeric.where(raw != "", by_times).fillna(0.0)


def _check_order(frame: "pd.DataFrame", source: str) -> None:
    """Every run starts at or after its submission and ends at or after its start (where Slurm gave the times): a
    log where one does not is damaged, and its times would give negative waits or run times."""
    for later, earlier, what in (
        ("start", "submit", "starts before it was submitted"),
        ("end", "start", "ends before it started"),
    ):
        wrong = (frame[later] < frame[earlier]).to_numpy()  # NaT compares False: a missing time is not checked
        if wrong.any():
            position = int(wrong.nonzero()[0][0])
            field, before = later.capitalize(), earlier.capitalize()
            shown = f"{frame[field].iloc[position].strip()} < {frame[before].iloc[position].strip()}"
            raise InputError(
                f"the job {what} ({shown})",
                file=source,
                row=int(frame[ROW].iloc[position]),
                field=field,
            )


def _merge_runs(rows: "pd.DataFrame", source: str) -> tuple["pd.DataFrame", list[str]]:
    """One row per job (requeued runs merged), the jobs that cannot be replayed left out; notes say how many."""
    first = rows.drop_duplicates("JobID", keep="first").set_index("JobID")
    last = rows.drop_duplicates("JobID", keep="last").set_index("JobID")
    grouped = rows.groupby("JobID", sort=False)
    jobs = last.copy()
    jobs["submit"] = first["submit"]
    jobs["Submit"] = first["Submit"]
    jobs["start"] = grouped["start"].min()
    jobs["Start_first"] = first["Start"].where(first["start"].notna(), last["Start"])
    jobs["elapsed"] = grouped["elapsed"].sum()
    jobs["restarts"] = grouped.size() - 1
    jobs = jobs.reset_index()
    notes = []
    merged = int((jobs["restarts"] > 0).sum())
    if merged:
        notes.append(f"merged the runs of {merged} requeued job(s)")
    no_gpu = jobs["num_gpus"] <= 0
    never = ~no_gpu & jobs["start"].isna()
    zero = ~no_gpu & ~never & (jobs["elapsed"] <= 0)
    unfinished = jobs["end"].isna() & ~jobs["state"].isin(UNFINISHED_STATES) & jobs["start"].notna()
    for mask, what in (
        (no_gpu, "without GPUs"),
        (never, "that never started (pending or cancelled before starting)"),
        (zero, "that ran for 0 s"),
    ):
        if mask.any():
            notes.append(f"left out {int(mask.sum())} job(s) {what}")
    if unfinished.any():
        row = int(jobs[ROW][unfinished].iloc[0])
        raise InputError("a job that is not running has no End time", file=source, row=row, field="End")
    keep = ~(no_gpu | never | zero)
    jobs = jobs[keep].sort_values(["submit", ROW], kind="stable").reset_index(drop=True)
    running = int(jobs["end"].isna().sum())
    if running:
        notes.append(f"{running} job(s) not finished (running, or requeued and waiting): duration = run time so far")
    return jobs, notes


def _gpu_models(types: "pd.Series", gpu_map: dict[str, str] | None) -> tuple[list[str], list[str]]:
    """Catalog names of single GPU types ('' for none, several or unknown) and a note on the unknown ones."""
    mapping = {k.lower(): v for k, v in (gpu_map or {}).items()}
    cache: dict[str, str] = {}
    unknown: dict[str, int] = {}
    models = []
    for kind in types:
        if kind not in cache:
            cache[kind] = _catalog_name(kind, mapping)
        if kind and "+" not in kind and not cache[kind]:
            unknown[kind] = unknown.get(kind, 0) + 1
        models.append(cache[kind])
    notes = []
    if unknown:
        listed = ", ".join(f"{k} ({n} jobs)" for k, n in sorted(unknown.items()))
        notes.append(f"GPU types gpuweave does not know, gpu_model left empty (map them with --gpu-map): {listed}")
    return models, notes


def _catalog_name(kind: str, mapping: dict[str, str]) -> str:
    if not kind or "+" in kind:
        return ""
    target = mapping.get(kind.lower(), kind)
    try:
        return canonical_gpu_model(target)
    except InputError:
        if kind.lower() in mapping:
            raise InputError(f"unknown GPU model {target!r} in --gpu-map {kind}={target}", field="gpu-map") from None
        return ""
