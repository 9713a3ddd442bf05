"""Reader for Gavel's tab-separated job traces (stanford-futuredata/gavel, Narayanan et al., OSDI'20).

One job per line, no header, fields separated by tabs. Three layouts exist, told apart by the field count
(the README of the shared Gavel data describes them; Gavel's own ``scheduler/utils.py: parse_trace`` at
commit c4fa400 reads only the first):

* **10 fields**, current (``traces/physical_cluster``): ``job_type, command, working_directory,
  num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time``;
* **7 fields**, old MSR/Philly format (``traces/msr/seed=*``): ``job_type, command, num_steps_arg,
  needs_data_dir, total_steps, arrival_time, scale_factor``; lines with ``scale_factor == 0`` are skipped,
  as Gavel's parser of that time did;
* **9 fields**, branch ``packing_experiment``: ``job_type, command, num_steps_arg, needs_data_dir,
  total_steps, scale_factor, priority_weight, SLO, arrival_time``.

Mapping to the schema: ``job_type`` as is (Gavel names such as ``ResNet-50 (batch size 64)``), ``work =
total_steps``, ``num_gpus = scale_factor``, ``arrival = arrival_time`` (s), ``priority = priority_weight``.
Gavel's ``SLO`` is a slowdown factor, not a time; values > 0 are kept in ``slo`` (an extra column) and
``-1`` (none) is dropped. ``job_id`` is ``<file stem>-<line index>`` zero-padded. Commands and directories
are not kept. A UTF-8 BOM, CRLF line ends, blank lines and a missing final newline are accepted.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.errors import InputError
from gpuweave.limits import check_limit, limit
from gpuweave.workload.traces._tables import ROW, read_text

if TYPE_CHECKING:
    import pandas as pd

LAYOUTS: dict[int, tuple[str, tuple[str, ...]]] = {
    10: (
        "gavel-10",
        (
            "job_type",
            "command",
            "working_directory",
            "num_steps_arg",
            "needs_data_dir",
            "total_steps",
            "scale_factor",
            "priority_weight",
            "SLO",
            "arrival_time",
        ),
    ),
    7: (
        "gavel-msr-7",
        ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor"),
    ),
    9: (
        "gavel-packing-9",
        (
            "job_type",
            "command",
            "num_steps_arg",
            "needs_data_dir",
            "total_steps",
            "scale_factor",
            "priority_weight",
            "SLO",
            "arrival_time",
        ),
    ),
}


def _number(text: str, *, file: Path, line: int, field: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number ({unit}), got {text!r}", file=file, row=line, field=field) from None
    if not math.isfinite(value):
        raise InputError(f"expected a finite number ({unit}), got {text!r}", file=file, row=line, field=field)
    return value


def detect_layout(path: str | Path) -> str:
    """The layout name of a Gavel trace, from its first non-blank line's field count."""
    text = read_text(path)
    for line in text.splitlines():
        if line.strip():
            count = len(line.split("\t"))
            if count in LAYOUTS:
                return LAYOUTS[count][0]
            break
    raise InputError("not a Gavel trace: expected 7, 9 or 10 tab-separated fields per line", file=path, row=1)


def read_gavel_trace(path: str | Path) -> "pd.DataFrame":
    """Read a Gavel trace (any of the three layouts) into a schema frame; ``row`` numbers are lines."""
    import pandas as pd

    file = Path(path)
    text = read_text(file)
    records: list[dict[str, object]] = []
    layout: tuple[str, tuple[str, ...]] | None = None
    stem = file.stem
    most = limit("trace_jobs")
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.rstrip("\r\n").split("\t")
        if layout is None:
            layout = LAYOUTS.get(len(fields))
            if layout is None:
                raise InputError(
                    f"expected 7, 9 or 10 tab-separated fields (a Gavel trace), got {len(fields)}",
                    file=file,
                    row=line_number,
                    field="fields",
                )
        name, columns = layout
        if len(fields) != len(columns):
            raise InputError(
                f"expected {len(columns)} tab-separated fields like the first line ({name}), got {len(fields)}",
                file=file,
                row=line_number,
                field="fields",
            )
        record = _record(dict(zip(columns, fields)), name, file, line_number)
        if record is not None:
            records.append(record)
            if len(records) > most:
                check_limit("trace_jobs", len(records), f"more than {most:,} jobs", file=file, row=line_number)
    if not records:
        raise InputError("the trace has no jobs", file=file)
    width = len(str(len(records) - 1))
    frame = pd.DataFrame.from_records(records)
    frame.insert(0, "job_id", [f"{stem}-{i:0{width}d}" for i in range(len(records))])
    if frame["slo"].isna().all():
        frame = frame.drop(columns=["slo"])
    return frame


def _record(cell: dict[str, str], name: str, file: Path, line_number: int) -> dict[str, object] | None:
    """One line's fields as a schema record; None for a job Gavel's msr layout marks as skipped (scale 0)."""
    job_type = cell["job_type"].strip()
    if not job_type:
        raise InputError("empty job type", file=file, row=line_number, field="job_type")
    steps = _number(cell["total_steps"], file=file, line=line_number, field="total_steps", unit="iterations")
    scale = _number(cell["scale_factor"], file=file, line=line_number, field="scale_factor", unit="GPUs")
    arrival = _number(cell["arrival_time"], file=file, line=line_number, field="arrival_time", unit="seconds")
    if name == "gavel-msr-7" and scale == 0:
        return None
    if scale < 1 or scale != int(scale):
        raise InputError(
            f"expected an integer number of GPUs >= 1, got {cell['scale_factor']!r}",
            file=file,
            row=line_number,
            field="scale_factor",
        )
    if steps <= 0:
        raise InputError(
            f"expected a positive number of steps, got {cell['total_steps']!r}",
            file=file,
            row=line_number,
            field="total_steps",
        )
    if arrival < 0:
        raise InputError(
            f"expected an arrival time >= 0 s, got {cell['arrival_time']!r}",
            file=file,
            row=line_number,
            field="arrival_time",
        )
    priority = 1.0
    slo = None
    if "priority_weight" in cell:
        priority = _number(cell["priority_weight"], file=file, line=line_number, field="priority_weight", unit="weight")
        if priority <= 0:
            raise InputError(
                f"expected a priority weight > 0, got {cell['priority_weight']!r}",
                file=file,
                row=line_number,
                field="priority_weight",
            )
        slo_value = _number(cell["SLO"], file=file, line=line_number, field="SLO", unit="slowdown factor")
        slo = slo_value if slo_value > 0 else None
    return {
        "arrival": arrival,
        "num_gpus": int(scale),
        "job_type": job_type,
        "work": steps,
        "priority": priority,
        "slo": slo,
        "note": f"from Gavel trace {file.name} ({name})",
        ROW: line_number,
    }
