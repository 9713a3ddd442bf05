"""gpuweave's one cluster-trace schema (CSV or Parquet), its validator, reader and writer.

The schema is documented for users in ``docs/trace-schema.md``; :data:`TRACE_COLUMNS` is the same table
in code. One row is one job:

=============  ======  ========  ===============================================================
column         type    required  meaning
=============  ======  ========  ===============================================================
``job_id``     str     yes       unique job name
``arrival``    float   yes       submission time, seconds from the trace start, >= 0
``num_gpus``   int     yes       GPUs the job asks for (gang), >= 1 (0: a CPU-only task, with ``cpu_milli``)
``job_type``   str     yes       a job type of the profile store, e.g. ``ResNet-50 (batch size 64)``
``work``       float   one of    iterations to run, > 0
``duration``   float   these     seconds on the reference GPU (V100), > 0
``priority``   float   no        weight > 0, default 1
``deadline``   float   no        absolute deadline in seconds, > arrival
``user``       str     no        submitting user or organisation
``vc``         str     no        virtual cluster / queue
``gpu_model``  str     no        the GPU model the job asked for, canonical name (e.g. ``V100``)
``note``       str     no        provenance: how the row was derived
=============  ======  ========  ===============================================================

GPU sharing adds ``allowed_models``, ``cpu_milli``, ``memory_mib``, ``gpu_milli`` and ``mig_profile`` (a MIG
instance by NVIDIA's name, ``3g.20gb``; :mod:`.mig_column`), all optional (:data:`TRACE_COLUMNS`).

Any other column is kept in :attr:`Job.attrs` (numbers when the whole column parses as numbers).
When a row has ``duration`` but no ``work``, the reader fills ``work = duration * rate(job_type,
reference_gpu, num_gpus, consolidated=True)``: Gavel's convention of sizing jobs by their run time on a
V100 (``num_steps = run_time * throughputs['v100'][job]['null']`` in its generator).

Bad input raises :class:`~gpuweave.errors.InputError` naming the file, the row (1-based data row; the
header is row 0; converters report their source line) and the field.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gpuweave.checks import GPUS, ITERATIONS, MAX_SECONDS, WEIGHT
from gpuweave.errors import InputError, MissingProfileError
from gpuweave.files import prepare_output_file, read_input_bytes
from gpuweave.hardware.catalog import get_gpu
from gpuweave.limits import check_limit
from gpuweave.workload.job import Job
from gpuweave.workload.profile_source import ProfileSource
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces._tables import ROW, missing_mask, numeric_column, read_csv_strings, row_numbers
from gpuweave.workload.traces.gpu_names import canonical_gpu_model
from gpuweave.workload.traces.mig_column import COLUMN as MIG_COLUMN
from gpuweave.workload.traces.mig_column import read_mig_profiles
from gpuweave.workload.traces.signatures import format_of_columns, format_of_name

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True)
class TraceColumn:
    """One column of the trace schema."""

    name: str
    kind: Literal["str", "float", "int"]
    required: bool
    unit: str
    description: str


TRACE_COLUMNS: tuple[TraceColumn, ...] = (
    TraceColumn("job_id", "str", True, "", "unique job name"),
    TraceColumn("arrival", "float", True, "s", "submission time from the trace start, >= 0"),
    TraceColumn("num_gpus", "int", True, "GPUs", "GPUs requested (all at once), >= 1; 0: a CPU-only task (cpu_milli)"),
    TraceColumn("job_type", "str", True, "", "job type of the profile store"),
    TraceColumn("work", "float", False, "iterations", "iterations to run, > 0 (work and/or duration per row)"),
    TraceColumn("duration", "float", False, "s", "run time on the reference GPU, > 0 (work and/or duration per row)"),
    TraceColumn("priority", "float", False, "", "weight > 0, default 1"),
    TraceColumn("deadline", "float", False, "s", "absolute deadline, > arrival"),
    TraceColumn("user", "str", False, "", "submitting user or organisation"),
    TraceColumn("vc", "str", False, "", "virtual cluster / queue"),
    TraceColumn("gpu_model", "str", False, "", "requested GPU model, canonical name"),
    TraceColumn("note", "str", False, "", "provenance of the row"),
    TraceColumn("allowed_models", "str", False, "", "GPU models the job may run on, joined by '+'; empty = any"),
    TraceColumn("cpu_milli", "int", False, "milli-CPU", "CPU per job (thousandths of a core), > 0; empty = not asked"),
    TraceColumn("memory_mib", "int", False, "MiB", "memory per job, > 0; empty = not asked"),
    TraceColumn(
        "gpu_milli", "int", False, "milli-GPU", "share of each GPU, 1..1000 (1000 = whole); below 1000: 1-GPU jobs only"
    ),
    TraceColumn("mig_profile", "str", False, "", "MIG instance by NVIDIA's name (3g.20gb), one GPU; empty = none"),
)
RESOURCE_COLUMNS = ("cpu_milli", "memory_mib", "gpu_milli")  # GPU sharing: read into Job.attrs
COLUMN_NAMES: tuple[str, ...] = tuple(column.name for column in TRACE_COLUMNS)
REQUIRED_COLUMNS: tuple[str, ...] = tuple(column.name for column in TRACE_COLUMNS if column.required)
_STRING_OPTIONAL = ("user", "vc", "gpu_model", "note", "allowed_models")
# How the service wrote a GPU-type constraint before it was a field of the job: ``TYPE @only:A+B`` as the job type.
# Files written so are still read: the suffix becomes ``allowed_models``.
ONLY_SUFFIX = " @only:"


# --------------------------------------------------------------------------- reading files
def read_table(path: str | Path) -> "pd.DataFrame":
    """Read a schema file (``.parquet``, else CSV) into a frame with the hidden source-row column."""
    import pandas as pd

    file = Path(path)
    if file.suffix.lower() == ".parquet":
        import io

        data = read_input_bytes(file, what="trace file")  # the size limit before pyarrow sees it
        try:
            _check_flat_parquet(data, file)
            frame = pd.read_parquet(io.BytesIO(data))
        except InputError:
            raise
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise InputError(f"cannot read Parquet: {' '.join(str(exc).split())[:200]}", file=file) from None
        check_limit("trace_jobs", len(frame), "jobs in the trace", file=file)
        frame = frame.reset_index(drop=True)
        frame.columns = [str(name).strip() for name in frame.columns]
        frame[ROW] = range(1, len(frame) + 1)
        return frame
    return read_csv_strings(file)


def _check_flat_parquet(data: bytes, file: Path) -> None:
    """Every column of the Parquet file ``data`` holds one value per row: a list, struct, map or union column (a
    nested column) is an InputError naming it, read from the schema before any row is. pandas would hold such cells
    as arrays or dicts, which every later step turns into text (``['a']`` as a job id) or fails on with a
    traceback. O(columns)."""
    import io

    import pyarrow.parquet as pq
    from pyarrow import types

    schema = pq.ParquetFile(io.BytesIO(data)).schema_arrow
    for column in schema:
        kind = column.type.value_type if types.is_dictionary(column.type) else column.type
        if types.is_nested(kind):
            raise InputError(
                f"nested Parquet column of type {kind}: a trace's columns hold one number or text per row"[:200],
                file=file,
                row=0,
                field=str(column.name),
            )


# --------------------------------------------------------------------------- validation
def _string_column(frame: "pd.DataFrame", column: str, *, file: str | Path, required: bool) -> list[str | None]:
    """The column's cells stripped, None where empty (an error where ``required``). Equal cells share one str
    object: a trace's users, VCs, job types and notes take a few distinct values over 10^6 rows, and a str per
    cell was a third of a million-job trace's memory. O(rows) with one hash per cell."""
    import pandas as pd

    cells = frame[column]
    if pd.api.types.infer_dtype(cells, skipna=True) not in ("string", "empty"):
        # numbers or mixed cells (Parquet): text first, so that factorizing does not merge 1, 1.0 and True
        empty = missing_mask(cells).tolist()
        cells = pd.Series([None if e else str(v) for v, e in zip(cells.tolist(), empty)], dtype=object)
    codes, uniques = pd.factorize(cells, use_na_sentinel=True)
    stripped = [str(value).strip() for value in uniques.tolist()]
    empty_codes = [code for code, value in enumerate(stripped) if not value]
    if required and (empty_codes or (codes < 0).any()):
        import numpy as np

        position = int(np.flatnonzero((codes < 0) | np.isin(codes, empty_codes))[0])
        raise InputError(
            "empty value; expected a non-empty string", file=file, row=row_numbers(frame)[position], field=column
        )
    shared: list[str | None] = [value or None for value in stripped]
    shared.append(None)  # code -1: a missing cell
    return [shared[code] for code in codes.tolist()]


def validate_frame(
    frame: "pd.DataFrame",
    *,
    file: str | Path,
    profiles: ProfileSource | None = None,
    max_gpus: int | None = None,
) -> "pd.DataFrame":
    """Check a frame against the schema and return it normalised and sorted by (arrival, job_id).

    Checks, each raising :class:`InputError` at the first bad row: required columns; numbers where numbers
    belong; ``arrival >= 0``; integer ``num_gpus >= 1`` (0 with ``cpu_milli``: a CPU-only task) and
    ``<= max_gpus`` (when given: the largest placement the cluster can offer); ``work``/``duration > 0`` with at
    least one per row; ``priority > 0``;
    ``deadline > arrival``; unique ``job_id``; ``job_type`` known to ``profiles`` (when given); a known
    ``gpu_model``. The result keeps the hidden source-row column for later messages.
    """
    import pandas as pd

    frame = _checked_header(frame, file)
    rows = row_numbers(frame)
    out = pd.DataFrame(index=frame.index)
    out["job_id"] = _string_column(frame, "job_id", file=file, required=True)
    out["arrival"] = numeric_column(frame, "arrival", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    out["num_gpus"] = _num_gpus_column(frame, file, max_gpus, rows).astype("int64")
    out["job_type"] = _string_column(frame, "job_type", file=file, required=True)
    _add_work_and_duration(frame, out, file, rows)
    _add_priority_and_deadline(frame, out, file, rows)
    _add_optional_strings(frame, out, file, rows)
    _add_resources(frame, out, file, rows)
    _add_mig_profiles(frame, out, file)
    _check_ids_and_types(out, profiles, file, rows)
    _add_extra_columns(frame, out)
    out[ROW] = rows
    out = out.sort_values(["arrival", "job_id"], kind="stable").reset_index(drop=True)
    return out


def _checked_header(frame: "pd.DataFrame", file: str | Path) -> "pd.DataFrame":
    """A copy with clean column names and a source-row column; the required columns present; some rows."""
    frame = frame.copy()
    frame.columns = [str(name).lstrip("\ufeff").strip() for name in frame.columns]
    if ROW not in frame.columns:
        frame[ROW] = range(1, len(frame) + 1)
    expected = ", ".join(REQUIRED_COLUMNS) + " and work and/or duration"
    for name in REQUIRED_COLUMNS:
        if name not in frame.columns:
            raise InputError(
                f"missing required column '{name}' in the header (expected {expected})", file=file, row=0, field=name
            )
    if "work" not in frame.columns and "duration" not in frame.columns:
        raise InputError(
            f"missing column 'work' or 'duration' in the header (expected {expected})", file=file, row=0, field="work"
        )
    if len(frame) == 0:
        raise InputError("the trace has no jobs", file=file)
    check_limit("trace_jobs", len(frame), "jobs in the trace", file=file)
    return frame


def _num_gpus_column(frame: "pd.DataFrame", file: str | Path, max_gpus: int | None, rows: list[int]) -> "pd.Series":
    """``num_gpus``: integers >= 1 (0 for a CPU-only task, which must ask ``cpu_milli``) and, when ``max_gpus`` is
    given, no larger than the cluster's largest placement."""
    import numpy as np
    import pandas as pd

    num_gpus = numeric_column(frame, "num_gpus", file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=0.0)
    zero = (num_gpus == 0).to_numpy()
    if zero.any():
        cpu = pd.to_numeric(frame["cpu_milli"], errors="coerce") if "cpu_milli" in frame.columns else None
        bare = zero & ~(cpu > 0).to_numpy() if cpu is not None else zero  # the cpu cell itself is checked later
        if bare.any():
            raise InputError(
                "expected a number >= 1 GPUs (0 only for a CPU-only task, which asks cpu_milli), got 0",
                file=file,
                row=rows[int(np.flatnonzero(bare)[0])],
                field="num_gpus",
            )
    if max_gpus is not None and max_gpus < 1:
        raise InputError(f"the largest placement must be at least 1 GPU, got {max_gpus}", field="max_gpus")
    if max_gpus is not None:
        too_big = num_gpus.to_numpy() > max_gpus
        if too_big.any():
            position = int(np.flatnonzero(too_big)[0])
            raise InputError(
                f"the job asks for {int(num_gpus.iloc[position])} GPUs "
                f"but the cluster's largest placement is {max_gpus}",
                file=file,
                row=rows[position],
                field="num_gpus",
            )
    return num_gpus


def _add_work_and_duration(frame: "pd.DataFrame", out: "pd.DataFrame", file: str | Path, rows: list[int]) -> None:
    """``work`` (iterations) and ``duration`` (seconds), each > 0 where given; every row needs one of them."""
    import numpy as np
    import pandas as pd

    nan = pd.Series(np.nan, index=frame.index)
    out["work"] = (
        numeric_column(
            frame, "work", file=file, unit="iterations", maximum=ITERATIONS.hi, required=False, strictly_above=0.0
        )
        if "work" in frame.columns
        else nan
    )
    out["duration"] = (
        numeric_column(
            frame,
            "duration",
            file=file,
            unit="seconds on the reference GPU",
            maximum=MAX_SECONDS,
            required=False,
            strictly_above=0.0,
        )
        if "duration" in frame.columns
        else nan
    )
    neither = (out["work"].isna() & out["duration"].isna()).to_numpy()
    if neither.any():
        position = int(np.flatnonzero(neither)[0])
        field = "work" if "work" in frame.columns else "duration"
        raise InputError(
            "empty work and duration; every job needs work (iterations) or duration (seconds)",
            file=file,
            row=rows[position],
            field=field,
        )


def _add_priority_and_deadline(frame: "pd.DataFrame", out: "pd.DataFrame", file: str | Path, rows: list[int]) -> None:
    """``priority`` > 0 (default 1) and ``deadline`` after the arrival (default none)."""
    import numpy as np
    import pandas as pd

    nan = pd.Series(np.nan, index=frame.index)
    if "priority" in frame.columns:
        priority = numeric_column(
            frame, "priority", file=file, unit="weight", maximum=WEIGHT.hi, required=False, strictly_above=0.0
        )
        out["priority"] = priority.fillna(1.0)
    else:
        out["priority"] = 1.0
    if "deadline" in frame.columns:
        deadline = numeric_column(frame, "deadline", file=file, unit="seconds", maximum=MAX_SECONDS, required=False)
        early = (deadline.notna() & (deadline <= out["arrival"])).to_numpy()
        if early.any():
            position = int(np.flatnonzero(early)[0])
            raise InputError(
                f"deadline {deadline.iloc[position]:g} s is not after the arrival {out['arrival'].iloc[position]:g} s",
                file=file,
                row=rows[position],
                field="deadline",
            )
        out["deadline"] = deadline
    else:
        out["deadline"] = nan


def _add_optional_strings(frame: "pd.DataFrame", out: "pd.DataFrame", file: str | Path, rows: list[int]) -> None:
    """The optional string columns, ``gpu_model`` and each of ``allowed_models`` in their canonical spelling
    (``allowed_models`` sorted, joined by ``+``); a job type written as ``TYPE @only:A+B`` gives its constraint to
    ``allowed_models`` (where that cell is empty) and keeps ``TYPE``."""
    import pandas as pd

    for name in _STRING_OPTIONAL:
        values: list[str | None] = (
            _string_column(frame, name, file=file, required=False) if name in frame.columns else [None] * len(frame)
        )
        if name == "allowed_models":
            values = _constraints(out, values, file, rows)
        if name in ("gpu_model", "allowed_models"):
            values = _canonical_models(values, name, file, rows)
        out[name] = pd.Series(values, index=frame.index, dtype=object)


def _add_resources(frame: "pd.DataFrame", out: "pd.DataFrame", file: str | Path, rows: list[int]) -> None:
    """``cpu_milli`` and ``memory_mib`` > 0; ``gpu_milli`` in 1..1000, below 1000 only for a 1-GPU job (a share of
    one GPU, as Alibaba's openb trace defines it). Written only when the file has the column."""
    import numpy as np

    bounds = {"cpu_milli": ("milli-CPU", 10.0**9), "memory_mib": ("MiB", 10.0**12), "gpu_milli": ("milli-GPU", 1000.0)}
    for name in RESOURCE_COLUMNS:
        if name not in frame.columns:
            continue
        unit, high = bounds[name]
        values = numeric_column(
            frame, name, file=file, unit=unit, integer=True, required=False, strictly_above=0.0, maximum=high
        )
        if name == "gpu_milli":
            cpu_only = (values.notna() & (out["num_gpus"] == 0)).to_numpy()
            if cpu_only.any():
                raise InputError(
                    "a CPU-only task (num_gpus 0) asks no share of a GPU: leave gpu_milli empty",
                    file=file,
                    row=rows[int(np.flatnonzero(cpu_only)[0])],
                    field="gpu_milli",
                )
            shared = (values.notna() & (values < 1000) & (out["num_gpus"] > 1)).to_numpy()
            if shared.any():
                position = int(np.flatnonzero(shared)[0])
                raise InputError(
                    "a fraction of a GPU (gpu_milli < 1000) is for 1-GPU jobs only",
                    file=file,
                    row=rows[position],
                    field=name,
                )
        out[name] = values.astype("Int64")


def _add_mig_profiles(frame: "pd.DataFrame", out: "pd.DataFrame", file: str | Path) -> None:
    """``mig_profile`` in canonical spelling (rules in :mod:`.mig_column`: a profile some MIG-capable GPU has, one
    GPU, ``gpu_milli`` its share or empty, then set to it). Written only when the file has the column."""
    import numpy as np
    import pandas as pd

    if MIG_COLUMN not in frame.columns:
        return
    milli = out["gpu_milli"].to_numpy(dtype="float64", na_value=np.nan) if "gpu_milli" in out else None
    names, index, filled = read_mig_profiles(
        frame,
        file=file,
        num_gpus=out["num_gpus"].to_numpy(),
        gpu_milli=milli if milli is not None else np.full(len(frame), np.nan),
        gpus_field="num_gpus",
        milli_field="gpu_milli",
    )
    shared = [*names, None]  # index -1: no profile
    out[MIG_COLUMN] = pd.Series([shared[k] for k in index.tolist()], index=frame.index, dtype=object)
    if names:
        out["gpu_milli"] = pd.Series(filled, index=frame.index).round().astype("Int64")


def _constraints(out: "pd.DataFrame", values: list[str | None], file: str | Path, rows: list[int]) -> list[str | None]:
    """``allowed_models`` cells, with the constraint of ``TYPE @only:A+B`` job types moved out of ``job_type``."""
    types = out["job_type"].tolist()
    if not any(ONLY_SUFFIX in t for t in set(types)):
        return values
    values = list(values)
    for position, job_type in enumerate(types):
        base, sep, allowed = job_type.partition(ONLY_SUFFIX)
        if sep:
            types[position] = base
            values[position] = values[position] or allowed
    out["job_type"] = types
    return values


def _canonical_models(values: list[str | None], name: str, file: str | Path, rows: list[int]) -> list[str | None]:
    """Each GPU model of each cell (``+``-separated lists for ``allowed_models``) in its canonical name."""
    canonical: dict[str, str | None] = {}
    for position, cell in enumerate(values):
        if cell is not None and cell not in canonical:
            parts = cell.split("+") if name == "allowed_models" else [cell]
            models = [canonical_gpu_model(p.strip(), file=str(file), row=rows[position], field=name) for p in parts]
            canonical[cell] = "+".join(sorted(set(models))) if name == "allowed_models" else models[0]
    return [canonical[m] if m is not None else None for m in values]


def _check_ids_and_types(
    out: "pd.DataFrame", profiles: ProfileSource | None, file: str | Path, rows: list[int]
) -> None:
    """Unique ``job_id``; every ``job_type`` known to ``profiles`` when given."""
    import numpy as np

    duplicated = out["job_id"].duplicated().to_numpy()
    if duplicated.any():
        position = int(np.flatnonzero(duplicated)[0])
        raise InputError(
            f"duplicate job_id {out['job_id'].iloc[position]!r}", file=file, row=rows[position], field="job_id"
        )
    if profiles is not None:
        known = set(profiles.job_types())
        gpus = out["num_gpus"].tolist()
        for position, job_type in enumerate(out["job_type"].tolist()):
            # `in`: a source that takes any type (traced); a CPU-only task (0 GPUs) has no profiled type
            if job_type not in known and job_type not in profiles and gpus[position] > 0:
                preview = ", ".join(profiles.job_types()[:4])
                raise InputError(
                    f"unknown job type {job_type!r}: not in the profile store ({len(known)} types, e.g. {preview})",
                    file=file,
                    row=rows[position],
                    field="job_type",
                )


def _add_extra_columns(frame: "pd.DataFrame", out: "pd.DataFrame") -> None:
    """Columns outside the schema pass through, as numbers where every non-empty value is one."""
    import pandas as pd

    extras = [name for name in frame.columns if name not in COLUMN_NAMES and not name.startswith("_")]
    for name in extras:
        column = frame[name]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            empty = missing_mask(column)
            first = column[~empty].head(1)  # a text column fails on its first value: not 10^6 failed parses
            if len(first) and pd.to_numeric(first, errors="coerce").notna().all():
                parsed = pd.to_numeric(column.where(~empty, None), errors="coerce")
                numeric = bool((parsed.notna() | empty).all())
            else:
                numeric = False
            column = parsed if numeric else column.where(~empty, None)
        out[name] = column


# --------------------------------------------------------------------------- work filling and Jobs
def fill_work(
    frame: "pd.DataFrame", profiles: ProfileSource, reference_gpu: str = "V100", *, file: str | Path
) -> "pd.DataFrame":
    """Fill empty ``work`` from ``duration`` x the consolidated rate on ``reference_gpu`` (Gavel's convention)."""
    try:
        get_gpu(reference_gpu)
    except InputError as exc:
        raise InputError(exc.message, field="reference_gpu") from None
    frame = frame.copy()
    work = frame["work"].to_numpy(dtype="float64", copy=True)
    todo = [int(i) for i in (work != work).nonzero()[0]]  # NaN positions
    if not todo:
        return frame
    rows = row_numbers(frame)
    job_types = frame["job_type"].tolist()
    counts = frame["num_gpus"].tolist()
    durations = frame["duration"].tolist()
    cache: dict[tuple[str, int], float] = {}
    for position in todo:
        key = (job_types[position], int(counts[position]))
        rate = cache.get(key)
        if rate is None:
            try:
                rate = profiles.rate(key[0], reference_gpu, key[1], True)
            except MissingProfileError as exc:
                field = "job_type" if key[0] not in profiles else "num_gpus"
                raise MissingProfileError(
                    f"cannot derive work from duration: {exc.message}", file=file, row=rows[position], field=field
                ) from None
            cache[key] = rate
        if rate <= 0:
            raise InputError(
                f"cannot derive work from duration: job type {key[0]!r} does not fit on {key[1]} x {reference_gpu} "
                "(throughput 0); give work explicitly",
                file=file,
                row=rows[position],
                field="num_gpus",
            )
        work[position] = durations[position] * rate
        if not math.isfinite(work[position]):
            raise InputError(
                f"duration {durations[position]:g} s is too large: work = duration x {rate:g} iterations/s overflows",
                file=file,
                row=rows[position],
                field="duration",
            )
    frame["work"] = work
    return frame


def _clean(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy scalar -> Python scalar
    return value


def frame_to_jobs(frame: "pd.DataFrame") -> list[Job]:
    """Build :class:`Job` objects from a validated frame whose ``work`` is filled. Equal text cells share one str
    object (see :func:`_string_column`): 10^6 jobs of a converted trace took 1.33 KB each, about 0.9 KB now."""
    attr_columns = [
        name
        for name in frame.columns
        if name not in COLUMN_NAMES[:8] and name != "allowed_models" and not name.startswith("_")
    ]
    columns = {name: _cells(frame[name]) for name in frame.columns}
    attr_values = [_cleaned(columns[name]) for name in attr_columns]
    durations, deadlines = _cleaned(columns["duration"]), _cleaned(columns["deadline"])
    constraint = columns.get("allowed_models")
    allowed = _allowed_models(constraint) if constraint is not None else itertools.repeat(None)
    rows = zip(
        columns["job_id"],
        columns["arrival"],
        columns["num_gpus"],
        columns["work"],
        columns["job_type"],
        columns["priority"],
        deadlines,
        durations,
        zip(*attr_values) if attr_values else itertools.repeat(()),
        allowed,
    )
    return [
        Job(
            job_id=job_id,
            arrival=float(arrival),
            num_gpus=int(num_gpus),
            work=float(work),
            job_type=job_type,
            priority=float(priority),
            deadline=None if deadline is None else float(deadline),
            duration=None if duration is None else float(duration),
            attrs={name: value for name, value in zip(attr_columns, values) if value is not None},
            allowed_models=models,
        )
        for job_id, arrival, num_gpus, work, job_type, priority, deadline, duration, values, models in rows
    ]


def _allowed_models(cells: list) -> list[tuple[str, ...] | None]:
    """``allowed_models`` cells ("A+B", empty) as the job's field (one shared tuple per distinct cell)."""
    shared: dict[str, tuple[str, ...]] = {}
    out: list[tuple[str, ...] | None] = []
    for cell in cells:
        if isinstance(cell, str) and cell:
            found = shared.get(cell)
            if found is None:
                found = shared[cell] = tuple(cell.split("+"))
            out.append(found)
        else:
            out.append(None)
    return out


def _cleaned(values: list) -> list:
    """:func:`_clean` of each value, with the common cells (text, None, floats) checked inline."""
    out: list[object] = []
    append = out.append
    for value in values:
        kind = type(value)
        if kind is str or value is None:
            append(value)
        elif kind is float:
            append(None if value != value else value)
        else:
            append(_clean(value))
    return out


def _cells(column: "pd.Series") -> list:
    """The column's values as Python objects; a column of text (missing cells aside) gives equal cells one shared
    str. Only all-text columns are shared: factorizing mixed cells would merge 1, 1.0 and True."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.infer_dtype(column, skipna=True) != "string":
        return column.tolist()
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    shared = uniques.tolist()
    shared.append(None)  # code -1: a missing cell
    return [shared[code] for code in codes.tolist()]


def jobs_to_frame(jobs: Iterable[Job]) -> "pd.DataFrame":
    """The schema frame of ``jobs`` (attrs become extra columns, in sorted order after the schema ones)."""
    import pandas as pd

    jobs = list(jobs)
    extra = sorted({key for job in jobs for key in job.attrs} - set(COLUMN_NAMES))
    records = []
    for job in jobs:
        record: dict[str, object] = {
            "job_id": job.job_id,
            "arrival": job.arrival,
            "num_gpus": job.num_gpus,
            "job_type": job.job_type,
            "work": job.work,
            "duration": job.duration,
            "priority": job.priority,
            "deadline": job.deadline,
            "allowed_models": "+".join(job.allowed_models) if job.allowed_models else None,
        }
        for name in ("user", "vc", "gpu_model", "note", MIG_COLUMN, *extra):
            value = job.attrs.get(name)
            record[name] = value if value is None or isinstance(value, (str, int, float, bool)) else str(value)
        records.append(record)
    columns = list(COLUMN_NAMES) + extra
    frame = pd.DataFrame.from_records(records, columns=columns)
    keep = [c for c in columns if c in REQUIRED_COLUMNS or c == "work" or frame[c].notna().any()]
    return frame[keep]


def write_frame(frame: "pd.DataFrame", path: str | Path) -> None:
    """Write a schema frame to ``.csv`` or ``.parquet`` atomically (no half-written file on failure)."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in {".csv", ".parquet"}:
        raise InputError(f"output must end in .csv or .parquet, got '{file.suffix or file.name}'", file=file)
    frame = frame.drop(columns=[c for c in frame.columns if str(c).startswith("_")])
    frame.attrs = {}  # pandas would store attrs (converter notes) in Parquet metadata
    prepare_output_file(file, field="out")
    handle, temporary = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    os.close(handle)
    try:
        if suffix == ".csv":
            frame.to_csv(temporary, index=False, lineterminator="\n")
        else:
            frame.to_parquet(temporary, index=False)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_trace(jobs: Iterable[Job], path: str | Path) -> None:
    """Write ``jobs`` in the schema to ``path`` (``.csv`` or ``.parquet``)."""
    write_frame(jobs_to_frame(jobs), path)


def read_trace(
    path: str | Path,
    profiles: ProfileSource | None = None,
    reference_gpu: str = "V100",
    max_gpus: int | None = None,
) -> list[Job]:
    """Read and validate a schema trace; return its jobs sorted by (arrival, job_id).

    ``profiles``: when given, every ``job_type`` must be in it, and it sizes duration-only rows; when
    ``None``, job types are not checked and duration-only rows are sized with the bundled Gavel table.
    ``max_gpus``: the cluster's largest possible placement; larger jobs are rejected.
    """
    other = format_of_name(path)  # a headerless table known by its published name, before its data row is a header
    if other is None:
        table = read_table(path)
        if not set(REQUIRED_COLUMNS) <= {str(name).strip() for name in table.columns}:
            other = format_of_columns(table.columns)
    if other is not None:  # a public trace given as it was downloaded: say how to convert it
        raise InputError(
            f"this is a {other} trace, not gpuweave's trace schema; convert it first: "
            f"gpuweave trace convert {Path(path).name} {Path(path).stem}-schema.csv --from {other}",
            file=path,
            row=0,
        )
    frame = validate_frame(table, file=path, profiles=profiles, max_gpus=max_gpus)
    if frame["work"].isna().any():
        frame = fill_work(frame, profiles if profiles is not None else load_profiles(), reference_gpu, file=path)
    return frame_to_jobs(frame)
