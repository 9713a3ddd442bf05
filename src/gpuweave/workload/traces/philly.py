"""Converter for the flattened Microsoft Philly job list (``timestamp,duration,num_gpus,gpu_time,cluster``).

Source format: ``simulator/traces/philly.csv`` of petuum/adaptdl, branch ``osdi21-artifact`` (commit
c793c70), derived from the Microsoft Philly trace (Jeon et al., ATC'19; msr-fiddle/philly-traces, data
licence CC BY 4.0). 82,247 jobs; ``timestamp`` is the submission time ``YYYY-MM-DD HH:MM:SS``,
``duration`` seconds, ``num_gpus`` the GPU count, ``cluster`` the virtual-cluster hash.

Mapping to the schema:

* ``job_id`` = ``philly-<source row>`` (zero-padded), ``arrival`` = seconds since the earliest timestamp,
  ``vc`` = ``cluster``, ``num_gpus`` as is (1-32, including non-powers of two such as 12 and 24);
* ``duration`` = the trace's run time, taken as the run time on the reference GPU (the trace records no
  GPU model);
* ``job_type``: Philly has no model, so each job gets a Gavel job type by the seeded uniform rule of
  :mod:`gpuweave.workload.traces.job_types`, recorded in ``note``.

Jobs with a non-positive duration cannot be simulated and raise :class:`InputError` unless
``drop_zero_duration=True`` (then they are removed and counted in ``frame.attrs["notes"]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.checks import GPUS, MAX_SECONDS
from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces._tables import ROW, numeric_column, read_csv_strings, require_columns, time_column
from gpuweave.workload.traces.job_types import insert_job_types

if TYPE_CHECKING:
    import pandas as pd

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")


def read_philly_jobs(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
    drop_zero_duration: bool = False,
) -> "pd.DataFrame":
    """Convert a Philly job list to a schema frame (rows in file order; ``read_trace`` logic sorts)."""
    import numpy as np
    import pandas as pd

    file = Path(path)
    raw = read_csv_strings(file)
    require_columns(raw, PHILLY_COLUMNS, file=file, what="a Philly job list")
    if raw.empty:  # a header alone: no trace start to count arrivals from
        raise InputError("the trace has no jobs", file=file)
    stamps = time_column(raw, "timestamp", file=file, time_format="%Y-%m-%d %H:%M:%S", shown="'YYYY-MM-DD HH:MM:SS'")
    duration = numeric_column(raw, "duration", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    num_gpus = numeric_column(
        raw, "num_gpus", file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=1.0
    ).astype("int64")
    notes: list[str] = []
    keep = (duration > 0).to_numpy()
    if not keep.all():
        position = int(np.flatnonzero(~keep)[0])
        if not drop_zero_duration:
            raise InputError(
                "expected a duration > 0 s, got 0 "
                "(pass drop_zero_duration=True / --drop-zero-duration to skip such jobs)",
                file=file,
                row=int(raw[ROW].iloc[position]),
                field="duration",
            )
        notes.append(f"dropped {int((~keep).sum())} jobs with duration 0")
    origin = stamps.min()
    arrival = (stamps - origin).dt.total_seconds()
    width = len(str(len(raw)))
    frame = pd.DataFrame(
        {
            "job_id": [f"philly-{int(r):0{width}d}" for r in raw[ROW]],
            "arrival": arrival.to_numpy(dtype="float64"),
            "num_gpus": num_gpus.to_numpy(),
            "duration": duration.to_numpy(),
            "vc": raw["cluster"].str.strip().to_numpy(),
            ROW: raw[ROW].to_numpy(),
        }
    )
    frame = frame[keep].reset_index(drop=True)
    insert_job_types(frame, seed, profiles, reference_gpu, "Philly job (adaptdl philly.csv)")
    notes.append(f"trace start {origin:%Y-%m-%d %H:%M:%S} = arrival 0 s")
    frame.attrs["notes"] = notes
    return frame
